"""Deadline wording in feeds (issue 16): SUMMARY and DESCRIPTION say a deadline at the
first instant of a local day as the end of the day before, the way people say it; the
iCal instant does not change. Hand-worked strings for AoE, a DST zone at 00:00 on both
transition days, UTC+05:45 and America/Santiago, whose midnight is skipped the day its
summer time starts. A timed deadline is a point in time (DURATION:P0D), read so by
icalendar and ical.js."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest
from django.test import Client

from exceptions.services import RequestFields, exception_request_submit
from releasecal import tz
from releasecal.models import Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set
from tests.feeds.test_ical_clients import node_binary, run_icaljs

CASES = [
    # zone, wall time, instant UTC, SUMMARY, "When:" line, AoE line (None: zone is AoE), DTSTART
    (
        "AoE",
        dt.datetime(2026, 12, 11, 12, 0),
        "[9.1] Code Freeze (end of Thursday 10 December 2026 AoE)",
        "When: end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
        None,
        "DTSTART;TZID=Etc/GMT+12:20261211T000000",
    ),
    (
        "America/Los_Angeles",
        dt.datetime(2026, 3, 8, 8, 0),
        "[9.2] Code Freeze (end of Saturday 7 March 2026 PST)",
        "When: end of Saturday 7 March 2026 PST (08:00 UTC Sunday 8 March 2026)",
        "AoE: 20:00 AoE Saturday 7 March 2026",
        "DTSTART;TZID=America/Los_Angeles:20260308T000000",
    ),
    (
        "America/Los_Angeles",
        dt.datetime(2026, 11, 1, 7, 0),
        "[9.3] Code Freeze (end of Saturday 31 October 2026 PDT)",
        "When: end of Saturday 31 October 2026 PDT (07:00 UTC Sunday 1 November 2026)",
        "AoE: 19:00 AoE Saturday 31 October 2026",
        "DTSTART;TZID=America/Los_Angeles:20261101T000000",
    ),
    (
        "Asia/Kathmandu",
        dt.datetime(2026, 6, 11, 18, 15),
        "[9.4] Code Freeze (end of Thursday 11 June 2026 UTC+05:45)",
        "When: end of Thursday 11 June 2026 UTC+05:45 (18:15 UTC Thursday 11 June 2026)",
        "AoE: 06:15 AoE Thursday 11 June 2026",
        "DTSTART;TZID=Asia/Kathmandu:20260612T000000",
    ),
    (
        "Asia/Kathmandu",
        dt.datetime(2026, 6, 12, 11, 15),
        "[9.5] Code Freeze",
        "When: 17:00 UTC+05:45 Friday 12 June 2026 (11:15 UTC Friday 12 June 2026)",
        "AoE: 23:15 AoE Thursday 11 June 2026",
        "DTSTART;TZID=Asia/Kathmandu:20260612T170000",
    ),
    (
        # 00:00 does not exist on Sunday 6 September 2026 in Chile: the day starts at 01:00 -03.
        "America/Santiago",
        dt.datetime(2026, 9, 6, 4, 0),
        "[9.6] Code Freeze (end of Saturday 5 September 2026 UTC-03:00)",
        "When: end of Saturday 5 September 2026 UTC-03:00 (04:00 UTC Sunday 6 September 2026)",
        "AoE: 16:00 AoE Saturday 5 September 2026",
        "DTSTART;TZID=America/Santiago:20260906T010000",
    ),
]


def make(kinds, n: int, zone: str, instant_utc: dt.datetime):
    release = Release.objects.create(slug=f"9.{n}", name=f"v9.{n}", zone=zone, start_date=dt.date(2026, 1, 5))
    at = instant_utc.replace(tzinfo=dt.UTC)
    return milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze", at=at)


def unfolded_event(body: bytes, uid: str) -> str:
    text = body.decode().replace("\r\n ", "")
    return next(b for b in text.split("BEGIN:VEVENT") if f"UID:{uid}\r\n" in b).split("END:VEVENT")[0]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_a_deadline_is_worded_as_people_say_it_and_its_instant_is_unchanged(kinds, case, tmp_path):
    zone, instant, summary, when, aoe, dtstart = CASES[case]
    milestone = make(kinds, case + 1, zone, instant)
    response = Client().get(f"/calendar/{milestone.release.slug}.ics")
    assert response.status_code == 200
    uid = f"releasecal-milestone-{milestone.pk}@releasecal.local"
    block = unfolded_event(response.content, uid)
    assert f"SUMMARY:{summary}\r\n" in block
    description = block.split("DESCRIPTION:")[1].split("\r\n")[0].split("\\n")
    assert description[1] == when
    if aoe is None:
        assert not any(line.startswith("AoE:") for line in description)
    else:
        assert description[2] == aoe
    assert f"{dtstart}\r\n" in block
    assert "DURATION:P0D\r\n" in block
    assert "DTEND" not in block
    # icalendar and ical.js read the same instant, and a zero-length event.
    event = next(e for e in icalendar.Calendar.from_ical(response.content).walk("VEVENT") if str(e["UID"]) == uid)
    assert event.decoded("DTSTART").astimezone(dt.UTC) == instant.replace(tzinfo=dt.UTC)
    assert event.decoded("DURATION") == dt.timedelta(0)
    ics = tmp_path / "w.ics"
    ics.write_bytes(response.content)
    seen = next(e for e in run_icaljs(node_binary(), ics)["events"] if e["uid"] == uid)
    assert seen["start"]["utc"] == instant.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert seen["end"]["utc"] == seen["start"]["utc"]


def test_the_exception_window_and_a_pending_extension_are_worded_as_deadlines(kinds, requester):
    milestone = make(kinds, 1, "AoE", dt.datetime(2026, 12, 11, 12, 0))
    body = Client().get("/calendar/9.1.ics").content
    block = unfolded_event(body, f"releasecal-milestone-{milestone.pk}@releasecal.local")
    assert (
        "Exceptions may be requested until end of Sunday 13 December 2026 AoE "
        "(12:00 UTC Monday 14 December 2026) (72 hours after the freeze)."
    ) in block.replace("\\n", "\n").replace("\\,", ",")
    kep = enhancement_upsert(number=9100, title="Worded", owning_sig="node", participating_sigs=["node"], owners=[])
    tracking_set(release=milestone.release, enhancement=kep, stage="beta", status="tracked")
    request = exception_request_submit(
        enhancement=kep, milestone=milestone, requester=requester,
        fields=RequestFields(days=3, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=tz.utc_now() - dt.timedelta(hours=1),
    )  # fmt: skip
    body = Client().get("/calendar/kep/9100.ics").content
    block = unfolded_event(body, f"releasecal-extension-{request.pk}@releasecal.local")
    block = block.replace("\\,", ",").replace("\\;", ";")
    assert (
        "SUMMARY:[9.1] Code Freeze extension requested for KEP-9100 (pending) (end of Sunday 13 December 2026 AoE)"
        in block
    )
    assert (
        "Requested: 3 more days; if approved as asked the deadline would be "
        "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)."
    ) in block
    assert "Original Code Freeze: end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)\\n" in block
