"""Every policy rule of exceptions/services.py at its edge: the last instant allowed and
one second after (or before), with the exact message a requester or decider reads.
(Messages render minutes: one second late reads "closed at 19:00 ... sent at 19:00"; the
``extra`` fields carry the seconds.)

The release (tests/conftest.py): code freeze 19:00 PDT Tuesday 23 July 2024, a 3-day
request window, rc.0 at 10:00 PDT Tuesday 30 July 2024 (the hard stop).
"""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.models import Decision, ExceptionRequest
from exceptions.services import (
    RequestFields,
    default_granted_until,
    exception_request_approve,
    exception_request_reject,
    exception_request_submit,
    exception_request_withdraw,
)
from releasecal import tz
from releasecal.errors import Conflict, PolicyViolation, ValidationFailed
from releasecal.services import milestone_cancel

SECOND = dt.timedelta(seconds=1)
# The instants of the release fixture, written out (not read back from the code).
FREEZE = dt.datetime(2024, 7, 24, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Tue 23 July
WINDOW_CLOSES = dt.datetime(2024, 7, 27, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Fri 26 July
RC0 = dt.datetime(2024, 7, 30, 17, 0, tzinfo=dt.UTC)  # 10:00 PDT Tue 30 July
ENHANCEMENTS_FREEZE = dt.datetime(2024, 6, 14, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Thu 13 June


def submit(kep, milestone, requester, *, days=2, at=None) -> ExceptionRequest:
    return exception_request_submit(
        enhancement=kep,
        milestone=milestone,
        requester=requester,
        fields=RequestFields(days=days, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=at or FREEZE + dt.timedelta(hours=1),
    )


def test_the_fixture_instants_are_the_ones_written_here(code_freeze, release, enhancements_freeze):
    assert code_freeze.deadline == FREEZE
    assert enhancements_freeze.deadline == ENHANCEMENTS_FREEZE
    assert release.milestones.get(kind__slug="rc").deadline == RC0
    assert release.request_window_hours == {}
    assert code_freeze.kind.request_window_hours == 72


# ------------------------------------------------------------------ request window


def test_a_request_sent_at_the_instant_the_window_closes_is_filed(kep, code_freeze, requester):
    assert submit(kep, code_freeze, requester, at=WINDOW_CLOSES).state == "pending"


def test_a_request_sent_one_second_after_the_window_closes_is_refused(kep, code_freeze, requester):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, at=WINDOW_CLOSES + SECOND)
    assert err.value.status_code == 400
    assert err.value.message == (
        "The request window for Code Freeze closed at 19:00 PDT Friday 26 July 2024 "
        "(02:00 UTC Saturday 27 July 2024) (72 hours after the freeze); this request was sent at "
        "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)."
    )
    assert err.value.extra == {"window_closed_at": "2024-07-27T02:00:00Z", "submitted_at": "2024-07-27T02:00:01Z"}
    assert not ExceptionRequest.objects.exists()


def test_a_request_before_the_freeze_is_filed(kep, code_freeze, requester):
    assert submit(kep, code_freeze, requester, at=FREEZE - SECOND).state == "pending"


def test_a_one_day_window_closes_one_day_after_the_freeze(kep, code_freeze, requester, release):
    release.request_window_hours = {"code-freeze": 24}
    release.save()
    code_freeze.refresh_from_db()
    assert submit(kep, code_freeze, requester, at=FREEZE + dt.timedelta(days=1)).state == "pending"
    ExceptionRequest.objects.all().delete()
    with pytest.raises(PolicyViolation, match=r"^The request window for Code Freeze closed at 19:00 PDT Wednesday"):
        submit(kep, code_freeze, requester, at=FREEZE + dt.timedelta(days=1) + SECOND)


# ------------------------------------------------------------------ days asked


@pytest.mark.parametrize("days", [1, 366])
def test_days_at_the_edges_are_accepted(kep, code_freeze, requester, days):
    assert submit(kep, code_freeze, requester, days=days).days == days


def test_more_than_a_year_is_refused(kep, code_freeze, requester):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=367)
    assert err.value.message == "An exception cannot ask for more than a year."
    assert err.value.extra == {"days": 367}


def test_zero_days_at_a_code_freeze_is_refused_with_the_admission_rule(kep, code_freeze, requester):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=0)
    assert err.value.message == (
        "A Code Freeze exception must ask for at least 1 day; asking for no time "
        "(admission only) is for enhancements-freeze and prr-freeze requests."
    )


def test_zero_days_at_the_enhancements_freeze_is_an_admission(kep, enhancements_freeze, requester):
    request = submit(kep, enhancements_freeze, requester, days=0, at=ENHANCEMENTS_FREEZE + SECOND)
    assert request.days == 0


@pytest.mark.parametrize(
    ("days", "message", "extra"),
    [
        ("1234567", "Additional days must be a small whole number.", {"days": "1234567"}),
        ("1" * 25, "Additional days must be a small whole number.", {"days": "1" * 20}),  # cut to 20
        ("two", "Additional days must be a whole number.", {"days": "two"}),
        # Short once stripped, so read as a number; the field is cut to 20 characters.
        (" " * 30 + "ab", "Additional days must be a whole number.", {"days": " " * 20}),
    ],
)
def test_days_that_are_not_a_small_number_are_a_validation_error(kep, code_freeze, requester, days, message, extra):
    with pytest.raises(ValidationFailed) as err:
        submit(kep, code_freeze, requester, days=days)
    assert (err.value.message, err.value.extra) == (message, extra)


@pytest.mark.parametrize(
    ("days", "message", "extra"),
    [
        # Six characters still read as a number: the year rule answers, not the length rule.
        ("100000", "An exception cannot ask for more than a year.", {"days": 100000}),
        (-1, "At least 1 additional day must be requested.", {"days": -1}),
        ("0", None, {"days": 0, "kind": "code-freeze"}),
    ],
)
def test_the_days_rules_answer_with_their_message_and_fields(kep, code_freeze, requester, days, message, extra):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=days)
    assert err.value.extra == extra  # the API's 4xx body carries these fields
    if message:
        assert err.value.message == message
    assert ExceptionRequest.objects.count() == 0


