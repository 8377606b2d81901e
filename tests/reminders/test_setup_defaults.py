"""``manage.py setup_defaults`` (issue 24): the default reminder channels and rules on any
database, idempotent; an example release-team address refused under production settings;
the cockpit names a release no rule covers."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from releasecal.models import MilestoneKind
from reminders.models import Channel, ReminderRule
from reminders.services import is_example_address


def _run(*args) -> str:
    out = io.StringIO()
    call_command("setup_defaults", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_it_sets_up_an_empty_database_and_a_second_run_changes_nothing():
    MilestoneKind.objects.all().delete()  # a migrated database has them; they are re-created too
    assert not Channel.objects.exists()
    assert not ReminderRule.objects.exists()

    first = _run()

    assert first.strip() == (
        "Reminder channels: 3 (3 created). Reminder rules: 8 (8 created). Edit them in the admin under Reminders."
    )
    freeze_rule = ReminderRule.objects.get(name="Freeze reminders (email)")
    assert sorted(freeze_rule.kinds.values_list("slug", flat=True)) == sorted(
        MilestoneKind.objects.filter(is_freeze=True).values_list("slug", flat=True)
    )
    assert freeze_rule.kinds.exists()
    assert Channel.objects.get(name="Release team (email)").config == {"to": ["release-team@example.com"]}

    again = _run()

    assert again.strip() == (
        "Reminder channels: 3 (0 created). Reminder rules: 8 (0 created). Edit them in the admin under Reminders."
    )


@pytest.mark.django_db
def test_production_settings_refuse_the_example_address(settings, kinds):
    settings.RELEASECAL_PRODUCTION = True
    settings.REMINDERS_RELEASE_TEAM_EMAIL = "release-team@example.com"

    with pytest.raises(CommandError) as refused:
        _run()

    assert str(refused.value) == (
        "release-team@example.com is an example address, which no mail reaches: set the release team's real "
        "address in REMINDERS_RELEASE_TEAM_EMAIL and run setup_defaults again."
    )
    assert not Channel.objects.exists()
    assert not ReminderRule.objects.exists()


@pytest.mark.django_db
def test_production_settings_accept_a_real_address_and_refuse_an_example_channel(settings, kinds):
    settings.RELEASECAL_PRODUCTION = True
    settings.REMINDERS_RELEASE_TEAM_EMAIL = "release-team@kubernetes.io"
    assert "(3 created)" in _run()
    assert Channel.objects.get(name="Release team (email)").config == {"to": ["release-team@kubernetes.io"]}

    Channel.objects.filter(name="Release team (email)").update(config={"to": ["team@lists.example.org"]})
    with pytest.raises(CommandError, match=r"in the channel 'Release team \(email\)' \(edit it in the admin\)"):
        _run()
    assert "(0 created)" in _run("--allow-example-address")


@pytest.mark.parametrize(
    ("address", "example"),
    [
        ("release-team@example.com", True),
        ("x@EXAMPLE.org", True),
        ("x@lists.example.net", True),
        ("x@test.example", True),
        ("release-team@kubernetes.io", False),
        ("x@example.community", False),
        ("x@myexample.com", False),
    ],
)
def test_example_addresses(address, example):
    assert is_example_address(address) is example


@pytest.mark.django_db
def test_the_cockpit_names_a_release_without_rules_or_channels(release_team_member, release):
    release_team_member.is_staff = True
    release_team_member.save()
    client = Client()
    client.force_login(release_team_member)

    body = client.get("/admin/").content.decode()
    assert '<span class="warn">1.31: no reminder rules, no reminder channels</span>' in body
    assert "<code>manage.py setup_defaults</code>" in body

    _run()
    body = client.get("/admin/").content.decode()
    assert 'id="setup"' not in body


@pytest.mark.django_db
def test_a_rule_for_another_release_only_leaves_this_one_without(release_team_member, release, kinds):
    from releasecal.models import Release

    other = Release.objects.create(slug="1.99", name="v1.99", zone="UTC", start_date=release.start_date)
    channel = Channel.objects.create(name="c", kind=Channel.Kind.EMAIL, config={"to": ["a@kubernetes.io"]})
    ReminderRule.objects.create(name="only 1.99", channel=channel, release=other, offsets="1d")
    from config.cockpit import release_setup_warnings

    warnings = release_setup_warnings([release, other])
    assert [(w.release.slug, w.problems) for w in warnings] == [("1.31", ["no reminder rules"]), ("1.99", ["no team"])]
