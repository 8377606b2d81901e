"""Filing a read thread: the command, proposed decisions, 0-day admissions, who is recorded,
and ``POST /api/v1/exceptions/parse/`` refusals."""

from __future__ import annotations

import datetime as dt
import io
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from exceptions.models import Decision, ExceptionRequest, ProposedDecision
from exceptions.reader import read_thread
from exceptions.services import (
    RequestFields,
    default_granted_until,
    exception_request_approve,
    exception_request_submit,
    exception_thread_file,
    proposed_decision_confirm,
    proposed_decision_dismiss,
)
from releasecal import tz
from releasecal.errors import Conflict, NotAllowed, PolicyViolation, ValidationFailed
from releasecal.models import Enhancement, Release
from releasecal.services import milestone_create

THREADS = Path(__file__).parent.parent / "data" / "exception-threads"
UTC = dt.UTC


def ingest(*args, stdin: str | None = None) -> str:
    out = io.StringIO()
    kwargs = {"stdout": out}
    if stdin is not None:
        kwargs["stdin"] = io.StringIO(stdin)
    call_command("ingest_exception", *args, **kwargs)
    return out.getvalue()


def body(name: str) -> str:
    text = (THREADS / name).read_text()
    return text if "\nX-Source: " in text.split("\n\n", 1)[0] else text.split("\n\n", 1)[1]


@pytest.fixture
def kep_4639(db):
    return Enhancement.objects.create(number=4639, title="OCI VolumeSource", owning_sig="node")


@pytest.fixture
def lead(kinds) -> User:
    user = User.objects.create_user("kat", "kat@example.com", "pw")
    user.groups.add(Group.objects.get(name="Release Team"))
    # Deciding is per release: on the team of the release each test made before this.
    for release in Release.objects.all():
        release.team.add(user)
    return user


@pytest.fixture
def prr_release(kinds):
    """1.35-like: PRR freeze 19:00 PDT Thursday 9 October 2025, AoE zone."""
    release = Release.objects.create(
        slug="1.35", name="Kubernetes v1.35", zone="AoE", start_date=dt.date(2025, 9, 15),
        status=Release.Status.ACTIVE,
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["prr-freeze"], title="PRR Freeze",
                     at=dt.datetime(2025, 10, 10, 2, 0, tzinfo=UTC))  # fmt: skip
    milestone_create(release=release, kind=kinds["enhancements-freeze"], title="Enhancements Freeze",
                     at=dt.datetime(2025, 10, 17, 2, 0, tzinfo=UTC))  # fmt: skip
    milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze",
                     at=dt.datetime(2025, 11, 7, 2, 0, tzinfo=UTC))  # fmt: skip
    return release


# ------------------------------------------------------------ the command


def test_a_thread_files_the_request_and_proposes_the_decision_without_applying_it(release, kep_4639, lead):
    out = ingest("-", "--entered-by", "kat", stdin=body("thread-approval-pst-in-june-2024.mbox"))
    request = ExceptionRequest.objects.get()
    assert request.state == "pending"  # never applied by the command
    assert not Decision.objects.exists()
    assert request.milestone.kind.slug == "enhancements-freeze"
    assert request.requester_name == "Sascha Example"
    assert request.entered_by == lead
    revision = request.current
    assert revision.entered_by == lead
    assert revision.until_at == dt.datetime(2024, 6, 21, 22, 0, tzinfo=UTC)
    proposal = ProposedDecision.objects.get()
    assert (proposal.request, proposal.outcome, proposal.state) == (request, "approved", "proposed")
    assert proposal.granted_until == dt.datetime(2024, 6, 22, 1, 0, tzinfo=UTC)
    assert proposal.granted_zone == "America/Los_Angeles"
    assert proposal.author_name == "Kat Example"
    assert "APPROVING" in proposal.source_text
    assert "18:00 UTC-8 = 02:00Z" in proposal.warnings[0]
    assert proposal.entered_by == lead
    assert "milestone: Enhancements Freeze of 1.31" in out
    assert "inferred: the subject says 'Enhancements freeze exception'" in out or "the subject says" in out
    assert "release 1.31 inferred: the subject names release 1.31" in out
    assert "entered by kat" in out
    assert f"proposed decision #{proposal.pk}: approved, granted until 18:00 PDT Friday 21 June 2024" in out
    assert "not applied" in out


