"""The iCal writer: what each event says, and that it says it the way RFC 5545 and
calendar clients need (native TZID + VTIMEZONE, stable UID, SEQUENCE, CANCELLED)."""

from __future__ import annotations

import datetime as dt
import re

import icalendar
import pytest
from django.test import Client, override_settings
from hypothesis import given, settings
from hypothesis import strategies as st

from exceptions.services import (
    RequestFields,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_withdraw,
)
from feeds import ical
from feeds.vtimezone import vtimezone
from releasecal import tz
from releasecal.services import milestone_cancel, milestone_save
from tests.support.feeds_data import aoe_release


def fetch(path: str) -> bytes:
    response = Client().get(path)
    assert response.status_code == 200, response.content
    return response.content


def parse(body: bytes) -> icalendar.Calendar:
    return icalendar.Calendar.from_ical(body)


def events(body: bytes) -> dict[str, icalendar.Event]:
    return {str(e["UID"]): e for e in parse(body).walk("VEVENT")}


def raw_event(body: bytes, uid: str) -> str:
    text = body.decode().replace("\r\n ", "")
    block = next(b for b in text.split("BEGIN:VEVENT") if f"UID:{uid}\r\n" in b)
    return block.split("END:VEVENT")[0]


def test_it_writes_a_timed_deadline_in_its_native_zone_with_one_vtimezone(release, code_freeze):
    body = fetch("/calendar/1.31.ics")
    event = raw_event(body, f"releasecal-milestone-{code_freeze.pk}@releasecal.local")
    assert "DTSTART;TZID=America/Los_Angeles:20240723T190000" in event
    assert "DTEND;TZID=America/Los_Angeles:20240807T190000" in event
    cal = parse(body)
    tzids = [str(t["TZID"]) for t in cal.walk("VTIMEZONE")]
    assert tzids == ["America/Los_Angeles"]
    assert cal.get_missing_tzids() == set()
    # The canonical VTIMEZONE: the current US rule as open-ended RRULEs (from 2007), the
    # older onsets as one-value RDATE lines; the same bytes as in any other feed.
    text = body.decode()
    assert "TZNAME:PDT" in text
    assert "TZOFFSETTO:-0700" in text
    assert "RRULE:FREQ=YEARLY;BYDAY=2SU;BYMONTH=3" in text
    assert "RDATE:20060402T020000" in text
    assert vtimezone("America/Los_Angeles").to_ical().decode() in text


def test_it_writes_date_only_milestones_as_all_day_with_exclusive_end(release):
    body = fetch("/calendar/1.31.ics")
    ga = release.milestones.get(kind__slug="ga")
    event = raw_event(body, f"releasecal-milestone-{ga.pk}@releasecal.local")
    assert "DTSTART;VALUE=DATE:20240813" in event
    assert "DTEND;VALUE=DATE:20240814" in event


def test_a_date_window_ends_the_day_after_its_last_day(release, kinds):
    from releasecal.services import milestone_create

    window = milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs review",
        on_date=dt.date(2024, 7, 1), ends_on=dt.date(2024, 7, 5),
    )  # fmt: skip
    event = raw_event(fetch("/calendar/1.31.ics"), f"releasecal-milestone-{window.pk}@releasecal.local")
    assert "DTSTART;VALUE=DATE:20240701" in event
    assert "DTEND;VALUE=DATE:20240706" in event


def test_every_event_has_uid_dtstamp_last_modified_sequence_status_and_summary(release, code_freeze):
    body = fetch("/calendar/1.31.ics")
    found = events(body)
    assert len(found) == 4
    for uid, event in found.items():
        assert re.fullmatch(r"releasecal-milestone-\d+@releasecal\.local", uid)
        for prop in ("DTSTAMP", "LAST-MODIFIED", "SEQUENCE", "STATUS", "SUMMARY", "DESCRIPTION"):
            assert prop in event, (uid, prop)
    text = body.decode()
    assert re.search(r"^DTSTAMP:\d{8}T\d{6}Z\r$", text, re.M)
    assert re.search(r"^LAST-MODIFIED:\d{8}T\d{6}Z\r$", text, re.M)
    assert str(found[f"releasecal-milestone-{code_freeze.pk}@releasecal.local"]["SUMMARY"]) == "[1.31] Code Freeze"


def test_the_description_shows_native_utc_aoe_link_and_the_exception_rule(release, code_freeze):
    event = events(fetch("/calendar/1.31.ics"))[f"releasecal-milestone-{code_freeze.pk}@releasecal.local"]
    description = str(event["DESCRIPTION"])
    assert "19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)" in description
    assert "AoE: 14:00 AoE Tuesday 23 July 2024" in description
    assert "Exceptions may be requested until 19:00 PDT Friday 26 July 2024" in description
    assert "(72 hours after the freeze)" in description
    assert "http://127.0.0.1:8000/releases/1.31/" in description


