"""Block Kit content. Every deadline sentence comes from releasecal.tz."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from exceptions.followup import REMOVED_LABEL, grant_end_text, tracked_label
from exceptions.models import UNRECORDED_GRANT, ExceptionRequest, days_label
from exceptions.services import default_granted_until, request_warnings
from releasecal import tz
from slack_integration.mrkdwn import context, escape, fallback, header, section

APPROVE_ACTION = "exception_approve"
REJECT_ACTION = "exception_reject"
# The liaison's two outcomes when a granted time ended (value: the GrantEnd's id).
GRANT_TRACKED_ACTION = "grant_tracked"
GRANT_REMOVED_ACTION = "grant_removed"


def request_title(request: ExceptionRequest) -> str:
    return f"Exception request #{request.pk}: KEP-{request.enhancement.number} {request.enhancement.title}"


def decision_sentence(request: ExceptionRequest) -> str:
    """What was decided, with the new deadline rendered by the time module."""
    decision = getattr(request, "decision", None)
    if request.state == ExceptionRequest.State.APPROVED and decision is not None:
        who = escape(decision.decided_by.get_username()) if decision.decided_by else "the release team"
        if decision.granted_until is None:
            return f":white_check_mark: *Approved* by {who}: extension {UNRECORDED_GRANT}."
        return (
            f":white_check_mark: *Approved* by {who}. KEP-{request.enhancement.number} may land until "
            f"{tz.render_deadline(decision.granted_until, decision.granted_zone)}."
        )
    if request.state == ExceptionRequest.State.REJECTED and decision is not None:
        who = escape(decision.decided_by.get_username()) if decision.decided_by else "the release team"
        return (
            f":x: *Rejected* by {who}. The {escape(request.milestone.title)} deadline stays "
            f"{tz.render_deadline(request.milestone.deadline, request.milestone.zone)}."
        )
    if request.state == ExceptionRequest.State.WITHDRAWN:
        return ":leftwards_arrow_with_hook: *Withdrawn* by the requester."
    return ""


def request_line(request: ExceptionRequest, when: Callable[[dt.datetime, str], str], *, with_kep: bool = True) -> str:
    """One line about a request for a list (``/relcal kep``, the Home tab): number, KEP
    (unless the list is one KEP's), milestone, release, days, state and, when approved,
    the granted deadline as ``when(instant, zone)`` words it (escaped mrkdwn)."""
    kep = f"KEP-{request.enhancement.number} " if with_kep else ""
    line = (
        f"#{request.pk} {kep}{escape(request.milestone.title)} ({escape(request.release.slug)}), "
        f"{days_label(request.days)}: *{request.state}*"
    )
    decision = getattr(request, "decision", None)
    if request.state == ExceptionRequest.State.APPROVED and decision is not None:
        if decision.granted_until is None:
            line += f", {UNRECORDED_GRANT}"
        else:
            line += f" until {when(decision.granted_until, decision.granted_zone)}"
    return line


def requester_notice(request: ExceptionRequest, event: str) -> tuple[str, list[dict]]:
    """The DM to a request's requester: its filing confirmed, or its decision (with the
    deadline rendered by the time module)."""
    title = request_title(request)
    if event == "submitted":
        milestone = request.milestone
        lines = [
            f"Your request was filed and posted to the release team: {days_label(request.days)} past "
            f"{escape(milestone.title)} ({tz.render_deadline(milestone.deadline, milestone.zone)}).",
            "You will get a message here when it is decided.",
        ]
        return fallback(f"Filed: {title}"), [header(title), section("\n".join(lines))]
    content = [header(title), section(decision_sentence(request))]
    decision = getattr(request, "decision", None)
    if decision is not None and decision.note:
        content.append(context(f"Note: {escape(decision.note)}"))
    return fallback(f"{title} ({request.state})"), content


def request_message(request: ExceptionRequest) -> tuple[str, list[dict]]:
    """The release-team channel message for a request: (fallback text, blocks)."""
    milestone = request.milestone
    revision = request.current
    lines = [
        f"*Milestone:* {escape(milestone.title)}, {tz.render_deadline(milestone.deadline, milestone.zone)}"
        + (
            f"; also {escape(request.also_milestone.title)}, "
            f"{tz.render_deadline(request.also_milestone.deadline, request.also_milestone.zone)} (one completion date)"
            if request.also_milestone_id
            else ""
        ),
        f"*Days requested:* {days_label(request.days)}"
        + (f" (until {escape(revision.until_text)})" if revision is not None and revision.until_text else ""),
        f"*Requested by:* {escape(request.requester_label)} on {tz.render(request.submitted_at, request.release.zone)}",
    ]
    blocks = [header(request_title(request)), section("\n".join(lines))]
    if revision is not None and revision.reason:
        blocks.append(section(f"*Why it is critical:* {escape(revision.reason)}"))
    for warning in request_warnings(request):
        blocks.append(context(f":warning: {escape(warning)}"))
    if request.state == ExceptionRequest.State.PENDING:
        grant = default_granted_until(request)
        blocks.append(context(f"Approving grants until {tz.render_deadline(grant, request.release.zone)}."))
        blocks.append(
            {
                "type": "actions",
                "block_id": f"exception_request_{request.pk}",
                "elements": [
                    {
                        "type": "button",
                        "action_id": APPROVE_ACTION,
                        "style": "primary",
                        "text": {"type": "plain_text", "text": "Approve"},
                        "value": str(request.pk),
                    },
                    {
                        "type": "button",
                        "action_id": REJECT_ACTION,
                        "style": "danger",
                        "text": {"type": "plain_text", "text": "Reject"},
                        "value": str(request.pk),
                    },
                ],
            }
        )
    else:
        blocks.append(section(decision_sentence(request)))
    text = fallback(request_title(request))
    if request.state != ExceptionRequest.State.PENDING:
        text += f" ({request.state})"
    return text, blocks


def grant_end_resolved_message(grant_end) -> tuple[str, list]:
    """The liaison's DM after the re-evaluation: the end of the grant, and what was chosen."""
    request = grant_end.request
    shown = tracked_label(request) if grant_end.outcome == "tracked" else REMOVED_LABEL
    who = escape(grant_end.resolved_by.get_username()) if grant_end.resolved_by else "the release team"
    text = f"{grant_end_text(grant_end)}. {shown}."
    return fallback(text), [section(escape(grant_end_text(grant_end) + ".")), section(f"*{escape(shown)}*, by {who}.")]
