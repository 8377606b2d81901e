"""Liveness you can see: the time of the last completed sweep, and one alert to the
release team when reminders stop (no sweep for ``REMINDERS_STALL_MINUTES``) or a
reminder is marked missed.

The sweep records its completion (``sweep_completed``). Who notices that it stopped?
Not the sweep: ``manage.py check_services`` (the beat container's health check, every
minute) and the admin call ``sweep_stall_check``, which alerts once per stall: the
alert claims the stall with a conditional UPDATE, so two checkers send one email.
"""

from __future__ import annotations

import datetime as dt
import logging

from django.conf import settings
from django.core.mail import send_mail

from releasecal import tz
from reminders.models import SweepHeartbeat

log = logging.getLogger(__name__)
HEARTBEAT_ID = 1


def sweep_completed(*, at: dt.datetime | None = None) -> None:
    SweepHeartbeat.objects.update_or_create(pk=HEARTBEAT_ID, defaults={"last_completed_at": at or tz.utc_now()})


def last_sweep_at() -> dt.datetime | None:
    return SweepHeartbeat.objects.filter(pk=HEARTBEAT_ID).values_list("last_completed_at", flat=True).first()


def _stall_limit() -> dt.timedelta:
    return dt.timedelta(minutes=settings.REMINDERS_STALL_MINUTES)


def sweep_status(*, now: dt.datetime | None = None) -> tuple[bool, str]:
    """(ok, one line) for check_services and the admin."""
    now = now or tz.utc_now()
    last = last_sweep_at()
    if last is None:
        return False, "no reminder sweep has completed yet (is celery beat running?)"
    ago = int((now - last).total_seconds())
    line = f"last reminder sweep completed {tz.isoformat_utc(last)} ({ago} s ago)"
    if now - last > _stall_limit():
        return False, line + f"; none for more than {settings.REMINDERS_STALL_MINUTES} minutes"
    return True, line


def _alert(subject: str, body: str) -> None:
    log.error("%s: %s", subject, body)
    send_mail(f"[releasecal] {subject}", body, None, [settings.REMINDERS_RELEASE_TEAM_EMAIL], fail_silently=True)


def sweep_stall_check(*, now: dt.datetime | None = None) -> bool:
    """Alert the release team once when no sweep completed for the stall limit.
    Returns True when this call sent the alert."""
    now = now or tz.utc_now()
    ok, line = sweep_status(now=now)
    if ok:
        return False
    last = last_sweep_at()
    heartbeat, _ = SweepHeartbeat.objects.get_or_create(pk=HEARTBEAT_ID)
    claimed = (
        SweepHeartbeat.objects.filter(pk=heartbeat.pk, last_completed_at=last)
        .exclude(stall_alerted_for=last)
        .update(stall_alerted_for=last)
        if last is not None
        else SweepHeartbeat.objects.filter(pk=heartbeat.pk, stall_alerted_for__isnull=True).update(
            stall_alerted_for=now
        )
    )
    if claimed != 1:
        return False
    _alert("reminders have stopped", f"{line}. Reminders are not being sent until the worker and beat run again.")
    return True


def missed_alert(count: int) -> None:
    """A sweep just marked ``count`` reminders missed (each row turns missed once)."""
    if count:
        _alert(
            f"{count} reminder(s) missed",
            f"{count} reminder(s) were due more than {settings.REMINDERS_GRACE_MINUTES} minutes ago and were "
            "never sent; they are marked missed in the delivery ledger (admin: Reminders → Deliveries, Retry).",
        )
