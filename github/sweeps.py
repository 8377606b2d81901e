"""The cycle's two sweeps of the KEP issues (the handbook's "Other recurring comments"):
at the start, the opt-in reminder for every open issue in the milestone without
``lead-opted-in``; at the end, the cleanup of every ``lead-opted-in`` issue not in the
next milestone. Each reads the issues through GitHub's REST API, plans (pure: one
:class:`SweepPlan`), and, unless a dry run, records each comment in the comments'
ledger (``github.comments``), which posts or lists it as the release's setting says;
a sweep run twice finds its comments recorded and records nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction

from github import client as github_client
from github import comments as texts
from github.client import BoardClient, GitHubUnavailable
from github.models import IssueComment, IssueCommentSetting
from releasecal.models import Enhancement, Release, Tracking

OPTED_IN = "lead-opted-in"

CASE_OPT_IN = IssueComment.Event.OPT_IN
CASE_CLOSED = IssueComment.Event.CLEANUP_CLOSED
CASE_CLOSE = IssueComment.Event.CLEANUP_CLOSE
CASE_ASK = IssueComment.Event.CLEANUP_ASK
CASE_CLEAR = IssueComment.Event.CLEANUP_CLEAR
CLEANUP_EVENTS = [CASE_CLOSED, CASE_CLOSE, CASE_ASK, CASE_CLEAR]

CASE_WORDS = {
    CASE_OPT_IN: "remind its SIG lead to opt in",
    CASE_CLOSED: "closed: remove the tracking labels",
    CASE_CLOSE: "stable, kep.yaml implemented: remove the labels and close",
    CASE_ASK: "stable, kep.yaml not implemented: ask to update kep.yaml",
    CASE_CLEAR: "clear lead-opted-in, tracked/* and the milestone",
}


class SweepRefused(Exception):
    """A sweep that cannot run (an unknown release, no credentials, GitHub refused)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@dataclass
class SweepItem:
    issue_number: int
    title: str
    case: str  # an IssueComment event
    body: str
    recorded: str = ""  # the state of the comment recorded before ("" none)


@dataclass
class SweepPlan:
    sweep: str  # "opt-in" or "cleanup"
    release: str
    repository: str
    items: list[SweepItem] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    source: str = ""

    def lines(self, *, dry_run: bool) -> list[str]:
        head = "would comment" if dry_run else "comments"
        out = [
            f"{self.sweep} sweep of {self.release} on {self.repository}: {len(self.items)} issue"
            f"{'s' if len(self.items) != 1 else ''} ({head})."
        ]
        for item in self.items:
            recorded = f" [already recorded: {item.recorded}]" if item.recorded else ""
            out.append(f"#{item.issue_number} {item.title}: {CASE_WORDS[item.case]}{recorded}")
            out.extend(f"    {line}" if line else "" for line in item.body.rstrip("\n").split("\n"))
        out.extend(f"problem: {p}" for p in self.problems)
        return out


def _release(slug: str) -> Release:
    release = Release.objects.filter(slug=slug.removeprefix("v")).first()
    if release is None:
        raise SweepRefused(f"No release {slug!r} in releasecal (the admin lists them).")
    return release


def _client(client: BoardClient | None) -> BoardClient:
    try:
        github = client or github_client.board_client()
    except GitHubUnavailable as exc:
        raise SweepRefused(exc.message) from None
    if github is None:
        raise SweepRefused("No GitHub credentials are set (GITHUB_TOKEN or a GitHub App: docs/github.md).")
    return github


def _milestone_number(github: BoardClient, owner: str, repo: str, title: str) -> int | None:
    for milestone in github.milestones_list(owner, repo):
        if milestone["title"] == title:
            return milestone["number"]
    return None


def _handles(issue: dict, enhancement: Enhancement | None) -> list[str]:
    if enhancement is not None:
        handles = texts.kep_handles(enhancement)
        if handles:
            return handles
    return [a["login"] for a in issue.get("assignees") or []]


def _recorded(plan: SweepPlan, events: list[str]) -> None:
    kinds = dict(
        IssueComment.objects.filter(
            source=plan.source, event__in=events, kep__in=[i.issue_number for i in plan.items]
        ).values_list("kep", "state")
    )
    for item in plan.items:
        item.recorded = kinds.get(item.issue_number, "")