def test_the_dry_run_saves_nothing_and_says_what_it_would_do(release, kep_4639):
    out = ingest("-", "--dry-run", stdin=body("thread-approval-pst-in-june-2024.mbox"))
    assert out.startswith("Dry run, nothing saved. Would create exception request for KEP-4639")
    assert "proposed decision: approved" in out
    assert "entered by unknown (pass --entered-by)" in out
    assert not ExceptionRequest.objects.exists()
    assert not ProposedDecision.objects.exists()


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("reply-approval-kep-2238-pr-3408.md", "This is a release-team reply, not a request: paste the whole thread"),
        ("exceptions-yaml-entry-1.34.yaml", "This is an exceptions.yaml entry, not a request email"),
        ("bare-approval-comment.md", "This is a bare approval comment"),
        ("kep-pr-thread-3408.md", "This looks like a KEP pull-request thread"),
    ],
)
def test_the_command_refuses_a_non_request_with_one_sentence(db, name, says):
    with pytest.raises(CommandError) as err:
        ingest("-", stdin=body(name))
    assert str(err.value).startswith(says)
    assert "\n" not in str(err.value)
    assert not ExceptionRequest.objects.exists()


@pytest.mark.parametrize(
    ("stdin", "says"),
    [
        ("", "The email is empty"),
        ("Subject: x\x00", "NUL byte"),
        ("Date: Mon, 01 Jan 0001 00:00:00 -0800\n\nEnhancement name: x", "not a plausible time"),
        ("Date: Fri, 31 Dec 9999 23:59:59 -0100\n\nEnhancement name: x", "not a plausible time"),
        ("x" * 1_000_001, "at most 1,000,000"),
    ],
)
def test_the_command_refuses_bad_input_with_one_line(db, stdin, says):
    with pytest.raises(CommandError) as err:
        ingest("-", stdin=stdin)
    assert says in str(err.value)
    assert "\n" not in str(err.value)


def test_a_binary_file_is_refused(db, tmp_path):
    path = tmp_path / "image.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 10)
    with pytest.raises(CommandError, match="NUL byte"):
        ingest(str(path))


def test_a_5000_digit_day_count_is_one_line(kep, code_freeze):
    text = (Path(__file__).parent.parent / "data" / "exception-emails" / "example-code-freeze.txt").read_text()
    text = text.replace("(in days): 2", "(in days): " + "7" * 5000)
    with pytest.raises(CommandError) as err:
        ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=text)
    assert "a 5,000-digit number is not a number of days" in str(err.value)
    assert len(str(err.value)) < 300


# ------------------------------------------------------------ proposed decisions


def _filed(release, kep_4639, entered_by=None):
    reading = read_thread(body("thread-approval-pst-in-june-2024.mbox"))
    return exception_thread_file(reading=reading, entered_by=entered_by)


def test_confirming_a_proposal_approves_through_the_service(release, kep_4639, lead):
    filed = _filed(release, kep_4639, entered_by=lead)
    decision = proposed_decision_confirm(proposal=filed.proposal, actor=lead)
    request = ExceptionRequest.objects.get()
    assert request.state == "approved"
    assert decision.granted_until == dt.datetime(2024, 6, 22, 1, 0, tzinfo=UTC)
    assert decision.granted_zone == "America/Los_Angeles"
    assert decision.decided_by == lead
    filed.proposal.refresh_from_db()
    assert (filed.proposal.state, filed.proposal.resolved_by) == ("confirmed", lead)
    with pytest.raises(Conflict):
        proposed_decision_confirm(proposal=filed.proposal, actor=lead)


def test_only_the_release_team_confirms_or_dismisses(release, kep_4639, requester):
    filed = _filed(release, kep_4639)
    with pytest.raises(NotAllowed):
        proposed_decision_confirm(proposal=filed.proposal, actor=requester)
    with pytest.raises(NotAllowed):
        proposed_decision_dismiss(proposal=filed.proposal, actor=requester)
    assert ExceptionRequest.objects.get().state == "pending"


