"""The exception workflow and its policy, through the services every face calls."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.db import IntegrityError, transaction

from exceptions.models import Decision, ExceptionRequest
from exceptions.selectors import kep_effective_deadline
from exceptions.services import (
    RequestFields,
    default_granted_until,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_signoff,
    exception_request_submit,
    exception_request_withdraw,
    proposed_decision_create,
    request_window_closes,
)
from releasecal import tz
from releasecal.errors import Conflict, NotAllowed, PolicyViolation, ValidationFailed
from releasecal.models import AuditLog, Release, SigLead, Tracking
from releasecal.services import milestone_create

UTC = dt.UTC


def fields(days=2, **kw) -> RequestFields:
    return RequestFields(days=days, enhancement_name="Node memory swap support", stage="beta", sig="node", **kw)


def submit(kep, milestone, requester, days=2, at=None):
    return exception_request_submit(
        enhancement=kep,
        milestone=milestone,
        requester=requester,
        fields=fields(days),
        submitted_at=at or milestone.deadline + dt.timedelta(hours=1),
    )


# ---------------------------------------------------------------------- submit


def test_submit_records_first_revision_tracking_and_audit(pending_request, kep, release):
    assert pending_request.state == ExceptionRequest.State.PENDING
    assert pending_request.revisions.count() == 1
    assert pending_request.current.days == 2
    tracking = Tracking.objects.get(release=release, enhancement=kep)
    assert tracking.status == Tracking.Status.EXCEPTION_PENDING
    assert pending_request.tracking_status_before == Tracking.Status.TRACKED
    assert AuditLog.objects.filter(action="exception.submit", object_id=str(pending_request.pk)).count() == 1


def test_filing_early_is_allowed(kep, code_freeze, requester):
    request = submit(kep, code_freeze, requester, at=code_freeze.deadline - dt.timedelta(days=5))
    assert request.state == "pending"


def test_window_closes_three_days_after_the_freeze(kep, code_freeze, requester):
    closes = request_window_closes(code_freeze)
    assert closes == code_freeze.deadline + dt.timedelta(days=3)
    assert submit(kep, code_freeze, requester, at=closes).state == "pending"


def test_it_rejects_a_request_after_the_window(kep, code_freeze, requester):
    late = request_window_closes(code_freeze) + dt.timedelta(seconds=1)
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, at=late)
    assert "request window for Code Freeze closed at 19:00 PDT Friday 26 July 2024" in err.value.message
    assert not ExceptionRequest.objects.exists()


def test_window_is_editable_per_release(kep, code_freeze, requester, release):
    release.request_window_hours = {"code-freeze": 24}
    release.save()
    code_freeze.refresh_from_db()
    with pytest.raises(PolicyViolation):
        submit(kep, code_freeze, requester, at=code_freeze.deadline + dt.timedelta(days=2))


def test_it_rejects_a_second_live_request_for_the_same_kep_and_milestone(pending_request, kep, code_freeze, requester):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester)
    assert f"#{pending_request.pk}" in err.value.message
    assert "amend that one" in err.value.message


def test_database_refuses_two_live_requests_even_without_the_service(pending_request):
    with pytest.raises(IntegrityError), transaction.atomic():
        ExceptionRequest.objects.create(
            release=pending_request.release,
            enhancement=pending_request.enhancement,
            milestone=pending_request.milestone,
            days=3,
            submitted_at=pending_request.submitted_at,
        )


def test_a_rejected_request_cannot_be_refiled_shorter(
    pending_request, release_team_member, kep, code_freeze, requester
):
    exception_request_reject(request=pending_request, actor=release_team_member, note="too risky")
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=1)
    assert "cannot ask for fewer days (1)" in err.value.message
    refiled = submit(kep, code_freeze, requester, days=2)
    assert refiled.state == "pending"


def test_a_withdrawn_request_can_be_refiled(pending_request, requester, kep, code_freeze):
    exception_request_withdraw(request=pending_request, actor=requester)
    assert submit(kep, code_freeze, requester, days=1).state == "pending"


@pytest.mark.parametrize(("days", "message"), [(0, "must ask for at least 1 day"), (-1, "At least 1 additional day")])
def test_a_code_freeze_request_requires_at_least_one_day(kep, code_freeze, requester, days, message):
    # 0 days (admission only) is for PRR and enhancements freezes: tests/test_admission.py.
    with pytest.raises(PolicyViolation, match=message):
        submit(kep, code_freeze, requester, days=days)


def test_days_must_be_a_number(kep, code_freeze, requester):
    with pytest.raises(ValidationFailed, match="whole number"):
        submit(kep, code_freeze, requester, days="a week")


def test_more_than_seven_days_is_a_warning_not_an_error(kep, code_freeze, requester):
    request = submit(kep, code_freeze, requester, days=8)
    assert request.state == "pending"
    assert len(request.warnings) == 1
    assert "days, not weeks" in request.warnings[0]


def test_seven_days_carries_no_warning(kep, code_freeze, requester):
    assert submit(kep, code_freeze, requester, days=7).warnings == []


def test_a_milestone_kind_without_exceptions_cannot_be_extended(kep, release, requester):
    rc = release.milestones.get(kind__slug="rc")
    with pytest.raises(PolicyViolation, match="cannot be extended"):
        submit(kep, rc, requester)


def test_a_future_dated_request_is_refused(kep, code_freeze, requester):
    with pytest.raises(ValidationFailed, match="future"):
        submit(kep, code_freeze, requester, at=tz.utc_now() + dt.timedelta(days=1))


# ---------------------------------------------------------------------- amend & sign-off


def test_amend_keeps_every_version(pending_request, requester):
    exception_request_amend(request=pending_request, fields=fields(days=6), actor=requester)
    exception_request_amend(request=pending_request, fields=fields(days=3), actor=requester)
    pending_request.refresh_from_db()
    assert [r.days for r in pending_request.revisions.order_by("number")] == [2, 6, 3]
    assert pending_request.days == 3
    assert AuditLog.objects.filter(action="exception.amend").count() == 2


def test_a_stranger_cannot_amend(pending_request):
    stranger = User.objects.create_user("stranger")
    with pytest.raises(NotAllowed):
        exception_request_amend(request=pending_request, fields=fields(days=3), actor=stranger)


def test_signoffs_are_kept_with_author_and_time(pending_request):
    lead = User.objects.create_user("sig-node-lead")
    SigLead.objects.create(sig="node", github="sig-node-lead", role=SigLead.Role.TECH_LEAD, user=lead)
    signoff = exception_request_signoff(request=pending_request, author=lead, role="ignored", note="+1")
    assert signoff.author_label == "sig-node-lead"
    assert signoff.role == "SIG node technical lead"
    assert signoff.at is not None
    with pytest.raises(Conflict):
        exception_request_signoff(request=pending_request, author=lead)


# ---------------------------------------------------------------------- decisions


def test_approve_defaults_to_freeze_plus_days_end_of_day_release_zone(pending_request, release_team_member, kep):
    decision = exception_request_approve(request=pending_request, actor=release_team_member)
    # Code freeze: 19:00 PDT Tue 23 July 2024; +2 days -> end of Thu 25 July in LA.
    assert decision.granted_until == dt.datetime(2024, 7, 26, 7, 0, tzinfo=UTC)
    assert decision.granted_zone == "America/Los_Angeles"
    pending_request.refresh_from_db()
    assert pending_request.state == "approved"
    tracking = Tracking.objects.get(enhancement=kep, release=pending_request.release)
    assert tracking.status == Tracking.Status.EXCEPTION_APPROVED
    deadline = kep_effective_deadline(enhancement=kep, milestone=pending_request.milestone)
    assert deadline.is_extension
    assert deadline.instant == decision.granted_until
    assert deadline.original == pending_request.milestone.deadline


def test_default_grant_in_aoe_is_noon_utc_next_day(db, kinds, requester, release_team_member):
    release = Release.objects.create(slug="1.34", name="v1.34", zone="AoE", start_date=dt.date(2025, 5, 19))
    release.team.add(release_team_member)
    freeze = milestone_create(
        release=release,
        kind=kinds["enhancements-freeze"],
        title="Enhancements Freeze",
        at=tz.end_of_day(dt.date(2025, 6, 19), "AoE"),
    )
    from releasecal.services import enhancement_upsert

    kep = enhancement_upsert(number=5055, title="DRA: device taints", owning_sig="node")
    request = submit(kep, freeze, requester, days=3)
    # Freeze: end of Thu 19 June AoE (20 June 00:00 AoE = 20 June 12:00 UTC), which
    # closes on Thursday; +3 days -> end of Sun 22 June AoE = 23 June 12:00 UTC.
    assert default_granted_until(request) == dt.datetime(2025, 6, 23, 12, 0, tzinfo=UTC)
    decision = exception_request_approve(request=request, actor=release_team_member)
    assert tz.render(decision.granted_until, "AoE") == "00:00 AoE Monday 23 June 2025 (12:00 UTC Monday 23 June 2025)"


def test_approve_accepts_an_explicit_granted_until(pending_request, release_team_member):
    until = tz.parse_wall_time("2024-07-25 12:00", "Europe/Berlin")
    decision = exception_request_approve(
        request=pending_request, actor=release_team_member, granted_until=until, granted_zone="Europe/Berlin"
    )
    assert decision.granted_until == dt.datetime(2024, 7, 25, 10, 0, tzinfo=UTC)
    assert decision.granted_zone == "Europe/Berlin"


def test_granted_until_must_be_after_the_freeze(pending_request, release_team_member):
    with pytest.raises(PolicyViolation, match="must be after the freeze"):
        exception_request_approve(
            request=pending_request, actor=release_team_member, granted_until=pending_request.milestone.deadline
        )


def test_granted_until_cannot_pass_the_hard_stop(pending_request, release_team_member, release):
    rc = release.milestones.get(kind__slug="rc")
    with pytest.raises(PolicyViolation, match=r"hard stop .*rc\.0 cut"):
        exception_request_approve(
            request=pending_request, actor=release_team_member, granted_until=rc.deadline + dt.timedelta(minutes=1)
        )
    assert not Decision.objects.exists()


def test_database_refuses_a_grant_before_the_freeze(pending_request, release_team_member):
    freeze = pending_request.milestone.deadline
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.create(
            request=pending_request,
            outcome="approved",
            decided_by=release_team_member,
            decided_at=freeze,
            granted_until=freeze - dt.timedelta(hours=1),
            granted_zone="UTC",
            freeze_at=freeze,
        )


def test_the_requester_cannot_decide_their_own_request(pending_request, requester):
    requester.groups.add(Group.objects.get(name="Release Team"))
    pending_request.release.team.add(requester)
    with pytest.raises(NotAllowed, match="You filed this request"):
        exception_request_approve(request=pending_request, actor=requester)
    with pytest.raises(NotAllowed):
        exception_request_reject(request=pending_request, actor=requester)


def test_only_the_release_team_decides(pending_request, staff):
    with pytest.raises(NotAllowed, match="release team"):
        exception_request_approve(request=pending_request, actor=staff)


def test_a_second_approval_is_a_conflict(pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)
    with pytest.raises(Conflict, match="already approved"):
        exception_request_approve(request=pending_request, actor=release_team_member)
    assert Decision.objects.count() == 1


def test_reject_removes_the_kep_from_the_milestone(pending_request, release_team_member, kep):
    decision = exception_request_reject(request=pending_request, actor=release_team_member, note="no")
    assert decision.granted_until is None
    assert Tracking.objects.get(enhancement=kep).status == Tracking.Status.REMOVED
    assert not kep_effective_deadline(enhancement=kep, milestone=pending_request.milestone).is_extension


def test_withdraw_restores_the_tracking_status(pending_request, requester, kep):
    exception_request_withdraw(request=pending_request, actor=requester)
    assert Tracking.objects.get(enhancement=kep).status == Tracking.Status.TRACKED
    with pytest.raises(Conflict):
        exception_request_withdraw(request=pending_request, actor=requester)


def test_effective_deadline_without_exception_is_the_milestone(kep, code_freeze):
    deadline = kep_effective_deadline(enhancement=kep, milestone=code_freeze)
    assert deadline.source == "milestone"
    assert deadline.instant == code_freeze.deadline
    assert deadline.display() == "19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)"


def test_every_step_leaves_one_audit_row(pending_request, requester, release_team_member):
    exception_request_amend(request=pending_request, fields=fields(days=3), actor=requester)
    exception_request_signoff(request=pending_request, author=release_team_member)
    exception_request_approve(request=pending_request, actor=release_team_member)
    actions = list(
        AuditLog.objects.filter(object_id=str(pending_request.pk), object_type="exceptions.exceptionrequest")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["exception.submit", "exception.amend", "exception.signoff", "exception.approved"]


@pytest.mark.django_db(transaction=True)
def test_a_decision_read_from_email_is_proposed_outside_any_transaction(pending_request):
    # As a live server, a management command or a shell calls it: in autocommit. The
    # service locks the request, so it must open its own transaction (a refactor once
    # moved its @transaction.atomic to the function above it).
    assert transaction.get_autocommit()
    proposal = proposed_decision_create(
        request=pending_request, outcome="rejected", source_text="The release team has rejected this request."
    )
    assert (proposal.request_id, proposal.outcome) == (pending_request.pk, "rejected")