def opt_in_plan(*, release_slug: str, client: BoardClient | None = None) -> SweepPlan:
    """The opt-in reminders: every open issue in the release's milestone without
    ``lead-opted-in``."""
    release = _release(release_slug)
    setting = texts.comment_setting(release)
    owner, _, repo = setting.repository.partition("/")
    plan = SweepPlan(sweep="opt-in", release=release.slug, repository=setting.repository)
    plan.source = f"sweep:{release.slug}"
    github = _client(client)
    title = texts.milestone_name(release.slug)
    try:
        number = _milestone_number(github, owner, repo, title)
        if number is None:
            plan.problems.append(f"{setting.repository} has no milestone {title}")
            return plan
        issues = github.issues_list(owner, repo, state="open", milestone=str(number))
    except GitHubUnavailable as exc:
        raise SweepRefused(exc.message) from None
    keps = Enhancement.objects.in_bulk([i["number"] for i in issues], field_name="number")
    for issue in sorted(issues, key=lambda i: i["number"]):
        if OPTED_IN in {label["name"].lower() for label in issue["labels"]}:
            continue
        body = texts.text_opt_in_reminder(handles=_handles(issue, keps.get(issue["number"])), slug=release.slug)
        plan.items.append(SweepItem(issue_number=issue["number"], title=issue["title"], case=CASE_OPT_IN, body=body))
    _recorded(plan, [CASE_OPT_IN])
    return plan


def cleanup_plan(*, release_slug: str, next_slug: str, client: BoardClient | None = None) -> SweepPlan:
    """The end-of-release cleanup: every issue labelled ``lead-opted-in`` and not in the
    next release's milestone, classified as the handbook does."""
    release = _release(release_slug)
    setting = texts.comment_setting(release)
    owner, _, repo = setting.repository.partition("/")
    plan = SweepPlan(sweep="cleanup", release=release.slug, repository=setting.repository)
    plan.source = f"sweep:{release.slug}"
    github = _client(client)
    next_title = texts.milestone_name(next_slug.removeprefix("v"))
    try:
        issues = github.issues_list(owner, repo, state="all", labels=OPTED_IN)
    except GitHubUnavailable as exc:
        raise SweepRefused(exc.message) from None
    numbers = [i["number"] for i in issues]
    keps = Enhancement.objects.in_bulk(numbers, field_name="number")
    stages = dict(
        Tracking.objects.filter(release=release, enhancement__number__in=numbers).values_list(
            "enhancement__number", "stage"
        )
    )
    for issue in sorted(issues, key=lambda i: i["number"]):
        milestone = (issue.get("milestone") or {}).get("title") or ""
        if milestone == next_title:
            continue
        number, enhancement = issue["number"], keps.get(issue["number"])
        labels = [label["name"] for label in issue["labels"] if label["name"].lower() in texts.TRACKING_LABELS]
        handles = _handles(issue, enhancement)
        if issue["state"] == "closed":
            case, body = CASE_CLOSED, texts.text_cleanup_closed(handles=handles, slug=release.slug, labels=labels)
        elif enhancement is None:
            plan.problems.append(
                f"#{number} {issue['title']}: KEP-{number} is not in releasecal (manage.py import_keps), so its "
                "stage and kep.yaml status are unknown: not classified"
            )
            continue
        else:
            stable = (stages.get(number) or enhancement.kep_stage) == "stable"
            if stable and enhancement.kep_status == Enhancement.KepStatus.IMPLEMENTED:
                case = CASE_CLOSE
                body = texts.text_cleanup_close(handles=handles, slug=release.slug, kep=number, labels=labels)
            elif stable:
                case = CASE_ASK
                body = texts.text_cleanup_ask(
                    handles=handles, slug=release.slug, kep=number, status=enhancement.kep_status
                )
            else:
                case = CASE_CLEAR
                body = texts.text_cleanup_clear(
                    handles=handles, slug=release.slug, next_slug=next_slug, labels=labels, milestone=milestone
                )
        plan.items.append(SweepItem(issue_number=number, title=issue["title"], case=case, body=body))
    _recorded(plan, CLEANUP_EVENTS)
    return plan


@transaction.atomic
def sweep_record(*, plan: SweepPlan) -> list[IssueComment]:
    """Record the plan's comments not recorded before (posted or listed per the
    release's setting). Refused when the release's comments are off."""
    release = _release(plan.release)
    setting = texts.comment_setting(release)
    if setting.mode == IssueCommentSetting.Mode.OFF:
        raise SweepRefused(
            f"KEP issue comments are off for {release.slug}: set them to list or post (admin: KEP issue comment "
            "settings) to record the sweep."
        )
    made = []
    for item in plan.items:
        if item.recorded:
            continue
        comment = texts.issue_comment_record(
            release=release,
            kep=item.issue_number,
            event=item.case,
            source=plan.source,
            body=item.body,
            repository=plan.repository,
            issue_number=item.issue_number,
        )
        if comment is not None:
            made.append(comment)
    return made
