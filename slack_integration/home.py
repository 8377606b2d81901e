"""The App Home tab (``app_home_opened`` -> ``views.publish``).

What a Slack user sees there: their KEPs (as an owner, through their linked releasecal
account) with each KEP's upcoming effective deadlines (granted extensions applied,
``exceptions.selectors.effective_deadlines``), their exception requests and states, and
the next deadlines of the active releases. Every deadline is shown in the user's Slack
time zone (``users.info``'s ``tz``) with the native zone and UTC beside it
(``tz.render_deadline_in_zone`` / ``tz.render_deadline``). Every value from outside our
code goes through ``mrkdwn.escape``; every text object is verbatim.
"""

from __future__ import annotations

import datetime as dt

from exceptions.models import ExceptionRequest
from exceptions.selectors import Deadline, deadlines_next, effective_deadlines
from people.selectors import enhancement_list_of_user
from releasecal import selectors, tz
from releasecal.errors import DomainError
from releasecal.models import Milestone, Release, Tracking
from slack_integration.blocks import request_line
from slack_integration.models import SlackIdentity
from slack_integration.mrkdwn import MAX_BLOCKS, context, escape, header, section

MAX_KEPS = 20
DEADLINES_PER_KEP = 5
MAX_REQUESTS = 20
NEXT_DEADLINES = 5
# A Home tab holds up to 100 blocks; we keep to the 50 of a message.
MAX_HOME_BLOCKS = MAX_BLOCKS
NOT_LINKED = (
    "Your Slack account is not linked to a releasecal account, so this tab cannot show your KEPs "
    "and requests. Type /relcal link to link it."
)


def viewer_zone(slack_tz: object, identity: SlackIdentity | None) -> str | None:
    """The zone to show times in: Slack's ``tz`` for the user, else the one set with
    ``/relcal tz``, else none (native zone and UTC only). A zone we do not know is skipped."""
    for candidate in (slack_tz, identity.zone if identity else ""):
        if isinstance(candidate, str) and candidate.strip():
            try:
                return tz.normalize_zone_name(candidate)
            except DomainError:
                continue
    return None


def when(instant: dt.datetime, zone: str, viewer: str | None) -> str:
    """``<in the viewer's zone> · <native> (<UTC>)``, escaped; native (UTC) alone when the
    viewer's zone is the native one or unknown."""
    native = tz.render_deadline(instant, zone)
    if viewer and viewer not in {tz.normalize_zone_name(zone), "UTC"}:
        return f"*{escape(tz.render_deadline_in_zone(instant, viewer))}* · {escape(native)}"
    return f"*{escape(native)}*"


def _deadline_line(deadline: Deadline, viewer: str | None) -> str:
    milestone = deadline.milestone
    line = (
        f"{escape(milestone.title)} ({escape(milestone.release.slug)}): {when(deadline.instant, deadline.zone, viewer)}"
    )
    if deadline.superseded:
        line += " _(the freeze; your granted extension is superseded by it)_"
    elif deadline.is_extension:
        line += f" _(extended by exception #{deadline.exception_id})_"
    elif not deadline.grant_recorded:
        line += " _(extension granted, deadline not recorded)_"
    return line


def _chunks(title: str, lines: list[str]) -> list[dict]:
    """Sections of at most ~2,800 characters (Slack refuses a section over 3,000)."""
    blocks, current = [], f"*{title}*" if title else ""
    for line in lines:
        if len(current) + len(line) > 2800:
            blocks.append(section(current))
            current = ""
        current += ("\n" if current else "") + line
    blocks.append(section(current))
    return blocks


def kep_blocks(user, viewer: str | None, now: dt.datetime) -> list[dict]:
    keps = list(enhancement_list_of_user(user=user)[: MAX_KEPS + 1])
    if not keps:
        return [section("*Your KEPs*\nYou own no KEP in releasecal.")]
    more = len(keps) > MAX_KEPS
    keps = keps[:MAX_KEPS]
    current = list(
        Tracking.objects.filter(enhancement__in=keps)
        .exclude(release__status=Release.Status.RELEASED)
        .select_related("enhancement", "release", "missed_freeze")
        .order_by("release__start_date", "release__slug")
    )
    # A KEP removed from (or deferred out of) a release has none of its deadlines.
    tracked = {(t.enhancement_id, t.release_id) for t in current if not t.out_of_milestone}
    out = {}
    for t in current:
        if t.out_of_milestone:
            out.setdefault(t.enhancement_id, []).append(t.out_of_milestone_text())
    milestones = list(
        Milestone.objects.filter(release_id__in={release for _, release in tracked}, cancelled=False).select_related(
            "release", "kind"
        )
    )
    effective = effective_deadlines(milestones=milestones, enhancements=keps)
    blocks = [header("Your KEPs")]
    for kep in keps:
        upcoming = sorted(
            (
                d
                for (kep_id, _), d in effective.items()
                if kep_id == kep.pk and d.instant >= now and (kep.pk, d.milestone.release_id) in tracked
            ),
            key=lambda d: (d.instant, d.milestone.pk),
        )[:DEADLINES_PER_KEP]
        lines = [_deadline_line(d, viewer) for d in upcoming]
        lines += [f"_{escape(text)}_" for text in out.get(kep.pk, [])]
        lines = lines or ["No upcoming deadline."]
        blocks += _chunks(f"KEP-{kep.number}: {escape(kep.title)} (SIG {escape(kep.owning_sig)})", lines)
    if more:
        blocks.append(context(f"Showing your first {MAX_KEPS} KEPs."))
    return blocks


def request_blocks(user, viewer: str | None) -> list[dict]:
    requests = list(
        ExceptionRequest.objects.filter(requester=user)
        .select_related("release", "milestone", "enhancement", "decision")
        .order_by("-submitted_at")[:MAX_REQUESTS]
    )
    if not requests:
        return [section("*Your exception requests*\nNone.")]
    return _chunks(
        "Your exception requests", [request_line(r, lambda at, zone: when(at, zone, viewer)) for r in requests]
    )


def next_deadline_blocks(viewer: str | None, now: dt.datetime) -> list[dict]:
    releases = list(selectors.release_list_active())
    if not releases:
        return [section("*Next deadlines*\nNo active release.")]
    rows = deadlines_next(releases=releases, enhancements=None, now=now, limit=NEXT_DEADLINES)
    lines = [_deadline_line(row, viewer) for row in rows] or ["No upcoming deadline in the active releases."]
    return [header("Next deadlines"), *_chunks("", lines)]


def home_view(*, identity: SlackIdentity | None, slack_tz: object, now: dt.datetime | None = None) -> dict:
    """The ``home`` view for one Slack user."""
    now = now or tz.utc_now()
    viewer = viewer_zone(slack_tz, identity)
    user = identity.user if identity is not None else None
    blocks = [header("releasecal")]
    if viewer:
        blocks.append(context(f"Times in your Slack time zone, {escape(viewer)}, then native zone and UTC."))
    else:
        blocks.append(context("Times in each deadline's native zone, with UTC."))
    if user is None:
        blocks.append(section(escape(NOT_LINKED)))
    else:
        blocks += kep_blocks(user, viewer, now)
        blocks += request_blocks(user, viewer)
    tail = next_deadline_blocks(viewer, now)
    room = MAX_HOME_BLOCKS - len(tail)
    if len(blocks) > room:
        blocks = [*blocks[: room - 1], context("More than fits here: see releasecal.")]
    return {"type": "home", "blocks": blocks + tail}
