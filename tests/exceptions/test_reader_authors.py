"""Who wrote each message of a thread (``exceptions/reader/authors.py``), the answers that
stop at the next message's mark, the prose of each revision, the release team's wordings
of a decision, and grants at a wall time that does not exist or happens twice.

The threads are in ``tests/data/exception-threads/thread-marks-*.txt`` (each names its
source) and ``../shared/data/exception-emails/example-thread-author-marks.txt``.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.contrib.auth.models import User

from exceptions.models import ExceptionRequest
from exceptions.reader import decision_outcome, read_thread
from exceptions.services import decide_refusal, exception_thread_file, proposed_decision_confirm
from releasecal import tz
from releasecal.models import Release
from releasecal.services import milestone_create
from tests.support.paths import SHARED_DATA

THREADS = Path(__file__).parent.parent / "data" / "exception-threads"
UTC = dt.UTC


def thread(name: str) -> str:
    text = (THREADS / name).read_text()
    assert text.startswith("Source: ")
    return text.split("\n\n", 1)[1]


def example() -> str:
    return (SHARED_DATA / "exception-emails" / "example-thread-author-marks.txt").read_text()


# ------------------------------------------------------------ each kind of mark


def test_bracket_marks_name_each_message_and_the_answer_stops_at_the_next_one():
    reading = read_thread(thread("thread-marks-bracket-on-behalf.txt"))
    request = reading.request
    assert (request.sender, request.sender_mark, request.on_behalf_of) == ("Tim Hockin", "bracket", "Antonio Ojea")
    # Ran on into "\n\n[Angelos Kolaitis]\n\nHi all, ..." before the marks were read.
    assert request.fields.risks_cutting == (
        "Users keep the single service range for another release (and the\ncut is not due to risk)."
    )
    assert request.fields.reason == ("the beta API is\nready; only the allocator test is still in review.")
    decision = reading.decision
    assert (decision.outcome, decision.author) == ("approved", "Angelos Kolaitis")
    assert decision.granted.text == "23:59 PDT Wednesday 24 July 2024"
    assert decision.granted.instant == dt.datetime(2024, 7, 25, 6, 59, tzinfo=UTC)


def test_a_google_groups_page_copied_with_its_headers():
    reading = read_thread(thread("thread-marks-google-groups-web.txt"))
    assert (reading.request.sender, reading.request.sender_mark) == ("Jane Example", "google_groups")
    assert reading.request.fields.risks_cutting == "Device vendors wait."
    decision = reading.decision
    assert (decision.outcome, decision.author) == ("rejected", "Rey Example")  # "'Rey Example' via ..."
    assert decision.source_text == (
        "Hi Jane, unfortunately the release team is unable to approve this request: the KEP\nis not yet implementable."
    )


def test_from_headers_rewritten_by_the_list():
    reading = read_thread(thread("thread-marks-via-from-headers.txt"))
    request = reading.request
    assert (request.sender, request.sender_address, request.sender_mark) == (
        "Ana Example",
        "kubernetes-sig-release@googlegroups.com",
        "from_header",
    )
    assert request.sent_at == dt.datetime(2024, 7, 9, 10, 0, tzinfo=UTC)
    decision = reading.decision
    assert (decision.outcome, decision.author) == ("approved", "Kat Example")
    assert decision.sent_at == dt.datetime(2024, 7, 10, 16, 0, tzinfo=UTC)
    assert decision.granted.instant == dt.datetime(2024, 7, 13, 1, 0, tzinfo=UTC)


def test_a_signature_is_the_author_when_nothing_else_names_one():
    request = read_thread(thread("thread-marks-signature-only.txt")).request
    assert (request.sender, request.sender_mark) == ("Joe Example", "signature")
    assert request.fields.risks_cutting == "An API without an implementation."


def test_an_author_that_cannot_be_read_is_unknown_not_the_previous_messages():
    request = read_thread(thread("thread-marks-unknown-author.txt")).request
    # The message above is Lead Example's; the request's own headers name nobody.
    assert (request.sender, request.sender_address, request.sender_mark) == ("", "", "")
    assert request.sent_at == dt.datetime(2024, 7, 23, 10, 0, tzinfo=UTC)


def test_the_shared_example_thread_reads_field_by_field():
    reading = read_thread(example())
    request = reading.request
    assert (request.sender, request.sender_mark, request.on_behalf_of) == ("Example Owner", "bracket", "my co-owner")
    f = request.fields
    assert (f.days, f.until_zone, f.stage, f.sig) == (5, "AoE", "beta", "storage")
    assert f.reason == (
        "storage vendors\nhave shipped against the alpha API for two releases and are waiting on\n"
        "beta to turn it on by default in their drivers."
    )
    assert f.risks_adding == (
        "small; both PRs touch only the new\ncontroller and are covered by the e2e suite that is now green."
    )
    assert f.risks_cutting == "another four months on alpha for\nevery driver that depends on it."
    (amendment,) = request.amendments
    assert (amendment.days, amendment.author) == (2, "Example Owner")
    assert amendment.text == (
        "Update: one PR merged this morning, so we only need 2 days now.\n"
        "* Additional time needed (in calendar days, due end of day AoE): 2"
    )
    assert amendment.prose == {
        "reason": "unchanged; the\nremaining PR is the controller change, already approved by one reviewer."
    }
    decision = reading.decision
    assert (decision.outcome, decision.author) == ("approved", "Example Enhancements Lead")
    assert decision.granted.text == "the end of Thursday 19 March 2026 AoE"
    assert decision.granted.instant == dt.datetime(2026, 3, 20, 12, 0, tzinfo=UTC)  # end of day AoE


@pytest.mark.parametrize("tag", ["[Update]", "[Action Required]", "[Draft]"])
def test_a_bracketed_tag_is_not_an_author(tag):
    text = example().replace("Update: one PR merged", f"{tag}\n\nOne PR merged")
    request = read_thread(text).request
    (amendment,) = request.amendments
    assert amendment.author == "Example Owner"  # the tag is the message's text, not a new author


# ------------------------------------------------------------ filing


@pytest.fixture
def release_136(kinds):
    release = Release.objects.create(
        slug="1.36", name="Kubernetes v1.36", zone="America/Los_Angeles", start_date=dt.date(2026, 1, 12),
        status=Release.Status.ACTIVE,
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze",
                     at=dt.datetime(2026, 3, 13, 2, 0, tzinfo=UTC))  # fmt: skip
    return release


@pytest.fixture
def lead_136(release_136) -> User:
    user = User.objects.create_user("lead136", "lead136@example.com", "pw")
    release_136.team.add(user)
    return user


def _file(text: str, lead: User, received: str) -> ExceptionRequest:
    filed = exception_thread_file(
        reading=read_thread(text),
        entered_by=lead,
        release="1.36",
        milestone="code-freeze",
        received_at=dt.datetime.fromisoformat(received),
        create_kep=True,
    )
    return filed


def test_the_lead_who_ingested_a_marked_thread_may_confirm_its_decision(release_136, lead_136):
    filed = _file(example(), lead_136, "2026-03-13T10:00:00+00:00")
    request = filed.request
    assert (request.requester, request.requester_name, request.requester_mark) == (None, "Example Owner", "bracket")
    assert request.on_behalf_of == "my co-owner"
    assert request.requester_label == "Example Owner (on behalf of my co-owner)"
    assert request.entered_by == lead_136
    v1, v2 = request.revisions.order_by("number")
    assert (v1.days, v2.days) == (5, 2)
    assert v1.reason.startswith("storage vendors\nhave shipped")
    assert v2.reason == "unchanged; the\nremaining PR is the controller change, already approved by one reviewer."
    assert (v2.risks_adding, v2.risks_cutting) == (v1.risks_adding, v1.risks_cutting)
    assert "[Example" not in v1.risks_cutting + v2.risks_cutting
    # Refused before: "You entered this request and it names no other person who exists".
    assert decide_refusal(request, lead_136) is None
    decision = proposed_decision_confirm(proposal=filed.proposal, actor=lead_136)
    assert (decision.outcome, decision.decided_by) == ("approved", lead_136)
    assert decision.granted_until == dt.datetime(2026, 3, 20, 12, 0, tzinfo=UTC)


def test_each_revision_takes_the_prose_of_the_message_that_made_it(release_136, lead_136):
    text = thread("thread-marks-revisions.txt").replace("4330", "4331")  # a KEP of its own
    request = _file(text, lead_136, "2026-03-13T10:00:00+00:00").request
    v1, v2 = request.revisions.order_by("number")
    assert (v1.days, v2.days) == (6, 3)
    assert v1.reason == "Requesting for 6 days\nto land the emulation version flag and its tests."
    assert v2.reason == "Requesting for 3 days\nnow that the flag PR merged; only the tests are left."
    assert v2.risks_cutting == v1.risks_cutting == "Downstream\nprojects wait another release."


def test_an_unknown_author_is_filed_as_unknown_and_its_enterer_may_not_decide(release_136, lead_136):
    text = thread("thread-marks-unknown-author.txt").replace("2024", "2026").replace("Jul", "Mar")
    text = text.replace("Tue, 23 Mar", "Fri, 13 Mar").replace("Mon, 22 Mar", "Thu, 12 Mar")
    request = _file(text, lead_136, "2026-03-13T10:00:00+00:00").request
    assert (request.requester_name, request.requester_mark, request.requester_label) == ("", "", "unknown")
    assert decide_refusal(request, lead_136) == (
        "You entered this request and it names no other person who exists (no user, no email author), "
        "so someone else on the release team must decide it."
    )


# ------------------------------------------------------------ decision wordings

DECISION_WORDINGS = [
    ("The release team is APPROVING this exception request.", "approved"),
    ("This exception request has been accepted by the release team.", "approved"),
    ("Congratulations on your exception request being approved!", "approved"),
    ("The exception request has been approved by 1.25 release team.", "approved"),
    # kubernetes/sig-release releases/release-1.20/meeting-updates/2020-11-13.md
    ("The exception for additional time for this enhancement has been approved.", "approved"),
    ("We have accepted the request; the new deadline is Friday.", "approved"),
    ("We approve this exception request.", "approved"),
    ("Unfortunately the release team is REJECTING this exception request.", "rejected"),
    ("This exception request has been rejected by the release team.", "rejected"),
    ("Sorry about your exception request being declined.", "rejected"),
    ("The exception request has not been approved: the KEP is not implementable.", "rejected"),
    ("We will have to decline this request.", "rejected"),
    ("The release team is unable to approve this request.", "rejected"),
    ("If the exception is approved, we merge on Monday.", ""),
    ("The exception request has not been approved yet.", ""),
    ("My request: the PRR is approved already.", ""),
]


@pytest.mark.parametrize(("line", "outcome"), DECISION_WORDINGS)
def test_release_team_wordings_of_a_decision(line, outcome):
    assert decision_outcome(line) == outcome


# ------------------------------------------------------------ grants in a gap or a fold

GAP_FOLD_GRANTS = [
    (
        "02:30 Sunday 14 March 2027 America/New_York",
        "2027-03-14 02:30 does not exist in America/New_York: the clocks skip over it when daylight saving time "
        "starts. The two offsets around the gap are -04:00 and -05:00; give the time with an explicit offset or "
        "pick a time outside the gap.",
    ),
    (
        "01:30 Sunday 7 November 2027 America/New_York",
        "2027-11-07 01:30 is ambiguous in America/New_York: it happens twice when daylight saving time ends, at "
        "UTC offset -04:00 and again at -05:00. Give the time with an explicit offset.",
    ),
    (
        "02:30 Sunday 28 March 2027 Europe/Berlin",
        "2027-03-28 02:30 does not exist in Europe/Berlin: the clocks skip over it when daylight saving time "
        "starts. The two offsets around the gap are +01:00 and +02:00; give the time with an explicit offset or "
        "pick a time outside the gap.",
    ),
]


@pytest.mark.parametrize(("grant", "refusal"), GAP_FOLD_GRANTS)
def test_a_grant_in_a_gap_or_a_fold_is_flagged_as_the_api_refuses_it(grant, refusal):
    text = thread("thread-marks-via-from-headers.txt").replace("18:00 PDT Friday 12 July 2024", grant)
    decision = read_thread(text).decision
    assert decision.outcome == "approved"
    # Confirmed as 07:00Z with no warning before (issue 29 item 13).
    assert decision.granted.instant is None
    assert refusal in decision.granted.warnings
    assert any(w.startswith(f"The granted deadline {grant!r} could not be placed (") for w in decision.warnings)
    # The API says the same of the same wall time.
    wall = tz.read_deadline_text(grant, reference=dt.datetime(2027, 3, 1, tzinfo=UTC))
    assert wall.problem == refusal.rstrip(".")


def test_a_grant_with_its_offset_named_is_placed_in_a_fold():
    text = thread("thread-marks-via-from-headers.txt").replace(
        "18:00 PDT Friday 12 July 2024", "01:30 EDT Sunday 7 November 2027"
    )
    assert read_thread(text).decision.granted.instant == dt.datetime(2027, 11, 7, 5, 30, tzinfo=UTC)
