"""A multi-day all-day milestone that is not a freeze (KubeCon 1-4 April 2025) closes at
the end of its last day, in the API's ``deadline`` and the stored ``closes_at`` alike
(issue 29, item 4); a freeze keeps closing when it begins. One definition:
``releasecal.models.milestone_closes_at``; migration 0017 recomputes stored rows."""

from __future__ import annotations

import datetime as dt
import importlib

import pytest
from django.apps import apps
from django.test import Client

from releasecal.models import Milestone, MilestoneKind
from releasecal.services import milestone_create

UTC = dt.UTC
FIRST_DAY_ENDS = dt.datetime(2025, 4, 2, 7, tzinfo=UTC)  # end of Tuesday 1 April 2025 PDT
LAST_DAY_ENDS = dt.datetime(2025, 4, 5, 7, tzinfo=UTC)  # end of Friday 4 April 2025 PDT


@pytest.fixture
def kubecon(release, kinds) -> Milestone:
    return milestone_create(
        release=release, kind=kinds["other"], title="KubeCon", on_date=dt.date(2025, 4, 1), ends_on=dt.date(2025, 4, 4)
    )


@pytest.fixture
def dated_freeze(release, kinds) -> Milestone:
    return milestone_create(
        release=release, kind=kinds["code-freeze"], title="Dated freeze",
        on_date=dt.date(2025, 4, 1), ends_on=dt.date(2025, 4, 4),
    )  # fmt: skip


def api_rows(**params) -> dict[str, dict]:
    body = Client().get("/api/v1/releases/1.31/milestones/", params).json()
    return {row["title"]: row for row in body["results"]}


def test_the_api_deadline_of_a_conference_is_the_end_of_its_last_day(kubecon, dated_freeze):
    rows = api_rows(tz="Europe/Berlin")
    assert rows["KubeCon"]["deadline"] == "2025-04-05T07:00:00Z"
    assert rows["KubeCon"]["deadline_local"]["deadline_day"] == "2025-04-04"
    assert rows["Dated freeze"]["deadline"] == "2025-04-02T07:00:00Z"  # a freeze closes when it begins
    kubecon.refresh_from_db()
    dated_freeze.refresh_from_db()
    assert (kubecon.closes_at, kubecon.passes_at, kubecon.deadline) == (LAST_DAY_ENDS, LAST_DAY_ENDS, LAST_DAY_ENDS)
    assert (dated_freeze.closes_at, dated_freeze.passes_at) == (FIRST_DAY_ENDS, LAST_DAY_ENDS)
    # A conference is upcoming (in effect) through its last day, as its own faces say.
    assert kubecon.state_at(dt.datetime(2025, 4, 4, 20, tzinfo=UTC)) == "in_effect"


def test_every_write_path_keeps_closes_at_on_the_last_day(kubecon, kinds):
    Milestone.objects.filter(pk=kubecon.pk).update(ends_on=dt.date(2025, 4, 3))
    kubecon.refresh_from_db()
    assert kubecon.closes_at == dt.datetime(2025, 4, 4, 7, tzinfo=UTC)
    Milestone.objects.filter(pk=kubecon.pk).update(kind=kinds["code-freeze"])  # now a freeze
    kubecon.refresh_from_db()
    assert kubecon.closes_at == FIRST_DAY_ENDS
    kubecon.kind = kinds["other"]
    kubecon.save(update_fields=["kind"])
    kubecon.refresh_from_db()
    assert kubecon.closes_at == dt.datetime(2025, 4, 4, 7, tzinfo=UTC)


def test_a_kind_that_becomes_a_freeze_moves_its_milestones_close(kubecon):
    kind = MilestoneKind.objects.get(slug="other")
    kind.is_freeze = True
    kind.save()
    kubecon.refresh_from_db()
    assert kubecon.closes_at == FIRST_DAY_ENDS
    kind.is_freeze = False
    kind.save()
    kubecon.refresh_from_db()
    assert kubecon.closes_at == LAST_DAY_ENDS


def test_the_data_migration_recomputes_stored_rows_and_reverses(code_freeze, kubecon, dated_freeze):
    migration = importlib.import_module("releasecal.migrations.0017_milestone_closes_on_last_day")
    # As 0013 stored them: every date-only milestone at the end of its first day.
    Milestone.objects.filter(pk=kubecon.pk).update(closes_at=FIRST_DAY_ENDS)
    before = {m.pk: m.closes_at for m in Milestone.objects.exclude(pk=kubecon.pk)}
    # Freezes and timed ones are left as they were.
    migration.forwards(apps, None)
    assert Milestone.objects.get(pk=kubecon.pk).closes_at == LAST_DAY_ENDS
    assert {m.pk: m.closes_at for m in Milestone.objects.exclude(pk=kubecon.pk)} == before
    assert Milestone.objects.get(pk=dated_freeze.pk).closes_at == FIRST_DAY_ENDS
    migration.backwards(apps, None)
    assert Milestone.objects.get(pk=kubecon.pk).closes_at == FIRST_DAY_ENDS
