"""Writes for personal feed tokens: create, rotate, revoke.

A token is ``secrets.token_urlsafe(32)`` (256 bits); only its SHA-256 is stored. The
plain token is returned once, to be shown once; it is never logged or stored.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from feeds.models import FeedToken
from releasecal import tz
from releasecal.errors import Conflict
from releasecal.services import audit_record


def feed_token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def feed_token_url(token: str) -> str:
    return settings.SITE_URL + reverse("feeds:personal", kwargs={"token": token})


@dataclass(frozen=True)
class IssuedFeedToken:
    """A token row and its plain secret, which exists only in this object."""

    row: FeedToken
    token: str

    @property
    def url(self) -> str:
        return feed_token_url(self.token)


def _issue(*, user, label: str) -> IssuedFeedToken:
    token = secrets.token_urlsafe(32)
    row = FeedToken.objects.create(user=user, label=label[:100], token_hash=feed_token_hash(token))
    return IssuedFeedToken(row=row, token=token)


@transaction.atomic
def feed_token_create(*, user, label: str = "", actor=None) -> IssuedFeedToken:
    issued = _issue(user=user, label=label)
    audit_record(action="feed_token.create", obj=issued.row, actor=actor or user, after={"label": issued.row.label})
    return issued


@transaction.atomic
def feed_token_rotate(*, feed_token: FeedToken, actor=None) -> IssuedFeedToken:
    """Revoke ``feed_token`` and issue its replacement (same user and label)."""
    old = FeedToken.objects.select_for_update().get(pk=feed_token.pk)
    if old.revoked_at is not None:
        raise Conflict(f"Feed token #{old.pk} is already revoked; create a new one instead.")
    issued = _issue(user=old.user, label=old.label)
    old.revoked_at = tz.utc_now()
    old.replaced_by = issued.row
    old.save(update_fields=["revoked_at", "replaced_by"])
    audit_record(action="feed_token.rotate", obj=old, actor=actor or old.user, after={"replaced_by": issued.row.pk})
    return issued


@transaction.atomic
def feed_token_revoke(*, feed_token: FeedToken, actor=None) -> FeedToken:
    row = FeedToken.objects.select_for_update().get(pk=feed_token.pk)
    if row.revoked_at is None:
        row.revoked_at = tz.utc_now()
        row.save(update_fields=["revoked_at"])
        audit_record(action="feed_token.revoke", obj=row, actor=actor or row.user)
    return row
