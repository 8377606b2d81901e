"""Instants at a wall time a fold repeats are written in UTC (issue 29, item 2).

``DTSTART;TZID=America/Los_Angeles:20241103T013000`` is the first 01:30 for RFC 5545
§3.3.5 (and icalendar, vobject, dateutil), the second for ical.js, libical and khal: no
wall time with a TZID says either occurrence to every client. So an event with an
instant in a fold (either occurrence) carries ``DTSTART:...Z``, and its description
names the zone; every other timed event keeps its native TZID. Literal instants for
Los Angeles, Berlin, Santiago, Lord Howe (a 30-minute fold) and Nuuk, read by
icalendar, vobject and ical.js; libical finds no error."""

from __future__ import annotations

import datetime as dt
import json
import subprocess

import icalendar
import pytest
from django.test import Client

from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from releasecal import tz
from releasecal.models import Release
from releasecal.services import milestone_create, tracking_set
from tests.feeds.test_ical_span import (
    LIBICAL_CHECK,
    read_icalendar,
    read_icaljs,
    read_vobject,
    system_python_with_libical,
)
from tests.support.paths import ROOT

UTC = dt.UTC

# title: (zone, the UTC instant, the raw DTSTART line the feed must carry)
FOLDS = {
    "LA first 01:30": ("America/Los_Angeles", "2024-11-03T08:30:00Z", "DTSTART:20241103T083000Z"),
    "LA second 01:30": ("America/Los_Angeles", "2024-11-03T09:30:00Z", "DTSTART:20241103T093000Z"),
    "Berlin first 02:30": ("Europe/Berlin", "2024-10-27T00:30:00Z", "DTSTART:20241027T003000Z"),
    "Berlin second 02:30": ("Europe/Berlin", "2024-10-27T01:30:00Z", "DTSTART:20241027T013000Z"),
    "Santiago first 23:30": ("America/Santiago", "2024-04-07T02:30:00Z", "DTSTART:20240407T023000Z"),
    "Santiago second 23:30": ("America/Santiago", "2024-04-07T03:30:00Z", "DTSTART:20240407T033000Z"),
    "Lord Howe first 01:45": ("Australia/Lord_Howe", "2024-04-06T14:45:00Z", "DTSTART:20240406T144500Z"),
    "Lord Howe second 01:45": ("Australia/Lord_Howe", "2024-04-06T15:15:00Z", "DTSTART:20240406T151500Z"),
    "Nuuk first 23:30": ("America/Nuuk", "2024-10-27T00:30:00Z", "DTSTART:20241027T003000Z"),
    "Nuuk second 23:30": ("America/Nuuk", "2024-10-27T01:30:00Z", "DTSTART:20241027T013000Z"),
}
# The hour after each fold: no wall time repeats, the native TZID stays.
AFTER = {
    "LA 02:30": ("America/Los_Angeles", "2024-11-03T10:30:00Z", "DTSTART;TZID=America/Los_Angeles:20241103T023000"),
    "Berlin 03:30": ("Europe/Berlin", "2024-10-27T02:30:00Z", "DTSTART;TZID=Europe/Berlin:20241027T033000"),
    "Santiago 00:30": ("America/Santiago", "2024-04-07T04:30:00Z", "DTSTART;TZID=America/Santiago:20240407T003000"),
    "Lord Howe 02:15": (
        "Australia/Lord_Howe",
        "2024-04-06T15:45:00Z",
        "DTSTART;TZID=Australia/Lord_Howe:20240407T021500",
    ),
    "Nuuk 00:30": ("America/Nuuk", "2024-10-27T02:30:00Z", "DTSTART;TZID=America/Nuuk:20241027T003000"),
}


def instant(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def folds(kinds, kep, requester, release_team_member):
    release = Release.objects.create(
        slug="1.32", name="Kubernetes v1.32", zone="America/Los_Angeles",
        start_date=dt.date(2024, 9, 9), ga_date=dt.date(2024, 12, 11), status=Release.Status.ACTIVE,
    )  # fmt: skip
    release.team.add(release_team_member)
    tracking_set(release=release, enhancement=kep, stage="beta", status="tracked")
    code_freeze = milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze",
        at=tz.parse_wall_time("2024-11-01 19:00", "America/Los_Angeles"),
    )  # fmt: skip
    uids = {}
    for title, (zone, at, _) in {**FOLDS, **AFTER}.items():
        milestone = milestone_create(release=release, kind=kinds["other"], title=title, at=instant(at), zone=zone)
        uids[f"releasecal-milestone-{milestone.pk}@releasecal.local"] = title
    # The grant of the issue: the second 01:30 of 3 November 2024 in Los Angeles.
    request = exception_request_submit(
        enhancement=kep, milestone=code_freeze, requester=requester, fields=RequestFields(days=2),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )  # fmt: skip
    exception_request_approve(
        request=request, actor=release_team_member,
        granted_until=instant("2024-11-03T09:30:00Z"), granted_zone="America/Los_Angeles",
    )  # fmt: skip
    uids[f"releasecal-extension-{request.pk}@releasecal.local"] = "grant"
    bodies = {path: Client().get(path).content for path in ("/calendar/1.32.ics", "/calendar/kep/2400.ics")}
    return {"uids": uids, "bodies": bodies}