def test_the_calendar_carries_the_publishing_properties(release):
    text = fetch("/calendar/1.31.ics").decode()
    for line in (
        "VERSION:2.0",
        "CALSCALE:GREGORIAN",
        "X-WR-CALNAME:Kubernetes v1.31 (releasecal)",
        "REFRESH-INTERVAL;VALUE=DURATION:PT1H",
        "X-PUBLISHED-TTL:PT1H",
    ):
        assert f"\r\n{line}\r\n" in text
    assert text.startswith("BEGIN:VCALENDAR\r\n")
    assert text.endswith("END:VCALENDAR\r\n")
    assert "PRODID:" in text
    assert "\r\nMETHOD:" not in text  # a published calendar, not an iTIP message


def test_lines_are_crlf_and_folded_at_75_octets(release):
    body = fetch("/calendar/1.31.ics")
    assert b"\n" not in body.replace(b"\r\n", b"")
    lines = body.split(b"\r\n")
    assert all(len(line) <= 75 for line in lines)
    assert any(line.startswith(b" ") for line in lines), "long descriptions must be folded"


@override_settings(SITE_HOST="cal.example.org")
def test_uids_use_the_site_host(release, code_freeze):
    assert f"releasecal-milestone-{code_freeze.pk}@cal.example.org" in events(fetch("/calendar/1.31.ics"))


def test_the_same_data_gives_byte_identical_feeds_whatever_the_clock(release, kep, pending_request, monkeypatch):
    from feeds.cache import feed_version_bump

    first = fetch("/calendar/1.31/sig/node.ics")
    feed_version_bump()  # a new version: the next request builds it again
    monkeypatch.setattr(tz, "utc_now", lambda: dt.datetime(2031, 1, 1, tzinfo=dt.UTC))
    assert fetch("/calendar/1.31/sig/node.ics") == first


def test_editing_a_milestone_bumps_its_sequence_and_last_modified(release, code_freeze):
    uid = f"releasecal-milestone-{code_freeze.pk}@releasecal.local"
    before = events(fetch("/calendar/1.31.ics"))[uid]
    code_freeze.at = code_freeze.at + dt.timedelta(days=1)
    milestone_save(milestone=code_freeze)
    after = events(fetch("/calendar/1.31.ics"))[uid]
    assert int(after["SEQUENCE"]) == int(before["SEQUENCE"]) + 1
    assert after["DTSTART"].dt == tz.to_zone(code_freeze.at, "America/Los_Angeles")
    assert after["LAST-MODIFIED"].dt >= before["LAST-MODIFIED"].dt


def test_a_cancelled_milestone_stays_in_the_feed_as_cancelled(release, code_freeze):
    uid = f"releasecal-milestone-{code_freeze.pk}@releasecal.local"
    milestone_cancel(milestone=code_freeze)
    event = events(fetch("/calendar/1.31.ics"))[uid]
    assert str(event["STATUS"]) == "CANCELLED"
    assert int(event["SEQUENCE"]) == 1 + ical.SEQUENCE_FORMAT
    assert "removed from the schedule" in str(event["DESCRIPTION"])


def test_an_aoe_deadline_uses_etc_gmt_plus_12_and_says_aoe(kinds):
    release = aoe_release(kinds)
    code_freeze = release.milestones.get(kind__slug="code-freeze")
    body = fetch(f"/calendar/{release.slug}.ics")
    event = raw_event(body, f"releasecal-milestone-{code_freeze.pk}@releasecal.local")
    # End of day 6 November AoE = 7 November 00:00 AoE = 7 November 12:00 UTC.
    assert "DTSTART;TZID=Etc/GMT+12:20251107T000000" in event
    assert "SUMMARY:[1.35] Code Freeze (end of Thursday 6 November 2025 AoE)" in event
    assert "end of Thursday 6 November 2025 AoE (12:00 UTC Friday 7 November 2025)" in event.replace("\\", "")
    vtimezone = next(t for t in parse(body).walk("VTIMEZONE") if str(t["TZID"]) == "Etc/GMT+12")
    standard = vtimezone.walk("STANDARD")
    assert [str(s["TZNAME"]) for s in standard] == ["AoE"]
    assert standard[0]["TZOFFSETTO"].td == dt.timedelta(hours=-12)


# -------------------------------------------------------------- extension events


def extension_uid(request) -> str:
    return f"releasecal-extension-{request.pk}@releasecal.local"


def test_a_pending_request_is_a_tentative_event(release, kep, pending_request):
    event = events(fetch("/calendar/kep/2400.ics"))[extension_uid(pending_request)]
    assert str(event["STATUS"]) == "TENTATIVE"
    assert int(event["SEQUENCE"]) == 0 + ical.SEQUENCE_FORMAT
    assert "pending" in str(event["SUMMARY"])


