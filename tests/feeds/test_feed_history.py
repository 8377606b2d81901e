"""What a milestone's event says about its past and its place in the cycle (issue 11):

- the slip history: every move, read from the audit log, as "Moved from <the earlier
  deadline in tz's words> on <the day of the change>", in one query for the whole feed;
- the countdown week ("Week 11 of 14") in the summary, from the week the schedule's
  Week column gives (imported from a real README), only when there is one."""

from __future__ import annotations

import datetime as dt
import shutil

import icalendar
import pytest
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from feeds import selectors
from feeds.cache import feed_version_bump
from feeds.selectors import feed_build, feed_scope_release
from releasecal import tz
from releasecal.models import AuditLog, Milestone, Release
from releasecal.services import milestone_create, milestone_save
from tests.support.paths import SHARED_DATA

README_131 = SHARED_DATA / "k8s-readmes" / "release-1.31.md"


def event_of(body: bytes, uid: str) -> icalendar.Event:
    return next(e for e in icalendar.Calendar.from_ical(body).walk("VEVENT") if str(e["UID"]) == uid)


def description_lines(event: icalendar.Event) -> list[str]:
    return str(event["DESCRIPTION"]).split("\n")


@pytest.fixture
def move(monkeypatch):
    """Change a milestone through the service as if on ``on`` (the audit row's time;
    audit rows are immutable, so the clock is set while the service writes it)."""

    def change(milestone: Milestone, *, on: dt.datetime, **fields) -> None:
        for name, value in fields.items():
            setattr(milestone, name, value)
        with monkeypatch.context() as patch:
            patch.setattr(tz, "utc_now", lambda: on)
            milestone_save(milestone=milestone, actor_label="test")
        assert AuditLog.objects.filter(object_id=str(milestone.pk)).latest("id").at == on

    return change


# ------------------------------------------------------------------ slip history


def test_a_moved_milestone_says_where_it_was_and_when_it_moved(release, code_freeze, move):
    uid = f"releasecal-milestone-{code_freeze.pk}@releasecal.local"
    first = Client().get("/calendar/1.31.ics")
    before = event_of(first.content, uid)
    assert not any(line.startswith("Moved from") for line in description_lines(before))
    # 19:00 PDT Tuesday 23 July 2024 -> Wednesday 24 July, moved on 26 June 2024 (PDT) ...
    move(code_freeze, on=dt.datetime(2024, 6, 27, 1, 0, tzinfo=dt.UTC), at=code_freeze.at + dt.timedelta(days=1))
    # ... then to the end of Thursday 25 July, moved on 1 July 2024.
    move(
        code_freeze,
        on=dt.datetime(2024, 7, 1, 16, 0, tzinfo=dt.UTC),
        at=tz.parse_wall_time("2024-07-26 00:00", "America/Los_Angeles"),
    )
    # A change that moves nothing adds no line.
    move(code_freeze, on=dt.datetime(2024, 7, 2, 16, 0, tzinfo=dt.UTC), description="Now with notes")
    second = Client().get("/calendar/1.31.ics")
    after = event_of(second.content, uid)
    lines = description_lines(after)
    assert lines[1:5] == [
        "When: end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)",
        "AoE: 19:00 AoE Thursday 25 July 2024",
        "Until: 19:00 PDT Wednesday 7 August 2024 (02:00 UTC Thursday 8 August 2024)",
        "Moved from 19:00 PDT Tuesday 23 July 2024 on 26 June 2024",
    ]
    assert lines[5] == "Moved from 19:00 PDT Wednesday 24 July 2024 on 1 July 2024"
    assert after.decoded("LAST-MODIFIED") > before.decoded("LAST-MODIFIED")
    assert int(after["SEQUENCE"]) > int(before["SEQUENCE"])


def test_a_moved_date_only_milestone_says_its_earlier_day(release, move):
    ga = release.milestones.get(kind__slug="ga")
    move(ga, on=dt.datetime(2024, 8, 1, 18, 0, tzinfo=dt.UTC), on_date=dt.date(2024, 8, 14))
    body = Client().get("/calendar/1.31.ics").content
    lines = description_lines(event_of(body, f"releasecal-milestone-{ga.pk}@releasecal.local"))
    assert "Moved from Tuesday 13 August 2024 on 1 August 2024" in lines