def raw_events(body: bytes) -> dict[str, str]:
    """SUMMARY -> the unfolded text of its VEVENT."""
    text = body.decode().replace("\r\n ", "")
    found = {}
    for block in text.split("BEGIN:VEVENT")[1:]:
        summary = next(line for line in block.split("\r\n") if line.startswith("SUMMARY:"))
        found[summary.removeprefix("SUMMARY:")] = block
    return found


def test_fold_instants_are_written_in_utc_and_the_hour_after_keeps_its_zone(folds):
    events = raw_events(folds["bodies"]["/calendar/1.32.ics"])
    by_title = {summary.removeprefix("[1.32] ").split(" (")[0]: block for summary, block in events.items()}
    for title, (_, _, line) in {**FOLDS, **AFTER}.items():
        assert f"\r\n{line}\r\n" in by_title[title], title


def test_every_parser_reads_the_fold_instants_exactly(folds, tmp_path):
    want = folds["uids"]
    expected = {title: at for title, (_, at, _) in {**FOLDS, **AFTER}.items()} | {"grant": "2024-11-03T09:30:00Z"}
    readers = {
        "icalendar": {path: read_icalendar(body) for path, body in folds["bodies"].items()},
        "vobject": {path: read_vobject(body) for path, body in folds["bodies"].items()},
        "ical.js": read_icaljs(folds["bodies"], tmp_path),
    }
    for reader, per_feed in readers.items():
        read = {}
        for events in per_feed.values():
            read |= {want[uid]: start for uid, (start, _) in events.items() if uid in want}
        assert read == expected, reader


def test_libical_finds_no_error_in_the_fold_feeds(folds, tmp_path):
    python = system_python_with_libical()
    files = []
    for index, body in enumerate(folds["bodies"].values()):
        file = tmp_path / f"fold-{index}.ics"
        file.write_bytes(body)
        files.append(str(file))
    result = subprocess.run([python, str(LIBICAL_CHECK), *files], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert all(errors == [] for errors in json.loads(result.stdout).values())


def test_a_fold_event_names_its_zone_in_words(folds):
    calendar = icalendar.Calendar.from_ical(folds["bodies"]["/calendar/kep/2400.ics"])
    (grant,) = (e for e in calendar.walk("VEVENT") if "extended for KEP-2400" in str(e["SUMMARY"]))
    assert str(grant["SUMMARY"]) == "[1.32] Code Freeze extended for KEP-2400 (01:30 PST Sunday 3 November 2024)"
    lines = str(grant["DESCRIPTION"]).split("\n")
    assert lines[1] == "Extended deadline: 01:30 PST Sunday 3 November 2024 (09:30 UTC Sunday 3 November 2024)"
    assert (
        "Time zone: America/Los_Angeles. This clock time occurs twice that night (the clocks go back), "
        "so the calendar entry is written in UTC: every calendar shows the right one."
    ) in lines
    (lord_howe,) = (e for e in calendar.walk("VEVENT") if "Lord Howe first" in str(e["SUMMARY"]))
    assert str(lord_howe["SUMMARY"]) == "[1.32] Lord Howe first 01:45 (01:45 UTC+11:00 Sunday 7 April 2024)"


def test_no_vtimezone_for_a_zone_only_fold_events_use(release, kinds):
    # The 1.31 fixture release: Los Angeles; one milestone in Nuuk, in its fold.
    milestone_create(
        release=release, kind=kinds["other"], title="Only fold", at=instant("2024-10-27T00:30:00Z"), zone="America/Nuuk"
    )
    body = Client().get("/calendar/1.31.ics").content
    assert b"TZID:America/Nuuk" not in body
    assert b"DTSTART:20241027T003000Z" in body
    assert tz.in_fold(instant("2024-10-27T00:30:00Z"), "America/Nuuk")
