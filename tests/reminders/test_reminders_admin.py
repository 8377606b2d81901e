"""The admin: rules editable, the ledger readable with a retry action, failing channels shown."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User

from reminders import services
from reminders.models import Channel, Delivery, ReminderRule
from tests.support.reminders_helpers import channel, code_freeze_of, future_release, hour_from_now, rule

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, db):
    User.objects.create_superuser("root", "root@example.com", "pw")
    client.login(username="root", password="pw")
    return client


@pytest.fixture
def ledger(kinds):
    email = channel("email", "team", to=["team@example.com"])
    rule(email, offsets="14d, 3d")
    return code_freeze_of(future_release(freeze_at=hour_from_now(20))), email


def test_the_ledger_lists_state_attempts_and_the_missed_reason(admin_client, ledger):
    milestone, _ = ledger
    row = Delivery.objects.get(milestone=milestone, offset="14d")
    services.deliveries_sweep(now=row.due_at + dt.timedelta(hours=1), enqueue=lambda _: None)
    page = admin_client.get("/admin/reminders/delivery/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "Missed (too late)" in text
    assert "not sent late" in text


def test_the_retry_action_requeues_a_missed_delivery(admin_client, ledger, django_capture_on_commit_callbacks):
    milestone, _ = ledger
    row = Delivery.objects.get(milestone=milestone, offset="14d")
    Delivery.objects.filter(pk=row.pk).update(
        state=Delivery.State.MISSED, due_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = admin_client.post(
            "/admin/reminders/delivery/", {"action": "retry", "_selected_action": [row.pk]}, follow=True
        )
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.state == Delivery.State.PENDING
    assert row.send_late is True
    assert len(callbacks) == 1  # the send task, queued once the retry is committed


def test_a_rule_is_created_in_the_admin_and_materialises_its_deliveries(
    admin_client, ledger, django_capture_on_commit_callbacks
):
    milestone, email = ledger
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            "/admin/reminders/reminderrule/add/",
            {
                "name": "Two hours before",
                "applies_to": ReminderRule.AppliesTo.MILESTONES,
                "kinds": [milestone.kind_id],
                "offsets": "2h",
                "channel": email.pk,
                "active": "on",
            },
        )
    assert response.status_code == 302
    assert Delivery.objects.get(milestone=milestone, offset="2h").due_at == milestone.at - dt.timedelta(hours=2)


def test_the_admin_refuses_an_offset_it_cannot_read(admin_client, ledger):
    milestone, email = ledger
    response = admin_client.post(
        "/admin/reminders/reminderrule/add/",
        {"name": "bad", "applies_to": "milestones", "kinds": [milestone.kind_id], "offsets": "3 weeks",
         "channel": email.pk, "active": "on"},
    )  # fmt: skip
    assert response.status_code == 200
    assert "is not an offset" in response.content.decode()


def test_the_admin_refuses_a_milestone_rule_with_no_kinds(admin_client, ledger):
    milestone, email = ledger
    form = {"name": "Freeze", "applies_to": "milestones", "offsets": "1d", "channel": email.pk, "active": "on"}
    response = admin_client.post("/admin/reminders/reminderrule/add/", form)
    assert response.status_code == 200
    assert (
        "A milestone rule reminds of the kinds chosen here: with none it sends nothing. "
        "Choose at least one kind (or untick Active to pause the rule)." in response.content.decode()
    )
    assert not ReminderRule.objects.filter(name="Freeze").exists()
    response = admin_client.post("/admin/reminders/reminderrule/add/", {**form, "kinds": [milestone.kind_id]})
    assert response.status_code == 302
    assert list(ReminderRule.objects.get(name="Freeze").kinds.all()) == [milestone.kind]


def test_a_failing_channel_shows_its_error_and_saving_it_clears_the_flag(admin_client, kinds):
    hook = channel("slack_webhook", "hook", url="http://127.0.0.1:9/x")
    services.channel_mark_failing(channel=hook, error="Slack: invalid_token")
    listing = admin_client.get("/admin/reminders/channel/").content.decode()
    assert "Slack: invalid_token" in listing
    response = admin_client.post(
        f"/admin/reminders/channel/{hook.pk}/change/",
        {"name": "hook", "kind": "slack_webhook", "config": '{"url": "http://127.0.0.1:9/fixed"}'},
    )
    assert response.status_code == 302
    assert not Channel.objects.get(pk=hook.pk).failing


def test_a_channel_with_a_bad_config_is_refused(admin_client, db):
    response = admin_client.post(
        "/admin/reminders/channel/add/", {"name": "x", "kind": "email", "config": '{"to": "not-a-list"}'}
    )
    assert response.status_code == 200
    assert "a list of email addresses" in response.content.decode()
