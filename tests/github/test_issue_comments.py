"""The KEP issue follows the record (issue 26, item 2): the handbook's comment for a
rejection, a missed grant, a KEP tracked again, removed or deferred, composed once per
event, posted through the comments' ledger (or listed to post by hand), and never
twice: not after a lost reply, a rate limit or a refusal."""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.followup import exception_grant_reevaluate, exception_grants_end
from exceptions.services import (
    exception_decision_correct,
    exception_decision_reopen,
    exception_request_approve,
    exception_request_reject,
)
from github.comments import comment_for_decision, issue_comment_retry, issue_comment_send
from github.models import IssueComment, IssueCommentSetting
from github.receivers import exception_grant_reevaluated
from releasecal.errors import Conflict
from releasecal.models import Tracking
from releasecal.services import tracking_status_change
from tests.support.fake_github.schemas import openapi

DECIDED = dt.datetime(2024, 7, 25, 10, 0, tzinfo=dt.UTC)

REMOVAL = """\
/remove-label tracked/yes
/label tracked/no
/milestone clear
"""

REJECTED = (
    """\
Hello @kannon92 👋, v1.31 Enhancements team here.

The exception request for KEP-2400 (Code Freeze) was rejected by the release team, so this enhancement is \
removed from the v1.31 milestone. If you still wish to progress it, it can be opted in for a later release \
(the `lead-opted-in` label and that release's milestone, set by a SIG lead).

"""
    + REMOVAL
)


def set_mode(release, mode: str) -> None:
    IssueCommentSetting.objects.update_or_create(release=release, defaults={"mode": mode})


@pytest.fixture
def posting(release, github_settings, github):
    set_mode(release, IssueCommentSetting.Mode.POST)
    openapi()  # the fake's REST description read before the test, not inside a call's timeout
    github_settings.GITHUB_TIMEOUT = 30  # a loaded CI machine: the fake's speed is not under test
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"issues": "write", "metadata": "read"}
    )
    return github_settings


@pytest.fixture
def swap(enhancements):
    return enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in", "tracked/yes"])


def reject(pending_request, release_team_member):
    return exception_request_reject(request=pending_request, actor=release_team_member, at=DECIDED)


def bodies(issue) -> list[str]:
    return [c.body for c in issue.comments]