def test_an_ambiguous_grant_needs_the_deadline_to_confirm(release, kep_4639, lead):
    text = body("thread-approval-pst-in-june-2024.mbox").replace("18:00 PST", "18:00 IST")
    filed = exception_thread_file(reading=read_thread(text), entered_by=None)
    assert filed.proposal.granted_until is None
    with pytest.raises(ValidationFailed, match="could not be read unambiguously"):
        proposed_decision_confirm(proposal=filed.proposal, actor=lead)
    chosen = tz.parse_wall_time("2024-06-21 18:00", "Asia/Kolkata")
    decision = proposed_decision_confirm(proposal=filed.proposal, actor=lead, granted_until=chosen,
                                         granted_zone="Asia/Kolkata")  # fmt: skip
    assert decision.granted_until == dt.datetime(2024, 6, 21, 12, 30, tzinfo=UTC)


def test_dismissing_leaves_the_request_pending(release, kep_4639, lead):
    filed = _filed(release, kep_4639)
    proposed_decision_dismiss(proposal=filed.proposal, actor=lead, note="misread")
    filed.proposal.refresh_from_db()
    assert filed.proposal.state == "dismissed"
    assert ExceptionRequest.objects.get().state == "pending"


# ------------------------------------------------------------ 0-day admissions


def test_a_prr_admission_is_filed_with_zero_days_and_granted_until_the_freeze(prr_release, lead):
    Enhancement.objects.create(number=5278, title="Nominated node name", owning_sig="scheduling")
    out = ingest("-", stdin=body("prr-admission-none-prr-approved.txt"))
    request = ExceptionRequest.objects.get()
    assert request.days == 0
    assert request.milestone.kind.slug == "prr-freeze"
    assert "0 days (admission only, no extra time)" in out
    assert default_granted_until(request) == request.milestone.deadline
    decision = exception_request_approve(request=request, actor=lead)
    assert decision.granted_until == request.milestone.deadline == decision.freeze_at


def test_an_admission_cannot_be_granted_before_the_freeze(prr_release, lead):
    enhancement = Enhancement.objects.create(number=5278, title="Nominated node name", owning_sig="scheduling")
    prr = prr_release.milestones.get(kind__slug="prr-freeze")
    request = exception_request_submit(enhancement=enhancement, milestone=prr, fields=RequestFields(days=0),
                                       submitted_at=prr.deadline + dt.timedelta(hours=3))  # fmt: skip
    with pytest.raises(PolicyViolation, match="before the freeze"):
        exception_request_approve(request=request, actor=lead, granted_until=prr.deadline - dt.timedelta(hours=1))


def test_zero_days_is_refused_for_a_code_freeze(prr_release):
    enhancement = Enhancement.objects.create(number=5278, title="Nominated node name", owning_sig="scheduling")
    code = prr_release.milestones.get(kind__slug="code-freeze")
    with pytest.raises(PolicyViolation, match="must ask for at least 1 day"):
        exception_request_submit(enhancement=enhancement, milestone=code, fields=RequestFields(days=0),
                                 submitted_at=code.deadline + dt.timedelta(hours=3))  # fmt: skip


def test_the_database_refuses_negative_days(prr_release):
    from django.db import IntegrityError, transaction

    enhancement = Enhancement.objects.create(number=5278, title="x", owning_sig="scheduling")
    prr = prr_release.milestones.get(kind__slug="prr-freeze")
    with pytest.raises(IntegrityError), transaction.atomic():
        ExceptionRequest.objects.create(release=prr_release, enhancement=enhancement, milestone=prr, days=-1,
                                        submitted_at=prr.deadline)  # fmt: skip


# ------------------------------------------------------------ the API


def test_parse_refuses_a_non_request_with_422(db):
    response = APIClient().post(
        "/api/v1/exceptions/parse/", {"text": body("reply-approval-kep-2238-pr-3408.md")}, format="json"
    )
    assert response.status_code == 422
    data = response.json()
    assert set(data) == {"message", "extra"}
    assert data["message"].startswith("This is a release-team reply, not a request")
    assert data["extra"] == {"kind": "release_team_reply"}


