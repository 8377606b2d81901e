"""The cycle's sweeps of the KEP issues (issue 26, item 3): the opt-in reminders at the
start, the cleanup at the end classified as the handbook does, each comment literal;
--dry-run records nothing, a run records each once, a second run nothing more."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from github.comments import issue_comment_send
from github.models import IssueComment, IssueCommentSetting
from releasecal.models import Enhancement
from releasecal.services import enhancement_upsert, tracking_set
from tests.support.fake_github.schemas import openapi

HELLO = "👋, v1.31 Enhancements team here.\n\n"


@pytest.fixture
def world(release, kep, enhancements, github, github_settings):
    """The 1.31 issues: one per handbook case, and ones the sweeps leave alone."""
    openapi()  # the fake's REST description read before the test, not inside a call's timeout
    github_settings.GITHUB_TIMEOUT = 30  # a loaded CI machine: the fake's speed is not under test
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"issues": "write", "metadata": "read"}
    )
    enhancements.milestone("v1.32")
    for number, stage, status, owner in (
        (3000, "stable", "implemented", "alice"),
        (3001, "stable", "implementable", "carol"),
    ):
        made = enhancement_upsert(
            number=number, title=f"KEP {number}", owning_sig="node", owners=[{"github": owner}], participating_sigs=[]
        )
        Enhancement.objects.filter(pk=made.pk).update(kep_stage="stable", kep_status=status)
        tracking_set(release=release, enhancement=made, stage=stage)
    opted = ["lead-opted-in", "tracked/yes"]
    enhancements.issue(1001, "A closed one", labels=opted, milestone="v1.31", state="closed", assignees=["dave"])
    enhancements.issue(2400, "Node memory swap support", labels=opted, milestone="v1.31")
    enhancements.issue(3000, "KEP 3000", labels=opted, milestone="v1.31")
    enhancements.issue(3001, "KEP 3001", labels=["lead-opted-in", "tracked/no"], milestone="v1.31")
    enhancements.issue(3002, "Next release's", labels=["lead-opted-in"], milestone="v1.32")
    enhancements.issue(3003, "Not in releasecal", labels=["lead-opted-in"], milestone="v1.31")
    enhancements.issue(4000, "Not opted in", milestone="v1.31", assignees=["bob"])
    enhancements.issue(4001, "Closed, not opted in", milestone="v1.31", state="closed")
    return enhancements


def run(command: str, *args: str) -> str:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


OPT_IN = (
    "Hello @bob " + HELLO + "This issue is in the v1.31 milestone but is not labelled `lead-opted-in`, so it is not "
    "tracked for v1.31. If this enhancement is planned for v1.31, a lead of its SIG opts it in by commenting "
    "`/label lead-opted-in`; if it is not, please clear its milestone (`/milestone clear`).\n"
)

CLEANUP = {
    1001: "cleanup-closed",
    2400: "cleanup-clear",
    3000: "cleanup-close",
    3001: "cleanup-ask",
}

CLEANUP_TEXTS = {
    1001: "Hello @dave " + HELLO + "v1.31 is released and this issue is closed: removing its tracking labels.\n\n"
    "/remove-label lead-opted-in\n/remove-label tracked/yes\n",
    2400: "Hello @kannon92 " + HELLO + "With v1.31 released, we clear this issue's tracking labels and milestone. If "
    "this enhancement is planned for v1.32, a lead of its SIG opts it in again: `/label lead-opted-in` and "
    "`/milestone v1.32`.\n\n/remove-label lead-opted-in\n/remove-label tracked/yes\n/milestone clear\n",
    3000: "Hello @alice " + HELLO + "KEP-3000 graduated to stable and its kep.yaml says `status: implemented`: "
    "congratulations! With v1.31 released, this issue is done, so we remove its tracking labels and close it.\n\n"
    "/remove-label lead-opted-in\n/remove-label tracked/yes\n/close\n",
    3001: "Hello @carol " + HELLO + "KEP-3001 graduated to stable in v1.31, but its kep.yaml still says "
    "`status: implementable`. Please open a PR to kubernetes/enhancements setting `status: implemented` in its "
    "kep.yaml; once it merges, this issue can be closed.\n",
}


def test_the_opt_in_reminders_dry_run_then_run_once(world, release, github):
    IssueCommentSetting.objects.create(release=release, mode="post")
    out = run("github_opt_in_reminders", "--release", "1.31", "--dry-run")
    assert out.splitlines()[:2] == [
        "opt-in sweep of 1.31 on kubernetes/enhancements: 1 issue (would comment).",
        "#4000 Not opted in: remind its SIG lead to opt in",
    ]
    assert not IssueComment.objects.exists()
    assert run("github_opt_in_reminders", "--release", "1.31").splitlines()[-1] == "1 comment recorded."
    (comment,) = IssueComment.objects.all()
    assert (comment.event, comment.issue_number, comment.body) == ("opt-in-reminder", 4000, OPT_IN)
    assert issue_comment_send(comment_id=comment.pk) == "sent"
    out = run("github_opt_in_reminders", "--release", "1.31")
    assert "#4000 Not opted in: remind its SIG lead to opt in [already recorded: sent]" in out
    assert out.splitlines()[-1] == "0 comments recorded."
    assert [c.body.split("\n<!--")[0] for c in world.issues[4000].comments] == [OPT_IN]


def test_the_cleanup_classifies_as_the_handbook_and_records_each_once(world, release):
    IssueCommentSetting.objects.create(release=release, mode="list")
    out = run("github_cleanup", "--release", "1.31", "--next", "1.32", "--dry-run")
    lines = out.splitlines()
    assert lines[0] == "cleanup sweep of 1.31 on kubernetes/enhancements: 4 issues (would comment)."
    assert [line for line in lines if line.startswith("#")] == [
        "#1001 A closed one: closed: remove the tracking labels",
        "#2400 Node memory swap support: clear lead-opted-in, tracked/* and the milestone",
        "#3000 KEP 3000: stable, kep.yaml implemented: remove the labels and close",
        "#3001 KEP 3001: stable, kep.yaml not implemented: ask to update kep.yaml",
    ]
    assert lines[-1] == (
        "problem: #3003 Not in releasecal: KEP-3003 is not in releasecal (manage.py import_keps), so its stage and "
        "kep.yaml status are unknown: not classified"
    )
    assert not IssueComment.objects.exists()
    assert run("github_cleanup", "--release", "1.31", "--next", "1.32").splitlines()[-1] == "4 comments recorded."
    rows = {c.issue_number: c for c in IssueComment.objects.all()}
    assert {n: c.event for n, c in rows.items()} == CLEANUP
    assert {n: c.body for n, c in rows.items()} == CLEANUP_TEXTS
    assert {c.state for c in rows.values()} == {"listed"}
    assert run("github_cleanup", "--release", "1.31", "--next", "1.32").splitlines()[-1] == "0 comments recorded."
    assert IssueComment.objects.count() == 4


def test_the_cockpits_sweep_page_shows_the_plan_and_runs_it(world, release, admin_client):
    IssueCommentSetting.objects.create(release=release, mode="list")
    page = admin_client.get(
        "/admin/github_board/issuecomment/sweeps/", {"sweep": "cleanup", "release": "1.31", "next": "1.32"}
    ).content.decode()
    assert "#3000 KEP 3000: stable, kep.yaml implemented: remove the labels and close" in page
    assert not IssueComment.objects.exists()
    answer = admin_client.post(
        "/admin/github_board/issuecomment/sweeps/",
        {"sweep": "cleanup", "release": "1.31", "next": "1.32", "action": "run"},
        follow=True,
    )
    assert "4 comments recorded." in answer.content.decode()
    assert "[already recorded: listed]" in answer.content.decode()
    assert IssueComment.objects.count() == 4


def test_bad_input_is_a_clear_message(world, release, github_settings):
    with pytest.raises(CommandError, match=r"^No release '9.99' in releasecal \(the admin lists them\)\.$"):
        run("github_cleanup", "--release", "9.99", "--next", "1.32", "--dry-run")
    IssueCommentSetting.objects.create(release=release, mode="off")
    with pytest.raises(CommandError, match=r"KEP issue comments are off for 1\.31"):
        run("github_opt_in_reminders", "--release", "1.31")
    github_settings.GITHUB_TOKEN = ""
    with pytest.raises(CommandError, match="No GitHub credentials are set"):
        run("github_opt_in_reminders", "--release", "1.31", "--dry-run")
