"""Migrations releasecal 0010 and 0011: owner handles unique in any case. Rows of one KEP whose
handles differ in case or a leading @ are merged into the oldest, which keeps what the
others knew (email, Slack id, user)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("releasecal", "0009_milestone_week")]
AFTER = [("releasecal", "0011_owner_github_any_case")]


@pytest.mark.django_db(transaction=True)
def test_owners_differing_in_case_are_merged_into_the_oldest():
    try:
        _test()
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _test():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    apps = executor.loader.project_state(BEFORE).apps
    Enhancement, Owner = apps.get_model("releasecal", "Enhancement"), apps.get_model("releasecal", "EnhancementOwner")
    user = User.objects.create_user("alice")
    swap = Enhancement.objects.create(number=2400, title="Swap", owning_sig="node")
    oci = Enhancement.objects.create(number=4639, title="OCI", owning_sig="node")
    first = Owner.objects.create(enhancement=swap, github="Alice")
    Owner.objects.create(enhancement=swap, github="alice", email="alice@example.com")
    Owner.objects.create(enhancement=swap, github="@ALICE", slack_id="U0ALICE", user_id=user.pk)
    Owner.objects.create(enhancement=swap, github="bob")
    Owner.objects.create(enhancement=swap, github="", email="list@example.com")
    Owner.objects.create(enhancement=swap, github="", email="other@example.com")
    other_kep = Owner.objects.create(enhancement=oci, github="alice")
    at_sign = Owner.objects.create(enhancement=oci, github="@carol")

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    apps = executor.loader.project_state(AFTER).apps
    Owner = apps.get_model("releasecal", "EnhancementOwner")
    rows = sorted(Owner.objects.values_list("enhancement__number", "github", "email", "slack_id", "user_id", "pk"))
    assert rows == [
        (2400, "", "list@example.com", "", None, rows[0][5]),
        (2400, "", "other@example.com", "", None, rows[1][5]),
        (2400, "Alice", "alice@example.com", "U0ALICE", user.pk, first.pk),
        (2400, "bob", "", "", None, rows[3][5]),
        (4639, "alice", "", "", None, other_kep.pk),
        (4639, "carol", "", "", None, at_sign.pk),
    ]
