"""The release lead's cockpit: what needs the release team now, on the admin's front page.

Composed here, in the project's wiring, because it reads every app (requests, proposed
decisions, the schedule, reminders, the mailbox intake, the GitHub boards); each part is one query (or two,
with a prefetch) whatever the data size, so the page runs a fixed number of queries.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Count, Prefetch, Q

from exceptions.followup import grant_end_text, tracked_label
from exceptions.models import ExceptionRequest, GrantEnd, ProposedDecision, SignOff
from exceptions.services import request_window_closes
from github.selectors import board_rows, issue_comment_counts, open_conflicts
from intake.models import IntakeProblem
from releasecal import selectors as schedule
from releasecal import tz
from releasecal.models import Milestone, Release
from reminders.models import Channel, Delivery, ReminderRule

RECENT = dt.timedelta(days=7)
SHOWN = 50  # rows per list at most; the counts say when there are more


@dataclass
class Waiting:
    request: ExceptionRequest
    waited: str
    window_closes: str
    after_window: bool
    from_archive: bool
    signoffs: list[SignOff]
    sig_lead_signed: bool


@dataclass
class Window:
    milestone: Milestone
    closes: str
    open_now: bool
    closed: bool
    requests: int


def _sig_lead_signed(request: ExceptionRequest, signoffs: list[SignOff]) -> bool:
    sig = request.enhancement.owning_sig.lower()
    return any("lead" in s.role.lower() and sig in s.role.lower() for s in signoffs)


def _liaison_q(liaison: int | None, prefix: str = "") -> Q:
    return Q(**{f"{prefix}liaison_id": liaison}) if liaison else Q()


def waiting_requests(now: dt.datetime, liaison: int | None = None) -> tuple[list[Waiting], int]:
    """Pending requests, oldest first, with how long they waited and their window (of
    one liaison's, when given)."""
    pending = ExceptionRequest.objects.filter(_liaison_q(liaison), state=ExceptionRequest.State.PENDING)
    rows = list(
        pending.select_related("release", "enhancement", "milestone__kind", "milestone__release", "liaison")
        .prefetch_related(Prefetch("signoffs", queryset=SignOff.objects.order_by("at", "id"), to_attr="signoff_rows"))
        .order_by("submitted_at", "id")[:SHOWN]
    )
    result = []
    for request in rows:
        closes = request_window_closes(request.milestone)
        result.append(
            Waiting(
                request=request,
                # From receipt: a thread of 2024 ingested today has waited since today.
                waited=tz.render_waited(now - request.waiting_since),
                window_closes=tz.render_deadline(closes, request.release.zone),
                after_window=request.filed_after_window or request.submitted_at > closes,
                from_archive=request.from_archive,
                signoffs=request.signoff_rows,
                sig_lead_signed=_sig_lead_signed(request, request.signoff_rows),
            )
        )
    return result, pending.count()


@dataclass
class GrantEnded:
    grant_end: GrantEnd
    text: str
    tracked_label: str


def grants_ended(liaison: int | None = None) -> list[GrantEnded]:
    """Granted times that ended and wait for their liaison's re-evaluation, oldest first."""
    rows = (
        GrantEnd.objects.filter(_liaison_q(liaison, "request__"), outcome="")
        .select_related("request__enhancement", "request__milestone__kind", "request__release", "request__liaison")
        .order_by("ended_at", "id")[:SHOWN]
    )
    return [GrantEnded(grant_end=g, text=grant_end_text(g), tracked_label=tracked_label(g.request)) for g in rows]


@dataclass
class SetupWarning:
    release: Release
    problems: list[str]


def release_setup_warnings(releases: list[Release]) -> list[SetupWarning]:
    """What a release lacks to run by itself: a team (leads or team members, who alone may
    decide its requests), reminder rules that apply to it (active, for every release or
    for it) and channels to send them on. Three queries, whatever the count."""
    applying = set(ReminderRule.objects.filter(active=True).values_list("release_id", flat=True).distinct())
    channels = Channel.objects.exists()
    staffed = set(
        Release.objects.filter(pk__in=[r.pk for r in releases])
        .filter(Q(leads__isnull=False) | Q(team__isnull=False))
        .values_list("pk", flat=True)
        .distinct()
    )
    warnings = []
    for release in releases:
        problems = []
        if release.pk not in staffed:
            problems.append("no team")
        if None not in applying and release.pk not in applying:
            problems.append("no reminder rules")
        if not channels:
            problems.append("no reminder channels")
        if problems:
            warnings.append(SetupWarning(release=release, problems=problems))
    return warnings


def cockpit(now: dt.datetime | None = None, *, liaison: int | None = None) -> dict:
    """What needs the release team now; ``liaison``: only that liaison's requests."""
    now = now or tz.utc_now()
    waiting, waiting_count = waiting_requests(now, liaison)
    active = list(schedule.release_list_active())
    upcoming = list(schedule.milestone_list_next(releases=active, now=now)[:5])
    freezes = (
        Milestone.objects.filter(release__in=active, kind__allows_exceptions=True, cancelled=False)
        .select_related("release", "kind")
        .annotate(request_count=Count("exception_requests"))
        .order_by("closes_at", "id")
    )
    windows = []
    for milestone in freezes:
        closes = request_window_closes(milestone)
        windows.append(
            Window(
                milestone=milestone,
                closes=tz.render_deadline(closes, milestone.release.zone),
                open_now=milestone.deadline <= now <= closes,
                closed=now > closes,
                requests=milestone.request_count,
            )
        )
    problems = list(
        Delivery.objects.filter(
            Q(state__in=[Delivery.State.FAILED, Delivery.State.MISSED]), updated_at__gte=now - RECENT
        )
        .select_related("channel", "milestone__release")
        .order_by("-updated_at")[:SHOWN]
    )
    return {
        "now": tz.render(now, "UTC"),
        "setup_warnings": release_setup_warnings(active),
        "liaison": liaison,
        "waiting": waiting,
        "grants_ended": grants_ended(liaison),
        "waiting_count": waiting_count,
        "proposals": list(
            ProposedDecision.objects.filter(state=ProposedDecision.State.PROPOSED)
            .select_related("request__enhancement", "request__release")
            .order_by("created_at")[:SHOWN]
        ),
        "upcoming": [(m, tz.render_deadline(m.deadline, m.zone)) for m in upcoming],
        "windows": windows,
        "problems": problems,
        "failing_channels": list(Channel.objects.filter(failing=True).order_by("name")),
        "github_boards": board_rows(),
        "github_conflicts": open_conflicts(),
        "issue_comments": issue_comment_counts(),
        "conflict_actions": [("keep_releasecal", "Keep releasecal's"), ("take_board", "Take the board's")],
        "intake_problems": list(IntakeProblem.objects.filter(resolved_at__isnull=True).order_by("-created_at")[:SHOWN]),
    }
