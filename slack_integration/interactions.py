"""Approve / Reject buttons on the release-team channel message.

The Slack user is mapped to a releasecal user through SlackIdentity; the decision goes
through ``exceptions.services`` (same permission, same "not your own request" rule,
same 409 for a second decision). The message is then rewritten by the
``slack_update_exception_messages`` task (queued by the workflow hook after commit)
with the decision and a deadline sentence from the time module.
"""

from __future__ import annotations

import json
import logging

from django.http import HttpRequest, HttpResponse, JsonResponse

from exceptions import followup
from exceptions import services as workflow
from exceptions.models import ExceptionRequest, GrantEnd
from releasecal.errors import DomainError
from slack_integration import modal, services
from slack_integration.blocks import APPROVE_ACTION, GRANT_REMOVED_ACTION, GRANT_TRACKED_ACTION, REJECT_ACTION
from slack_integration.models import SlackDecisionMessage
from slack_integration.selectors import slack_identity_find
from slack_integration.signature import slack_id, slack_signed, slack_ts

logger = logging.getLogger(__name__)


def _obj(value) -> dict:
    """A JSON object from the payload, or {} for anything else (never an AttributeError)."""
    return value if isinstance(value, dict) else {}


def _bad(message: str) -> JsonResponse:
    return JsonResponse({"message": message, "extra": {}}, status=400)


def decide_from_slack(*, payload: dict) -> str | None:
    """Apply one button press. Returns a message for the presser when nothing was decided."""
    actions = payload.get("actions")
    action = _obj(actions[0]) if isinstance(actions, list) and actions else {}
    action_id, value = action.get("action_id"), str(action.get("value", ""))
    if action_id in GRANT_OUTCOMES:
        return None  # the end of a grant's buttons: reevaluate_from_slack
    if action_id not in {APPROVE_ACTION, REJECT_ACTION}:
        return None
    slack_user_id = slack_id(_obj(payload.get("user")).get("id"))
    if not slack_user_id:
        return None  # not a user Slack could have sent
    team_id = slack_id(_obj(payload.get("user")).get("team_id")) or slack_id(_obj(payload.get("team")).get("id"))
    identity = slack_identity_find(slack_user_id=slack_user_id, team_id=team_id, linked=True)
    if identity is None:
        return (
            "Your Slack account is not linked to a releasecal user, so you cannot decide requests. "
            "Type /relcal link to link it."
        )
    if not value.isdigit():
        return "This button does not name a request."
    request = ExceptionRequest.objects.filter(pk=int(value)).first()
    if request is None:
        return f"Exception request #{value} no longer exists."
    _remember_message(payload, request)
    try:
        if action_id == APPROVE_ACTION:
            workflow.exception_request_approve(request=request, actor=identity.user, note="Approved from Slack")
        else:
            workflow.exception_request_reject(request=request, actor=identity.user, note="Rejected from Slack")
    except DomainError as exc:
        return exc.message
    return None


GRANT_OUTCOMES = {GRANT_TRACKED_ACTION: GrantEnd.Outcome.TRACKED, GRANT_REMOVED_ACTION: GrantEnd.Outcome.REMOVED}


def reevaluate_from_slack(*, payload: dict) -> str | None:
    """The liaison's DM buttons when a granted time ended: "Tracked for <freeze>" or
    "Removed From Milestone" (``exceptions.followup.exception_grant_reevaluate``, the
    cockpit's rule). Returns a message for the presser when nothing was done; on success
    the DM is rewritten to say what was chosen."""
    actions = payload.get("actions")
    action = _obj(actions[0]) if isinstance(actions, list) and actions else {}
    outcome, value = GRANT_OUTCOMES.get(action.get("action_id")), str(action.get("value", ""))
    if outcome is None:
        return None
    user = _obj(payload.get("user"))
    team_id = slack_id(user.get("team_id")) or slack_id(_obj(payload.get("team")).get("id"))
    identity = slack_identity_find(slack_user_id=slack_id(user.get("id")), team_id=team_id, linked=True)
    if identity is None:
        return "Your Slack account is not linked to a releasecal user. Type /relcal link to link it."
    grant_end = GrantEnd.objects.filter(pk=int(value)).first() if value.isdigit() else None
    if grant_end is None:
        return "This button names no granted time that ended."
    try:
        grant_end = followup.exception_grant_reevaluate(grant_end=grant_end, outcome=outcome, actor=identity.user)
    except DomainError as exc:
        return exc.message
    channel = slack_id(_obj(payload.get("channel")).get("id")) or slack_id(
        _obj(payload.get("container")).get("channel_id")
    )
    ts = slack_ts(_obj(payload.get("container")).get("message_ts")) or slack_ts(_obj(payload.get("message")).get("ts"))
    if channel and ts:
        services.slack_grant_end_resolved(channel=channel, ts=ts, grant_end=grant_end)
    return None


def _remember_message(payload: dict, request: ExceptionRequest) -> None:
    """A message posted some other way still gets updated with the decision."""
    channel = slack_id(_obj(payload.get("channel")).get("id")) or slack_id(
        _obj(payload.get("container")).get("channel_id")
    )
    ts = slack_ts(_obj(payload.get("container")).get("message_ts")) or slack_ts(_obj(payload.get("message")).get("ts"))
    if channel and ts:
        SlackDecisionMessage.objects.get_or_create(channel=channel, ts=ts, defaults={"request": request})


def _shape_problem(payload: dict) -> str | None:
    """What makes a signed payload unreadable (a short message for the 400), or None.

    Slack always sends a ``type``, a ``user`` with an ``id``, and for ``block_actions`` a
    non-empty list of action objects; a body without them was not built by Slack."""
    kind = payload.get("type")
    if not isinstance(kind, str) or not kind:
        return "The payload has no type."
    if kind not in {"block_actions", "view_submission"}:
        return None  # acknowledged and ignored
    if not slack_id(_obj(payload.get("user")).get("id")):
        return "The payload names no Slack user."
    if kind == "view_submission" and not isinstance(payload.get("view"), dict):
        return "The view_submission has no view object."
    if kind == "block_actions":
        actions = payload.get("actions")
        if not isinstance(actions, list) or not actions or not all(isinstance(a, dict) for a in actions):
            return "The block_actions payload has no list of actions."
    return None


@slack_signed
def interactions(request: HttpRequest, form: dict[str, str]) -> HttpResponse:
    if "payload" not in form:
        return _bad("The request has no payload field.")
    try:
        payload = json.loads(form["payload"])
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than Python's stack
        return _bad("The payload is not JSON.")
    if not isinstance(payload, dict):
        return _bad("The payload is not a JSON object.")
    problem = _shape_problem(payload)
    if problem:
        return _bad(problem)
    if payload.get("type") == "view_submission":
        if _obj(payload.get("view")).get("callback_id") != modal.CALLBACK_ID:
            return HttpResponse(status=200)
        answer = modal.submit_request_modal(payload)
        return JsonResponse(answer) if answer else HttpResponse(status=200)
    if payload.get("type") != "block_actions":
        return HttpResponse(status=200)
    problem = decide_from_slack(payload=payload) or reevaluate_from_slack(payload=payload)
    if problem:
        services.slack_post_ephemeral(
            channel=slack_id(_obj(payload.get("channel")).get("id")),
            user=slack_id(_obj(payload.get("user")).get("id")),
            text=problem,
        )
    return HttpResponse(status=200)
