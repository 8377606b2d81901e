"""File an exception request from Slack: ``/relcal request [KEP]`` opens a modal.

The modal (Block Kit ``views.open``) is opened while the slash command is answered: its
``trigger_id`` expires after 3 seconds, so never from a queued task. It carries the
fields of the exception request template, prefilled from the KEP (title, SIG, stage,
issue, owners shown) and the freeze whose request window is open. Its submission
(``view_submission``) is read and checked here field by field, then filed through
``exceptions.services.exception_request_submit`` (the same policy as email, admin and
API) as the Slack user's linked account. Every refusal comes back inline in the modal
(``response_action: errors`` keyed by block_id) and nothing is saved; success closes the
modal, the workflow hook posts the request to the release team's channel, and the
requester gets a DM confirming it.
"""

from __future__ import annotations

import json
import logging
import re

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.db import transaction

from exceptions import services as workflow
from exceptions.services import request_window_closes
from outbox.errors import TransportError
from releasecal import tz
from releasecal.errors import Conflict, DomainError
from releasecal.models import Enhancement, Milestone, Release, Tracking
from slack_integration import linking
from slack_integration.client import bot_client
from slack_integration.models import SlackWork
from slack_integration.mrkdwn import context, escape, plain, section
from slack_integration.outbox import slack_work_record
from slack_integration.selectors import slack_identity_find
from slack_integration.signature import slack_id

logger = logging.getLogger(__name__)

CALLBACK_ID = "exception_request"
ACTION = "value"  # every input's action_id (one input per block)
MAX_OPTIONS = 100  # Slack: a static_select holds at most 100 options
MAX_OPTION_TEXT = 75
MAX_INPUT = 3000  # Slack: a plain_text_input holds at most 3,000 characters
MAX_PRS = 50
# block_id -> (label, the most characters, multiline, required, hint)
TEXT_FIELDS: dict[str, tuple[str, int, bool, bool, str]] = {
    "enhancement_name": ("Enhancement name", 300, False, False, ""),
    "sig": ("SIG", 64, False, False, "The owning SIG, e.g. node"),
    "issue_url": ("Enhancements issue", 500, False, False, "https://github.com/kubernetes/enhancements/issues/…"),
    "pr_urls": ("PRs", MAX_INPUT, True, False, "One PR link per line"),
    "until_text": ("Until (as you would write it)", 200, False, False, 'Optional, e.g. "EOD Friday CET"'),
    "until_zone": ("Your time zone", 64, False, False, "Optional IANA zone, e.g. Europe/Berlin"),
    "reason": ("Why is this critical for the release?", MAX_INPUT, True, True, ""),
    "risks_adding": ("What are the risks of adding it late?", MAX_INPUT, True, False, ""),
    "risks_cutting": ("What are the risks of cutting it?", MAX_INPUT, True, False, ""),
}
# Where a refusal from the services is shown, by the key its ``extra`` carries.
ERROR_BLOCKS = {
    "days": "days",
    "rejected_days": "days",
    "stage": "stage",
    "existing_request": "kep",
    "window_closed_at": "milestone",
    "kind": "milestone",
    "milestone": "milestone",
    "submitted_at": "milestone",
}
DAYS_HINT = "At least 1 (0: admission only, for a PRR or enhancements freeze); more than 7 is warned about"
NOT_LINKED = (
    "Your Slack account is not linked to a releasecal account: type /relcal link, open the link, "
    "log in and confirm, then submit again."
)
_URL = URLValidator(schemes=["http", "https"])


def kep_number(text: str) -> int | None:
    match = re.fullmatch(r"(?:kep-?)?#?(\d{1,9})", text.strip().lower())
    return int(match.group(1)) if match else None


def open_freezes(now=None) -> list[Milestone]:
    """Milestones a request may be filed for now: exceptions allowed, not cancelled, in a
    release not yet released, request window not closed (a request may come before the
    freeze), soonest first."""
    now = now or tz.utc_now()
    candidates = (
        Milestone.objects.filter(cancelled=False, kind__allows_exceptions=True)
        .exclude(release__status=Release.Status.RELEASED)
        .select_related("release", "kind")
        .order_by("closes_at", "pk")
    )
    return [m for m in candidates if now <= request_window_closes(m)][:MAX_OPTIONS]


