"""``manage.py ingest_exception``: from an email to a request with its revisions."""

from __future__ import annotations

import datetime as dt
import io
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from exceptions.management.commands.ingest_exception import Command
from exceptions.models import ExceptionRequest
from releasecal.models import AuditLog, Enhancement, Release, Tracking
from releasecal.services import milestone_create
from tests.support.paths import EXCEPTION_EMAILS

EMAILS = EXCEPTION_EMAILS
UTC = dt.UTC


def email_file(tmp_path: Path, name: str) -> str:
    target = tmp_path / name
    shutil.copy(EMAILS / name, target)
    return str(target)


def ingest(*args, stdin: str | None = None) -> str:
    out = io.StringIO()
    kwargs = {"stdout": out}
    if stdin is not None:
        kwargs["stdin"] = io.StringIO(stdin)
    call_command("ingest_exception", *args, **kwargs)
    return out.getvalue()


@pytest.fixture
def kep_5055(db):
    return Enhancement.objects.create(number=5055, title="DRA: device taints and tolerations", owning_sig="node")


def test_it_files_the_code_freeze_example_with_every_field(tmp_path, kep, code_freeze):
    out = ingest(email_file(tmp_path, "example-code-freeze.txt"), "--received-at", "2024-07-24T05:00:00Z")

    request = ExceptionRequest.objects.get()
    assert out.startswith(f"Created exception request #{request.pk} for KEP-2400 (Code Freeze, release 1.31): pending")
    assert request.milestone == code_freeze
    assert request.enhancement == kep
    assert request.days == 2
    assert request.submitted_at == dt.datetime(2024, 7, 24, 5, 0, tzinfo=UTC)
    assert request.requester is None
    # The email is signed "Thanks!" with no name and has no From: header: the author
    # cannot be read, so it is unknown (it was the placeholder "email" before).
    assert (request.requester_name, request.requester_mark, request.requester_label) == ("", "", "unknown")
    revision = request.current
    assert revision.number == 1
    assert revision.created_at == request.submitted_at
    assert revision.enhancement_name == "Node memory swap support"
    assert revision.stage == "beta"
    assert revision.sig == "node"
    assert revision.issue_url == "https://github.com/kubernetes/enhancements/issues/2400"
    assert revision.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/118764",
        "https://github.com/kubernetes/kubernetes/pull/118790",
    ]
    assert revision.risks_adding == "Low; the feature is behind a gate that is off by default."
    assert revision.source_text == (EMAILS / "example-code-freeze.txt").read_text()
    assert Tracking.objects.get(release=code_freeze.release, enhancement=kep).status == "exception_pending"


def test_the_aoe_example_from_stdin_creates_one_request_with_two_revisions(kep_5055, enhancements_freeze):
    text = (EMAILS / "example-enhancements-freeze-aoe.txt").read_text()
    out = ingest("-", "--received-at", "2024-06-14T10:00:00+00:00", stdin=text)

    request = ExceptionRequest.objects.get()
    assert request.milestone == enhancements_freeze
    assert request.days == 2
    revisions = list(request.revisions.order_by("number"))
    assert [(r.number, r.days, r.until_text, r.until_zone) for r in revisions] == [
        (1, 3, "end of day Monday AoE", "AoE"),
        (2, 2, "", "AoE"),
    ]
    assert revisions[1].enhancement_name == "DRA: device taints and tolerations"
    assert revisions[1].created_at == request.submitted_at
    assert "v1: 3 days, until 'end of day Monday AoE' (AoE)" in out
    assert "v2: 2 days (AoE)" in out
    assert list(
        AuditLog.objects.filter(object_type="exceptions.exceptionrequest", object_id=str(request.pk))
        .values_list("action", flat=True)
        .order_by("id")
    ) == [
        "exception.submit",
        "exception.amend",
    ]


@pytest.mark.parametrize(
    ("received_at", "accepted"),
    [
        ("2024-07-27T01:59:00Z", True),  # window: 3 days after 02:00 UTC 24 July
        ("2024-07-27T02:00:00Z", True),
        ("2024-07-27T02:01:00Z", False),
        ("2024-07-20T12:00:00-07:00", True),  # filing early is allowed
    ],
)
def test_it_checks_the_request_window_against_the_time_received(tmp_path, kep, code_freeze, received_at, accepted):
    path = email_file(tmp_path, "example-code-freeze.txt")
    out = ingest(path, "--received-at", received_at)
    request = ExceptionRequest.objects.get()
    # Issue 24: an email sent after the window is recorded and flagged, never refused.
    assert request.filed_after_window is not accepted
    flagged = (
        "  warning: Filed after the window: the email reached the release team after the request window had "
        "closed; the release team decides whether to take it."
    )
    assert (flagged in out.splitlines()) is not accepted