def test_a_kind_that_allows_no_exception_is_refused_with_the_milestone_named(kep, release, requester):
    rc = release.milestones.get(kind__slug="rc")
    with pytest.raises(PolicyViolation) as err:
        submit(kep, rc, requester, at=RC0 - dt.timedelta(hours=1))
    assert err.value.message == "Release candidate deadlines cannot be extended by an exception."
    assert err.value.extra == {"milestone": rc.pk, "kind": "rc"}


def test_a_cancelled_milestone_is_refused_whatever_the_time(kep, code_freeze, requester):
    milestone_cancel(milestone=code_freeze)
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, at=FREEZE - dt.timedelta(days=1))
    assert (err.value.message, err.value.extra) == ("Code Freeze was cancelled; there is nothing to extend.", {})


# ------------------------------------------------------------------ re-filing


def test_refiling_after_an_approval_gets_the_policy_message_not_a_conflict(
    pending_request, release_team_member, kep, code_freeze, requester
):
    exception_request_approve(request=pending_request, actor=release_team_member)
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=5)
    assert not isinstance(err.value, Conflict)
    assert err.value.status_code == 400
    assert err.value.message == (
        f"KEP-2400 already has a approved exception request (#{pending_request.pk}) "
        "for Code Freeze; amend that one instead of filing another."
    )
    assert err.value.extra == {"existing_request": pending_request.pk, "state": "approved"}
    assert ExceptionRequest.objects.count() == 1


def test_refiling_while_pending_gets_the_policy_message(pending_request, kep, code_freeze, requester):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=2)
    assert err.value.status_code == 400
    assert err.value.message == (
        f"KEP-2400 already has a pending exception request (#{pending_request.pk}) "
        "for Code Freeze; amend that one instead of filing another."
    )


def test_after_a_rejection_the_same_days_or_more_may_be_asked_but_not_fewer(
    pending_request, release_team_member, kep, code_freeze, requester
):
    exception_request_reject(request=pending_request, actor=release_team_member)
    with pytest.raises(PolicyViolation) as err:
        submit(kep, code_freeze, requester, days=1)
    assert err.value.message == (
        "A request for 2 days was rejected for KEP-2400 and Code Freeze; "
        "a re-filed request cannot ask for fewer days (1)."
    )
    assert err.value.extra == {"rejected_days": 2, "days": 1}
    assert submit(kep, code_freeze, requester, days=2).state == "pending"


def test_after_a_rejection_more_days_may_be_asked(pending_request, release_team_member, kep, code_freeze, requester):
    exception_request_reject(request=pending_request, actor=release_team_member)
    assert submit(kep, code_freeze, requester, days=3).days == 3


def test_after_a_withdrawal_fewer_days_may_be_asked(pending_request, requester, kep, code_freeze):
    exception_request_withdraw(request=pending_request, actor=requester)
    assert submit(kep, code_freeze, requester, days=1).days == 1


# ------------------------------------------------------------------ the grant


def test_a_grant_exactly_at_rc0_is_allowed(pending_request, release_team_member):
    decision = exception_request_approve(request=pending_request, actor=release_team_member, granted_until=RC0)
    assert decision.granted_until == RC0
    assert Decision.objects.get(request=pending_request).granted_until == RC0