def test_parse_reads_a_whole_thread(db):
    response = APIClient().post(
        "/api/v1/exceptions/parse/", {"text": body("thread-approval-pst-in-june-2024.mbox")}, format="json"
    )
    assert response.status_code == 200
    data = response.json()
    assert data["kep_number"] == 4639
    assert data["until"]["at"] == "2024-06-21T22:00:00Z"
    assert data["proposed_decision"]["outcome"] == "approved"
    assert data["proposed_decision"]["granted"]["at"] == "2024-06-22T01:00:00Z"
    assert data["inferred"]["milestone_kind"]["value"] == "enhancements-freeze"
    assert data["inferred"]["release"] == {"value": "1.31", "reason": "the subject names release 1.31"}


@pytest.mark.parametrize(
    ("text", "status", "says"),
    [
        ("", 400, "blank"),
        ("Date: Fri, 31 Dec 9999 23:59:59 -0100\n\nEnhancement name: x", 400, "not a plausible time"),
        # The anonymous endpoint reads at most 200,000 characters (it was the reader's 1,000,000).
        ("x" * 1_000_001, 413, "this endpoint reads at most 200,000"),
        ("Hello\x00", 400, "Null characters"),
    ],
)
def test_parse_refuses_bad_input_with_a_message(db, text, status, says):
    response = APIClient().post("/api/v1/exceptions/parse/", {"text": text}, format="json")
    assert response.status_code == status
    assert says in response.json()["message"]


# ------------------------------------------------------------ admin and API faces


def _token_client(user) -> APIClient:
    from rest_framework.authtoken.models import Token

    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_the_api_lists_and_confirms_a_proposal(release, kep_4639, lead, requester):
    filed = _filed(release, kep_4639, entered_by=lead)
    listed = APIClient().get(f"/api/v1/exceptions/{filed.request.pk}/proposed-decisions/")
    assert listed.status_code == 200
    (row,) = listed.json()
    assert row["outcome"] == "approved"
    assert row["state"] == "proposed"
    assert row["granted_until"] == "2024-06-22T01:00:00Z"
    assert row["granted_until_local"]["display"].startswith("18:00 PDT Friday 21 June 2024")
    assert row["entered_by"] == "kat"
    url = f"/api/v1/exceptions/proposed-decisions/{filed.proposal.pk}/confirm/"
    assert _token_client(requester).post(url, {}, format="json").status_code == 403
    assert ExceptionRequest.objects.get().state == "pending"
    confirmed = _token_client(lead).post(url, {}, format="json")
    assert confirmed.status_code == 200, confirmed.json()
    assert confirmed.json()["state"] == "approved"
    assert confirmed.json()["decision"]["granted_until"] == "2024-06-22T01:00:00Z"
    again = _token_client(lead).post(url, {}, format="json")
    assert again.status_code == 409


def test_the_api_needs_a_deadline_for_an_ambiguous_proposal(release, kep_4639, lead):
    text = body("thread-approval-pst-in-june-2024.mbox").replace("18:00 PST", "18:00 CST")
    filed = exception_thread_file(reading=read_thread(text), entered_by=None)
    url = f"/api/v1/exceptions/proposed-decisions/{filed.proposal.pk}/confirm/"
    refused = _token_client(lead).post(url, {}, format="json")
    assert refused.status_code == 400
    assert "could not be read unambiguously" in refused.json()["message"]
    chosen = {"granted_until": "2024-06-21 18:00", "granted_zone": "America/Chicago"}
    confirmed = _token_client(lead).post(url, chosen, format="json")
    assert confirmed.status_code == 200
    assert confirmed.json()["decision"]["granted_until"] == "2024-06-21T23:00:00Z"