def _text_input(block_id: str, initial: str = "") -> dict:
    label, limit, multiline, required, hint = TEXT_FIELDS[block_id]
    element = {
        "type": "plain_text_input",
        "action_id": ACTION,
        "multiline": multiline,
        "max_length": min(limit, MAX_INPUT),
    }
    if initial:
        element["initial_value"] = initial[: element["max_length"]]
    block = {"type": "input", "block_id": block_id, "label": plain(label, 2000), "element": element}
    if not required:
        block["optional"] = True
    if hint:
        block["hint"] = plain(hint, 2000)
    return block


def _option(value: str, text: str, description: str = "") -> dict:
    option = {"text": plain(text, MAX_OPTION_TEXT), "value": value}
    if description:
        option["description"] = plain(description, MAX_OPTION_TEXT)
    return option


def _freeze_option(milestone: Milestone) -> dict:
    closes = request_window_closes(milestone)
    return _option(
        str(milestone.pk),
        f"{milestone.release.slug} {milestone.title}",
        f"requests until {tz.render_deadline(closes, milestone.release.zone)}",
    )


def request_view(*, enhancement: Enhancement | None, freezes: list[Milestone], private: dict) -> dict:
    """The modal, prefilled from ``enhancement`` (may be None: the KEP field is empty)."""
    tracking = None
    chosen = freezes[0]
    if enhancement is not None:
        tracked = {
            t.release_id: t
            for t in Tracking.objects.filter(enhancement=enhancement, release__in={m.release_id for m in freezes})
        }
        chosen = next((m for m in freezes if m.release_id in tracked), freezes[0])
        tracking = tracked.get(chosen.release_id)
    blocks: list[dict] = []
    kep_input = {"type": "plain_text_input", "action_id": ACTION, "max_length": 20}
    if enhancement is not None:
        kep_input["initial_value"] = str(enhancement.number)
        owners = ", ".join(str(o) for o in enhancement.owners.all()) or "none recorded"
        blocks.append(
            section(
                f"*KEP-{enhancement.number}: {escape(enhancement.title)}*\n"
                f"SIG {escape(enhancement.owning_sig)} · owners: {escape(owners)}"
            )
        )
    blocks.append(
        {
            "type": "input",
            "block_id": "kep",
            "label": plain("KEP number", 2000),
            "hint": plain("e.g. 1880", 2000),
            "element": kep_input,
        }
    )
    blocks.append(
        {
            "type": "input",
            "block_id": "milestone",
            "label": plain("Freeze to extend", 2000),
            "element": {
                "type": "static_select",
                "action_id": ACTION,
                "options": [_freeze_option(m) for m in freezes],
                "initial_option": _freeze_option(chosen),
            },
        }
    )
    closes = request_window_closes(chosen)
    blocks.append(
        context(
            f"{escape(chosen.release.slug)} {escape(chosen.title)}: "
            f"{escape(tz.render_deadline(chosen.deadline, chosen.zone))}. Requests are accepted until "
            f"{escape(tz.render_deadline(closes, chosen.release.zone))}."
        )
    )
    blocks.append(
        {
            "type": "input",
            "block_id": "days",
            "label": plain("Additional days needed", 2000),
            "hint": plain(
                "At least 1 (0: admission only, for a PRR or enhancements freeze); more than 7 is warned about", 2000
            ),
            "element": {
                "type": "number_input",
                "action_id": ACTION,
                "is_decimal_allowed": False,
                "min_value": "0",
                "max_value": "366",
            },
        }
    )
    blocks.append(_text_input("until_text"))
    blocks.append(_text_input("until_zone"))
    blocks.append(_text_input("enhancement_name", enhancement.title if enhancement else ""))
    stage = {
        "type": "static_select",
        "action_id": ACTION,
        "options": [_option(value, label) for value, label in Tracking.Stage.choices],
    }
    if tracking is not None and tracking.stage:
        stage["initial_option"] = _option(tracking.stage, tracking.get_stage_display())
    blocks.append(
        {"type": "input", "block_id": "stage", "label": plain("Stage", 2000), "optional": True, "element": stage}
    )
    blocks.append(_text_input("sig", enhancement.owning_sig if enhancement else ""))
    blocks.append(_text_input("issue_url", enhancement.issue_url if enhancement else ""))
    blocks.append(_text_input("pr_urls"))
    blocks.append(_text_input("reason"))
    blocks.append(_text_input("risks_adding"))
    blocks.append(_text_input("risks_cutting"))
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "title": plain("Exception request", 24),
        "submit": plain("File request", 24),
        "close": plain("Cancel", 24),
        "private_metadata": json.dumps(private),
        "blocks": blocks,
    }