def test_a_grant_one_second_after_rc0_is_refused(pending_request, release_team_member):
    with pytest.raises(PolicyViolation) as err:
        exception_request_approve(request=pending_request, actor=release_team_member, granted_until=RC0 + SECOND)
    assert err.value.status_code == 400
    assert err.value.message == (
        "granted_until (10:00 PDT Tuesday 30 July 2024 (17:00 UTC Tuesday 30 July 2024)) is after the "
        "release's hard stop (10:00 PDT Tuesday 30 July 2024 (17:00 UTC Tuesday 30 July 2024), the rc.0 cut)."
    )
    assert err.value.extra == {"granted_until": "2024-07-30T17:00:01Z", "hard_stop": "2024-07-30T17:00:00Z"}
    assert not Decision.objects.exists()
    pending_request.refresh_from_db()
    assert pending_request.state == "pending"


def test_an_explicit_hard_stop_replaces_rc0_at_its_edge(pending_request, release_team_member, release):
    release.hard_stop = RC0 - dt.timedelta(days=2)
    release.save()
    with pytest.raises(PolicyViolation, match="hard stop"):
        exception_request_approve(
            request=pending_request, actor=release_team_member, granted_until=release.hard_stop + SECOND
        )
    decision = exception_request_approve(
        request=pending_request, actor=release_team_member, granted_until=release.hard_stop
    )
    assert decision.granted_until == dt.datetime(2024, 7, 28, 17, 0, tzinfo=dt.UTC)


def test_a_grant_exactly_at_the_freeze_is_refused_when_days_were_asked(pending_request, release_team_member):
    with pytest.raises(PolicyViolation) as err:
        exception_request_approve(request=pending_request, actor=release_team_member, granted_until=FREEZE)
    assert err.value.message == (
        "granted_until (19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)) must be after the "
        "freeze (19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024))."
    )
    assert err.value.extra == {"granted_until": "2024-07-24T02:00:00Z", "freeze": "2024-07-24T02:00:00Z"}
    assert not Decision.objects.exists()


def test_a_grant_one_second_after_the_freeze_is_allowed(pending_request, release_team_member):
    decision = exception_request_approve(
        request=pending_request, actor=release_team_member, granted_until=FREEZE + SECOND
    )
    assert decision.granted_until == FREEZE + SECOND


def test_an_admission_is_granted_at_the_freeze_itself_but_not_before(
    kep, enhancements_freeze, requester, release_team_member
):
    request = submit(kep, enhancements_freeze, requester, days=0, at=ENHANCEMENTS_FREEZE + SECOND)
    too_early = ENHANCEMENTS_FREEZE - SECOND
    with pytest.raises(PolicyViolation) as err:
        exception_request_approve(request=request, actor=release_team_member, granted_until=too_early)
    assert err.value.message == (
        "granted_until (18:59 PDT Thursday 13 June 2024 (01:59 UTC Friday 14 June 2024)) is before the "
        "freeze (19:00 PDT Thursday 13 June 2024 (02:00 UTC Friday 14 June 2024))."
    )
    assert err.value.extra == {"granted_until": "2024-06-14T01:59:59Z", "freeze": "2024-06-14T02:00:00Z"}
    decision = exception_request_approve(request=request, actor=release_team_member)
    assert decision.granted_until == ENHANCEMENTS_FREEZE


def test_the_default_grant_is_the_end_of_the_freeze_day_plus_the_days_asked(pending_request, release_team_member):
    # Freeze day Tuesday 23 July (PDT) + 2 days: end of Thursday 25 July = 00:00 PDT Friday 26 July.
    decision = exception_request_approve(request=pending_request, actor=release_team_member)
    assert decision.granted_until == dt.datetime(2024, 7, 26, 7, 0, tzinfo=dt.UTC)
    assert tz.render(decision.granted_until, "America/Los_Angeles") == (
        "00:00 PDT Friday 26 July 2024 (07:00 UTC Friday 26 July 2024)"
    )


def test_a_second_decision_is_a_conflict_with_the_state_named(pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)
    with pytest.raises(Conflict) as err:
        exception_request_reject(request=pending_request, actor=release_team_member)
    assert err.value.status_code == 409
    assert err.value.message == (f"Exception request #{pending_request.pk} is already approved; it cannot be rejected.")
    assert err.value.extra == {"state": "approved"}


@pytest.mark.parametrize(
    ("days", "granted"),
    [
        (5, dt.datetime(2024, 7, 29, 7, 0, tzinfo=dt.UTC)),  # end of Sunday 28 July, PDT
        (0, FREEZE),  # an admission: the freeze itself
    ],
)
def test_the_default_grant_for_other_days_than_asked(pending_request, days, granted):
    """The days a decider types instead of the request's (the admin's approve form)."""
    assert pending_request.days == 2
    assert default_granted_until(pending_request, days=days) == granted