def test_the_api_dismisses_a_proposal(release, kep_4639, lead):
    filed = _filed(release, kep_4639)
    response = _token_client(lead).post(
        f"/api/v1/exceptions/proposed-decisions/{filed.proposal.pk}/dismiss/", {"note": "misread"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["state"] == "dismissed"
    assert ExceptionRequest.objects.get().state == "pending"


def test_every_write_path_records_who_entered_it(release, kep, code_freeze, lead, requester, client):
    from exceptions.services import exception_request_amend

    # The API: a release-team member files for someone else.
    lead.is_staff = True
    lead.save()
    response = _token_client(lead).post(
        "/api/v1/exceptions/",
        {"kep": 2400, "milestone": code_freeze.pk, "days": 2, "requester_name": "Jane From Email",
         "submitted_at": "2024-07-24T05:00:00Z"},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    request = ExceptionRequest.objects.get(pk=response.json()["id"])
    assert (request.requester_name, request.entered_by) == ("Jane From Email", lead)
    assert response.json()["current"]["entered_by"] == "kat"
    # The API's amend, by the requester-side user... here the release team.
    patched = _token_client(lead).patch(f"/api/v1/exceptions/{request.pk}/", {"days": 3}, format="json")
    assert patched.status_code == 200
    assert request.revisions.order_by("-number").first().entered_by == lead
    # A service call without entered_by records the acting user.
    exception_request_amend(request=request, fields=RequestFields(days=4), actor=lead)
    assert request.revisions.order_by("-number").first().entered_by == lead


def test_the_admin_shows_a_proposal_and_confirms_it_with_one_click(release, kep_4639, lead):
    from django.test import Client

    lead.is_staff = True
    lead.save()
    filed = _filed(release, kep_4639, entered_by=lead)
    client = Client()
    client.force_login(lead)
    page = client.get(f"/admin/exceptions/exceptionrequest/{filed.request.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Decisions read from the thread (1)" in html
    assert "18:00 PDT Friday 21 June 2024" in html
    assert "18:00 UTC-8 = 02:00Z" in html
    assert "Confirm (approved)" in html
    assert "2024-06-21" in html or "Friday 21 June 2024" in html  # the until-text's instant beside the days
    response = client.post(f"/admin/exceptions/proposeddecision/{filed.proposal.pk}/confirm/")
    assert response.status_code == 302
    request = ExceptionRequest.objects.get()
    assert request.state == "approved"
    assert request.decision.decided_by == lead
    assert request.decision.granted_until == dt.datetime(2024, 6, 22, 1, 0, tzinfo=UTC)
    listing = client.get("/admin/exceptions/proposeddecision/")
    assert listing.status_code == 200
    assert "confirmed" in listing.content.decode()


def test_the_admin_add_page_records_the_admin_user_as_entered_by(release, kep, code_freeze, lead, requester):
    from django.test import Client

    lead.is_staff = True
    lead.save()
    from django.contrib.auth.models import Permission

    lead.user_permissions.add(Permission.objects.get(codename="add_exceptionrequest"))
    client = Client()
    client.force_login(lead)
    response = client.post(
        "/admin/exceptions/exceptionrequest/add/",
        {"enhancement": kep.pk, "milestone": code_freeze.pk, "requester": requester.pk,
         "submitted_at": "2024-07-24 01:00", "days": 2},
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    request = ExceptionRequest.objects.get()
    assert (request.requester, request.entered_by) == (requester, lead)
    assert request.current.entered_by == lead


def test_the_admin_sends_an_ambiguous_proposal_to_the_approve_form(release, kep_4639, lead):
    from django.test import Client

    lead.is_staff = True
    lead.save()
    text = body("thread-approval-pst-in-june-2024.mbox").replace("18:00 PST", "18:00 IST")
    filed = exception_thread_file(reading=read_thread(text), entered_by=lead)
    client = Client()
    client.force_login(lead)
    response = client.post(f"/admin/exceptions/proposeddecision/{filed.proposal.pk}/confirm/", follow=True)
    assert response.redirect_chain[-1][0] == f"/admin/exceptions/exceptionrequest/{filed.request.pk}/approve/"
    assert "could not be read unambiguously" in response.content.decode()
    assert ExceptionRequest.objects.get().state == "pending"


def test_a_thread_asking_until_a_wall_time_that_happens_twice_is_filed_with_the_refusal(release, kep_4639, lead):
    text = body("thread-approval-pst-in-june-2024.mbox").replace(
        "7 (until EOD Friday CET)", "7 (until 01:30 ET Sunday 3 November 2024)"
    )
    out = ingest("-", "--entered-by", "kat", stdin=text)
    revision = ExceptionRequest.objects.get().current
    assert (revision.days, revision.until_text, revision.until_at) == (7, "01:30 ET Sunday 3 November 2024", None)
    assert (
        "  warning: 2024-11-03 01:30 is ambiguous in America/New_York: it happens twice when daylight saving time "
        "ends, at UTC offset -04:00 and again at -05:00. Give the time with an explicit offset.\n"
    ) in out
