"""The options of a feed URL (feeds/options.py), end to end over the test client:
``?alarm=`` on every feed (VALARM before each confirmed timed deadline, read back by
icalendar and ical.js), ``all.ics`` bounded to the last two years with ``?since=``, and
plain-text 400s for what we do not understand. Each variant is its own cache entry with
its own ETag."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils.http import http_date

from exceptions.services import exception_request_approve
from feeds.services import feed_token_create
from releasecal import tz
from releasecal.models import EnhancementOwner, Release
from releasecal.services import milestone_create
from tests.feeds.test_ical_clients import node_binary, run_icaljs


def get(path: str, **headers):
    return Client().get(path, headers=headers)


def vevents(body: bytes) -> dict[str, icalendar.Event]:
    return {str(e["SUMMARY"]): e for e in icalendar.Calendar.from_ical(body).walk("VEVENT")}


def triggers(event: icalendar.Event) -> list[tuple[str, dt.timedelta]]:
    return [(str(a["ACTION"]), a["TRIGGER"].dt) for a in event.walk("VALARM")]


@pytest.fixture
def approved(release, kep, pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)
    return pending_request


@pytest.fixture
def every_feed(release, kep, approved) -> list[str]:
    owner = User.objects.create_user("alarm-owner")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=owner)
    token = feed_token_create(user=owner).token
    return [
        "/calendar/1.31.ics",
        "/calendar/1.31/sig/node.ics",
        "/calendar/kep/2400.ics",
        "/calendar/all.ics?since=2020",
        f"/calendar/u/{token}.ics",
    ]


def with_query(path: str, query: str) -> str:
    return path + ("&" if "?" in path else "?") + query


# ------------------------------------------------------------------------ alarms


def test_no_alarm_unless_asked(every_feed):
    for path in every_feed:
        assert b"BEGIN:VALARM" not in get(path).content, path


def test_alarm_1d_puts_a_display_alarm_a_day_before_each_confirmed_timed_deadline(every_feed):
    for path in every_feed:
        response = get(with_query(path, "alarm=1d"))
        assert response.status_code == 200, path
        events = vevents(response.content)
        timed = [e for e in events.values() if isinstance(e["DTSTART"].dt, dt.datetime)]
        assert timed, path
        for summary, event in events.items():
            confirmed = str(event["STATUS"]) == "CONFIRMED"
            is_timed = isinstance(event["DTSTART"].dt, dt.datetime)
            want = [("DISPLAY", -dt.timedelta(days=1))] if confirmed and is_timed else []
            assert triggers(event) == want, (path, summary)
        text = response.content.decode()
        assert "BEGIN:VALARM\r\nACTION:DISPLAY\r\nDESCRIPTION:[1.31] Code Freeze\r\nTRIGGER:-P1D\r\nEND:VALARM" in text


def test_a_list_of_alarms_is_written_largest_first_and_read_by_icaljs(release, approved, tmp_path):
    response = get("/calendar/kep/2400.ics?alarm=30m,1d,2h")
    assert response.status_code == 200
    code_freeze = vevents(response.content)["[1.31] Code Freeze"]
    assert triggers(code_freeze) == [
        ("DISPLAY", -dt.timedelta(days=1)),
        ("DISPLAY", -dt.timedelta(hours=2)),
        ("DISPLAY", -dt.timedelta(minutes=30)),
    ]
    node = node_binary()
    ics = tmp_path / "alarm.ics"
    ics.write_bytes(response.content)
    by_summary = {e["summary"]: e for e in run_icaljs(node, ics)["events"]}
    assert by_summary["[1.31] Code Freeze"]["alarms"] == [
        {"action": "DISPLAY", "trigger": "-P1D", "seconds": -86400},
        {"action": "DISPLAY", "trigger": "-PT2H", "seconds": -7200},
        {"action": "DISPLAY", "trigger": "-PT30M", "seconds": -1800},
    ]
    assert by_summary["[1.31] v1.31 released"]["alarms"] == []  # all day


def test_spellings_of_the_same_alarms_share_one_feed(release):
    a = get("/calendar/1.31.ics?alarm=2h,1d")
    b = get("/calendar/1.31.ics?alarm=1d,120m")
    c = get("/calendar/1.31.ics?alarm=1d&alarm=2h")
    assert a.status_code == b.status_code == c.status_code == 200
    assert a.content == b.content == c.content
    assert a["ETag"] == b["ETag"] == c["ETag"]


def test_each_alarm_variant_has_its_own_etag_and_answers_304_to_its_own(release):
    plain = get("/calendar/1.31.ics")
    alarmed = get("/calendar/1.31.ics?alarm=1d")
    assert plain["ETag"] != alarmed["ETag"]
    assert plain["Last-Modified"] == alarmed["Last-Modified"]  # same data, same time
    assert get("/calendar/1.31.ics?alarm=1d", if_none_match=alarmed["ETag"]).status_code == 304
    assert get("/calendar/1.31.ics?alarm=1d", if_none_match=plain["ETag"]).status_code == 200
    assert get("/calendar/1.31.ics", if_none_match=alarmed["ETag"]).status_code == 200


ALLOWED_ALARMS = (
    "alarm= takes up to 3 comma-separated times before each timed deadline, each a whole number "
    "followed by d (days), h (hours) or m (minutes), from 1m to 14d: e.g. ?alarm=1d or ?alarm=1d,2h,30m.\n"
)


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("alarm=", "Unknown alarm ''."),
        ("alarm=1x", "Unknown alarm '1x'."),
        ("alarm=-1d", "Unknown alarm '-1d'."),
        ("alarm=P1D", "Unknown alarm 'p1d'.".replace("p1d", "P1D")),
        ("alarm=1.5h", "Unknown alarm '1.5h'."),
        ("alarm=1d,,2h", "Unknown alarm ''."),
        ("alarm=0m", "Alarm '0m' is out of range."),
        ("alarm=15d", "Alarm '15d' is out of range."),
        ("alarm=99999d", "Alarm '99999d' is out of range."),
        ("alarm=1d,2h,30m,10m", "Too many alarms (4)."),
    ],
)
def test_a_bad_alarm_is_a_plain_text_400_saying_what_is_allowed(every_feed, query, first):
    for path in every_feed:
        response = get(with_query(path, query))
        assert response.status_code == 400, (path, query)
        assert response["Content-Type"] == "text/plain; charset=utf-8"
        assert response.content.decode() == f"{first} {ALLOWED_ALARMS}", path


# ------------------------------------------------------------------ all.ics since


@pytest.fixture
def today(monkeypatch):
    """Set the service's today (UTC) for the test; returns a setter."""

    def set_today(day: dt.date) -> None:
        now = dt.datetime.combine(day, dt.time(12), tzinfo=dt.UTC)
        monkeypatch.setattr(tz, "utc_now", lambda: now)

    return set_today


