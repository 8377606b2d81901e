"""Issue 24: a request that reached the release team after its window is recorded and
flagged "filed after the window" on every face, never dropped by the reader; one read
from the archive (ingested after its window, or more than 24 hours after it was sent) is
filed without the new-request mail and without nudges, and waits from its receipt.

How the two late cases are told apart (docs/intake.md): the mailbox's ``Received:`` time
is when the email arrived; an intake outage does not move it, so a current request read
days late still gets its mails."""

from __future__ import annotations

import datetime as dt
import email.message
import email.policy
import json
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from config.cockpit import cockpit
from exceptions.models import ExceptionRequest
from exceptions.reader import read_thread
from exceptions.services import exception_thread_file
from intake.filing import file_mail
from intake.mail import read_mail
from reminders import services as reminders
from reminders.models import Delivery, ReminderRule
from slack_integration.blocks import request_message
from tests.support.reminders_helpers import channel, rule

THREADS = Path(__file__).parent.parent / "data" / "exception-threads"
UTC = dt.UTC
# The 1.31 fixture's code freeze: 02:00 UTC Wednesday 24 July 2024; its window closes
# three days later, 02:00 UTC Saturday 27 July.
SENT_IN_WINDOW = dt.datetime(2024, 7, 24, 5, 0, tzinfo=UTC)
SENT_LATE = dt.datetime(2024, 7, 29, 9, 0, tzinfo=UTC)


@pytest.fixture
def mail_rules(kinds):
    team = channel("email", "team", to=["release-team@example.com"])
    rule(team, applies_to=ReminderRule.AppliesTo.REQUEST_SUBMITTED)
    rule(team, applies_to=ReminderRule.AppliesTo.REQUEST_NUDGE)


def _thread(sent: dt.datetime) -> str:
    text = (THREADS / "thread-marks-via-from-headers.txt").read_text().split("\n\n", 1)[1]
    return text.replace("Tue, 9 Jul 2024 10:00:00 +0000", sent.strftime("%a, %d %b %Y %H:%M:%S +0000"))


def _file(sent: dt.datetime, arrived: dt.datetime | None = None):
    return exception_thread_file(
        reading=read_thread(_thread(sent)), entered_by=None, milestone="code-freeze", release="1.31",
        arrived_at=arrived,
    )  # fmt: skip


def _submitted_mails(request) -> list[str]:
    return list(Delivery.objects.filter(request=request, offset="event:submitted").values_list("recipient", flat=True))


def test_a_2024_thread_ingested_today_is_from_the_archive(kep, release, mail_rules, django_capture_on_commit_callbacks):
    now = dt.datetime.now(UTC)
    with django_capture_on_commit_callbacks(execute=False):
        filed = _file(SENT_IN_WINDOW)
    request = filed.request
    assert (request.from_archive, request.filed_after_window) == (True, False)
    assert request.submitted_at == SENT_IN_WINDOW
    assert abs(request.received_at - now) < dt.timedelta(minutes=5)
    # Before: the team was mailed "New exception request" and nudged it "has waited 21599 hours".
    assert _submitted_mails(request) == []
    assert reminders.deliveries_sweep(now=now + dt.timedelta(hours=30), enqueue=lambda _: None).nudged == 0
    assert not Delivery.objects.filter(request=request, offset="event:nudge").exists()
    row = cockpit(now=request.received_at + dt.timedelta(hours=2))["waiting"][0]
    assert (row.from_archive, row.waited) == (True, "2 h 0 min")  # "899 days 23 h" before
    assert any(line.startswith("  from the archive: received ") for line in filed.report)


def test_a_current_request_read_late_because_the_intake_was_down_still_gets_its_mail(
    kep, release, mail_rules, django_capture_on_commit_callbacks
):
    # Sent and delivered into the mailbox in the window; the poller read it four days later.
    with django_capture_on_commit_callbacks(execute=False):
        request = _file(SENT_IN_WINDOW, arrived=SENT_IN_WINDOW + dt.timedelta(minutes=2)).request
    assert (request.from_archive, request.filed_after_window) == (False, False)
    assert request.received_at == SENT_IN_WINDOW + dt.timedelta(minutes=2)
    assert _submitted_mails(request) == ["email:release-team@example.com"]