def test_history_appearing_alone_bumps_last_modified_but_not_sequence(release, code_freeze, move, monkeypatch):
    """A feed first published without the history lines (the writer before them), then
    with them: only the description changed, so LAST-MODIFIED moves and SEQUENCE does
    not (feeds/published.py)."""
    move(code_freeze, on=dt.datetime(2024, 6, 27, 1, 0, tzinfo=dt.UTC), at=code_freeze.at + dt.timedelta(days=1))
    uid = f"releasecal-milestone-{code_freeze.pk}@releasecal.local"
    with monkeypatch.context() as patch:
        patch.setattr(selectors, "milestone_moves", lambda milestones: {})
        before = event_of(Client().get("/calendar/1.31.ics").content, uid)
    assert not any(line.startswith("Moved from") for line in description_lines(before))
    feed_version_bump()  # the new writer's first build
    after = event_of(Client().get("/calendar/1.31.ics").content, uid)
    assert "Moved from 19:00 PDT Tuesday 23 July 2024 on 26 June 2024" in description_lines(after)
    assert after.decoded("LAST-MODIFIED") > before.decoded("LAST-MODIFIED")
    assert int(after["SEQUENCE"]) == int(before["SEQUENCE"])


def build_queries(release: Release) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        feed_build(feed_scope_release(slug=release.slug))
    audit = [q for q in queries.captured_queries if "releasecal_auditlog" in q["sql"]]
    return len(queries.captured_queries), len(audit)


def test_the_history_of_every_milestone_is_read_in_one_query(release, kinds, code_freeze, move):
    move(code_freeze, on=dt.datetime(2024, 6, 27, 1, 0, tzinfo=dt.UTC), at=code_freeze.at + dt.timedelta(days=1))
    few = build_queries(release)
    for n in range(30):
        extra = milestone_create(
            release=release, kind=kinds["other"], title=f"Extra {n}", at=dt.datetime(2024, 7, 1, tzinfo=dt.UTC)
        )
        move(extra, on=dt.datetime(2024, 6, 1, tzinfo=dt.UTC), at=dt.datetime(2024, 7, 2, tzinfo=dt.UTC))
        move(extra, on=dt.datetime(2024, 6, 2, tzinfo=dt.UTC), at=dt.datetime(2024, 7, 3, tzinfo=dt.UTC))
    many = build_queries(release)
    assert few[1] == many[1] == 1
    assert few[0] == many[0]
    body = Client().get("/calendar/1.31.ics").content.decode().replace("\r\n ", "")
    # 00:00 UTC 1 July is 17:00 PDT Sunday 30 June; the moves were made on 31 May and 1 June (PDT).
    assert body.count("Moved from 17:00 PDT Sunday 30 June 2024 on 31 May 2024") == 30
    assert body.count("Moved from 17:00 PDT Monday 1 July 2024 on 1 June 2024") == 30


# --------------------------------------------------------------- countdown week


def test_the_week_column_of_a_real_readme_gives_the_summary_its_week(kinds, tmp_path):
    if not README_131.exists():
        pytest.fail(f"{README_131} is missing (../shared/data)")
    readme = tmp_path / "release-1.31.md"
    shutil.copy(README_131, readme)
    call_command("import_schedule", str(readme))
    freeze = Milestone.objects.get(release__slug="1.31", title="Begin Code Freeze")
    assert freeze.week == 11
    assert Milestone.objects.filter(release__slug="1.31").order_by("-week").first().week == 14
    body = Client().get("/calendar/1.31.ics").content
    event = event_of(body, f"releasecal-milestone-{freeze.pk}@releasecal.local")
    assert str(event["SUMMARY"]) == "[1.31] Week 11 of 14: Begin Code Freeze"


def test_no_week_no_countdown(release, code_freeze):
    body = Client().get("/calendar/1.31.ics").content
    assert str(event_of(body, f"releasecal-milestone-{code_freeze.pk}@releasecal.local")["SUMMARY"]) == (
        "[1.31] Code Freeze"
    )
    Milestone.objects.filter(pk=code_freeze.pk).update(week=9)
    Milestone.objects.filter(release=release, kind__slug="ga").update(week=15)
    body = Client().get("/calendar/1.31.ics").content
    assert str(event_of(body, f"releasecal-milestone-{code_freeze.pk}@releasecal.local")["SUMMARY"]) == (
        "[1.31] Week 9 of 15: Code Freeze"
    )