@pytest.fixture
def old_release(kinds) -> Release:
    """A release whose last milestone is Friday 1 March 2019 (a date)."""
    old = Release.objects.create(
        slug="1.14", name="Kubernetes v1.14", zone="America/Los_Angeles", start_date=dt.date(2019, 1, 7)
    )
    milestone_create(
        release=old,
        kind=kinds["code-freeze"],
        title="Code Freeze",
        at=tz.parse_wall_time("2019-02-28 17:00", "America/Los_Angeles"),
    )
    milestone_create(release=old, kind=kinds["ga"], title="v1.14 released", on_date=dt.date(2019, 3, 1))
    return old  # fmt: skip


def summaries(body: bytes) -> set[str]:
    return set(vevents(body))


def test_all_ics_holds_the_releases_whose_last_milestone_is_on_or_after_today_two_years_back(
    release, old_release, today
):
    # 1.31's last milestone is its release on Tuesday 13 August 2024.
    today(dt.date(2026, 8, 13))
    response = get("/calendar/all.ics")
    assert response.status_code == 200
    shown = summaries(response.content)
    assert "[1.31] v1.31 released" in shown
    assert "[1.31] Code Freeze" in shown
    assert not any(s.startswith("[1.14]") for s in shown)
    assert "X-WR-CALDESC:Milestones of every release with a milestone on or after Tuesday 13 August 2024" in (
        response.content.decode().replace("\r\n ", "")
    )
    # The next day the cutoff moves past it: the same feed version, another cache key.
    today(dt.date(2026, 8, 14))
    shown = summaries(get("/calendar/all.ics").content)
    assert not any(s.startswith("[1.31]") for s in shown)


def test_a_release_leaving_the_window_moves_last_modified(release, old_release, today):
    """A client that revalidates with If-Modified-Since alone gets the feed without 1.31
    the day 1.31 leaves it, though no row it still shows changed."""
    from releasecal.models import Milestone

    # Every row was last edited in 2024; 1.31's last milestone is Tuesday 13 August 2024.
    edited = dt.datetime(2024, 8, 20, 9, 0, tzinfo=dt.UTC)
    Release.objects.update(updated_at=edited)
    Milestone.objects.update(updated_at=edited)
    later = Release.objects.create(slug="1.40", name="v1.40", zone="UTC", start_date=dt.date(2026, 1, 5))
    milestone_create(release=later, kind=release.milestones.first().kind, title="GA", on_date=dt.date(2026, 4, 1))
    Release.objects.filter(pk=later.pk).update(updated_at=edited)
    Milestone.objects.filter(release=later).update(updated_at=edited)
    today(dt.date(2026, 8, 13))
    first = get("/calendar/all.ics")
    assert "[1.31] v1.31 released" in summaries(first.content)
    assert first["Last-Modified"] == "Tue, 20 Aug 2024 09:00:00 GMT"
    assert get("/calendar/all.ics", if_modified_since=first["Last-Modified"]).status_code == 304
    today(dt.date(2026, 8, 14))
    after = get("/calendar/all.ics", if_modified_since=first["Last-Modified"])
    assert after.status_code == 200
    assert not any(s.startswith("[1.31]") for s in summaries(after.content))
    assert after["Last-Modified"] == "Fri, 14 Aug 2026 00:00:00 GMT"
    assert get("/calendar/all.ics", if_modified_since=after["Last-Modified"]).status_code == 304
    # A milestone moved before the cutoff takes its release out too: its edit is the time.
    today(dt.date(2026, 9, 1))
    Milestone.objects.filter(release=later).update(
        on_date=dt.date(2024, 1, 1), updated_at=dt.datetime(2026, 8, 31, 12, 0, tzinfo=dt.UTC)
    )
    moved = get("/calendar/all.ics", if_modified_since=after["Last-Modified"])
    assert moved.status_code == 200
    assert moved["Last-Modified"] == "Mon, 31 Aug 2026 12:00:00 GMT"


