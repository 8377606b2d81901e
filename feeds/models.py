"""Personal feed tokens: the secret in /calendar/u/<token>.ics."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class FeedToken(models.Model):
    """The secret in a personal feed URL (/calendar/u/<token>.ics).

    Only the SHA-256 of the token is stored: the token itself is shown once, when it is
    created or rotated. Rotating revokes the old row and creates a new one, so the
    history of who had which feed stays visible without keeping any secret.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="feed_tokens")
    label = models.CharField(max_length=100, blank=True, help_text='Where it is used, e.g. "work laptop"')
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    replaced_by = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replaces", editable=False
    )

    class Meta:
        db_table = "releasecal_feedtoken"  # created by the releasecal app; the model moved here
        ordering = ["user", "-created_at", "-id"]

    def __str__(self) -> str:
        state = "revoked" if self.revoked_at else "active"
        return f"Feed token #{self.pk} of {self.user} ({self.label or 'no label'}, {state})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class FeedVersion(models.Model):
    """One row (pk 1): a random value that changes whenever anything a feed shows
    changes. Database triggers on every table a feed reads set a new value inside the
    writing transaction (feeds/triggers.py); cached feeds are keyed by it (feeds/cache.py)."""

    version = models.CharField(max_length=32)

    class Meta:
        db_table = "feeds_feedversion"

    def __str__(self) -> str:
        return f"Feed version {self.version}"


class PublishedEvent(models.Model):
    """What a feed last published for one event UID, so SEQUENCE and LAST-MODIFIED rise
    whenever what a client sees changes, whatever caused it (a release's zone, the
    policy, a grant, a KEP's title, an import, our own wording): see feeds/published.py."""

    uid = models.CharField(max_length=255, primary_key=True)
    timing = models.CharField(max_length=64, help_text="SHA-256 of DTSTART, DTEND, STATUS and SUMMARY")
    shown = models.CharField(max_length=64, help_text="SHA-256 of every property a client shows")
    sequence = models.PositiveIntegerField()
    last_modified = models.DateTimeField()

    class Meta:
        db_table = "feeds_publishedevent"

    def __str__(self) -> str:
        return f"{self.uid} (SEQUENCE {self.sequence})"
