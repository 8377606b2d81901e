"""When a milestone closes, one definition on every face (issue 24, "Five faces, four
orderings of deadlines").

A timed milestone closes at ``at``; a date-only one at the end of its day in its own
zone; a window is in effect until ``ends_at`` / the end of ``ends_on``. Every face sorts
by that instant (``Milestone.closes_at``, stored) and drops a milestone at it exactly.
The orders below are literal, with the clock set, on SQLite and on PostgreSQL alike
(run with and without ``DATABASE_URL``): on SQLite the old ``order_by("at", "on_date")``
put date-only milestones first, on PostgreSQL last.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from config.cockpit import cockpit
from releasecal import selectors, tz
from releasecal.models import Milestone, Release
from releasecal.services import milestone_cancel, milestone_create, milestone_save
from tests.support.slack import SIGNING_SECRET, post_signed

UTC = dt.UTC
NOW = dt.datetime(2026, 12, 1, 19, 12, tzinfo=UTC)  # Tuesday 1 December 2026, 19:12 UTC


@pytest.fixture
def schedule(db, kinds, monkeypatch) -> Release:
    """A 1.36-like AoE release, read at 19:12 UTC on 1 December 2026."""
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)
    release = Release.objects.create(
        slug="1.36", name="Kubernetes v1.36", zone="AoE", start_date=dt.date(2026, 9, 14),
        ga_date=dt.date(2026, 12, 16), status=Release.Status.ACTIVE,
    )  # fmt: skip
    add = lambda title, kind, **when: milestone_create(release=release, kind=kinds[kind], title=title, **when)  # noqa: E731
    # Created out of order on purpose: the id breaks no tie here.
    add("Release candidate", "rc", on_date=dt.date(2026, 12, 11), zone="America/Los_Angeles")  # 12-12 08:00 UTC
    add("Code Freeze", "code-freeze", on_date=dt.date(2026, 12, 10))  # end of 10 Dec AoE: 12-11 12:00 UTC
    add("Test Freeze", "test-freeze", at=dt.datetime(2026, 12, 10, 18, 0, tzinfo=UTC))
    add("Feature blog freeze", "feature-blog-freeze", on_date=dt.date(2026, 11, 30))  # 12-01 12:00 UTC
    add(
        "Docs Freeze",
        "docs-freeze",
        at=dt.datetime(2026, 11, 25, tzinfo=UTC),
        ends_at=dt.datetime(2026, 12, 5, tzinfo=UTC),
    )
    add("Review week", "event", on_date=dt.date(2026, 11, 16), ends_on=dt.date(2026, 11, 20))  # ends 11-21 12:00 UTC
    milestone_cancel(milestone=add("Dropped meeting", "event", at=dt.datetime(2026, 12, 3, 17, 0, tzinfo=UTC)))
    return release


ALL_IN_ORDER = [
    "Review week",  # a window until (and closing at) the end of 20 Nov AoE (21 Nov 12:00 UTC)
    "Docs Freeze",  # 25 Nov 00:00 UTC, in effect until 5 Dec
    "Feature blog freeze",  # end of 30 Nov AoE = 1 Dec 12:00 UTC: passed at 19:12
    "Dropped meeting",  # 3 Dec 17:00 UTC, cancelled
    "Test Freeze",  # 10 Dec 18:00 UTC
    "Code Freeze",  # end of 10 Dec AoE = 11 Dec 12:00 UTC
    "Release candidate",  # end of 11 Dec in Los Angeles = 12 Dec 08:00 UTC
]
UPCOMING = ["Docs Freeze", "Test Freeze", "Code Freeze", "Release candidate"]
NEXT = ["Test Freeze", "Code Freeze", "Release candidate"]


def titles(rows) -> list[str]:
    return [row.title for row in rows]


def test_a_milestone_closes_at_its_instant_or_at_the_end_of_its_day_in_its_own_zone(schedule):
    closes = {m.title: (m.closes_at, m.passes_at) for m in schedule.milestones.all()}
    assert closes["Code Freeze"] == (dt.datetime(2026, 12, 11, 12, tzinfo=UTC),) * 2
    assert closes["Release candidate"] == (dt.datetime(2026, 12, 12, 8, tzinfo=UTC),) * 2
    assert closes["Test Freeze"] == (dt.datetime(2026, 12, 10, 18, tzinfo=UTC),) * 2
    assert closes["Docs Freeze"] == (dt.datetime(2026, 11, 25, tzinfo=UTC), dt.datetime(2026, 12, 5, tzinfo=UTC))
    # Not a freeze: a multi-day one closes at the end of its last day (issue 29).
    assert closes["Review week"] == (dt.datetime(2026, 11, 21, 12, tzinfo=UTC),) * 2


def test_every_list_sorts_by_when_milestones_close(schedule):
    assert titles(selectors.milestone_list(release=schedule)) == ALL_IN_ORDER
    assert titles(Milestone.objects.filter(release=schedule)) == ALL_IN_ORDER  # the model's default order too


def test_upcoming_at_1912_utc_drops_the_noon_deadline_and_keeps_the_code_freeze_nine_days_ahead(schedule):
    assert titles(selectors.milestone_list(release=schedule, upcoming=True)) == UPCOMING
    assert titles(selectors.milestone_list_next(releases=[schedule])) == NEXT


def test_a_milestone_leaves_upcoming_at_the_instant_it_closes_exactly(schedule):
    noon = dt.datetime(2026, 12, 1, 12, tzinfo=UTC)
    blog = schedule.milestones.get(title="Feature blog freeze")
    before = selectors.milestone_list(release=schedule, upcoming=True, now=noon - dt.timedelta(microseconds=1))
    assert "Feature blog freeze" in titles(before)
    assert "Feature blog freeze" not in titles(selectors.milestone_list(release=schedule, upcoming=True, now=noon))
    assert (blog.state_at(noon - dt.timedelta(microseconds=1)), blog.state_at(noon)) == ("upcoming", "passed")
    docs = schedule.milestones.get(title="Docs Freeze")
    end = dt.datetime(2026, 12, 5, tzinfo=UTC)
    assert "Docs Freeze" not in titles(selectors.milestone_list(release=schedule, upcoming=True, now=end))
    assert [
        docs.state_at(end - dt.timedelta(days=11)),
        docs.state_at(end - dt.timedelta(seconds=1)),
        docs.state_at(end),
    ] == [
        "upcoming",
        "in_effect",
        "closed",
    ]


def test_a_date_only_window_is_in_effect_from_the_start_of_its_first_day(schedule):
    week = schedule.milestones.get(title="Review week")
    first_day_starts = dt.datetime(2026, 11, 16, 12, tzinfo=UTC)  # 00:00 AoE
    assert week.state_at(first_day_starts - dt.timedelta(seconds=1)) == "upcoming"
    assert week.state_at(first_day_starts) == "in_effect"
    assert week.state_at(dt.datetime(2026, 11, 21, 12, tzinfo=UTC)) == "closed"


def test_moving_a_milestone_moves_when_it_closes(schedule):
    code_freeze = schedule.milestones.get(title="Code Freeze")
    code_freeze.on_date = dt.date(2026, 12, 9)
    milestone_save(milestone=code_freeze)
    code_freeze.refresh_from_db()
    assert code_freeze.closes_at == dt.datetime(2026, 12, 10, 12, tzinfo=UTC)
    assert titles(selectors.milestone_list_next(releases=[schedule])) == [
        "Code Freeze",
        "Test Freeze",
        "Release candidate",
    ]


def test_bulk_writes_keep_when_milestones_close(schedule, kinds):
    Milestone.objects.filter(title="Code Freeze").update(zone="Europe/Berlin")  # end of 10 Dec in Berlin
    assert Milestone.objects.get(title="Code Freeze").closes_at == dt.datetime(2026, 12, 10, 23, tzinfo=UTC)
    test_freeze = Milestone.objects.get(title="Test Freeze")
    test_freeze.at = dt.datetime(2026, 12, 11, 0, tzinfo=UTC)
    Milestone.objects.bulk_update([test_freeze], ["at"])
    assert Milestone.objects.get(title="Test Freeze").closes_at == dt.datetime(2026, 12, 11, 0, tzinfo=UTC)
    [made] = Milestone.objects.bulk_create(
        [Milestone(release=schedule, kind=kinds["event"], title="Party", on_date=dt.date(2026, 12, 2), zone="UTC")]
    )
    assert Milestone.objects.get(pk=made.pk).closes_at == dt.datetime(2026, 12, 3, tzinfo=UTC)
    assert titles(selectors.milestone_list_next(releases=[schedule])) == [
        "Party",
        "Code Freeze",
        "Test Freeze",
        "Release candidate",
    ]


def test_the_api_lists_release_and_filter_in_that_order(schedule, client):
    def listed(path: str, **params) -> list[str]:
        response = client.get(path, params)
        assert response.status_code == 200, response.content
        body = response.json()
        return [row["title"] for row in (body["results"] if "results" in body else body["milestones"])]

    assert listed("/api/v1/milestones/", release="1.36") == ALL_IN_ORDER
    assert listed("/api/v1/releases/1.36/milestones/") == ALL_IN_ORDER
    assert listed("/api/v1/releases/1.36/") == ALL_IN_ORDER
    assert listed("/api/v1/milestones/", release="1.36", upcoming="true") == UPCOMING
    assert listed("/api/v1/releases/1.36/milestones/", upcoming="false") == [
        "Review week",
        "Feature blog freeze",
        "Dropped meeting",
    ]
    assert listed("/api/v1/milestones/", release="1.36", ordering="-closes_at")[:2] == [
        "Release candidate",
        "Code Freeze",
    ]
    states = {row["title"]: row["state"] for row in client.get("/api/v1/releases/1.36/milestones/").json()["results"]}
    assert states == {
        "Review week": "closed",
        "Docs Freeze": "in_effect",
        "Feature blog freeze": "passed",
        "Dropped meeting": "cancelled",
        "Test Freeze": "upcoming",
        "Code Freeze": "upcoming",
        "Release candidate": "upcoming",
    }
    next_body = client.get("/api/v1/deadlines/next/", {"release": "1.36"}).json()
    assert [row["title"] for row in next_body["deadlines"]] == NEXT
    assert next_body["next"]["deadline"] == "2026-12-10T18:00:00Z"


def test_the_cockpit_lists_the_next_deadlines_and_marks_closed_request_windows(schedule):
    data = cockpit(NOW)
    assert [(m.title, shown) for m, shown in data["upcoming"]] == [
        ("Test Freeze", "06:00 AoE Thursday 10 December 2026 (18:00 UTC Thursday 10 December 2026)"),
        ("Code Freeze", "end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)"),
        ("Release candidate", "end of Friday 11 December 2026 PST (08:00 UTC Saturday 12 December 2026)"),
    ]
    windows = {w.milestone.title: (w.open_now, w.closed) for w in data["windows"]}
    # Docs Freeze (25 Nov) took requests for 3 days: closed; Code Freeze's window is ahead.
    assert windows == {"Docs Freeze": (False, True), "Code Freeze": (False, False)}


def test_the_cockpit_page_shows_them_in_that_order(schedule):
    lead = User.objects.create_user("lead-136", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    schedule.leads.add(lead)
    client = Client()
    client.force_login(lead)
    body = client.get("/admin/").content.decode()
    positions = [body.index(f"<strong>{title}</strong> (1.36)") for title in NEXT]
    assert positions == sorted(positions)
    assert "<strong>Feature blog freeze</strong>" not in body
    assert re.search(r"<li>Docs Freeze \(1\.36\): requests until [^<]* \(closed\) ·", body)
    [code_freeze] = re.findall(r"<li>Code Freeze \(1\.36\): requests until [^<]*</li>", body)
    assert "(closed)" not in code_freeze


def test_the_pages_sort_and_mark_the_same_way(schedule, client):
    body = client.get("/releases/1.36/", {"tz": "UTC"}).content.decode()
    rows = [body.index(f'data-milestone="{Milestone.objects.get(title=t).pk}"') for t in ALL_IN_ORDER]
    assert rows == sorted(rows)
    for title, state in [
        ("Review week", "closed"),
        ("Docs Freeze", "ongoing"),
        ("Feature blog freeze", "past"),
        ("Test Freeze", "next"),
        ("Code Freeze", "upcoming"),
    ]:
        pk = Milestone.objects.get(title=title).pk
        assert f'<tr class="state-{state}" data-milestone="{pk}">' in body, title
    assert "✓</span> Closed</span>" in body
    home = client.get("/", {"tz": "UTC"}).content.decode()
    assert home.index("Test Freeze") < home.index("Code Freeze") < home.index("Release candidate")
    assert "Feature blog freeze" not in home


@pytest.fixture
def slack(settings):
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET


def slack_lines(client, text: str) -> list[str]:
    response = post_signed(
        client, "/slack/commands", {"command": "/relcal", "text": text, "user_id": "U1", "team_id": "T1"}
    )
    assert response.status_code == 200
    sections = [b["text"]["text"] for b in response.json()["blocks"] if b["type"] == "section"]
    return [line for section in sections for line in section.splitlines() if line]


def test_slack_release_and_next_share_the_order(schedule, slack, client):
    lines = slack_lines(client, "release 1.36")
    assert [line.split(":")[0].strip("*~") for line in lines] == [
        "Review week",
        "Docs Freeze",
        "Feature blog freeze",
        "Dropped meeting~ (cancelled)",
        "Test Freeze",
        "Code Freeze",
        "Release candidate",
    ]
    assert [line.rsplit(" (", 1)[-1] for line in lines[:3]] == ["closed)", "in effect now)", "passed)"]
    assert [line.split("*")[1] for line in slack_lines(client, "next")] == NEXT
    assert [line.split("*")[1] for line in slack_lines(client, "next code-freeze")] == ["Code Freeze"]