def test_a_timed_last_milestone_counts_from_00_00_utc_of_the_cutoff_day(kinds, today):
    late = Release.objects.create(slug="1.40", name="v1.40", zone="UTC", start_date=dt.date(2024, 1, 1))
    milestone_create(
        release=late, kind=kinds["code-freeze"], title="Code Freeze", at=dt.datetime(2024, 3, 1, 0, 0, tzinfo=dt.UTC)
    )
    freeze = "[1.40] Code Freeze (end of Thursday 29 February 2024 UTC)"  # 00:00 UTC Friday 1 March
    today(dt.date(2026, 3, 1))
    assert freeze in summaries(get("/calendar/all.ics").content)
    today(dt.date(2026, 3, 2))
    assert freeze not in summaries(get("/calendar/all.ics").content)


def test_the_29th_of_february_counts_back_to_the_28th(kinds, today):
    leap = Release.objects.create(slug="1.41", name="v1.41", zone="UTC", start_date=dt.date(2026, 1, 1))
    milestone_create(release=leap, kind=kinds["ga"], title="GA", on_date=dt.date(2026, 2, 28))
    today(dt.date(2028, 2, 29))
    assert "[1.41] GA" in summaries(get("/calendar/all.ics").content)
    today(dt.date(2028, 3, 1))
    assert "[1.41] GA" not in summaries(get("/calendar/all.ics").content)


@pytest.mark.parametrize(
    ("since", "old_shown"),
    [("2019", True), ("2019-03-01", True), ("2019-03-02", False), ("2020", False)],
)
def test_since_gives_older_releases(release, old_release, today, since, old_shown):
    today(dt.date(2026, 11, 30))
    shown = summaries(get(f"/calendar/all.ics?since={since}").content)
    assert ("[1.14] v1.14 released" in shown) is old_shown
    assert "[1.31] Code Freeze" in shown


def test_each_since_variant_has_its_own_etag_and_last_modified(release, old_release, today):
    today(dt.date(2026, 11, 30))
    recent = get("/calendar/all.ics?since=2020")
    older = get("/calendar/all.ics?since=2019")
    assert recent["ETag"] != older["ETag"]
    assert get("/calendar/all.ics?since=2019", if_none_match=older["ETag"]).status_code == 304
    assert get("/calendar/all.ics?since=2019", if_none_match=recent["ETag"]).status_code == 200
    # Last-Modified is the newest row the variant shows: 1.14's only in the older one.
    Release.objects.filter(slug="1.14").update(updated_at=dt.datetime(2027, 6, 1, 8, 0, tzinfo=dt.UTC))
    newest_131 = max([release.updated_at] + [m.updated_at for m in release.milestones.all()])
    assert get("/calendar/all.ics?since=2019")["Last-Modified"] == "Tue, 01 Jun 2027 08:00:00 GMT"
    assert get("/calendar/all.ics?since=2020")["Last-Modified"] == http_date(int(newest_131.timestamp()))


ALLOWED_SINCE = (
    "since= takes a year (?since=2020) or a date (?since=2020-06-01) between 1970 and 2099; "
    "all.ics then holds every release with a milestone on or after it.\n"
)


@pytest.mark.parametrize(
    "value", ["", "20", "abc", "2024-13-01", "2024-02-30", "1969", "2100", "2024-6-1", "0001-01-01"]
)
def test_a_bad_since_is_a_plain_text_400(release, value):
    response = get(f"/calendar/all.ics?since={value}")
    assert response.status_code == 400
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content.decode() == f"Unknown since {value!r}. {ALLOWED_SINCE}"


def test_since_on_another_feed_is_a_400(release, kep):
    for path in ("/calendar/1.31.ics", "/calendar/kep/2400.ics", "/calendar/1.31/sig/node.ics"):
        response = get(path + "?since=2020")
        assert response.status_code == 400
        assert response.content.decode() == (
            "since= applies only to /calendar/all.ics (the other feeds hold every milestone of their releases).\n"
        )
