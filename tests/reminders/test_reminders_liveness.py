"""Issue 13, liveness: the last completed sweep is kept and shown; the release team is
alerted once when no sweep ran for 5 minutes, and when reminders are marked missed."""

from __future__ import annotations

import datetime as dt
import io

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.core.management import call_command
from django.test import Client

from releasecal import tz
from reminders.liveness import sweep_completed, sweep_stall_check, sweep_status
from reminders.models import SweepHeartbeat
from reminders.tasks import deliveries_sweep_task


@pytest.fixture(autouse=True)
def locmem_email(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.REMINDERS_RELEASE_TEAM_EMAIL = "team@example.com"


def test_the_sweep_task_records_when_it_completed(db):
    before = tz.utc_now()
    deliveries_sweep_task()
    last = SweepHeartbeat.objects.get().last_completed_at
    assert before <= last <= tz.utc_now()
    assert sweep_status()[0]


def test_the_status_line_names_the_last_sweep_and_its_age(db):
    sweep_completed(at=dt.datetime(2026, 11, 30, 12, 0, 5, tzinfo=dt.UTC))
    ok, line = sweep_status(now=dt.datetime(2026, 11, 30, 12, 1, 47, tzinfo=dt.UTC))
    assert ok
    assert line == "last reminder sweep completed 2026-11-30T12:00:05Z (102 s ago)"
    ok, line = sweep_status(now=dt.datetime(2026, 11, 30, 12, 5, 6, tzinfo=dt.UTC))
    assert not ok
    assert line == ("last reminder sweep completed 2026-11-30T12:00:05Z (301 s ago); none for more than 5 minutes")


def test_check_services_shows_the_last_sweep(db):
    sweep_completed()
    out = io.StringIO()
    call_command("check_services", stdout=out)
    assert "reminders: last reminder sweep completed " in out.getvalue()


def test_a_stalled_sweep_alerts_the_release_team_once(db):
    now = tz.utc_now()
    sweep_completed(at=now - dt.timedelta(minutes=4))
    assert sweep_stall_check(now=now) is False  # 4 minutes: fine
    assert mail.outbox == []
    later = now + dt.timedelta(minutes=2)
    assert sweep_stall_check(now=later) is True
    assert sweep_stall_check(now=later + dt.timedelta(minutes=10)) is False  # same stall: no second alert
    assert [m.subject for m in mail.outbox] == ["[releasecal] reminders have stopped"]
    assert mail.outbox[0].to == ["team@example.com"]
    assert "none for more than 5 minutes" in mail.outbox[0].body
    ok, _ = sweep_status(now=later)
    assert not ok
    # The sweep runs again, then stalls again: a new alert.
    sweep_completed(at=later)
    assert sweep_stall_check(now=later + dt.timedelta(minutes=6)) is True
    assert len(mail.outbox) == 2


def test_no_sweep_ever_is_reported_and_alerted_once(db):
    ok, line = sweep_status()
    assert not ok
    assert "no reminder sweep has completed yet" in line
    assert sweep_stall_check() is True
    assert sweep_stall_check() is False
    assert len(mail.outbox) == 1


def test_missed_reminders_alert_the_team(db, monkeypatch):
    from reminders import services

    result = services.SweepResult()
    result.missed = 3
    monkeypatch.setattr(services, "deliveries_sweep", lambda: result)
    deliveries_sweep_task()
    assert [m.subject for m in mail.outbox] == ["[releasecal] 3 reminder(s) missed"]


def test_the_admin_shows_the_last_sweep(db):
    sweep_completed()
    admin = User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)
    body = client.get("/admin/reminders/sweepheartbeat/").content.decode()
    assert "last reminder sweep completed" in body