def test_an_approved_request_shows_the_granted_time_names_the_freeze_and_has_its_own_uid(
    release, kep, pending_request, release_team_member, code_freeze
):
    granted = tz.parse_wall_time("2024-07-26 18:00", "Europe/Berlin")
    exception_request_approve(
        request=pending_request, actor=release_team_member, granted_until=granted, granted_zone="Europe/Berlin"
    )
    body = fetch("/calendar/kep/2400.ics")
    event = events(body)[extension_uid(pending_request)]
    assert str(event["STATUS"]) == "CONFIRMED"
    assert int(event["SEQUENCE"]) == 1 + ical.SEQUENCE_FORMAT
    assert "DTSTART;TZID=Europe/Berlin:20240726T180000" in raw_event(body, extension_uid(pending_request))
    assert {str(t["TZID"]) for t in parse(body).walk("VTIMEZONE")} == {"America/Los_Angeles", "Europe/Berlin"}
    description = str(event["DESCRIPTION"])
    assert (
        "Original Code Freeze: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024) "
        "/ 14:00 AoE Tuesday 23 July 2024"
    ) in description
    assert "Extended deadline: 18:00 CEST Friday 26 July 2024 (16:00 UTC Friday 26 July 2024)" in description
    # The milestone keeps its own event and UID.
    assert f"releasecal-milestone-{code_freeze.pk}@releasecal.local" in events(body)
    # The SIG feed it belongs to shows it too; another SIG's does not.
    assert extension_uid(pending_request) in events(fetch("/calendar/1.31/sig/node.ics"))


def test_the_extension_event_uses_the_effective_deadline(release, kep, pending_request, release_team_member):
    from exceptions.selectors import kep_effective_deadline

    exception_request_approve(request=pending_request, actor=release_team_member)
    deadline = kep_effective_deadline(enhancement=kep, milestone=pending_request.milestone)
    assert deadline.is_extension
    event = events(fetch("/calendar/kep/2400.ics"))[extension_uid(pending_request)]
    assert event["DTSTART"].dt.astimezone(dt.UTC) == deadline.instant


@pytest.mark.parametrize("how", ["withdraw", "reject"])
def test_withdrawing_or_rejecting_cancels_the_extension_event_with_a_higher_sequence(
    release, kep, pending_request, release_team_member, requester, how
):
    uid = extension_uid(pending_request)
    before = events(fetch("/calendar/kep/2400.ics"))[uid]
    if how == "withdraw":
        exception_request_withdraw(request=pending_request, actor=requester)
    else:
        exception_request_reject(request=pending_request, actor=release_team_member)
    after = events(fetch("/calendar/kep/2400.ics"))[uid]
    assert str(after["STATUS"]) == "CANCELLED"
    assert int(after["SEQUENCE"]) > int(before["SEQUENCE"])


def test_amending_the_days_moves_the_tentative_event_and_bumps_its_sequence(release, kep, pending_request, requester):
    uid = extension_uid(pending_request)
    before = events(fetch("/calendar/kep/2400.ics"))[uid]
    exception_request_amend(request=pending_request, actor=requester, fields=RequestFields(days=4))
    after = events(fetch("/calendar/kep/2400.ics"))[uid]
    assert int(after["SEQUENCE"]) == int(before["SEQUENCE"]) + 1
    assert after["DTSTART"].dt - before["DTSTART"].dt == dt.timedelta(days=2)


def test_moving_the_freeze_bumps_the_sequence_of_its_extension_events(release, kep, pending_request, code_freeze):
    uid = extension_uid(pending_request)
    before = events(fetch("/calendar/kep/2400.ics"))[uid]
    code_freeze.at = code_freeze.at + dt.timedelta(hours=2)
    milestone_save(milestone=code_freeze)
    after = events(fetch("/calendar/kep/2400.ics"))[uid]
    assert int(after["SEQUENCE"]) > int(before["SEQUENCE"])


def test_extension_sequence_never_goes_down_through_the_lifecycle():
    from feeds.ical import extension_sequence

    steps = [
        extension_sequence(milestone_sequence=0, revisions=1, state="pending"),
        extension_sequence(milestone_sequence=0, revisions=2, state="pending"),
        extension_sequence(milestone_sequence=1, revisions=2, state="pending"),
        extension_sequence(milestone_sequence=1, revisions=2, state="approved"),
        extension_sequence(milestone_sequence=2, revisions=2, state="approved"),
    ]
    assert steps == sorted(steps)
    assert len(set(steps)) == len(steps)


