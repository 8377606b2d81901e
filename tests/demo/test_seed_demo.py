"""seed_demo and ensure_admin: a realistic, idempotent demo and a printed admin login."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from demo.data import CURRENT, current_cycle_schedule
from exceptions.models import Decision, ExceptionRequest, ExceptionRequestRevision, SignOff
from releasecal import tz
from releasecal.models import AuditLog, Enhancement, EnhancementOwner, Milestone, Release, Tracking

COUNTED = [
    Release,
    Milestone,
    Enhancement,
    EnhancementOwner,
    Tracking,
    ExceptionRequest,
    ExceptionRequestRevision,
    SignOff,
    Decision,
    AuditLog,
    User,
]


def counts():
    return {model.__name__: model.objects.count() for model in COUNTED}


@pytest.fixture
def seeded(db):
    call_command("seed_demo")
    return Release.objects.get(slug=CURRENT)


def test_seeding_twice_gives_the_same_counts_and_bumps_no_sequence(seeded):
    first = counts()
    sequences = dict(Milestone.objects.values_list("pk", "sequence"))
    call_command("seed_demo")
    assert counts() == first
    assert dict(Milestone.objects.values_list("pk", "sequence")) == sequences


def test_it_loads_the_published_releases_and_a_current_cycle(seeded):
    statuses = dict(Release.objects.values_list("slug", "status"))
    assert statuses == {"1.29": "released", "1.30": "released", "1.33": "released", CURRENT: "active"}
    assert seeded.zone == "AoE"
    assert Enhancement.objects.count() == 15
    assert Tracking.objects.filter(release=seeded).count() == 15


def test_the_current_cycle_has_a_freeze_behind_and_a_freeze_ahead(seeded):
    now = tz.utc_now()
    freezes = seeded.milestones.filter(kind__is_freeze=True)
    assert any(m.deadline < now for m in freezes)
    assert any(m.deadline > now for m in freezes)
    assert seeded.milestones.get(kind__slug="enhancements-freeze").deadline < now
    assert seeded.milestones.get(kind__slug="code-freeze").deadline > now


@pytest.mark.parametrize("weekday", range(7))
def test_the_cycle_is_placed_around_any_day(weekday):
    today = dt.date(2026, 11, 30) + dt.timedelta(days=weekday)
    schedule = current_cycle_schedule(today)
    by_title = {m["title"]: m for m in schedule["milestones"]}
    enhancements = dt.date.fromisoformat(by_title["Enhancements Freeze"]["at"][:10])
    code = dt.date.fromisoformat(by_title["Code Freeze"]["at"][:10])
    assert enhancements < today < code


def test_every_exception_state_is_present_with_its_audit_rows(seeded):
    requests = ExceptionRequest.objects.filter(release=seeded)
    states = set(requests.values_list("state", flat=True))
    assert states == {"pending", "approved", "rejected", "withdrawn"}
    amended = requests.get(enhancement__number=5055)
    assert amended.state == "pending"
    assert amended.revisions.count() == 2
    assert amended.days == 2
    assert amended.signoffs.count() == 1
    approved = requests.filter(state="approved")
    assert all(r.decision.granted_until > r.milestone.deadline for r in approved)
    assert requests.get(enhancement__number=1880).warnings  # 10 days: days, not weeks
    actions = set(AuditLog.objects.filter(object_type="exceptions.exceptionrequest").values_list("action", flat=True))
    assert actions >= {
        "exception.submit",
        "exception.amend",
        "exception.signoff",
        "exception.approved",
        "exception.rejected",
        "exception.withdraw",
    }
    assert Tracking.objects.get(release=seeded, enhancement__number=1880).status == "removed_from_milestone"
    assert Tracking.objects.get(release=seeded, enhancement__number=2400).status == "exception_approved"


def test_it_creates_the_users_in_their_groups(seeded):
    lead = User.objects.get(username="release-lead")
    assert lead.groups.filter(name="Release Team").exists()
    assert lead.has_perm("exceptions.decide_exceptionrequest")
    assert User.objects.get(username="enhancements-shadow").groups.filter(name="Enhancements").exists()
    assert EnhancementOwner.objects.filter(user__username="alice", enhancement__number=2400).exists()
    assert EnhancementOwner.objects.filter(user__username="bob", enhancement__number=5055).exists()
    assert seeded.leads.filter(username="release-lead").exists()


def test_ensure_admin_prints_a_working_login_and_resets_it(db, capsys, monkeypatch):
    monkeypatch.delenv("RELEASECAL_ADMIN_PASSWORD", raising=False)
    call_command("ensure_admin")
    out = capsys.readouterr().out
    assert "http://127.0.0.1:8000/admin/" in out
    password = out.split("Password: ")[1].split()[0]
    admin = User.objects.get(username="admin")
    assert admin.is_superuser
    assert admin.is_staff
    assert admin.check_password(password)
    monkeypatch.setenv("RELEASECAL_ADMIN_PASSWORD", "chosen-demo-password")
    call_command("ensure_admin")
    assert "Password: chosen-demo-password" in capsys.readouterr().out
    assert User.objects.filter(username="admin").count() == 1
    assert User.objects.get(username="admin").check_password("chosen-demo-password")