def open_request_modal(*, args: list[str], slack_user_id: str, team_id: str, trigger_id: str) -> str | None:
    """Answer ``/relcal request [KEP]``: open the modal now. Returns the sentence (mrkdwn)
    for the caller when no modal was opened, else None."""
    identity = slack_identity_find(slack_user_id=slack_user_id, team_id=team_id, linked=True)
    if identity is None:
        return linking.not_linked_sentence(slack_user_id=slack_user_id, team_id=team_id, doing="file a request")
    enhancement = None
    if args:
        number = kep_number(args[0])
        if number is None or len(args) > 1:
            return "Usage: `/relcal request 1880` (a KEP number), or `/relcal request` to choose the KEP in the form."
        enhancement = Enhancement.objects.filter(number=number).first()
        if enhancement is None:
            return f"No KEP {number} is known."
    freezes = open_freezes()
    if not freezes:
        return "No freeze has an open request window now, so there is nothing to file a request for."
    client = bot_client()
    if client is None:
        return "Slack is not configured on this releasecal (no bot token), so the form cannot be opened."
    if not trigger_id:
        return "Slack sent no trigger_id, so the form cannot be opened."
    view = request_view(enhancement=enhancement, freezes=freezes, private={"team": team_id})
    try:
        client.open_view(trigger_id=trigger_id, view=view)
    except TransportError as exc:
        logger.warning("views.open failed for %s: %s", slack_user_id, exc)
        return f"Slack did not open the form ({escape(exc.message)}). Try `/relcal request` again."
    return None


# --------------------------------------------------------------------- submission


def _obj(value) -> dict:
    return value if isinstance(value, dict) else {}


def _value(values: dict, block_id: str) -> str:
    """The submitted value of one block's input ("" when absent or not a string)."""
    state = _obj(_obj(values.get(block_id)).get(ACTION))
    value = _obj(state.get("selected_option")).get("value") if "selected_option" in state else state.get("value")
    return value if isinstance(value, str) else ""


def _text_problem(value: str, limit: int) -> str | None:
    if "\x00" in value:
        return "Remove the NUL character: it cannot be stored."
    if len(value) > limit:
        return f"At most {limit:,} characters (this has {len(value):,})."
    return None


