"""The ledger: materialised from rules, rescheduled, cancelled, claimed once, swept."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from exceptions.services import (
    RequestFields,
    exception_request_approve,
    exception_request_reject,
    exception_request_submit,
    exception_request_withdraw,
)
from releasecal import tz
from releasecal.services import enhancement_upsert, milestone_cancel, milestone_create, milestone_save
from reminders import services
from reminders.models import Delivery, ReminderRule
from reminders.offsets import parse_offset, parse_offsets
from tests.support.reminders_helpers import (
    channel,
    code_freeze_of,
    future_release,
    hour_from_now,
    kep_with_owners,
    rule,
)

pytestmark = pytest.mark.django_db
State = Delivery.State
Applies = ReminderRule.AppliesTo


@pytest.fixture
def team_email(kinds):
    return channel("email", "team", to=["release-team@example.com"])


@pytest.fixture
def freeze_rules(team_email):
    return rule(team_email, offsets="14d, 10d, 3d, 1d, 2h, 0, 1d@09:00")


def _rows(milestone):
    return {d.offset: d for d in Delivery.objects.filter(milestone=milestone, request__isnull=True)}


def test_it_materialises_one_delivery_per_offset_when_a_milestone_is_created(freeze_rules):
    freeze_at = hour_from_now(20)
    release = future_release(freeze_at=freeze_at)
    rows = _rows(code_freeze_of(release))
    assert set(rows) == {"14d", "10d", "3d", "1d", "2h", "0", "1d@09:00"}
    assert rows["14d"].due_at == freeze_at - dt.timedelta(days=14)
    assert rows["2h"].due_at == freeze_at - dt.timedelta(hours=2)
    assert rows["0"].due_at == freeze_at
    assert {r.state for r in rows.values()} == {State.PENDING}
    assert {r.recipient for r in rows.values()} == {"email:release-team@example.com"}
    day_before = tz.local_date(freeze_at, "America/Los_Angeles") - dt.timedelta(days=1)
    assert tz.to_zone(rows["1d@09:00"].due_at, "America/Los_Angeles").replace(tzinfo=None) == dt.datetime.combine(
        day_before, dt.time(9, 0)
    )


def test_the_database_refuses_a_second_row_for_the_same_deadline_offset_channel_recipient(freeze_rules, team_email):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    with pytest.raises(IntegrityError):
        Delivery.objects.create(
            milestone=milestone, channel=team_email, offset="3d", recipient="email:release-team@example.com",
            due_at=tz.utc_now(),
        )  # fmt: skip


def test_a_long_past_milestone_reads_only_its_rows_and_a_moved_one_keeps_its_rows_right(
    freeze_rules, django_assert_num_queries
):
    """An import of a past cycle syncs each of its milestones: one with no open rows and
    a deadline past the grace period has nothing to remind of, and reads no rule and no
    owner (the README history import spent three quarters of its time there)."""
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(-24 * 400)))
    assert _rows(milestone) == {}
    with django_assert_num_queries(3):  # savepoint, the rows (locked), release savepoint
        services.deliveries_sync_for_milestone(milestone=milestone)
    milestone.at = hour_from_now(20)  # moved into the future: its reminders are made
    milestone.save()
    services.deliveries_sync_for_milestone(milestone=milestone)
    assert set(_rows(milestone)) == {"14d", "10d", "3d", "1d", "2h", "0", "1d@09:00"}
    milestone.at = hour_from_now(-24 * 400)  # and back: its open rows are missed, not left pending
    milestone.save()
    services.deliveries_sync_for_milestone(milestone=milestone)
    assert {row.state for row in _rows(milestone).values()} == {State.MISSED}


def test_a_milestone_just_created_reads_no_reminder_and_no_request(freeze_rules, kinds):
    """milestone_changed for a created milestone (previous None) has nothing to read: no
    row and no request can name it yet (the README import creates ~1000). A future one
    still gets its reminders."""
    release = future_release(freeze_at=hour_from_now(20))
    for at in (hour_from_now(-24 * 400), hour_from_now(30)):
        with CaptureQueriesContext(connection) as ctx:
            milestone = milestone_create(release=release, kind=kinds["code-freeze"], title=f"Freeze {at}", at=at)
        read = [q["sql"] for q in ctx.captured_queries if q["sql"].startswith("SELECT")]
        assert not [sql for sql in read if '"reminders_delivery"' in sql or '"exceptions_exceptionrequest"' in sql]
    assert set(_rows(milestone)) == {"14d", "10d", "3d", "1d", "2h", "0", "1d@09:00"}


def test_syncing_twice_changes_nothing(freeze_rules):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    before = list(Delivery.objects.order_by("pk").values_list("pk", "due_at", "state"))
    services.deliveries_sync_for_milestone(milestone=milestone)
    services.deliveries_sync_all()
    assert list(Delivery.objects.order_by("pk").values_list("pk", "due_at", "state")) == before


def test_moving_a_milestone_reschedules_its_pending_deliveries_and_leaves_sent_ones(freeze_rules):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    Delivery.objects.filter(milestone=milestone, offset="14d").update(state=State.SENT)
    milestone.at = milestone.at + dt.timedelta(days=2, hours=3)
    milestone_save(milestone=milestone)
    rows = _rows(milestone)
    assert rows["3d"].due_at == milestone.at - dt.timedelta(days=3)
    assert rows["0"].due_at == milestone.at
    assert rows["14d"].state == State.SENT
    assert rows["14d"].due_at == milestone.at - dt.timedelta(days=2, hours=3) - dt.timedelta(days=14)


def test_moving_a_deadline_closer_marks_reminders_whose_time_passed_missed_with_a_reason(freeze_rules):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    milestone.at = hour_from_now(2 / 24)
    milestone_save(milestone=milestone)
    rows = _rows(milestone)
    for offset in ("14d", "10d", "3d", "1d"):
        assert rows[offset].state == State.MISSED
        assert "not sent late" in rows[offset].reason
    assert rows["0"].state == State.PENDING
    # Moved back out again: the missed ones are re-armed, nothing was sent.
    milestone.at = hour_from_now(20)
    milestone_save(milestone=milestone)
    assert {r.state for r in _rows(milestone).values()} == {State.PENDING}


def test_cancelling_a_milestone_cancels_its_pending_deliveries(freeze_rules):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    milestone_cancel(milestone=milestone)
    rows = _rows(milestone)
    assert {r.state for r in rows.values()} == {State.CANCELLED}
    assert all("cancelled" in r.reason for r in rows.values())


def test_a_rule_losing_an_offset_cancels_that_offsets_rows(freeze_rules):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    freeze_rules.offsets = "3d, 0"
    freeze_rules.save()
    services.deliveries_sync_all()
    rows = _rows(milestone)
    assert rows["3d"].state == State.PENDING
    assert rows["14d"].state == State.CANCELLED
    assert rows["14d"].reason == "No active rule asks for it any more"


def test_kep_owners_get_one_row_each(kinds):
    owners = channel("kep_owners", "owners", via="email")
    rule(owners, offsets="1d")
    release = future_release(freeze_at=hour_from_now(20))
    kep_with_owners(release)
    services.deliveries_sync_all()
    rows = Delivery.objects.filter(milestone=code_freeze_of(release))
    assert sorted(rows.values_list("recipient", flat=True)) == ["email:alice@example.com", "email:bob@example.com"]


def test_a_claim_succeeds_once(freeze_rules):
    milestone = code_freeze_of(future_release(freeze_at=hour_from_now(20)))
    row = _rows(milestone)["14d"]
    now = row.due_at + dt.timedelta(seconds=1)
    assert services.delivery_claim(delivery_id=row.pk, now=now) is True
    assert services.delivery_claim(delivery_id=row.pk, now=now) is False
    row.refresh_from_db()
    assert (row.state, row.attempts) == (State.SENDING, 1)
    # The lease runs from claimed_at; the row's last change is the claim (a queryset
    # update does not touch auto_now fields by itself).
    assert (row.claimed_at, row.updated_at) == (now, now)


def test_a_claim_at_the_due_instant_succeeds(freeze_rules):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["14d"]
    assert services.delivery_claim(delivery_id=row.pk, now=row.due_at) is True


def test_a_claim_refuses_a_delivery_that_is_not_due(freeze_rules):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["14d"]
    assert services.delivery_claim(delivery_id=row.pk, now=row.due_at - dt.timedelta(seconds=1)) is False


def test_a_redelivered_send_task_sends_once(freeze_rules, mailoutbox):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["3d"]
    now = row.due_at + dt.timedelta(seconds=5)
    assert services.delivery_send(delivery_id=row.pk, now=now) == "sent"
    assert services.delivery_send(delivery_id=row.pk, now=now) == "not-claimed"
    assert len(mailoutbox) == 1
    row.refresh_from_db()
    assert row.state == State.SENT
    assert row.sent_at == now


def test_the_email_names_the_deadline_in_its_zone_with_utc_and_aoe(freeze_rules, mailoutbox):
    milestone = code_freeze_of(future_release(freeze_at=dt.datetime(2030, 7, 24, 2, 0, tzinfo=dt.UTC)))
    row = _rows(milestone)["3d"]
    services.delivery_send(delivery_id=row.pk, now=row.due_at)
    message = mailoutbox[0]
    assert message.subject == "Kubernetes v9.99: Code Freeze in 3 days"
    assert (
        "19:00 PDT Tuesday 23 July 2030 (02:00 UTC Wednesday 24 July 2030) / 14:00 AoE Tuesday 23 July 2030"
    ) in message.body
    assert f"releasecal delivery #{row.pk}" in message.body
    assert message.to == ["release-team@example.com"]


def test_the_zero_offset_says_the_freeze_is_in_effect(freeze_rules, mailoutbox):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["0"]
    services.delivery_send(delivery_id=row.pk, now=row.due_at)
    assert mailoutbox[0].subject == "Kubernetes v9.99: Code Freeze is now in effect"


def test_the_sweep_marks_an_unsent_overdue_delivery_missed_instead_of_sending_it_late(freeze_rules, mailoutbox):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["14d"]
    queued = []
    result = services.deliveries_sweep(now=row.due_at + dt.timedelta(hours=2), enqueue=queued.append)
    row.refresh_from_db()
    assert row.state == State.MISSED
    assert row.pk not in queued
    assert result.missed >= 1
    assert "not sent late" in row.reason


def test_the_admin_retry_sends_a_missed_delivery_with_a_late_note(freeze_rules, mailoutbox):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["14d"]
    later = row.due_at + dt.timedelta(hours=2)
    services.deliveries_sweep(now=later, enqueue=lambda _: None)
    row.refresh_from_db()
    assert services.delivery_retry(delivery=row, now=later) is True
    assert services.delivery_send(delivery_id=row.pk, now=later) == "sent"
    assert mailoutbox[0].body.startswith("Late: this message was due at")


def test_the_sweep_queues_each_due_delivery_once_per_requeue_period(freeze_rules):
    rows = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))
    now = rows["14d"].due_at + dt.timedelta(seconds=30)
    first, second = [], []
    services.deliveries_sweep(now=now, enqueue=first.append)
    services.deliveries_sweep(now=now + dt.timedelta(seconds=60), enqueue=second.append)
    assert first == [rows["14d"].pk]
    assert second == []  # queued a minute ago, not yet sent: not queued again (yet)


def test_the_sweep_reclaims_a_delivery_stuck_in_sending_after_the_lease(freeze_rules, settings, mailoutbox):
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["3d"]
    assert services.delivery_claim(delivery_id=row.pk, now=row.due_at)  # then the worker died
    within = row.due_at + dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS - 1)
    assert services.deliveries_sweep(now=within, enqueue=lambda _: None).reclaimed == 0
    after = row.due_at + dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS + 1)
    queued = []
    result = services.deliveries_sweep(now=after, enqueue=queued.append)
    assert result.reclaimed == 1
    assert row.pk in queued
    assert services.delivery_send(delivery_id=row.pk, now=after) == "sent"
    row.refresh_from_db()
    assert row.attempts == 2


def test_the_sweep_gives_up_on_a_delivery_whose_workers_keep_dying(freeze_rules, settings):
    settings.OUTBOX_MAX_ATTEMPTS = 1
    row = _rows(code_freeze_of(future_release(freeze_at=hour_from_now(20))))["3d"]
    assert services.delivery_claim(delivery_id=row.pk, now=row.due_at)
    later = row.due_at + dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS + 1)
    assert services.deliveries_sweep(now=later, enqueue=lambda _: None).reclaimed == 1
    row.refresh_from_db()
    assert row.state == State.FAILED
    assert row.last_error == "Gave up: the sending worker was lost 1 times"


# ---------------------------------------------------------------- events


@pytest.fixture
def event_setup(kinds, team_email):
    owners = channel("kep_owners", "owners", via="email")
    rule(team_email, applies_to=Applies.REQUEST_SUBMITTED)
    rule(team_email, applies_to=Applies.REQUEST_NUDGE)
    rule(owners, applies_to=Applies.REQUEST_DECIDED)
    rule(owners, applies_to=Applies.EXTENSIONS, offsets="1d")
    release = future_release(freeze_at=hour_from_now(-1))
    kep = kep_with_owners(release)
    requester = User.objects.create_user("req", "req@example.com", "pw")
    lead = User.objects.create_user("lead2", "lead2@example.com", "pw")
    from django.contrib.auth.models import Group

    lead.groups.add(Group.objects.get(name="Release Team"))
    release.team.add(lead)
    return release, kep, requester, lead


def three_zones(instant: dt.datetime, zone: str) -> str:
    """What a deadline reads like in a message, built here with zoneinfo and the format
    written out (never with releasecal.tz, which is under test): "19:00 PDT Tuesday 23
    July 2024 (02:00 UTC Wednesday 24 July 2024) / 14:00 AoE Tuesday 23 July 2024", and a
    midnight as "end of Wednesday 2 December 2026 PST"."""

    def clock(info: ZoneInfo, label: str | None = None, *, words: bool = True) -> str:
        local = instant.astimezone(info)
        if words and (local.hour, local.minute) == (0, 0):  # midnight: the end of the day before
            day = local - dt.timedelta(days=1)
            return f"end of {day:%A} {day.day} {day:%B} {day.year} {label or local.tzname()}"
        return f"{local:%H:%M} {label or local.tzname()} {local:%A} {local.day} {local:%B} {local.year}"

    # The UTC part beside the native one says the instant by its clock, midnight too.
    return f"{clock(ZoneInfo(zone))} ({clock(ZoneInfo('UTC'), words=False)}) / {clock(ZoneInfo('Etc/GMT+12'), 'AoE')}"


def _submit(release, kep, requester):
    return exception_request_submit(
        enhancement=kep, milestone=code_freeze_of(release), requester=requester,
        fields=RequestFields(days=3, enhancement_name=kep.title, stage="beta", sig="node"),
    )  # fmt: skip


def test_a_new_request_notifies_the_release_team(event_setup, django_capture_on_commit_callbacks):
    release, kep, requester, _ = event_setup
    with django_capture_on_commit_callbacks(execute=False):
        request = _submit(release, kep, requester)
    rows = Delivery.objects.filter(request=request)
    assert list(rows.values_list("offset", "recipient")) == [("event:submitted", "email:release-team@example.com")]


def test_a_decision_notifies_the_owners_and_the_requester_with_the_deadline(
    event_setup, mailoutbox, django_capture_on_commit_callbacks
):
    release, kep, requester, lead = event_setup
    with django_capture_on_commit_callbacks(execute=False):
        request = _submit(release, kep, requester)
        decision = exception_request_approve(request=request, actor=lead)
    decided = Delivery.objects.filter(request=request, offset="event:approved")
    assert sorted(decided.values_list("recipient", flat=True)) == [
        "email:alice@example.com", "email:bob@example.com", "email:req@example.com",
    ]  # fmt: skip
    row = decided.first()
    services.delivery_send(delivery_id=row.pk)
    assert decision.granted_zone == "America/Los_Angeles"
    assert three_zones(decision.granted_until, "America/Los_Angeles") in mailoutbox[0].body
    assert "was approved by lead2" in mailoutbox[0].subject
    ext = Delivery.objects.get(request=request, offset="1d", recipient="email:alice@example.com")
    assert ext.due_at == decision.granted_until - dt.timedelta(days=1)
    assert ext.state == State.PENDING
    assert services.delivery_send(delivery_id=ext.pk, now=ext.due_at) == "sent"
    assert mailoutbox[-1].subject == "Kubernetes v9.99: KEP-2400's exception for Code Freeze ends in 1 day"
    assert three_zones(decision.granted_until, "America/Los_Angeles") in mailoutbox[-1].body
    assert mailoutbox[-1].to == ["alice@example.com"]


def test_rejecting_a_request_notifies_and_withdrawing_cancels_its_nudge(
    event_setup, django_capture_on_commit_callbacks
):
    release, kep, requester, _lead = event_setup
    with django_capture_on_commit_callbacks(execute=False):
        request = _submit(release, kep, requester)
    later = tz.utc_now() + dt.timedelta(hours=25)
    result = services.deliveries_sweep(now=later, enqueue=lambda _: None)
    assert result.nudged == 1
    assert services.deliveries_sweep(now=later + dt.timedelta(hours=5), enqueue=lambda _: None).nudged == 0
    assert Delivery.objects.filter(request=request, offset="event:nudge").count() == 1
    with django_capture_on_commit_callbacks(execute=False):
        exception_request_withdraw(request=request, actor=requester)
    nudge = Delivery.objects.get(request=request, offset="event:nudge")
    assert nudge.state == State.CANCELLED
    assert nudge.reason == f"Request #{request.pk} was withdrawn"


def test_rejection_notifies_with_the_unchanged_deadline(event_setup, mailoutbox, django_capture_on_commit_callbacks):
    release, kep, requester, lead = event_setup
    with django_capture_on_commit_callbacks(execute=False):
        request = _submit(release, kep, requester)
        exception_request_reject(request=request, actor=lead, note="too late")
    row = Delivery.objects.filter(request=request, offset="event:rejected").first()
    services.delivery_send(delivery_id=row.pk)
    freeze = code_freeze_of(release)
    assert "The deadline stays Code Freeze: " + three_zones(freeze.at, "America/Los_Angeles") in mailoutbox[0].body
    assert "Note: too late" in mailoutbox[0].body


# ---------------------------------------------------------------- offsets


@pytest.mark.parametrize(
    ("spec", "canonical"), [("14d", "14d"), (" 2H ", "2h"), ("0", "0"), ("1d12h", "1d12h"), ("1d@9:30", "1d@09:30")]
)
def test_offsets_parse_to_a_canonical_spelling(spec, canonical):
    assert parse_offset(spec).spec == canonical


@pytest.mark.parametrize("spec", ["", "3 weeks", "1d@25:00", "-1d", "d", "400d"])
def test_it_rejects_offsets_it_cannot_read(spec):
    with pytest.raises(ValueError, match=r"offset|time of day|at most"):
        parse_offset(spec)


def test_duplicate_offsets_collapse():
    assert [o.spec for o in parse_offsets("3d, 3d, 72h, 0")] == ["3d", "72h", "0"]


def test_the_day_before_at_a_time_in_the_spring_gap_fires_when_the_clocks_jump():
    # 02:30 on Sunday 10 March 2024 never happened in Los Angeles: 03:00 PDT (10:00 UTC) is next.
    deadline = tz.parse_wall_time("2024-03-11 12:00", "America/Los_Angeles")
    assert parse_offset("1d@02:30").due(deadline, "America/Los_Angeles") == dt.datetime(
        2024, 3, 10, 10, 0, tzinfo=dt.UTC
    )


def test_the_day_before_at_a_time_in_the_autumn_fold_fires_at_its_first_occurrence():
    deadline = tz.parse_wall_time("2024-11-04 12:00", "America/Los_Angeles")
    # 01:30 on 3 November 2024 happened at 08:30 UTC (PDT) and again at 09:30 UTC (PST).
    assert parse_offset("1d@01:30").due(deadline, "America/Los_Angeles") == dt.datetime(
        2024, 11, 3, 8, 30, tzinfo=dt.UTC
    )


# ---------------------------------------------------------------- seeds


def test_the_kubernetes_defaults_are_seeded_once_and_cover_every_freeze(kinds, settings):
    settings.SLACK_BOT_TOKEN = ""
    release = future_release(freeze_at=hour_from_now(20))
    first = services.reminder_rules_seed_defaults()
    again = services.reminder_rules_seed_defaults()
    assert [r.pk for r in first] == [r.pk for r in again]
    freeze = ReminderRule.objects.get(name="Freeze reminders (email)")
    assert freeze.offsets == "14d, 10d, 3d, 1d, 0"
    assert set(freeze.kinds.values_list("slug", flat=True)) == {
        "prr-freeze", "enhancements-freeze", "feature-blog-freeze", "code-freeze", "docs-freeze", "test-freeze",
    }  # fmt: skip
    assert not ReminderRule.objects.get(name="Freeze reminders (Slack)").active
    rows = Delivery.objects.filter(milestone=code_freeze_of(release), request__isnull=True)
    assert sorted(rows.values_list("offset", flat=True)) == ["0", "10d", "14d", "1d", "3d"]
    assert ReminderRule.objects.get(applies_to=Applies.EXTENSIONS).offsets == "1d"


def test_seeding_again_gives_a_default_freeze_rule_left_with_no_kinds_its_freezes(kinds, settings):
    settings.SLACK_BOT_TOKEN = ""
    services.reminder_rules_seed_defaults()
    freeze = ReminderRule.objects.get(name="Freeze reminders (email)")
    freeze.kinds.clear()  # seeded before the kinds existed, or emptied by mistake: covers nothing
    services.reminder_rules_seed_defaults()
    assert freeze.kinds.count() == 6
    # A rule of another kind keeps its kinds as they are (none: every kind).
    assert not ReminderRule.objects.get(name="Extension ends tomorrow (KEP owners)").kinds.exists()


def test_seeding_with_a_bot_token_turns_the_slack_rules_on(kinds, settings):
    settings.SLACK_BOT_TOKEN = ""
    services.reminder_rules_seed_defaults()
    settings.SLACK_BOT_TOKEN = "xoxb-test"
    settings.SLACK_RELEASE_TEAM_CHANNEL = "C0RELEASE"  # the Slack app posts new requests there itself
    services.reminder_rules_seed_defaults()
    active = dict(ReminderRule.objects.filter(channel__name="Release team (Slack)").values_list("name", "active"))
    assert active == {
        "Freeze reminders (Slack)": True,
        "Request waiting for a decision (Slack)": True,
        "New exception request (Slack)": False,
    }


def test_the_day_before_counts_from_the_deadlines_day_not_the_instants_date():
    # 00:00 AoE Friday 11 December 2026 is "end of Thursday 10 December 2026 AoE": the day
    # before is Wednesday, so "1d@09:00" is 09:00 AoE Wednesday (21:00 UTC Wednesday).
    deadline = tz.parse_wall_time("2026-12-11 00:00", "AoE")
    assert tz.render_deadline(deadline, "AoE").startswith("end of Thursday 10 December 2026 AoE")
    due = parse_offset("1d@09:00").due(deadline, "AoE")
    assert tz.render_in_zone(due, "AoE") == "09:00 AoE Wednesday 9 December 2026"
    assert due == dt.datetime(2026, 12, 9, 21, 0, tzinfo=dt.UTC)
    assert parse_offset("0d@09:00").due(deadline, "AoE") == dt.datetime(2026, 12, 10, 21, 0, tzinfo=dt.UTC)
    # One second later the deadline closes on Friday, and the day before is Thursday.
    later = deadline + dt.timedelta(seconds=1)
    assert tz.render_in_zone(parse_offset("1d@09:00").due(later, "AoE"), "AoE") == "09:00 AoE Thursday 10 December 2026"
    # The same at midnight in a zone with DST: 00:00 PDT Friday 26 July 2024 closes Thursday.
    la = tz.parse_wall_time("2024-07-26 00:00", "America/Los_Angeles")
    assert (
        tz.render_in_zone(parse_offset("1d@09:00").due(la, "America/Los_Angeles"), "America/Los_Angeles")
        == "09:00 PDT Wednesday 24 July 2024"
    )


def test_changing_a_keps_owners_resyncs_their_pending_deliveries_at_once(kinds):
    owners = channel("kep_owners", "owners", via="email")
    rule(owners, offsets="1d")
    rule(owners, applies_to=Applies.EXTENSIONS, offsets="1d")
    release = future_release(freeze_at=hour_from_now(20))
    kep_with_owners(release)
    services.deliveries_sync_all()
    freeze = code_freeze_of(release)

    def recipients(state):
        return sorted(Delivery.objects.filter(milestone=freeze, state=state).values_list("recipient", flat=True))

    assert recipients(State.PENDING) == ["email:alice@example.com", "email:bob@example.com"]
    # bob's address changes and carol joins (the KEP import, through enhancement_upsert).
    enhancement_upsert(
        number=2400, title="Node memory swap support", owning_sig="node",
        owners=[{"github": "bob", "email": "bob@new.example"}, {"github": "carol", "email": "carol@example.com"}],
    )  # fmt: skip
    assert recipients(State.PENDING) == ["email:alice@example.com", "email:bob@new.example", "email:carol@example.com"]
    assert recipients(State.CANCELLED) == ["email:bob@example.com"]
    # The same owners again change nothing (no row touched).
    touched = Delivery.objects.order_by("-updated_at").values_list("updated_at", flat=True).first()
    enhancement_upsert(
        number=2400, title="Node memory swap support", owning_sig="node",
        owners=[{"github": "bob", "email": "bob@new.example"}],
    )  # fmt: skip
    assert Delivery.objects.order_by("-updated_at").values_list("updated_at", flat=True).first() == touched


def test_removing_an_owner_in_the_admin_cancels_their_pending_deliveries(kinds, client):
    owners = channel("kep_owners", "owners", via="email")
    rule(owners, offsets="1d")
    release = future_release(freeze_at=hour_from_now(20))
    kep = kep_with_owners(release)
    services.deliveries_sync_all()
    freeze = code_freeze_of(release)
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin)
    alice, bob = kep.owners.order_by("pk")
    tracking = kep.tracking.get()
    form = {
        "number": kep.number, "title": kep.title, "owning_sig": kep.owning_sig, "participating_sigs": "[]",
        "issue_url": kep.issue_url,
        "owners-TOTAL_FORMS": 2, "owners-INITIAL_FORMS": 2, "owners-MIN_NUM_FORMS": 0, "owners-MAX_NUM_FORMS": 1000,
        "owners-0-id": alice.pk, "owners-0-enhancement": kep.pk, "owners-0-github": "alice",
        "owners-0-email": "alice@example.com", "owners-0-slack_id": "UALICE",
        "owners-1-id": bob.pk, "owners-1-enhancement": kep.pk, "owners-1-github": "bob",
        "owners-1-email": "bob@example.com", "owners-1-DELETE": "on",
        "tracking-TOTAL_FORMS": 1, "tracking-INITIAL_FORMS": 1, "tracking-MIN_NUM_FORMS": 0,
        "tracking-MAX_NUM_FORMS": 1000, "tracking-0-id": tracking.pk, "tracking-0-enhancement": kep.pk,
        "tracking-0-release": release.pk, "tracking-0-stage": tracking.stage, "tracking-0-status": tracking.status,
        "tracking-0-pr_urls": "[]",
    }  # fmt: skip
    response = client.post(f"/admin/releasecal/enhancement/{kep.pk}/change/", form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert list(kep.owners.values_list("github", flat=True)) == ["alice"]
    rows = dict(Delivery.objects.filter(milestone=freeze).values_list("recipient", "state"))
    assert rows == {"email:alice@example.com": State.PENDING, "email:bob@example.com": State.CANCELLED}


def test_a_grant_superseded_by_a_moved_freeze_loses_its_reminders_and_regains_them(event_setup):
    """Reminders follow the effective deadline: the later of the freeze and the grant."""
    release, kep, requester, lead = event_setup
    freeze = code_freeze_of(release)
    request = exception_request_submit(
        enhancement=kep, milestone=freeze, requester=requester, fields=RequestFields(days=3)
    )
    exception_request_approve(
        request=request, actor=lead, granted_until=freeze.deadline + dt.timedelta(days=3), granted_zone=release.zone
    )
    pending = Delivery.objects.filter(request=request, state=Delivery.State.PENDING)
    pending = pending.exclude(offset__startswith="event:")
    assert pending.count() == 2  # the two owners, 1 day before the grant

    freeze.at = freeze.at + dt.timedelta(days=4)  # past the grant: superseded
    milestone_save(milestone=freeze)
    assert pending.count() == 0
    cancelled = Delivery.objects.filter(request=request, state=Delivery.State.CANCELLED).exclude(
        offset__startswith="event:"
    )
    assert all("superseded by the freeze" in row.reason for row in cancelled)

    freeze.at = freeze.at - dt.timedelta(days=4)  # back before the grant: it applies again
    milestone_save(milestone=freeze)
    assert pending.count() == 2