def test_a_feed_only_holds_its_own_sigs_extensions(release, kep, pending_request):
    from releasecal.services import enhancement_upsert

    enhancement_upsert(number=9999, title="Other", owning_sig="storage")
    assert extension_uid(pending_request) not in events(fetch("/calendar/1.31/sig/storage.ics"))
    assert extension_uid(pending_request) not in events(fetch("/calendar/1.31.ics"))


def test_control_characters_from_notes_never_reach_the_feed(release, code_freeze, kep, pending_request):
    # Issue 13 item 11: \x0b, \x1b (and every other control but the line break) are dropped.
    code_freeze.title = "Code\x1b[31m Freeze\x07"
    code_freeze.description = "Line one\x0bstill one\r\nline two\x1b]0;title\x07\x7f\x85 end\tTab"
    milestone_save(milestone=code_freeze)
    body = fetch("/calendar/1.31.ics")
    text = body.decode()
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]", text)
    event = events(body)[f"releasecal-milestone-{code_freeze.pk}@releasecal.local"]
    assert str(event["SUMMARY"]) == "[1.31] Code[31m Freeze"
    assert "Line onestill one\nline two]0;title end\tTab" in str(event["DESCRIPTION"])


# Long runs of the characters the fold must not split (an escape and what it escapes),
# beside plain text and a few non-ASCII ones (folded by icalendar itself).
FOLD_TEXT = st.text(alphabet=st.sampled_from('ab ,;:\\^"n=é€😀'), max_size=400)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["DESCRIPTION", "X-A"]), text=FOLD_TEXT)
def test_a_line_is_folded_as_icalendar_folds_it(name, text):
    """ical.folded cuts lines in slices for speed (issue 27): the bytes are icalendar's own."""
    line = icalendar.parser.Contentline.from_parts(name, icalendar.Parameters(), icalendar.vText(text))
    assert ical.folded(line) == line.to_ical()


def test_a_feed_is_written_as_icalendar_writes_it(release, kep, pending_request, code_freeze):
    calendar = icalendar.Calendar.from_ical(Client().get("/calendar/1.31/sig/node.ics").content)
    assert len(calendar.walk("VEVENT")) > 1
    assert calendar.walk("VTIMEZONE")
    assert ical.serialised(calendar) == calendar.to_ical()


def deadline_events(count: int, at: dt.datetime, zone: str) -> list[ical.CalendarEvent]:
    stamp = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)
    return [
        ical.CalendarEvent(
            uid=f"e{n}",
            summary=f"Deadline {n}",
            description="d",
            sequence=2,
            last_modified=stamp,
            status="CONFIRMED",
            start=at,
            zone=zone,
            url="https://example.org/x/",
            categories=("Exception",),
        )
        for n in range(count)
    ]


def test_a_value_the_events_of_a_feed_share_is_encoded_once(monkeypatch):
    """Issue 27: 300 extensions of one freeze share their DTSTART, DTSTAMP, DURATION...:
    each is encoded once per feed, whatever the number of events."""
    zone = "America/Los_Angeles"
    at = tz.parse_wall_time("2024-10-01 19:00", zone)
    vtimezone(tz.iana_name(zone))  # built once per process, not counted here
    encoded: list[object] = []
    original = icalendar.vDDDTypes.__init__

    def counting(self, value, *args, **kwargs):
        encoded.append(value)
        original(self, value, *args, **kwargs)

    monkeypatch.setattr(icalendar.vDDDTypes, "__init__", counting)
    few = ical.calendar_bytes(name="n", description="d", events=deadline_events(3, at, zone))
    counted_few, encoded[:] = len(encoded), []
    many = ical.calendar_bytes(name="n", description="d", events=deadline_events(60, at, zone))
    assert few.count(b"BEGIN:VEVENT") == 3
    assert many.count(b"BEGIN:VEVENT") == 60
    assert many.count(b"DTSTART;TZID=America/Los_Angeles:20241001T190000") == 60
    assert len(encoded) == counted_few


def test_a_shared_value_is_kept_apart_by_zone_and_fold():
    """Equal instants are different values on the page in different zones (and a wall
    time in a fold compares equal to its twin): neither may take the other's encoding."""
    values = ical._Values()
    instant = dt.datetime(2024, 10, 2, 2, 0, tzinfo=dt.UTC)
    native = tz.to_zone(instant, "America/Los_Angeles")
    assert values("dtstart", native).to_ical() == b"20241001T190000"
    assert values("dtstart", instant).to_ical() == b"20241002T020000Z"
    first = dt.datetime(2024, 11, 3, 1, 30, tzinfo=native.tzinfo)
    second = first.replace(fold=1)
    assert first == second  # Python compares wall times in one zone, fold aside
    assert values("dtstart", first) is not values("dtstart", second)
    assert values("dtstart", first) is values("dtstart", first.replace())
