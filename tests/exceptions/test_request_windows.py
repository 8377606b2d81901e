"""Request windows per kind, in hours (the handbook of 2025-2026): a request may arrive
until 72 hours after the PRR, enhancements and code freezes, and only 24 hours after the
docs freeze; a release may set its own hours per kind.

The release (tests/conftest.py): code freeze 19:00 PDT Tuesday 23 July 2024; here a docs
freeze is added at 19:00 PDT Tuesday 30 July 2024 (02:00 UTC Wednesday 31 July)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from rest_framework.test import APIClient

from exceptions.services import RequestFields, exception_request_submit, request_window_closes
from releasecal import tz
from releasecal.errors import PolicyViolation
from releasecal.services import groups_ensure, milestone_create, milestone_kinds_ensure

SECOND = dt.timedelta(seconds=1)
DOCS_FREEZE = dt.datetime(2024, 7, 31, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Tue 30 July
DOCS_WINDOW_CLOSES = dt.datetime(2024, 8, 1, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Wed 31 July
CODE_WINDOW_CLOSES = dt.datetime(2024, 7, 27, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Fri 26 July


@pytest.fixture
def docs_freeze(release, kinds):
    return milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs Freeze",
        at=tz.parse_wall_time("2024-07-30 19:00", "America/Los_Angeles"),
    )  # fmt: skip


def submit(kep, milestone, requester, at):
    return exception_request_submit(
        enhancement=kep, milestone=milestone, requester=requester,
        fields=RequestFields(days=1, enhancement_name=kep.title, stage="beta", sig="node"), submitted_at=at,
    )  # fmt: skip


def test_a_docs_freeze_request_window_is_24_hours(kep, docs_freeze, requester):
    assert request_window_closes(docs_freeze) == DOCS_WINDOW_CLOSES
    with pytest.raises(PolicyViolation) as err:
        submit(kep, docs_freeze, requester, DOCS_WINDOW_CLOSES + SECOND)
    assert err.value.message == (
        "The request window for Docs Freeze closed at 19:00 PDT Wednesday 31 July 2024 "
        "(02:00 UTC Thursday 1 August 2024) (24 hours after the freeze); this request was sent at "
        "19:00 PDT Wednesday 31 July 2024 (02:00 UTC Thursday 1 August 2024)."
    )
    assert submit(kep, docs_freeze, requester, DOCS_WINDOW_CLOSES).state == "pending"


def test_the_other_freezes_keep_72_hours(code_freeze, enhancements_freeze, kinds):
    assert request_window_closes(code_freeze) == CODE_WINDOW_CLOSES
    assert request_window_closes(enhancements_freeze) == dt.datetime(2024, 6, 17, 2, 0, tzinfo=dt.UTC)
    assert {slug: kind.request_window_hours for slug, kind in kinds.items() if kind.allows_exceptions} == {
        "prr-freeze": 72, "enhancements-freeze": 72, "code-freeze": 72, "docs-freeze": 24,
    }  # fmt: skip


def test_a_release_sets_its_own_hours_for_one_kind(kep, docs_freeze, code_freeze, requester, release):
    release.request_window_hours = {"docs-freeze": 48}
    release.full_clean()
    release.save()
    docs_freeze.refresh_from_db()
    code_freeze.refresh_from_db()
    assert request_window_closes(docs_freeze) == dt.datetime(2024, 8, 2, 2, 0, tzinfo=dt.UTC)
    assert request_window_closes(code_freeze) == CODE_WINDOW_CLOSES
    assert submit(kep, docs_freeze, requester, DOCS_WINDOW_CLOSES + dt.timedelta(hours=24)).state == "pending"


@pytest.mark.parametrize("windows", [{"docs-freeze": -1}, {"docs-freeze": "24"}, {"docs-freeze": True}, [24]])
def test_a_release_window_that_is_not_whole_hours_is_refused(release, windows):
    release.request_window_hours = windows
    with pytest.raises(ValidationError) as err:
        release.clean()
    assert list(err.value.message_dict) == ["request_window_hours"]


def test_the_api_shows_each_kinds_window_in_hours(release, kinds):
    release.request_window_hours = {"code-freeze": 96}
    release.save()
    body = APIClient().get("/api/v1/releases/1.31/").json()
    assert body["request_window_hours"] == {
        "prr-freeze": 72, "enhancements-freeze": 72, "code-freeze": 96, "docs-freeze": 24,
    }  # fmt: skip
    assert "exception_window_days" not in body


BEFORE = [("releasecal", "0014_milestone_kind_label")]
AFTER = [("releasecal", "0015_request_window_hours_per_kind")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_a_window_a_team_had_set_and_moves_defaults_to_the_kinds():
    # The migration gives a team's window to each kind that allows exceptions: the kinds
    # the migrations made must be there, and a transactional test before this one (in
    # this process: under pytest-xdist another set than in a serial run) flushed them.
    groups_ensure()
    milestone_kinds_ensure()
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        apps = executor.loader.project_state(BEFORE).apps
        Release = apps.get_model("releasecal", "Release")
        day = dt.date(2026, 1, 5)
        Release.objects.create(slug="1.35", name="v1.35", start_date=day, exception_window_days=3)
        Release.objects.create(slug="1.36", name="v1.36", start_date=day, exception_window_days=5)

        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        apps = executor.loader.project_state(AFTER).apps
        Release = apps.get_model("releasecal", "Release")
        Kind = apps.get_model("releasecal", "MilestoneKind")
        assert dict(Release.objects.values_list("slug", "request_window_hours")) == {
            "1.35": {},
            "1.36": {"prr-freeze": 120, "enhancements-freeze": 120, "code-freeze": 120, "docs-freeze": 120},
        }
        assert dict(Kind.objects.filter(allows_exceptions=True).values_list("slug", "request_window_hours")) == {
            "prr-freeze": 72, "enhancements-freeze": 72, "code-freeze": 72, "docs-freeze": 24,
        }  # fmt: skip
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_release_admin_sets_one_kinds_window_and_empties_back_to_the_default(release, kinds):
    from django.contrib.auth.models import User
    from django.test import Client

    from tests.releasecal.test_admin import _payload

    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    url = f"/admin/releasecal/release/{release.pk}/change/"
    page = client.get(url)
    assert "Request window after Docs Freeze (hours)" in page.text
    assert "<div>Empty: the kind's default, 24 hours.</div>" in page.text
    payload = _payload(page) | {"window_hours__docs-freeze": "48"}
    assert client.post(url, payload).status_code == 302
    release.refresh_from_db()
    assert release.request_window_hours == {"docs-freeze": 48}
    payload = _payload(client.get(url)) | {"window_hours__docs-freeze": "", "window_hours__code-freeze": "-1"}
    assert "Ensure this value is greater than or equal to 0." in client.post(url, payload).text
    assert client.post(url, payload | {"window_hours__code-freeze": ""}).status_code == 302
    release.refresh_from_db()
    assert release.request_window_hours == {}
