"""Feeds spanning 2006-2030, read by three parsers as subscribed clients would.

The world: a release every year 2020-2030 in America/Los_Angeles (PST and PDT
deadlines), one in 2006 on either side of the old US rule (before the 2007 change), one
in America/Sao_Paulo across 2019 (DST abolished), one in AoE, a KEP tracked in several
releases with extensions granted in Europe/Istanbul (DST abolished 2016), Asia/Tokyo and
Europe/Berlin, a pending one, and a personal feed. Every feed kind (release, SIG, KEP,
personal, all.ics) is fetched once, then read by

- ical.js (Thunderbird's parser): ONE node process for all feeds, its timezone service
  shared between them;
- vobject: all feeds in this one process, with vobject's process-wide TZID cache;
- icalendar.

Every timed event's start (and end) must equal the REST API's instant, and every
event of the model must be seen.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess

import icalendar
import pytest
import vobject
from django.contrib.auth.models import User
from django.test import Client

from exceptions.models import ExceptionRequest
from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from feeds.services import feed_token_create
from releasecal import tz
from releasecal.models import EnhancementOwner, Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set
from tests.feeds.test_ical_clients import ICALJS_CHECK, node_binary
from tests.support.paths import ROOT

HOST = "releasecal.local"
LA = "America/Los_Angeles"


def _release(kinds, slug: str, zone: str, start: dt.date, ga: dt.date, timed: list[tuple[str, str]]) -> Release:
    release = Release.objects.create(
        slug=slug, name=f"Kubernetes v{slug}", zone=zone, start_date=start, ga_date=ga,
        status=Release.Status.RELEASED,
    )  # fmt: skip
    kind_slugs = ["enhancements-freeze", "prr-freeze", "code-freeze", "docs-freeze", "test-freeze"]
    for index, (title, wall) in enumerate(timed):
        milestone_create(
            release=release, kind=kinds[kind_slugs[index % len(kind_slugs)]], title=title,
            at=tz.parse_wall_time(wall, zone),
        )  # fmt: skip
    milestone_create(release=release, kind=kinds["ga"], title=f"v{slug} released", on_date=ga)
    return release


def _extension(kep, milestone, requester, decider, *, days=2, granted=None, zone=None, approve=True):
    request = exception_request_submit(
        enhancement=kep, milestone=milestone, requester=requester, fields=RequestFields(days=days),
        submitted_at=min(milestone.deadline + dt.timedelta(hours=1), tz.utc_now()),
    )  # fmt: skip
    if approve:
        exception_request_approve(request=request, actor=decider, granted_until=granted, granted_zone=zone)
    return request


@pytest.fixture
def decade(kinds, requester, release_team_member):
    releases = {}
    # The old US rule: DST from the first Sunday of April to the last of October.
    # 20 March and 1 November 2006 were PST (they would be PDT under the 2007 rule).
    releases["1.0"] = _release(
        kinds, "1.0", LA, dt.date(2006, 3, 1), dt.date(2006, 11, 30),
        [("Old-rule March freeze", "2006-03-20 19:00"), ("Old-rule summer freeze", "2006-06-15 19:00"),
         ("Old-rule November freeze", "2006-11-01 19:00")],
    )  # fmt: skip
    for year in range(2020, 2031):
        slug = f"1.{year - 2000}"
        releases[slug] = _release(
            kinds, slug, LA, dt.date(year, 1, 5), dt.date(year, 12, 1),
            [(f"Enhancements Freeze {year}", f"{year}-02-06 19:00"),
             (f"PRR Freeze {year}", f"{year}-03-12 17:00"),
             (f"Code Freeze {year}", f"{year}-07-01 19:00"),
             (f"Docs Freeze {year}", f"{year}-11-02 09:00")],
        )  # fmt: skip
    # Sao Paulo: DST (-02) in January 2019, abolished from November 2019.
    releases["1.14"] = _release(
        kinds, "1.14", "America/Sao_Paulo", dt.date(2019, 1, 2), dt.date(2020, 2, 1),
        [("Summer-time freeze", "2019-01-15 18:00"), ("Code Freeze", "2019-11-10 18:00"),
         ("Docs Freeze", "2020-01-15 18:00")],
    )  # fmt: skip
    releases["1.40"] = _release(
        kinds, "1.40", tz.AOE, dt.date(2029, 1, 5), dt.date(2029, 6, 1),
        [("Code Freeze", "2029-03-25 23:59"), ("Docs Freeze", "2029-10-30 23:59")],
    )  # fmt: skip

    for release in releases.values():  # deciding needs membership of the release's team
        release.leads.add(release_team_member)
    kep = enhancement_upsert(number=4000, title="A KEP over the years", owning_sig="node")
    other = enhancement_upsert(number=4001, title="Another", owning_sig="node")
    for slug in ("1.14", "1.20", "1.24", "1.28", "1.40", "1.0"):
        tracking_set(release=releases[slug], enhancement=kep, stage="beta")
    tracking_set(release=releases["1.24"], enhancement=other, stage="alpha")

    def freeze(slug, title):
        return releases[slug].milestones.get(title=title)

    # Istanbul: +03 all year since 2016 (it was +02/+03 before).
    _extension(
        kep, freeze("1.20", "Enhancements Freeze 2020"), requester, release_team_member,
        granted=tz.parse_wall_time("2020-02-09 23:59", "Europe/Istanbul"), zone="Europe/Istanbul",
    )  # fmt: skip
    _extension(
        kep, freeze("1.24", "Code Freeze 2024"), requester, release_team_member,
        granted=tz.parse_wall_time("2024-07-04 12:00", "Asia/Tokyo"), zone="Asia/Tokyo",
    )  # fmt: skip
    _extension(
        kep, freeze("1.28", "PRR Freeze 2028"), requester, release_team_member,
        granted=tz.parse_wall_time("2028-03-28 23:59", "Europe/Berlin"), zone="Europe/Berlin",
    )  # fmt: skip
    _extension(kep, freeze("1.14", "Code Freeze"), requester, release_team_member)
    _extension(kep, freeze("1.40", "Code Freeze"), requester, release_team_member)
    _extension(kep, freeze("1.0", "Old-rule summer freeze"), requester, release_team_member, approve=False)
    _extension(other, freeze("1.24", "Docs Freeze 2024"), requester, release_team_member, approve=False)

    owner = User.objects.create_user("decade-owner")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=owner)
    releases["1.30"].leads.add(owner)
    token = feed_token_create(user=owner).token
    paths = [f"/calendar/{slug}.ics" for slug in sorted(releases)]
    paths += [
        "/calendar/1.24/sig/node.ics",
        "/calendar/kep/4000.ics",
        "/calendar/kep/4001.ics",
        "/calendar/all.ics?since=2000",
        f"/calendar/u/{token}.ics",
    ]
    bodies = {}
    for path in paths:
        response = Client().get(path)
        assert response.status_code == 200, (path, response.content[:300])
        bodies[path] = response.content
    return {"releases": releases, "bodies": bodies}


def api_instants(releases) -> dict[str, tuple[str, str | None]]:
    """UID -> (start, end) in UTC as the REST API reports them."""
    client = Client()
    found: dict[str, tuple[str, str | None]] = {}
    # Every release, also those other fixtures made (release_team_member's release).
    for slug in Release.objects.values_list("slug", flat=True):
        response = client.get(f"/api/v1/releases/{slug}/milestones/?limit=1000")
        assert response.status_code == 200, response.content
        for row in response.json()["results"]:
            if row["at"]:
                found[f"releasecal-milestone-{row['id']}@{HOST}"] = (row["at"], row.get("ends_at"))
    for request in ExceptionRequest.objects.all():
        row = client.get(f"/api/v1/exceptions/{request.pk}/").json()
        value = row.get("effective_deadline") if request.state == "approved" else row.get("default_granted_until")
        assert value, row
        found[f"releasecal-extension-{request.pk}@{HOST}"] = (value, None)
    return found


def _z(value: dt.datetime) -> str:
    return tz.isoformat_utc(value)


def read_vobject(body: bytes) -> dict[str, tuple[str, str | None]]:
    calendar = vobject.readOne(body.decode())
    found = {}
    for event in calendar.vevent_list:
        start = event.dtstart.value
        if not isinstance(start, dt.datetime):
            continue
        assert start.tzinfo is not None, event.uid.value
        end = event.dtend.value if hasattr(event, "dtend") else None
        found[event.uid.value] = (_z(start), _z(end) if end else None)
    return found


def read_icalendar(body: bytes) -> dict[str, tuple[str, str | None]]:
    calendar = icalendar.Calendar.from_ical(body)
    found = {}
    for event in calendar.walk("VEVENT"):
        start = event.decoded("DTSTART")
        if not isinstance(start, dt.datetime):
            continue
        assert start.tzinfo is not None, str(event["UID"])
        end = event.decoded("DTEND") if "DTEND" in event else None
        found[str(event["UID"])] = (_z(start), _z(end) if end else None)
    return found


def read_icaljs(bodies: dict[str, bytes], tmp_path) -> dict[str, dict[str, tuple[str, str | None]]]:
    node = node_binary()
    files = {}
    for index, (path, body) in enumerate(bodies.items()):
        file = tmp_path / f"feed-{index}.ics"
        file.write_bytes(body)
        files[str(file)] = path
    env = {**os.environ, "TZ": "Pacific/Kiritimati"}  # far from every feed zone
    result = subprocess.run(
        [node, str(ICALJS_CHECK), *files], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )
    assert result.returncode == 0, result.stderr
    parsed = json.loads(result.stdout)
    found = {}
    for file, feed in parsed.items():
        events = {}
        for event in feed["events"]:
            if "utc" not in event["start"]:
                continue
            end = event["end"]["utc"] if event["end"] else None
            events[event["uid"]] = (event["start"]["utc"], end)
        found[files[file]] = events
    return found


def test_every_parser_reads_every_instant_of_every_feed_over_ten_years(decade, tmp_path):
    bodies = decade["bodies"]
    api = api_instants(decade["releases"])
    assert len(api) > 55
    readers = {
        "ical.js": read_icaljs(bodies, tmp_path),
        "vobject": {path: read_vobject(body) for path, body in bodies.items()},
        "icalendar": {path: read_icalendar(body) for path, body in bodies.items()},
    }
    wrong = []
    for reader, per_feed in readers.items():
        seen = set()
        for path, events in per_feed.items():
            assert events, (reader, path)
            for uid, (start, end) in events.items():
                want_start, want_end = api[uid]
                if start != want_start or (want_end and end != want_end):
                    wrong.append((reader, path, uid, start, want_start, end, want_end))
                seen.add(uid)
        assert seen == set(api), (reader, set(api) - seen)
    assert not wrong, wrong[:10]
    # One canonical VTIMEZONE per TZID: identical bytes in every feed that uses it.
    definitions: dict[str, set[bytes]] = {}
    for body in bodies.values():
        for component in icalendar.Calendar.from_ical(body).walk("VTIMEZONE"):
            definitions.setdefault(str(component["TZID"]), set()).add(component.to_ical())
    assert {key for key, found in definitions.items() if len(found) > 1} == set()
    assert {"America/Los_Angeles", "America/Sao_Paulo", "Etc/GMT+12", "Europe/Istanbul", "Asia/Tokyo"} <= set(
        definitions
    )


def test_the_instants_on_either_side_of_rule_changes_are_the_right_ones(decade):
    api = api_instants(decade["releases"])
    by_title = {}
    for release in decade["releases"].values():
        for milestone in release.milestones.all():
            uid = f"releasecal-milestone-{milestone.pk}@{HOST}"
            if uid in api:
                by_title[(release.slug, milestone.title)] = api[uid][0]
    # Old US rule: PST on 20 March and 1 November 2006.
    assert by_title[("1.0", "Old-rule March freeze")] == "2006-03-21T03:00:00Z"
    assert by_title[("1.0", "Old-rule November freeze")] == "2006-11-02T03:00:00Z"
    assert by_title[("1.20", "PRR Freeze 2020")] == "2020-03-13T00:00:00Z"  # PDT under the 2007 rule
    # Sao Paulo: -02 in January 2019, -03 from then on.
    assert by_title[("1.14", "Summer-time freeze")] == "2019-01-15T20:00:00Z"
    assert by_title[("1.14", "Code Freeze")] == "2019-11-10T21:00:00Z"
    assert by_title[("1.14", "Docs Freeze")] == "2020-01-15T21:00:00Z"


LIBICAL_CHECK = ROOT / "tests" / "support" / "libical_check.py"


def system_python_with_libical() -> str:
    """The system python3 that can import libical through GObject introspection."""
    python = shutil.which("python3", path="/usr/bin:/bin") or ""
    probe = "import gi; gi.require_version('ICalGLib', '3.0'); from gi.repository import ICalGLib"
    if python and subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0:
        return python
    if os.environ.get("CI") == "true":
        pytest.fail("libical is required in CI (make test installs gir1.2-ical-3.0 and python3-gi)")
    pytest.skip("libical (gir1.2-ical-3.0 + python3-gi) is not installed")
    return ""


def test_libical_finds_no_error_in_any_feed(decade, tmp_path):
    python = system_python_with_libical()
    files = {}
    for index, (path, body) in enumerate(decade["bodies"].items()):
        file = tmp_path / f"feed-{index}.ics"
        file.write_bytes(body)
        files[str(file)] = path
    result = subprocess.run([python, str(LIBICAL_CHECK), *files], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    found = {files[file]: errors for file, errors in json.loads(result.stdout).items()}
    assert set(found) == set(decade["bodies"])
    assert {path: errors for path, errors in found.items() if errors} == {}


def test_the_libical_check_does_report_errors(tmp_path):
    python = system_python_with_libical()
    bad = tmp_path / "bad.ics"
    bad.write_bytes(
        b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nMETHOD:PUBLISH\r\nBEGIN:VEVENT\r\nUID:a\r\n"
        b"DTSTAMP:20240101T000000Z\r\nDTSTART:2024XX\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    result = subprocess.run([python, str(LIBICAL_CHECK), str(bad)], capture_output=True, text=True, timeout=60)
    errors = json.loads(result.stdout)[str(bad)]
    assert any("ORGANIZER" in error for error in errors)  # METHOD:PUBLISH without an organizer
    assert any("DTSTART" in error for error in errors)