def test_a_rejection_posts_the_handbooks_removal_comment_once(
    posting, swap, pending_request, release_team_member, github, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as queued:
        decision = reject(pending_request, release_team_member)
    assert [c.__qualname__ for c in queued if c.__module__ == "github.comments"] == [
        "issue_comment_record.<locals>.<lambda>"
    ]  # posted on commit
    (comment,) = IssueComment.objects.all()
    assert (comment.event, comment.source, comment.state) == ("rejected", f"request:{pending_request.pk}", "pending")
    assert comment.body == REJECTED

    assert issue_comment_send(comment_id=comment.pk) == "sent"
    assert bodies(swap) == [REJECTED + f"\n<!-- releasecal:comment:{comment.pk} -->"]
    comment.refresh_from_db()
    assert comment.state == "sent"
    assert (
        comment.comment_url
        == f"https://github.com/kubernetes/enhancements/issues/2400#issuecomment-{comment.comment_id}"
    )
    # The event heard again, the send run again: nothing more.
    assert comment_for_decision(request=pending_request, decision=decision) == comment
    assert issue_comment_send(comment_id=comment.pk) == "not claimed"
    assert IssueComment.objects.count() == 1
    assert len(swap.comments) == 1


def test_listed_comments_wait_in_the_cockpit_with_copy_and_posted(
    release, swap, pending_request, release_team_member, github, admin_client
):
    set_mode(release, IssueCommentSetting.Mode.LIST)
    reject(pending_request, release_team_member)
    (comment,) = IssueComment.objects.all()
    assert comment.state == "listed"
    assert github.requests == [] or github.rest_requests("POST") == []

    page = admin_client.get("/admin/github_board/issuecomment/to-post/").content.decode()
    assert "kubernetes/enhancements#2400" in page
    assert "/remove-label tracked/yes\n/label tracked/no\n/milestone clear" in page
    assert 'class="copy-comment"' in page
    assert "1 to post by hand" in admin_client.get("/admin/").content.decode()

    admin_client.post("/admin/github_board/issuecomment/to-post/", {"comment": comment.pk})
    comment.refresh_from_db()
    assert (comment.state, comment.marked_by) == ("posted_by_hand", "admin")
    answer = admin_client.post("/admin/github_board/issuecomment/to-post/", {"comment": comment.pk}, follow=True)
    assert "not waiting to be posted by hand" in answer.content.decode()
    assert "Nothing to post." in answer.content.decode()
    assert swap.comments == []


def test_off_composes_nothing(release, swap, pending_request, release_team_member):
    set_mode(release, IssueCommentSetting.Mode.OFF)
    reject(pending_request, release_team_member)
    assert not IssueComment.objects.exists()


def test_an_approval_has_no_comment(posting, swap, pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member, at=DECIDED)
    assert not IssueComment.objects.exists()


def test_a_lost_reply_is_found_by_its_marker_and_not_posted_twice(
    posting, swap, pending_request, release_team_member, github
):
    reject(pending_request, release_team_member)
    (comment,) = IssueComment.objects.all()
    github.faults.fail_next(1, status=502, match=r"POST /issues/2400/comments", after=True)
    assert issue_comment_send(comment_id=comment.pk) == "retry"
    comment.refresh_from_db()
    assert (comment.state, comment.attempts, comment.last_error) == ("pending", 1, "GitHub answered 502 (not retried)")
    IssueComment.objects.filter(pk=comment.pk).update(next_attempt_at=None)
    assert issue_comment_send(comment_id=comment.pk) == "sent"
    assert len(swap.comments) == 1
    comment.refresh_from_db()
    assert comment.comment_id == swap.comments[0].database_id


def test_a_rate_limit_waits_and_posts_once(posting, swap, pending_request, release_team_member, github):
    reject(pending_request, release_team_member)
    (comment,) = IssueComment.objects.all()
    github.limits.set_remaining("core", 0, reset_in=90)
    assert issue_comment_send(comment_id=comment.pk) == "rate-limited"
    comment.refresh_from_db()
    assert (comment.state, comment.attempts) == ("pending", 0)
    assert comment.next_attempt_at is not None
    github.advance(91)
    IssueComment.objects.filter(pk=comment.pk).update(next_attempt_at=None)
    assert issue_comment_send(comment_id=comment.pk) == "sent"
    assert len(swap.comments) == 1


def test_a_locked_issue_fails_with_githubs_words_in_the_cockpit(
    posting, enhancements, pending_request, release_team_member, github, admin_client
):
    locked = enhancements.issue(2400, "Node memory swap support", locked=True)
    reject(pending_request, release_team_member)
    (comment,) = IssueComment.objects.all()
    assert issue_comment_send(comment_id=comment.pk) == "failed"
    comment.refresh_from_db()
    assert comment.last_error == (
        "kubernetes/enhancements#2400 is locked: GitHub refused the comment "
        "(403 “Unable to create comment because issue is locked.”). Unlock the issue or post by hand."
    )
    page = admin_client.get("/admin/github_board/issuecomment/to-post/").content.decode()
    assert "Unable to create comment because issue is locked." in page
    assert "1 refused by GitHub" in admin_client.get("/admin/").content.decode()
    locked.locked = False
    assert issue_comment_retry(comment_ids=[comment.pk]) == 1
    assert issue_comment_send(comment_id=comment.pk) == "sent"
    assert issue_comment_send(comment_id=comment.pk) == "not claimed"
    assert len(locked.comments) == 1


def test_a_deleted_issue_and_a_token_without_write_access_fail_clearly(
    posting, enhancements, swap, pending_request, release_team_member, github
):
    reject(pending_request, release_team_member)
    (comment,) = IssueComment.objects.all()
    posting.GITHUB_TOKEN = github.token("reader", kind="fine-grained", permissions={"issues": "read"})
    assert issue_comment_send(comment_id=comment.pk) == "failed"
    comment.refresh_from_db()
    assert comment.last_error == (
        "GitHub answered 403 for kubernetes/enhancements#2400 (“Resource not accessible by personal access token”): "
        "the credentials may not write issues (a fine-grained token needs Issues: read and write on the repository)."
    )
    swap.deleted = True
    posting.GITHUB_TOKEN = github.token("writer", kind="fine-grained", permissions={"issues": "write"})
    issue_comment_retry(comment_ids=[comment.pk])
    assert issue_comment_send(comment_id=comment.pk) == "failed"
    comment.refresh_from_db()
    assert comment.last_error == (
        "kubernetes/enhancements#2400 was deleted (410 “This issue was deleted”): nothing to comment on."
    )
    assert swap.comments == []


def tracking(release, kep) -> Tracking:
    return Tracking.objects.get(release=release, enhancement=kep)


def test_removed_deferred_and_tracked_again_have_the_handbooks_texts(posting, release, kep, swap, staff):
    row = tracking(release, kep)
    tracking_status_change(tracking=row, status="removed_from_milestone", actor=staff)
    tracking_status_change(tracking=row, status="tracked", actor=staff)
    tracking_status_change(tracking=row, status="deferred", actor=staff)
    tracking_status_change(tracking=row, status="deferred", actor=staff)  # no change, no event
    texts = {c.event: c.body for c in IssueComment.objects.all()}
    assert sorted(texts) == ["deferred", "readded", "removed"]
    missed = tracking(release, kep).missed_freeze
    assert missed is None  # deferred now; the removal's comment named the freeze it missed
    assert texts["removed"] == (
        "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
        "KEP-2400 is removed from the v1.31 milestone (it missed Code Freeze). If you still wish to progress it, "
        "it can be opted in for a later release (the `lead-opted-in` label and that release's milestone, set by a "
        "SIG lead).\n\n" + REMOVAL
    )
    assert texts["readded"] == (
        "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
        "KEP-2400 meets the requirements again and is tracked for v1.31.\n\n"
        "/label tracked/yes\n/remove-label tracked/no\n/milestone v1.31\n"
    )
    assert texts["deferred"] == (
        "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
        "KEP-2400 is deferred to a later release by its SIG, so it is removed from the v1.31 milestone. A SIG lead "
        "opts it in again for the release it is planned for (the `lead-opted-in` label and that release's "
        "milestone).\n\n" + REMOVAL
    )


def test_a_missed_grant_is_commented_once_for_its_request(
    posting, release, kep, swap, pending_request, release_team_member, staff
):
    exception_request_approve(request=pending_request, actor=release_team_member, at=DECIDED)
    row = tracking(release, kep)
    tracking_status_change(tracking=row, status="removed_from_milestone", actor=staff)
    tracking_status_change(tracking=row, status="tracked", actor=staff)
    tracking_status_change(tracking=row, status="removed_from_milestone", actor=staff)  # the same grant's miss
    missed = IssueComment.objects.filter(event="grant-missed")
    assert [c.source for c in missed] == [f"request:{pending_request.pk}"]
    assert missed[0].body == (
        "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
        "The exception granted to KEP-2400 for Code Freeze, until end of Thursday 25 July 2024 PDT (07:00 UTC "
        "Friday 26 July 2024), has ended and the requirements were not met, so this enhancement is removed from the "
        "v1.31 milestone. If you still wish to progress it, it can be opted in for a later release (the "
        "`lead-opted-in` label and that release's milestone, set by a SIG lead).\n\n" + REMOVAL
    )


def test_the_admins_tracking_page_goes_through_the_service(posting, release, kep, swap, admin_client):
    row = tracking(release, kep)
    answer = admin_client.post(
        f"/admin/releasecal/tracking/{row.pk}/change/",
        {"enhancement": kep.pk, "release": release.pk, "stage": "beta", "status": "deferred", "pr_urls": "[]"},
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert tracking(release, kep).status == "deferred"
    (comment,) = IssueComment.objects.all()
    assert comment.event == "deferred"


def test_a_rejection_corrected_to_an_approval_follows_the_posted_comment_once(
    posting, swap, pending_request, release_team_member
):
    reject(pending_request, release_team_member)
    (removal,) = IssueComment.objects.all()
    issue_comment_send(comment_id=removal.pk)
    removal.refresh_from_db()
    exception_decision_correct(
        request=pending_request, actor=release_team_member, reason="approved in the meeting", outcome="approved"
    )
    (correction,) = IssueComment.objects.filter(event="correction")
    assert (correction.source, correction.corrects) == (f"comment:{removal.pk}:correction:1", removal)
    assert correction.body == (
        "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
        f"A correction to [our earlier comment]({removal.comment_url}): the release team corrected its decision on "
        "the exception request for KEP-2400 (approved in the meeting). The request is approved, so this enhancement "
        "is back in the v1.31 milestone and the commands of that comment no longer apply.\n\n"
        "/label tracked/yes\n/remove-label tracked/no\n/milestone v1.31\n"
    )
    assert issue_comment_send(comment_id=correction.pk) == "sent"
    assert [c.body.split("\n<!--")[0] for c in swap.comments] == [removal.body, correction.body]
    assert IssueComment.objects.count() == 2


@pytest.mark.parametrize("outcome", ["tracked", "removed"])
def test_the_liaisons_re_evaluation_after_a_grant_is_commented_once(
    posting, release, kep, swap, pending_request, release_team_member, staff, outcome, github
):
    decision = exception_request_approve(request=pending_request, actor=release_team_member, at=DECIDED)
    (grant_end,) = exception_grants_end(now=decision.granted_until + dt.timedelta(minutes=1))
    exception_grant_reevaluate(grant_end=grant_end, outcome=outcome, actor=release_team_member)
    (comment,) = IssueComment.objects.all()
    until = "end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)"
    expected = {
        "tracked": (
            "grant-met",
            "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
            f"The exception granted to KEP-2400 for Code Freeze, until {until}, has ended and the requirements were "
            "met, so this enhancement is tracked for v1.31.\n\n"
            "/label tracked/yes\n/remove-label tracked/no\n/milestone v1.31\n",
        ),
        "removed": (
            "grant-missed",
            "Hello @kannon92 👋, v1.31 Enhancements team here.\n\n"
            f"The exception granted to KEP-2400 for Code Freeze, until {until}, has ended and the requirements were "
            "not met, so this enhancement is removed from the v1.31 milestone. If you still wish to progress it, it "
            "can be opted in for a later release (the `lead-opted-in` label and that release's milestone, set by a "
            "SIG lead).\n\n" + REMOVAL,
        ),
    }[outcome]
    assert (comment.event, comment.source, comment.state, comment.body) == (
        expected[0],
        f"request:{pending_request.pk}",
        "pending",
        expected[1],
    )
    assert issue_comment_send(comment_id=comment.pk) == "sent"
    assert bodies(swap) == [expected[1] + f"\n<!-- releasecal:comment:{comment.pk} -->"]

    # Never twice: the signal heard again, a second re-evaluation (refused), the send
    # run again, and (missed) the removal after the grant set by hand are that comment.
    exception_grant_reevaluated(sender=None, request=pending_request, grant_end=grant_end)
    with pytest.raises(Conflict, match="was already re-evaluated after its grant"):
        exception_grant_reevaluate(grant_end=grant_end, outcome=outcome, actor=release_team_member)
    assert issue_comment_send(comment_id=comment.pk) == "not claimed"
    if outcome == "tracked":
        tracking_status_change(tracking=tracking(release, kep), status="removed_from_milestone", actor=staff)
        assert [c.event for c in IssueComment.objects.order_by("id")] == ["grant-met", "grant-missed"]
    else:
        assert IssueComment.objects.count() == 1
    assert len(github.rest_requests("POST", "/issues/2400/comments")) == 1


def test_a_listed_removal_a_correction_made_wrong_leaves_the_list_and_is_never_posted(
    release, swap, pending_request, release_team_member, github, admin_client
):
    set_mode(release, IssueCommentSetting.Mode.LIST)
    reject(pending_request, release_team_member)
    (removal,) = IssueComment.objects.all()
    assert removal.state == "listed"
    exception_decision_correct(
        request=pending_request, actor=release_team_member, reason="approved in the meeting", outcome="approved"
    )
    removal.refresh_from_db()
    note = (
        "Not to post: the decision on KEP-2400's request was corrected (correction 1: approved in the meeting); "
        "the request is approved."
    )
    assert (removal.state, removal.superseded_note) == ("superseded", note)
    assert IssueComment.objects.count() == 1  # nothing was posted: nothing to correct
    page = admin_client.get("/admin/github_board/issuecomment/to-post/").content.decode()
    assert "<h2>To post (0)</h2>" in page
    assert "Superseded: not to post (1)" in page
    assert note.replace("'", "&#x27;") in page
    assert admin_client.post("/admin/github_board/issuecomment/to-post/", {"comment": removal.pk}).status_code == 302
    removal.refresh_from_db()
    assert removal.state == "superseded"  # a superseded comment cannot be marked posted

    # Corrected back to a rejection: the removal is listed anew, once.
    exception_decision_correct(
        request=pending_request, actor=release_team_member, reason="the approval was a slip", outcome="rejected"
    )
    again = IssueComment.objects.get(state="listed")
    assert (again.event, again.source, again.body) == (
        "rejected",
        f"request:{pending_request.pk}:correction:2",
        REJECTED,
    )
    assert github.rest_requests("POST") == []


def test_a_listed_correction_made_wrong_is_superseded_and_a_reopen_lists_the_next_decision(
    release, swap, pending_request, release_team_member, github
):
    set_mode(release, IssueCommentSetting.Mode.LIST)
    reject(pending_request, release_team_member)
    (removal,) = IssueComment.objects.all()
    IssueComment.objects.filter(pk=removal.pk).update(state="posted_by_hand")  # the lead posted it
    exception_decision_correct(
        request=pending_request, actor=release_team_member, reason="approved in the meeting", outcome="approved"
    )
    (correction,) = IssueComment.objects.filter(event="correction", state="listed")
    exception_decision_correct(
        request=pending_request, actor=release_team_member, reason="the approval was a slip", outcome="rejected"
    )
    correction.refresh_from_db()
    assert (correction.state, correction.superseded_note) == (
        "superseded",
        "Not to post: the decision on KEP-2400's request was corrected (correction 2: the approval was a slip); "
        "the request is rejected.",
    )
    (removal_again,) = IssueComment.objects.filter(state="listed")
    assert removal_again.source == f"request:{pending_request.pk}:correction:2"

    # Reopened (pending again), then rejected anew: the listed removal goes, and the new
    # decision is a new event with its own removal comment.
    exception_decision_reopen(request=pending_request, actor=release_team_member, reason="decided on the wrong KEP")
    removal_again.refresh_from_db()
    assert removal_again.state == "superseded"
    assert removal_again.superseded_note.endswith(
        "(correction 3: decided on the wrong KEP); the request is pending again."
    )
    (reopened,) = IssueComment.objects.filter(state="listed")  # the removal posted by hand is corrected
    assert (reopened.event, reopened.corrects, reopened.source) == (
        "correction",
        removal,
        f"comment:{removal.pk}:correction:3",
    )
    pending_request.refresh_from_db()
    reject(pending_request, release_team_member)
    reopened.refresh_from_db()
    assert (reopened.state, reopened.superseded_note) == (
        "superseded",
        "Not to post: KEP-2400's request, reopened, was decided anew: rejected.",
    )
    (latest,) = IssueComment.objects.filter(state="listed")
    assert (latest.event, latest.source, latest.body) == ("rejected", f"request:{pending_request.pk}:after:3", REJECTED)
