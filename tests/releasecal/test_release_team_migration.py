"""Migration releasecal 0006: members of the old global "Release Team" group join the
teams of the releases not yet released; released cycles get nobody (issue 13)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("releasecal", "0005_feedtoken_moves_to_feeds")]
AFTER = [("releasecal", "0006_release_team_and_sig_leads")]


@pytest.mark.django_db(transaction=True)
def test_group_members_join_the_teams_of_unreleased_releases_only():
    try:
        _test_group_members_join_the_teams_of_unreleased_releases_only()
    finally:
        # Back to the latest schema: later (transactional) tests need every column.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _test_group_members_join_the_teams_of_unreleased_releases_only():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    User, Group, Release = (
        apps.get_model("auth", "User"),
        apps.get_model("auth", "Group"),
        apps.get_model("releasecal", "Release"),
    )
    group, _ = Group.objects.get_or_create(name="Release Team")
    member = User.objects.create(username="old-team")
    group.user_set.add(member)
    outsider = User.objects.create(username="outsider")
    for slug, status in (("1.30", "released"), ("1.31", "active"), ("1.32", "planning")):
        Release.objects.create(slug=slug, name=slug, zone="UTC", start_date=dt.date(2024, 1, 1), status=status)

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Release = apps.get_model("releasecal", "Release")
    teams = {r.slug: sorted(r.team.values_list("username", flat=True)) for r in Release.objects.all()}
    assert teams == {"1.30": [], "1.31": ["old-team"], "1.32": ["old-team"]}
    assert outsider.pk
