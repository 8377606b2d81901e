"""Migrations releasecal 0007, 0008 and exceptions 0007, 0008: existing deadlines get their wall
time from their instant and zone under the zone rules of the running tzdata (issue 11)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("releasecal", "0006_release_team_and_sig_leads"), ("exceptions", "0006_requester_email")]
AFTER = [("releasecal", "0008_release_hard_stop_wall"), ("exceptions", "0008_proposed_decision_granted_wall")]


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


@pytest.mark.django_db(transaction=True)
def test_existing_deadlines_get_the_wall_time_of_their_instant_in_their_zone():
    try:
        _test_existing_deadlines_get_the_wall_time_of_their_instant_in_their_zone()
    finally:
        # Back to the latest schema: later (transactional) tests need every column.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _test_existing_deadlines_get_the_wall_time_of_their_instant_in_their_zone():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Release, Kind, Milestone = (
        apps.get_model("releasecal", name) for name in ("Release", "MilestoneKind", "Milestone")
    )
    Enhancement = apps.get_model("releasecal", "Enhancement")
    Request, Decision = apps.get_model("exceptions", "ExceptionRequest"), apps.get_model("exceptions", "Decision")
    release = Release.objects.create(
        slug="1.31", name="1.31", zone="America/Los_Angeles", start_date=dt.date(2024, 5, 1),
        hard_stop=utc("2024-08-01 02:00"),
    )  # fmt: skip
    no_stop = Release.objects.create(slug="1.32", name="1.32", zone="UTC", start_date=dt.date(2024, 9, 1))
    kind, _ = Kind.objects.get_or_create(
        slug="code-freeze", defaults={"name": "Code Freeze", "allows_exceptions": True}
    )
    window = Milestone.objects.create(
        release=release, kind=kind, title="Code Freeze", zone="America/Los_Angeles",
        at=utc("2024-07-24 02:00"), ends_at=utc("2024-12-10 03:00"),
    )  # fmt: skip
    aoe = Milestone.objects.create(release=release, kind=kind, title="AoE", zone="AoE", at=utc("2025-02-11 12:00"))
    dated = Milestone.objects.create(release=release, kind=kind, title="GA", zone="UTC", on_date=dt.date(2024, 8, 13))
    kep = Enhancement.objects.create(number=2400, title="Swap", owning_sig="node")
    request = Request.objects.create(
        release=release,
        enhancement=kep,
        milestone=window,
        state="approved",
        days=2,
        submitted_at=utc("2024-07-24 03:00"),
    )
    granted = Decision.objects.create(
        request=request, outcome="approved", decided_at=utc("2024-07-24 04:00"), granted_until=utc("2024-07-26 07:00"),
        granted_zone="Europe/Berlin", freeze_at=utc("2024-07-24 02:00"),
    )  # fmt: skip
    unrecorded_request = Request.objects.create(
        release=release, enhancement=Enhancement.objects.create(number=2401, title="Other", owning_sig="node"),
        milestone=window, state="approved", submitted_at=utc("2024-07-24 03:00"),
    )  # fmt: skip
    Proposal = apps.get_model("exceptions", "ProposedDecision")
    proposal = Proposal.objects.create(
        request=unrecorded_request, outcome="approved", source_text="ok until 18:00 PST",
        granted_until=utc("2024-07-27 01:00"), granted_zone="America/Los_Angeles", state="dismissed",
    )  # fmt: skip
    unreadable = Proposal.objects.create(
        request=unrecorded_request, outcome="approved", source_text="?", state="dismissed"
    )
    unrecorded = Decision.objects.create(
        request=unrecorded_request, outcome="approved", decided_at=utc("2024-07-24 04:00")
    )

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Milestone, Decision = apps.get_model("releasecal", "Milestone"), apps.get_model("exceptions", "Decision")
    Release = apps.get_model("releasecal", "Release")
    assert dict(Release.objects.values_list("pk", "hard_stop_wall")) == {
        release.pk: dt.datetime(2024, 7, 31, 19, 0),
        no_stop.pk: None,
    }
    walls = {m.pk: (m.at_wall, m.ends_at_wall) for m in Milestone.objects.all()}
    assert walls == {
        window.pk: (dt.datetime(2024, 7, 23, 19, 0), dt.datetime(2024, 12, 9, 19, 0)),  # PDT, then PST
        aoe.pk: (dt.datetime(2025, 2, 11, 0, 0), None),
        dated.pk: (None, None),
    }
    Proposal = apps.get_model("exceptions", "ProposedDecision")
    assert dict(Proposal.objects.values_list("pk", "granted_wall")) == {
        proposal.pk: dt.datetime(2024, 7, 26, 18, 0),
        unreadable.pk: None,
    }
    assert dict(Decision.objects.values_list("pk", "granted_wall")) == {
        granted.pk: dt.datetime(2024, 7, 26, 9, 0),  # CEST
        unrecorded.pk: None,
    }
