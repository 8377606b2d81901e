"""Schedule change notices, approval announcements, and their ledger.

A :class:`ScheduleNotice` is one change people see (a milestone moved, cancelled or
back on; a release's hard stop moved; an exception approved, or an announced approval
corrected, announced to the release's mailing lists), written once as content when the
change is saved. Each recipient (the release team's Slack channel, a KEP owner's Slack DM or
email) gets one :class:`NoticeDelivery` row, created in the same transaction as the
change: the row is what is claimed, sent and retried, so a notice reaches each
recipient once however often its task runs.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from releasecal.models import Milestone, Release


class ScheduleNotice(models.Model):
    class Kind(models.TextChoices):
        MOVED = "moved", "Milestone moved"
        CANCELLED = "cancelled", "Milestone cancelled"
        RESTORED = "restored", "Milestone back on"
        HARD_STOP = "hard_stop", "Hard stop moved"
        APPROVAL = "approval", "Exception approved (announcement)"
        CORRECTION = "correction", "Approval corrected (announcement)"

    # The change this notice tells of: "milestone:<id>:<sequence>" (a saved edit bumps
    # the sequence), "release:<id>:hard-stop:<updated_at>", "exception:<id>:approved:<decision
    # id>" or "exception:<id>:correction:<number>". Telling twice is impossible.
    key = models.CharField(max_length=120, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="notices")
    milestone = models.ForeignKey(Milestone, null=True, blank=True, on_delete=models.CASCADE, related_name="notices")
    title = models.CharField(max_length=300, help_text="Plain text: the Slack header and the email subject")
    lines = models.JSONField(default=list, help_text="Plain-text lines, deadlines worded by releasecal.tz")
    conflict_lines = models.JSONField(default=list, blank=True, help_text="One plain line per grant it overrides")
    exception_ids = models.JSONField(default=list, blank=True, help_text="Grants this change overrides")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.title


class NoticeDelivery(models.Model):
    """One notice to one recipient: ``pending → sending → sent``, or ``failed``."""

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SENDING = "sending", "Sending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    notice = models.ForeignKey(ScheduleNotice, on_delete=models.CASCADE, related_name="deliveries")
    recipient = models.CharField(max_length=254, help_text="channel:<Slack id>, slack:<user id> or email:<address>")
    keps = models.JSONField(default=list, blank=True, help_text="The recipient's KEPs this change affects (owners)")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    claimed_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True, help_text="A transient failure waits until then")
    sent_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["notice", "id"]
        verbose_name_plural = "notice deliveries"
        constraints = [
            models.UniqueConstraint(fields=["notice", "recipient"], name="one_notice_delivery_per_recipient"),
            models.CheckConstraint(
                condition=Q(state__in=["pending", "sending", "sent", "failed"]), name="notice_delivery_state_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.notice} → {self.recipient} ({self.state})"