def test_it_takes_the_time_and_requester_from_the_email_headers(tmp_path, release, code_freeze):
    ingest(email_file(tmp_path, "crlf-lowercase-keys.eml"), "--create-kep")
    request = ExceptionRequest.objects.get()
    assert request.submitted_at == dt.datetime(2024, 7, 24, 6, 45, tzinfo=UTC)
    assert request.requester_name == "Antonio O."
    assert request.days == 7
    assert request.current.until_zone == "Europe/Berlin"
    assert request.current.pr_urls == [
        "#122047",
        "kubernetes/kubernetes#125021",
        "https://github.com/kubernetes/website/pull/46710",
    ]
    created = Enhancement.objects.get(number=1880)
    assert (created.title, created.owning_sig) == ("Multiple Service CIDRs", "network")


def test_a_top_posted_amendment_is_recorded_at_the_replys_date(tmp_path, kep, code_freeze):
    out = ingest(email_file(tmp_path, "reply-top-posted-amendment.eml"))
    request = ExceptionRequest.objects.get()
    assert request.submitted_at == dt.datetime(2024, 7, 24, 3, 10, tzinfo=UTC)
    revisions = list(request.revisions.order_by("number"))
    assert [(r.days, r.until_text, r.created_at) for r in revisions] == [
        (6, "EOD Monday CEST", dt.datetime(2024, 7, 24, 3, 10, tzinfo=UTC)),
        (4, "EOD Saturday CEST", dt.datetime(2024, 7, 24, 7, 30, tzinfo=UTC)),
    ]
    assert request.days == 4
    assert "v2: 4 days" in out


def test_it_prints_the_warning_for_more_than_seven_days(tmp_path, kep, code_freeze):
    text = (EMAILS / "example-code-freeze.txt").read_text().replace("(in days): 2", "(in days): 10")
    out = ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=text)
    assert "warning: 10 days requested" in out


def test_it_names_the_unknown_kep(tmp_path, enhancements_freeze):
    path = email_file(tmp_path, "example-enhancements-freeze-aoe.txt")
    with pytest.raises(CommandError, match=r"^KEP-5055 is not known; .* pass --create-kep"):
        ingest(path, "--received-at", "2024-06-14T10:00:00Z")
    assert not Enhancement.objects.filter(number=5055).exists()


def test_it_names_the_days_field_it_could_not_read(tmp_path, release):
    with pytest.raises(CommandError) as exc:
        ingest(email_file(tmp_path, "days-in-words.eml"), "--received-at", "2024-07-24T05:00:00Z")
    assert str(exc.value) == (
        "Could not read the field 'Additional time needed (in days)' "
        "('seven' is not written in digits; write the number of days as digits (e.g. 7))."
    )


def test_the_cli_prints_one_line_and_exits_1_without_a_traceback(tmp_path, release, capsys, monkeypatch):
    monkeypatch.setattr("django.core.management.base.connections.close_all", lambda: None)
    with pytest.raises(SystemExit) as exc:
        Command().run_from_argv(
            ["manage.py", "ingest_exception", "--skip-checks", email_file(tmp_path, "days-in-words.eml")]
        )
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("CommandError: Could not read the field 'Additional time needed (in days)'")
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_a_missing_field_fails_by_default_and_files_with_allow_missing(tmp_path, kep, code_freeze):
    text = (EMAILS / "example-code-freeze.txt").read_text()
    text = "\n".join(line for line in text.splitlines() if "Risks from cutting" not in line)
    with pytest.raises(CommandError, match=r"Could not read the field 'Risks from cutting enhancement' \(the "):
        ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=text)
    out = ingest("-", "--received-at", "2024-07-24T05:00:00Z", "--allow-missing", stdin=text)
    assert ExceptionRequest.objects.get().current.risks_cutting == ""
    assert "warning: Not read: Risks from cutting enhancement" in out


def test_dry_run_saves_nothing(tmp_path, kep, code_freeze):
    out = ingest(email_file(tmp_path, "example-code-freeze.txt"), "--received-at", "2024-07-24T05:00:00Z", "--dry-run")
    assert out.startswith("Dry run, nothing saved. Would create exception request for KEP-2400")
    assert "v1: 2 days" in out
    assert ExceptionRequest.objects.count() == 0
    assert not AuditLog.objects.filter(action="exception.submit").exists()


