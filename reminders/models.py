"""Reminder rules, the channels they send through, and the delivery ledger.

A rule says which deadlines it covers, how long before each one to remind, and which
channel to use. The ledger holds one row per (deadline, offset, channel, recipient):
the row is the unit that is claimed, sent, retried and audited, so a reminder is sent
once however many beats, workers or redelivered messages look at it.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from releasecal.models import Milestone, MilestoneKind, Release
from reminders.channels import channel_config_errors
from reminders.offsets import parse_offsets


class Channel(models.Model):
    class Kind(models.TextChoices):
        EMAIL = "email", "Email list"
        SLACK_WEBHOOK = "slack_webhook", "Slack incoming webhook"
        SLACK_BOT = "slack_bot", "Slack channel (bot token)"
        KEP_OWNERS = "kep_owners", "The KEP's owners"
        LIAISON = "liaison", "The request's liaison (Slack DM when linked, else email)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    config = models.JSONField(
        default=dict,
        blank=True,
        help_text=(
            'email: {"to": ["a@example.com"]} · slack_webhook: {"url": "https://hooks…"} · '
            'slack_bot: {"channel": "C0123", "token": "xoxb-… (default SLACK_BOT_TOKEN)"} · '
            'kep_owners: {"via": "email" or "slack"} · liaison: {}'
        ),
    )
    failing = models.BooleanField(
        default=False, help_text="Set by a permanent failure (404, invalid_token, …); saving the channel clears it."
    )
    failing_since = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def clean(self) -> None:
        errors = channel_config_errors(self.kind, self.config)
        if errors:
            raise ValidationError({"config": errors})


class ReminderRule(models.Model):
    class AppliesTo(models.TextChoices):
        MILESTONES = "milestones", "Milestone deadlines (of the kinds chosen)"
        EXTENSIONS = "extensions", "Granted extensions (exception deadlines)"
        REQUEST_SUBMITTED = "request_submitted", "Event: a new exception request"
        REQUEST_DECIDED = "request_decided", "Event: a request approved or rejected"
        REQUEST_NUDGE = "request_nudge", "Event: a request waiting too long for a decision"

    REMINDER_TARGETS = (AppliesTo.MILESTONES, AppliesTo.EXTENSIONS)

    name = models.CharField(max_length=200)
    applies_to = models.CharField(max_length=24, choices=AppliesTo.choices, default=AppliesTo.MILESTONES)
    kinds = models.ManyToManyField(
        MilestoneKind,
        blank=True,
        related_name="reminder_rules",
        help_text="Milestone kinds covered. For extensions: only extensions of these kinds (empty: all).",
    )
    release = models.ForeignKey(
        Release,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="reminder_rules",
        help_text="Only this release (empty: every release).",
    )
    offsets = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "How long before the deadline, comma separated: 14d, 10d, 3d, 1d, 2h, 30m, 0 (at the deadline: "
            "'freeze is now in effect'). 1d@09:00 = 09:00 local time the day before, in the deadline's zone. "
            "Ignored by event rules."
        ),
    )
    channel = models.ForeignKey(Channel, on_delete=models.PROTECT, related_name="rules")
    # On by default: a lone reminder looks exactly as before, and only a burst (several
    # deadlines due in the same sweep for the same channel or address) becomes one
    # message instead of many, which Slack's one message per second per channel would
    # otherwise spread over minutes. A rule whose messages must stand alone opts out.
    combine = models.BooleanField(
        "may be combined",
        default=True,
        help_text=(
            "Deliveries of this rule that come due in the same sweep for the same channel (or email address) "
            "go out as one digest message listing each deadline. Off: always a message of its own."
        ),
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["applies_to", "name"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_event(self) -> bool:
        return self.applies_to not in self.REMINDER_TARGETS

    def clean(self) -> None:
        if not self.is_event:
            try:
                offsets = parse_offsets(self.offsets)
            except ValueError as exc:
                raise ValidationError({"offsets": str(exc)}) from exc
            if not offsets:
                raise ValidationError({"offsets": "Give at least one offset, e.g. 3d, 1d, 0."})


class Delivery(models.Model):
    """One reminder or notification to one recipient through one channel.

    ``pending → sending → sent``; a transient failure goes back to ``pending`` with
    ``next_attempt_at``; a permanent one, or too many attempts, ends in ``failed``.
    ``cancelled``: its deadline was cancelled, withdrawn or rejected, or its rule no
    longer asks for it. ``missed``: its time passed by more than the grace period
    before it could be sent (never sent late silently; the admin's retry sends it with a
    "late" note).
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        MISSED = "missed", "Missed (too late)"

    # States a re-sync may still move: nothing was sent for them.
    OPEN_STATES = (State.PENDING, State.MISSED, State.CANCELLED)

    rule = models.ForeignKey(ReminderRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="deliveries")
    # The deadline: a milestone's own deadline (request empty), or an exception request
    # (its granted extension, or one of its events).
    milestone = models.ForeignKey(Milestone, on_delete=models.CASCADE, related_name="deliveries")
    request = models.ForeignKey(
        "exceptions.ExceptionRequest", null=True, blank=True, on_delete=models.CASCADE, related_name="deliveries"
    )
    offset = models.CharField(max_length=32, help_text="The rule's offset (14d, 0, 1d@09:00) or event:<name>")
    recipient = models.CharField(max_length=254, blank=True, help_text="email:<address>, slack:<user id>, or empty")
    deadline_at = models.DateTimeField(null=True, blank=True, help_text="The deadline this row was computed from")
    deadline_zone = models.CharField(max_length=64, blank=True)
    due_at = models.DateTimeField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True, help_text="Last time the sweep queued a send task")
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    send_late = models.BooleanField(default=False, help_text="Retried by hand after its time: sent with a late note")
    last_error = models.TextField(blank=True)
    reason = models.CharField(max_length=300, blank=True, help_text="Why it was cancelled or missed")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-due_at", "-id"]
        verbose_name_plural = "deliveries"
        indexes = [models.Index(fields=["state", "due_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["milestone", "offset", "channel", "recipient"],
                condition=Q(request__isnull=True),
                name="one_delivery_per_milestone_offset_channel_recipient",
            ),
            models.UniqueConstraint(
                fields=["request", "offset", "channel", "recipient"],
                condition=Q(request__isnull=False),
                name="one_delivery_per_request_offset_channel_recipient",
            ),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "sending", "sent", "failed", "cancelled", "missed"]),
                name="delivery_state_valid",
            ),
        ]

    def __str__(self) -> str:
        target = f"request #{self.request_id}" if self.request_id else f"milestone #{self.milestone_id}"
        return f"{self.offset} · {target} · {self.channel.name} {self.recipient}".strip()


class SweepHeartbeat(models.Model):
    """One row: when the minute sweep last completed, and whether the release team was
    told it stopped. ``manage.py check_services`` and the admin show it."""

    last_completed_at = models.DateTimeField(null=True, blank=True)
    # The stall the team was alerted about (the last_completed_at it saw): one alert per stall.
    stall_alerted_for = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "reminder sweep"

    def __str__(self) -> str:
        return f"last sweep completed at {self.last_completed_at}"
