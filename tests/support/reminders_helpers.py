"""Builders shared by the reminder tests: a release whose freeze is in the future."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from releasecal import tz
from releasecal.models import Milestone, MilestoneKind, Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set
from reminders.models import Channel, ReminderRule


def hour_from_now(days: float) -> dt.datetime:
    return (tz.utc_now() + dt.timedelta(days=days)).replace(minute=0, second=0, microsecond=0)


def future_release(*, freeze_at: dt.datetime, zone: str = "America/Los_Angeles", slug: str = "9.99") -> Release:
    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    release = Release.objects.create(
        slug=slug,
        name=f"Kubernetes v{slug}",
        zone=zone,
        start_date=(freeze_at - dt.timedelta(days=60)).date(),
        status=Release.Status.ACTIVE,
    )
    milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze", at=freeze_at)
    milestone_create(release=release, kind=kinds["rc"], title="rc.0", at=freeze_at + dt.timedelta(days=14))
    return release


def code_freeze_of(release: Release) -> Milestone:
    return release.milestones.get(kind__slug="code-freeze")


def kep_with_owners(release: Release, number: int = 2400):
    kep = enhancement_upsert(
        number=number,
        title="Node memory swap support",
        owning_sig="node",
        owners=[
            {"github": "alice", "email": "alice@example.com", "slack_id": "UALICE"},
            {"github": "bob", "email": "bob@example.com"},
        ],
    )
    tracking_set(release=release, enhancement=kep, stage="beta", status="tracked")
    return kep


def channel(kind: str, name: str | None = None, **config) -> Channel:
    return Channel.objects.create(name=name or f"{kind}-{Channel.objects.count()}", kind=kind, config=config)


def rule(
    channel: Channel, *, offsets: str = "", applies_to: str = ReminderRule.AppliesTo.MILESTONES, kinds=("code-freeze",)
) -> ReminderRule:
    created = ReminderRule.objects.create(
        name=f"rule {channel.name}", applies_to=applies_to, offsets=offsets, channel=channel
    )
    if kinds and applies_to == ReminderRule.AppliesTo.MILESTONES:
        created.kinds.set(MilestoneKind.objects.filter(slug__in=kinds))
    return created


def redis_url_or_skip(name: str = "CELERY_BROKER_URL") -> str:
    """The broker for worker tests; skipped locally without one, a failure in CI."""
    url = os.environ.get(name) or os.environ.get("REDIS_URL")
    if url:
        return url
    message = f"needs Redis: set {name} or REDIS_URL (redis://127.0.0.1:6379/<n>)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