def test_dry_run_still_reports_a_policy_violation(tmp_path, kep, code_freeze):
    path = email_file(tmp_path, "example-code-freeze.txt")
    ingest(path, "--received-at", "2024-07-24T05:00:00Z")
    with pytest.raises(CommandError, match="KEP-2400 already has a pending exception request"):
        ingest(path, "--received-at", "2024-07-24T06:00:00Z", "--dry-run")


def test_a_second_ingest_of_the_same_request_is_refused_with_the_policy_message(tmp_path, kep, code_freeze):
    path = email_file(tmp_path, "example-code-freeze.txt")
    ingest(path, "--received-at", "2024-07-24T05:00:00Z")
    with pytest.raises(CommandError, match=r"KEP-2400 already has a pending exception request"):
        ingest(path, "--received-at", "2024-07-24T06:00:00Z")


@pytest.mark.parametrize(
    "value",
    ["Wed, 24 Jul 2024 07:00:00 +0200", "2024-07-24T07:00:00+02:00", "2024-07-24 05:00Z"],
)
def test_received_at_takes_iso_or_an_email_date(tmp_path, kep, code_freeze, value):
    ingest(email_file(tmp_path, "example-code-freeze.txt"), "--received-at", value)
    assert ExceptionRequest.objects.get().submitted_at == dt.datetime(2024, 7, 24, 5, 0, tzinfo=UTC)


@pytest.mark.parametrize(("value", "message"), [("2024-07-24T05:00", "no UTC offset"), ("yesterday", "neither")])
def test_received_at_without_an_offset_or_unreadable_is_refused(tmp_path, kep, code_freeze, value, message):
    with pytest.raises(CommandError, match=message):
        ingest(email_file(tmp_path, "example-code-freeze.txt"), "--received-at", value)


def test_an_ambiguous_release_asks_for_release(tmp_path, kinds, kep, code_freeze):
    other = Release.objects.create(
        slug="1.32", name="Kubernetes v1.32", start_date=dt.date(2024, 9, 9), status=Release.Status.PLANNING
    )
    milestone_create(
        release=other, kind=kinds["code-freeze"], title="Code Freeze", at=dt.datetime(2024, 11, 8, 2, 0, tzinfo=UTC)
    )
    path = email_file(tmp_path, "example-code-freeze.txt")
    # Sent before either code freeze: both windows are still ahead, so neither is taken.
    with pytest.raises(CommandError, match=r"Could not tell which freeze .* 2 freezes .*pass --milestone .* --release"):
        ingest(path, "--received-at", "2024-07-20T05:00:00Z")
    out = ingest(path, "--received-at", "2024-07-20T05:00:00Z", "--release", "1.31")
    assert ExceptionRequest.objects.get().milestone == code_freeze
    assert "release 1.31 as given" in out
    ExceptionRequest.objects.all().delete()
    # Sent inside 1.31's request window: that freeze, by date.
    out = ingest(path, "--received-at", "2024-07-24T05:00:00Z")
    assert ExceptionRequest.objects.get().milestone == code_freeze
    assert "by date: its request window" in out


def test_when_only_one_window_is_still_open_that_release_is_taken(tmp_path, kinds, kep, code_freeze):
    old = Release.objects.create(
        slug="1.30", name="Kubernetes v1.30", start_date=dt.date(2024, 1, 8), status=Release.Status.ACTIVE
    )
    milestone_create(
        release=old, kind=kinds["code-freeze"], title="Code Freeze", at=dt.datetime(2024, 3, 6, 2, 0, tzinfo=UTC)
    )
    ingest(email_file(tmp_path, "example-code-freeze.txt"), "--received-at", "2024-07-24T05:00:00Z")
    assert ExceptionRequest.objects.get().milestone == code_freeze


def test_milestone_can_be_given_by_kind_or_id(tmp_path, kep, code_freeze, enhancements_freeze):
    path = email_file(tmp_path, "example-code-freeze.txt")
    ingest(path, "--received-at", "2024-06-14T05:00:00Z", "--milestone", str(enhancements_freeze.pk))
    assert ExceptionRequest.objects.get().milestone == enhancements_freeze
    with pytest.raises(CommandError, match="Unknown milestone kind 'code-thaw'"):
        ingest(path, "--milestone", "code-thaw")
    with pytest.raises(CommandError, match="No milestone with id 999999"):
        ingest(path, "--milestone", "999999")