def _read(values: dict, errors: dict[str, str]) -> tuple[Enhancement | None, Milestone | None, workflow.RequestFields]:
    texts: dict[str, str] = {}
    for block_id, (_label, limit, _multiline, required, _hint) in TEXT_FIELDS.items():
        raw = _value(values, block_id)
        problem = _text_problem(raw, limit)
        if problem:
            errors[block_id] = problem
        elif required and not raw.strip():
            errors[block_id] = "Required."
        texts[block_id] = raw.strip() if not problem else ""
    enhancement = None
    raw_kep = _value(values, "kep")
    number = kep_number(raw_kep) if "\x00" not in raw_kep and len(raw_kep) <= 20 else None
    if number is None:
        errors["kep"] = "Give a KEP number, e.g. 1880."
    else:
        enhancement = Enhancement.objects.filter(number=number).first()
        if enhancement is None:
            errors["kep"] = f"No KEP {number} is known."
    milestone = None
    raw_milestone = _value(values, "milestone")
    if raw_milestone.isascii() and raw_milestone.isdigit() and len(raw_milestone) <= 12:
        milestone = Milestone.objects.select_related("release", "kind").filter(pk=int(raw_milestone)).first()
    if milestone is None:
        errors["milestone"] = "Choose the freeze to extend."
    else:
        try:
            workflow.check_request_window(milestone, tz.utc_now())
            if enhancement is not None:
                workflow.check_removed_kep(enhancement, milestone)
        except DomainError as exc:
            errors["milestone"] = exc.message
    raw_days = _value(values, "days").strip()
    days = int(raw_days) if raw_days.isascii() and raw_days.isdigit() and len(raw_days) <= 6 else None
    if days is None:
        errors["days"] = "A whole number of days, e.g. 3."
    stage = _value(values, "stage")
    if stage and stage not in Tracking.Stage.values:
        errors["stage"] = f"Choose a stage: {', '.join(Tracking.Stage.values)}."
        stage = ""
    if texts["until_zone"]:
        try:
            texts["until_zone"] = tz.normalize_zone_name(texts["until_zone"])
        except DomainError as exc:
            errors["until_zone"] = exc.message[:300]
    if texts["issue_url"]:
        try:
            _URL(texts["issue_url"])
        except ValidationError:
            errors["issue_url"] = "A link (https://…), or leave it empty."
    prs = [line.strip() for line in texts["pr_urls"].splitlines() if line.strip()]
    if len(prs) > MAX_PRS:
        errors["pr_urls"] = f"At most {MAX_PRS} PR links."
    for line in prs:
        try:
            _URL(line)
        except ValidationError:
            errors["pr_urls"] = f"Not a link: {line[:80]}. One PR link per line."
            break
    fields = workflow.RequestFields(
        days=days if days is not None else 0,
        enhancement_name=texts["enhancement_name"],
        stage=stage,
        sig=texts["sig"],
        issue_url=texts["issue_url"],
        pr_urls=prs,
        until_text=texts["until_text"],
        until_zone=texts["until_zone"],
        reason=texts["reason"],
        risks_adding=texts["risks_adding"],
        risks_cutting=texts["risks_cutting"],
    )
    return enhancement, milestone, fields


def _error_block(exc: DomainError) -> str:
    for key in exc.extra:
        if key in ERROR_BLOCKS:
            return ERROR_BLOCKS[key]
    return "kep" if isinstance(exc, Conflict) else "milestone"


def errors_response(errors: dict[str, str]) -> dict:
    return {"response_action": "errors", "errors": {block: message[:300] for block, message in errors.items()}}


def submit_request_modal(payload: dict) -> dict | None:
    """Handle the modal's ``view_submission``: the answer for Slack (inline errors), or
    None when the request was filed (Slack then closes the modal)."""
    slack_user_id = slack_id(_obj(payload.get("user")).get("id"))
    values = _obj(_obj(_obj(payload.get("view")).get("state")).get("values"))
    user = _obj(payload.get("user"))
    team_id = slack_id(user.get("team_id")) or slack_id(_obj(payload.get("team")).get("id"))
    identity = slack_identity_find(slack_user_id=slack_user_id, team_id=team_id, linked=True)
    if identity is None:
        return errors_response({"kep": NOT_LINKED if slack_user_id else "This submission names no Slack user."})
    errors: dict[str, str] = {}
    enhancement, milestone, fields = _read(values, errors)
    if errors:
        return errors_response(errors)
    try:
        with transaction.atomic():
            request = workflow.exception_request_submit(
                enhancement=enhancement,
                milestone=milestone,
                fields=fields,
                requester=identity.user,
                entered_by=identity.user,
            )
            slack_work_record(request=request, kind=SlackWork.Kind.DM, event="submitted")
    except DomainError as exc:
        return errors_response({_error_block(exc): exc.message})
    return None