def test_an_email_sent_after_the_window_is_recorded_and_flagged_on_every_face(
    kep, release, mail_rules, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False):
        request = _file(SENT_LATE, arrived=SENT_LATE + dt.timedelta(minutes=1)).request
    flag = (
        "Filed after the window: the email reached the release team after the request window had closed; "
        "the release team decides whether to take it."
    )
    assert (request.filed_after_window, request.from_archive, request.state) == (True, True, "pending")
    assert request.warnings == [flag]
    # Slack: the release-team channel's message.
    _, blocks = request_message(request)
    assert f":warning: {flag}" in json.dumps(blocks)
    # API.
    team = User.objects.create_user("lead", "lead@example.com", "pw")
    release.team.add(team)
    api = APIClient()
    api.force_authenticate(team)
    data = api.get(f"/api/v1/exceptions/{request.pk}/").json()
    assert (data["filed_after_window"], data["from_archive"], data["warnings"]) == (True, True, [flag])
    # Pages.
    page = api.get(f"/releases/{release.slug}/exceptions/").content.decode()
    assert "filed after the window" in page
    # The cockpit.
    row = cockpit(now=SENT_LATE + dt.timedelta(hours=1))["waiting"][0]
    assert row.after_window


def test_a_late_email_naming_no_freeze_is_filed_for_the_last_freeze_before_it(kep, release, code_freeze):
    text = _thread(SENT_LATE).replace("(code freeze)", "")
    filed = exception_thread_file(reading=read_thread(text), entered_by=None, arrived_at=SENT_LATE)
    assert (filed.request.milestone, filed.request.filed_after_window) == (code_freeze, True)
    assert filed.milestone_reason == (
        f"Code Freeze of 1.31 (#{code_freeze.pk}), inferred by date (no freeze is named in the subject or the "
        "text): the last freeze before the request was sent, 02:00 PDT Monday 29 July 2024; its request window "
        "had closed"
    )


def test_self_service_filing_after_the_window_is_still_refused(kep, release, code_freeze):
    user = User.objects.create_user("owner", "owner@example.com", "pw")
    api = APIClient()
    api.force_authenticate(user)
    response = api.post(
        "/api/v1/exceptions/",
        {"kep": 2400, "milestone": code_freeze.pk, "days": 2, "reason": "late"},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["message"].startswith("The request window for Code Freeze closed at ")
    assert not ExceptionRequest.objects.exists()


def _mail(received: str | None) -> bytes:
    msg = email.message.EmailMessage(policy=email.policy.SMTP)
    if received:
        msg["Received"] = f"from list.example.com by mx.example.com with ESMTPS; {received}"
    msg["From"] = "Ana Example <ana@example.com>"
    msg["Date"] = "Wed, 24 Jul 2024 05:00:00 +0000"
    msg["Subject"] = "Exception request for KEP-2400 (code freeze)"
    msg["Message-ID"] = "<late@example.com>"
    msg.set_content(_thread(SENT_IN_WINDOW).split("\n\n", 1)[1].split("\n\nFrom:")[0])
    return bytes(msg)


def test_the_mailbox_tells_an_outage_from_the_archive_by_the_received_header(
    kep, release, mail_rules, django_capture_on_commit_callbacks
):
    mail = read_mail(_mail("Wed, 24 Jul 2024 05:00:04 +0000"), fallback_id="<x@y>")
    assert mail.arrived_at == dt.datetime(2024, 7, 24, 5, 0, 4, tzinfo=UTC)
    with django_capture_on_commit_callbacks(execute=False):
        request = file_mail(mail).request
    assert request.from_archive is False
    assert _submitted_mails(request) == ["email:release-team@example.com"]


def test_an_old_thread_put_into_the_mailbox_later_is_from_the_archive(
    kep, release, mail_rules, django_capture_on_commit_callbacks
):
    mail = read_mail(_mail("Mon, 05 Aug 2024 09:00:00 +0000"), fallback_id="<x@y>")
    with django_capture_on_commit_callbacks(execute=False):
        request = file_mail(mail).request
    assert (request.from_archive, request.received_at) == (True, dt.datetime(2024, 8, 5, 9, 0, tzinfo=UTC))
    assert _submitted_mails(request) == []
