"""Correcting a made decision (issue 24): a clerical error (the wrong grant time, the
wrong request decided) is corrected or reopened by the release team with a reason; the
decision in force is updated, the history kept, an audit row written, the feed's event
re-sequenced, the decision's recipients told and the signal sent."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest
from django.contrib.auth.models import User
from django.test import Client

from exceptions import signals
from exceptions.models import Decision, DecisionCorrection, ExceptionRequest
from exceptions.services import (
    exception_decision_correct,
    exception_decision_reopen,
    exception_request_approve,
    exception_request_reject,
)
from releasecal import tz
from releasecal.errors import Conflict, NotAllowed, PolicyViolation, ValidationFailed
from releasecal.models import AuditLog, Tracking
from reminders.messages import message_for_delivery, render_email
from reminders.models import Delivery, ReminderRule
from tests.support.reminders_helpers import channel, rule

UTC = dt.UTC
REASON = "Clerical error: the lead typed Sunday; the team granted until 18:00 AoE Saturday."


@pytest.fixture
def approved(request_1880, decider):
    exception_request_approve(request=request_1880, actor=decider, note="Approved in the 1.36 channel.")
    request_1880.refresh_from_db()
    return request_1880


def saturday_18_aoe() -> dt.datetime:
    return tz.parse_wall_time("2026-12-12 18:00", "AoE")


def test_a_correction_updates_the_decision_in_force_and_keeps_the_one_before(approved, decider):
    correction = exception_decision_correct(
        request=approved, actor=decider, reason=REASON, granted_until=saturday_18_aoe()
    )
    decision = Decision.objects.get(request=approved)
    assert decision.granted_until == dt.datetime(2026, 12, 13, 6, 0, tzinfo=UTC)
    assert decision.granted_zone == "AoE"
    assert decision.decided_by == decider  # who decided stays; who corrected is the correction's
    assert correction.number == 1
    assert correction.action == "corrected"
    assert correction.corrected_by_label == "rel-lead"
    assert correction.before == {
        "outcome": "approved",
        "granted_until": "2026-12-14T12:00:00Z",
        "granted_zone": "AoE",
        "granted_wall": "2026-12-14T00:00:00",
        "note": "Approved in the 1.36 channel.",
        "decided_by": "rel-lead",
        "decided_at": correction.before["decided_at"],
    }
    assert correction.after == {
        **correction.before,
        "granted_until": "2026-12-13T06:00:00Z",
        "granted_wall": "2026-12-12T18:00:00",
    }
    audit = AuditLog.objects.filter(object_id=str(approved.pk), action="exception.decision_corrected").get()
    assert audit.actor_label == "rel-lead"
    assert audit.before == correction.before
    assert audit.after == {**correction.after, "reason": REASON, "correction": 1}


def test_a_rejection_corrected_to_an_approval_grants_the_days_asked(request_1880, decider):
    exception_request_reject(request=request_1880, actor=decider, note="")
    exception_decision_correct(
        request=request_1880, actor=decider, reason="Rejected the wrong KEP.", outcome="approved"
    )
    request_1880.refresh_from_db()
    assert request_1880.state == "approved"
    assert tz.render_deadline(request_1880.decision.granted_until, "AoE") == (
        "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)"
    )
    assert Tracking.objects.get(enhancement=request_1880.enhancement).status == Tracking.Status.EXCEPTION_APPROVED


HARD_STOP_REFUSAL = (
    "granted_until (12:00 AoE Monday 21 December 2026 (00:00 UTC Tuesday 22 December 2026)) is after the "
    "release's hard stop (05:00 AoE Monday 21 December 2026 (17:00 UTC Monday 21 December 2026), the rc.0 cut)."
)


def test_a_correction_is_refused_with_a_sentence(approved, decider):
    cases = [
        (
            {"reason": "  "},
            ValidationFailed,
            "A correction needs a reason: say what the clerical error was (the decision is final otherwise).",
        ),
        (
            {"reason": "x", "note": "Approved in the 1.36 channel."},
            ValidationFailed,
            "The correction changes nothing: give another outcome, grant or note.",
        ),
        ({"reason": "x", "outcome": "maybe"}, ValidationFailed, "Unknown outcome 'maybe'; use approved or rejected."),
        ({"reason": "x", "granted_until": dt.datetime(2026, 12, 22, tzinfo=UTC)}, PolicyViolation, HARD_STOP_REFUSAL),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error) as raised:
            exception_decision_correct(request=approved, actor=decider, **kwargs)
        assert raised.value.message == message
    assert not DecisionCorrection.objects.exists()
    assert Decision.objects.get(request=approved).note == "Approved in the 1.36 channel."


def test_only_the_release_team_corrects_and_only_a_decision(request_1880, decider):
    outsider = User.objects.create_user("outsider", "o@example.com", "pw", is_staff=True)
    with pytest.raises(Conflict) as pending:
        exception_decision_correct(request=request_1880, actor=decider, reason="x", note="y")
    assert pending.value.message == (
        f"Exception request #{request_1880.pk} is pending and has no decision; there is nothing to correct."
    )
    exception_request_approve(request=request_1880, actor=decider)
    for call in (exception_decision_correct, exception_decision_reopen):
        with pytest.raises(NotAllowed) as refused:
            call(request=request_1880, actor=outsider, reason="x")
        assert refused.value.message == (
            "Only the 1.36 release team (its leads and team, kept per release) can approve or reject its "
            "exception requests."
        )


def test_a_reopen_puts_the_request_back_to_pending_to_be_decided_anew(approved, decider):
    correction = exception_decision_reopen(request=approved, actor=decider, reason="Approved #1880 for #4330.")
    approved.refresh_from_db()
    assert approved.state == "pending"
    assert not Decision.objects.filter(request=approved).exists()
    assert correction.action == "reopened"
    assert correction.after is None
    assert Tracking.objects.get(enhancement=approved.enhancement).status == Tracking.Status.EXCEPTION_PENDING
    audit = AuditLog.objects.get(object_id=str(approved.pk), action="exception.decision_reopened")
    assert audit.after == {"state": "pending", "reason": "Approved #1880 for #4330.", "correction": 1}
    # Decided again, the one-to-one decision is the new one.
    exception_request_reject(request=approved, actor=decider, note="Not this one after all.")
    assert Decision.objects.get(request=approved).outcome == "rejected"


def test_the_signal_carries_the_request_old_and_new_decisions_and_the_reason(approved, decider):
    heard = []

    def listen(sender, **kwargs):
        heard.append(kwargs)

    signals.exception_decision_corrected.connect(listen, dispatch_uid="test.listen")
    try:
        exception_decision_correct(request=approved, actor=decider, reason=REASON, note="Granted in #sig-release.")
        exception_decision_reopen(request=approved, actor=decider, reason="Wrong request.")
    finally:
        signals.exception_decision_corrected.disconnect(dispatch_uid="test.listen")
    assert [(h["request"].pk, h["old"]["note"], h["new"] and h["new"]["note"], h["reason"]) for h in heard] == [
        (approved.pk, "Approved in the 1.36 channel.", "Granted in #sig-release.", REASON),
        (approved.pk, "Granted in #sig-release.", None, "Wrong request."),
    ]
    assert [h["correction"].number for h in heard] == [1, 2]


def test_the_decisions_recipients_hear_of_the_correction_and_reminders_follow_the_grant(
    request_1880, decider, django_capture_on_commit_callbacks
):
    team = channel("email", "release team", to=["release-team@example.com"])
    rule(team, applies_to=ReminderRule.AppliesTo.REQUEST_DECIDED)
    rule(team, applies_to=ReminderRule.AppliesTo.EXTENSIONS, offsets="1d")
    with django_capture_on_commit_callbacks(execute=False):
        exception_request_approve(request=request_1880, actor=decider)
    told = Delivery.objects.get(request=request_1880, offset="event:approved")
    Delivery.objects.filter(pk=told.pk).update(state=Delivery.State.SENT)
    reminder = Delivery.objects.get(request=request_1880, offset="1d")
    assert reminder.due_at == dt.datetime(2026, 12, 13, 12, 0, tzinfo=UTC)

    with django_capture_on_commit_callbacks(execute=False):
        exception_decision_correct(request=request_1880, actor=decider, reason=REASON, granted_until=saturday_18_aoe())
    reminder.refresh_from_db()
    assert reminder.due_at == dt.datetime(2026, 12, 12, 6, 0, tzinfo=UTC)
    notice = Delivery.objects.get(request=request_1880, offset="event:corrected:1")
    assert (notice.channel, notice.recipient, notice.state) == (told.channel, told.recipient, "pending")
    subject, body = render_email(message_for_delivery(notice))
    what = "KEP-1880 (Multiple Service CIDRs, SIG network)"
    assert subject == f"The decision on exception request #{request_1880.pk} for {what} was corrected by rel-lead"
    assert body == (
        f"{subject}.\n\n"
        "Was: approved, granted until end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026).\n\n"
        "Now: approved, granted until 18:00 AoE Saturday 12 December 2026 (06:00 UTC Sunday 13 December 2026).\n\n"
        f"Reason: {REASON}\n\n"
        f"Request #{request_1880.pk}: http://127.0.0.1:8000/admin/exceptions/exceptionrequest/{request_1880.pk}/change/"
        f"\n\n-- \nreleasecal delivery #{notice.pk}\n"
    )
    # Heard twice (a replayed hook), told once.
    correction = request_1880.decision_corrections.get()
    from reminders.services import deliveries_create_for_correction

    assert deliveries_create_for_correction(request=request_1880, correction=correction) == []
    # A reopen cancels the extension's reminders and tells them again.
    with django_capture_on_commit_callbacks(execute=False):
        exception_decision_reopen(request=request_1880, actor=decider, reason="Wrong request.")
    reminder.refresh_from_db()
    assert reminder.state == Delivery.State.CANCELLED
    assert Delivery.objects.filter(request=request_1880, offset="event:corrected:2").count() == 1


def test_the_feed_event_keeps_its_uid_and_its_sequence_rises(approved, decider):
    uid = f"releasecal-extension-{approved.pk}@releasecal.local"

    def event() -> icalendar.Event:
        body = Client().get("/calendar/kep/1880.ics").content
        return next(e for e in icalendar.Calendar.from_ical(body).walk("VEVENT") if str(e["UID"]) == uid)

    before = event()
    exception_decision_correct(request=approved, actor=decider, reason=REASON, granted_until=saturday_18_aoe())
    corrected = event()
    assert int(corrected["SEQUENCE"]) > int(before["SEQUENCE"])
    assert corrected.decoded("DTSTART") == tz.to_zone(saturday_18_aoe(), "Etc/GMT+12")
    exception_decision_reopen(request=approved, actor=decider, reason="Wrong request.")
    reopened = event()
    assert int(reopened["SEQUENCE"]) > int(corrected["SEQUENCE"])
    assert str(reopened["STATUS"]) == "TENTATIVE"


def test_the_api_corrects_and_reopens_for_the_release_team_only(approved, decider_client):
    path = f"/api/v1/exceptions/{approved.pk}/correct/"
    missing = decider_client.post(path, {"granted_until": "2026-12-12 18:00"}, content_type="application/json")
    assert missing.status_code == 400
    assert missing.json()["message"] == (
        "A correction needs a reason: say what the clerical error was (the decision is final otherwise)."
    )
    bad = decider_client.post(path, {"reason": "x", "granted_until": "Saturday"}, content_type="application/json")
    assert bad.status_code == 400
    outsider = User.objects.create_user("outsider", "o@example.com", "pw")
    client = Client()
    client.force_login(outsider)
    refused = client.post(path, {"reason": "x", "note": "y"}, content_type="application/json")
    assert refused.status_code == 403
    done = decider_client.post(
        path, {"reason": REASON, "granted_until": "2026-12-12 18:00"}, content_type="application/json"
    )
    assert done.status_code == 200, done.content
    body = done.json()
    assert body["decision"]["granted_until"] == "2026-12-13T06:00:00Z"
    assert [(c["number"], c["action"], c["reason"], c["corrected_by"]) for c in body["corrections"]] == [
        (1, "corrected", REASON, "rel-lead")
    ]
    reopened = decider_client.post(
        f"/api/v1/exceptions/{approved.pk}/reopen/", {"reason": "Wrong request."}, content_type="application/json"
    )
    assert reopened.status_code == 200
    assert (reopened.json()["state"], reopened.json()["decision"]) == ("pending", None)
    again = decider_client.post(
        f"/api/v1/exceptions/{approved.pk}/reopen/", {"reason": "Wrong request."}, content_type="application/json"
    )
    assert again.status_code == 409
    assert ExceptionRequest.objects.get(pk=approved.pk).state == "pending"


def test_the_request_page_corrects_with_a_reason_and_shows_the_history(approved, decider_client):
    page = f"/admin/exceptions/exceptionrequest/{approved.pk}/"
    assert f'href="{page}correct/" class="rc-correct"' in decider_client.get(f"{page}change/").content.decode()
    form = decider_client.get(f"{page}correct/").content.decode()
    assert 'name="granted_day" value="2026-12-13"' in form  # the grant in force, in its words
    missing = decider_client.post(f"{page}correct/", {"outcome": "approved", "granted_day": "2026-12-12"})
    assert missing.status_code == 200
    assert "This field is required." in missing.content.decode()
    assert not DecisionCorrection.objects.exists()
    fields = {"outcome": "approved", "granted_day": "2026-12-12", "granted_time": "18:00", "zone": "", "reason": REASON}
    done = decider_client.post(f"{page}correct/", {**fields, "note": "Approved in the 1.36 channel."})
    assert done.status_code == 302
    shown = decider_client.get(f"{page}change/").content.decode()
    assert (
        "<td>approved, granted until end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)</td>"
        "<td>approved, granted until 18:00 AoE Saturday 12 December 2026 (06:00 UTC Sunday 13 December 2026)</td>"
    ) in shown.replace("\n            ", "")
    assert decider_client.post(f"{page}reopen/", {"reason": "Wrong request."}).status_code == 302
    assert ExceptionRequest.objects.get(pk=approved.pk).state == "pending"
