"""Who is who on Slack, and which Slack messages show which exception request."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from releasecal.models import ZoneField


class SlackIdentity(models.Model):
    """A Slack user, mapped to a releasecal user (for deciding) and remembering a zone.

    ``user`` may be empty: anyone can ask ``/relcal tz Europe/Berlin``; only a mapped
    user with the release-team permission can press Approve or Reject.
    """

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="slack_identity"
    )
    slack_user_id = models.CharField(max_length=32, help_text="e.g. U2CERLKJA")
    team_id = models.CharField(
        max_length=32,
        blank=True,
        help_text="The Slack workspace, e.g. T1DC2JH3J: a Slack user is matched in its own workspace only "
        "(empty: any workspace)",
    )
    zone = ZoneField(blank=True, help_text="Set with /relcal tz <zone>; deadlines are shown in it too")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "Slack identities"
        constraints = [
            models.UniqueConstraint(fields=["team_id", "slack_user_id"], name="one_identity_per_slack_user_and_team")
        ]

    def __str__(self) -> str:
        return f"{self.slack_user_id} -> {self.user or 'unmapped'}"


class SlackDecisionMessage(models.Model):
    """A message posted to the release-team channel for one request, to update later."""

    request = models.ForeignKey("exceptions.ExceptionRequest", on_delete=models.CASCADE, related_name="slack_messages")
    channel = models.CharField(max_length=32)
    ts = models.CharField(max_length=32, help_text="Slack's message timestamp: its id within the channel")
    posted_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["channel", "ts"], name="one_row_per_slack_message")]

    def __str__(self) -> str:
        return f"#{self.request_id} in {self.channel} at {self.ts}"


class SlackLinkToken(models.Model):
    """A self-service link token that has been used: the one-time part of the signed link
    (``slack_integration.linking``). The signature and its age are checked by
    ``django.core.signing``; this row makes a second use of the same link fail."""

    nonce = models.CharField(max_length=64, unique=True)
    slack_user_id = models.CharField(max_length=32)
    team_id = models.CharField(max_length=32, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    used_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"link {self.nonce[:8]}… for {self.slack_user_id}"


class SlackRequesterNotice(models.Model):
    """A DM sent to a request's requester: one row per request and event (the filing's
    confirmation, the decision), so a retried or redelivered task never sends it twice."""

    class Event(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    request = models.ForeignKey("exceptions.ExceptionRequest", on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=16, choices=Event.choices)
    channel = models.CharField(max_length=32, blank=True)
    ts = models.CharField(max_length=32, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["request", "event"], name="one_requester_notice_per_event")]

    def __str__(self) -> str:
        return f"#{self.request_id} {self.event} -> {self.channel or 'not sent'}"


class SlackWork(models.Model):
    """The Slack ledger (the outbox's fourth, ``outbox.ledger``): one row per Slack side
    effect of a write, written in the write's transaction and sent on commit, so a write
    made while the broker is down loses nothing (the minute sweep queues it later).

    ``kind``: ``post`` (the request to the release-team channel, with Approve/Reject),
    ``update`` (``chat.update`` of its posted messages to show it as it now is) or ``dm``
    (the requester's DM of ``event``: submitted, approved, rejected). ``key`` makes an
    event heard twice one row: ``post``, ``dm:<event>``, ``update:<n>`` (a new update only
    when none is pending: a pending one shows the request as it is when it is sent)."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    class Kind(models.TextChoices):
        POST = "post", "Channel post"
        UPDATE = "update", "Update of the posted messages"
        DM = "dm", "Requester's DM"

    request = models.ForeignKey("exceptions.ExceptionRequest", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    event = models.CharField(max_length=16, blank=True, help_text="The DM's event (submitted, approved, rejected)")
    key = models.CharField(max_length=64)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "Slack work"
        constraints = [
            models.UniqueConstraint(fields=["request", "key"], name="one_slack_work_per_key"),
            models.CheckConstraint(
                condition=models.Q(state__in=["pending", "sending", "sent", "failed"]),
                name="slack_work_state_valid",
            ),
        ]
        indexes = [models.Index(fields=["state", "next_attempt_at"], name="slack_work_due")]

    def __str__(self) -> str:
        return f"{self.key} of request #{self.request_id} ({self.state})"
