"""The mailbox that feeds itself: where the poller is, what it read, what it could not.

State is the folder's UIDVALIDITY and the last UID read, plus every message's
Message-ID, never the ``\\Seen`` flag (people read the mailbox too). A message is read
once: it becomes an ``IntakeMessage`` (filed, amended, ignored, ...) or an
``IntakeProblem`` with the reason and the raw message, and the poller moves past it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from exceptions.models import ExceptionRequest


class MailboxState(models.Model):
    mailbox = models.CharField(max_length=300, unique=True, help_text="user@host:port/folder")
    uidvalidity = models.BigIntegerField(null=True, blank=True)
    last_uid = models.BigIntegerField(default=0)
    last_poll_at = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, help_text="Why the last poll failed; empty when it worked")
    last_error_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0, help_text="Polls failed in a row")
    messages_read = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return self.mailbox

    @property
    def healthy(self) -> bool:
        return not self.last_error


class IntakeMessage(models.Model):
    class Outcome(models.TextChoices):
        FILED = "filed", "Filed as a new request"
        AMENDED = "amended", "Amended a request"
        PROPOSED = "proposed", "Proposed a decision"
        REPLY = "reply", "Reply in a known thread, nothing new"
        IGNORED = "ignored", "Not about an exception request"
        PROBLEM = "problem", "Could not be read (see intake problems)"

    mailbox = models.ForeignKey(MailboxState, on_delete=models.CASCADE, related_name="messages")
    message_id = models.CharField(max_length=900, unique=True)
    uidvalidity = models.BigIntegerField()
    uid = models.BigIntegerField()
    in_reply_to = models.CharField(max_length=900, blank=True)
    references = models.TextField(blank=True)
    subject = models.CharField(max_length=500, blank=True)
    sender_name = models.CharField(max_length=200, blank=True)
    sender_email = models.CharField(max_length=254, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    text = models.TextField(blank=True, help_text="The message as text with its From/Date/Subject (HTML converted)")
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    detail = models.TextField(blank=True)
    request = models.ForeignKey(
        ExceptionRequest, null=True, blank=True, on_delete=models.SET_NULL, related_name="intake_messages"
    )
    read_at = models.DateTimeField()

    class Meta:
        ordering = ["-read_at", "-id"]

    def __str__(self) -> str:
        return f"{self.subject or self.message_id} ({self.outcome})"


class IntakeProblem(models.Model):
    """A message the poller could not file, kept whole with the reason."""

    mailbox = models.ForeignKey(MailboxState, on_delete=models.CASCADE, related_name="problems")
    message_id = models.CharField(max_length=900, blank=True)
    uidvalidity = models.BigIntegerField(null=True, blank=True)
    uid = models.BigIntegerField(null=True, blank=True)
    subject = models.CharField(max_length=500, blank=True)
    sender = models.CharField(max_length=300, blank=True)
    reason = models.TextField()
    raw = models.BinaryField(blank=True, help_text="The message as the server gave it (cut at 5 MB)")
    raw_size = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    resolution = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "intake problem"

    def __str__(self) -> str:
        return f"{self.subject or self.message_id or 'message'}: {self.reason[:80]}"