def test_an_email_naming_no_freeze_takes_the_freeze_whose_window_is_open(tmp_path, kep, code_freeze):
    text = (EMAILS / "example-code-freeze.txt").read_text().replace(" (code freeze)", "")
    out = ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=text)
    assert ExceptionRequest.objects.get().milestone == code_freeze
    assert "milestone: Code Freeze of 1.31 (#" in out
    assert "inferred by date (no freeze is named in the subject or the text): its request window" in out


def test_an_email_naming_no_freeze_sent_outside_any_window_asks_for_milestone(tmp_path, kep, code_freeze):
    text = (EMAILS / "example-code-freeze.txt").read_text().replace(" (code freeze)", "")
    with pytest.raises(CommandError, match=r"Could not tell which freeze .* pass --milestone"):
        ingest("-", "--received-at", "2024-07-20T05:00:00Z", stdin=text)
    ingest("-", "--received-at", "2024-07-20T05:00:00Z", "--milestone", "code-freeze", stdin=text)
    assert ExceptionRequest.objects.get().milestone == code_freeze


def test_an_unknown_release_is_named(tmp_path, kep, code_freeze):
    with pytest.raises(CommandError, match=r"No release '9\.99'"):
        ingest(email_file(tmp_path, "example-code-freeze.txt"), "--release", "9.99")


def test_requester_names_a_user(tmp_path, kep, code_freeze, requester):
    ingest(
        email_file(tmp_path, "example-code-freeze.txt"),
        "--received-at",
        "2024-07-24T05:00:00Z",
        "--requester",
        "requester",
    )
    assert ExceptionRequest.objects.get().requester == requester
    with pytest.raises(CommandError, match="No user 'nobody'"):
        ingest(email_file(tmp_path, "example-code-freeze.txt"), "--requester", "nobody")


def test_a_missing_file_or_empty_input_is_a_clear_error(tmp_path, release):
    with pytest.raises(CommandError, match="No such file"):
        ingest(str(tmp_path / "nope.eml"))
    with pytest.raises(CommandError, match="The email is empty"):
        ingest("-", stdin="  \n")


def test_it_files_a_raw_mime_message(tmp_path, code_freeze):
    out = ingest(
        email_file(tmp_path, "raw-mime-quoted-printable.eml"),
        "--received-at",
        "2024-07-24T05:00:00Z",
        "--create-kep",
    )
    request = ExceptionRequest.objects.get()
    assert request.enhancement.number == 1287
    assert request.requester_name == "Tim Allclair"
    assert (request.days, request.current.until_zone) == (3, "AoE")
    assert "Created exception request" in out


def test_it_warns_when_the_until_names_the_wrong_dst_label(tmp_path, kep, code_freeze):
    text = (EMAILS / "example-code-freeze.txt").read_text()
    text = text.replace("(in days): 2", "(in days): 2 (until EOD Thursday PST)")
    out = ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=text)
    # Sent Wednesday 24 July: "Thursday" is 25 July, when PDT is in force; both readings named.
    assert (
        "warning: 'end of day PST' on Thursday 25 July 2024: PST (UTC-8) is not in force in America/Los_Angeles" in out
    )
    assert "end of day PDT = 07:00Z Friday 26 July 2024, or end of day UTC-8 = 08:00Z Friday 26 July 2024" in out
    revision = ExceptionRequest.objects.get().current
    assert revision.until_at == dt.datetime(2024, 7, 26, 7, 0, tzinfo=UTC)
    right = text.replace("PST", "PDT")
    ExceptionRequest.objects.all().delete()
    assert "not in force" not in ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=right)


def test_without_a_date_a_late_request_says_to_pass_received_at(tmp_path, kep, code_freeze):
    # Taken as sent now, after the 2024 window: recorded and flagged (it was refused), and
    # the report says where the time came from.
    out = ingest(email_file(tmp_path, "example-code-freeze.txt")).splitlines()
    assert ExceptionRequest.objects.get().filed_after_window
    assert "  warning: No readable Date: header and no --received-at; the request is recorded as sent now." in out


def test_an_over_long_answer_is_filed_cut_not_crashed(tmp_path, kep, code_freeze):
    text = (EMAILS / "example-code-freeze.txt").read_text()
    text = text.replace("(in days): 2", "(in days): 2 (until EOD Friday PDT " + "and more " * 40 + ")")
    ingest("-", "--received-at", "2024-07-24T05:00:00Z", stdin=text)
    assert len(ExceptionRequest.objects.get().current.until_text) == 200
