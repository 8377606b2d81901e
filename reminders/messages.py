"""Messages: built once, channel-neutral, then rendered per channel.

``message_for_delivery`` turns a ledger row into a :class:`Message` (headline, the
deadline sentence, body lines, a link); ``render_email`` and ``render_slack`` lay it
out. Every instant is rendered by ``releasecal.tz``: native zone with UTC beside it,
and AoE (``tz.render_with_aoe``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.conf import settings

from exceptions.followup import REMOVED_LABEL, grant_end_text, tracked_label
from exceptions.models import UNRECORDED_GRANT
from exceptions.selectors import decision_text, effective_deadline
from releasecal import tz
from reminders.offsets import parse_offset
from slack_integration import mrkdwn
from slack_integration.blocks import GRANT_REMOVED_ACTION, GRANT_TRACKED_ACTION


@dataclass(frozen=True)
class Message:
    headline: str
    deadline_sentence: str = ""
    lines: tuple[str, ...] = ()
    link: str = ""
    link_label: str = ""
    footer: str = ""
    late_note: str = ""
    fields: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    # Slack buttons under the message: (action_id, label, value); email says where to choose.
    buttons: tuple[tuple[str, str, str], ...] = ()


def deadline_sentence(label: str, instant: dt.datetime, zone: str) -> str:
    return f"{label}: {tz.render_with_aoe(instant, zone)}."


def _site(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


def _late_note(delivery, now: dt.datetime) -> str:
    grace = dt.timedelta(minutes=settings.REMINDERS_GRACE_MINUTES)
    if delivery.send_late or now - delivery.due_at > grace:
        zone = delivery.deadline_zone or "UTC"
        return f"Late: this message was due at {tz.render(delivery.due_at, zone)} and is sent only now."
    return ""


def message_for_delivery(delivery, *, now: dt.datetime | None = None) -> Message:
    """The content of one ledger row, whatever channel sends it."""
    now = now or tz.utc_now()
    footer = f"releasecal delivery #{delivery.pk}"
    late = _late_note(delivery, now)
    milestone = delivery.milestone
    release = milestone.release
    if delivery.offset.startswith("event:"):
        return _event_message(delivery, delivery.offset.removeprefix("event:"), footer=footer, late=late, now=now)
    offset = parse_offset(delivery.offset)
    when = offset.phrase()
    if delivery.request_id:
        request = delivery.request
        kep = request.enhancement
        subject = f"{release.name}: KEP-{kep.number}'s exception for {request.freezes_title}"
        headline = f"{subject} ends now" if when == "now" else f"{subject} ends {when}"
        return Message(
            headline=headline,
            deadline_sentence=deadline_sentence("Extended deadline", delivery.deadline_at, delivery.deadline_zone),
            lines=(
                f"{kep.title} (SIG {kep.owning_sig}) was granted until then, instead of the freeze "
                f"at {tz.render_deadline(milestone.deadline, milestone.zone)}. Merge before it ends.",
            ),
            link=kep.issue_url,
            link_label=f"KEP-{kep.number}",
            footer=footer,
            late_note=late,
        )
    if when == "now":
        headline = (
            f"{release.name}: {milestone.title} is now in effect"
            if milestone.kind.is_freeze
            else f"{release.name}: {milestone.title} is now"
        )
    else:
        headline = f"{release.name}: {milestone.title} {when}"
    lines = [milestone.description] if milestone.description else []
    return Message(
        headline=headline,
        deadline_sentence=deadline_sentence("Deadline", delivery.deadline_at, delivery.deadline_zone),
        lines=tuple(lines),
        link=milestone.link or _site(f"/releases/{release.slug}/"),
        link_label=f"{release.name} schedule",
        footer=footer,
        late_note=late,
    )


def _event_message(delivery, event: str, *, footer: str, late: str, now: dt.datetime) -> Message:
    request = delivery.request
    milestone = request.milestone
    kep = request.enhancement
    zone = request.release.zone
    link = _site(f"/admin/exceptions/exceptionrequest/{request.pk}/change/")
    what = f"KEP-{kep.number} ({kep.title}, SIG {kep.owning_sig})"
    freeze = deadline_sentence(f"{milestone.title}", milestone.deadline, milestone.zone)
    if request.also_milestone_id:  # a request naming two freezes shows both
        also = request.also_milestone
        freeze += " " + deadline_sentence(f"{also.title}", also.deadline, also.zone)
    if event == "submitted":
        return Message(
            headline=f"New exception request #{request.pk}: {what} asks for {request.days} more days",
            deadline_sentence=freeze,
            lines=(
                f"Requested by {request.requester_label}, {tz.render(request.submitted_at, zone)}.",
                *request.warnings,
            ),
            link=link,
            link_label=f"Review request #{request.pk}",
            footer=footer,
            late_note=late,
        )
    if event == "grant_ended":
        return _grant_ended_message(request, footer=footer, late=late)
    if event == "nudge":
        hours = int((now - request.submitted_at).total_seconds() // 3600)
        return Message(
            headline=f"Exception request #{request.pk} for {what} has waited {hours} hours for a decision",
            deadline_sentence=freeze,
            lines=(f"Filed by {request.requester_label}, {tz.render(request.submitted_at, zone)}.",),
            link=link,
            link_label=f"Decide request #{request.pk}",
            footer=footer,
            late_note=late,
        )
    if event.startswith("corrected:"):
        return _correction_message(request, int(event.removeprefix("corrected:")), what=what, footer=footer, late=late)
    decision = getattr(request, "decision", None)
    if decision is None:  # reopened since this row was written (its send was cancelled then)
        return Message(
            headline=f"Exception request #{request.pk} for {what} is pending again",
            deadline_sentence=freeze,
            link=link,
            link_label=f"Review request #{request.pk}",
            footer=footer,
            late_note=late,
        )
    by = decision.decided_by.get_username() if decision.decided_by_id else "the release team"
    note = (f"Note: {decision.note}",) if decision.note else ()
    if decision.outcome == "approved":
        deadline = effective_deadline(milestone=milestone, request=request)
        return Message(
            headline=f"Exception request #{request.pk} for {what} was approved by {by}",
            deadline_sentence=(
                deadline_sentence(f"New deadline for {request.freezes_title}", deadline.instant, deadline.zone)
                if deadline.grant_recorded
                else f"Extension of {milestone.title} {UNRECORDED_GRANT}."
            ),
            lines=note,
            link=kep.issue_url or link,
            link_label=f"KEP-{kep.number}",
            footer=footer,
            late_note=late,
        )
    return Message(
        headline=f"Exception request #{request.pk} for {what} was rejected by {by}",
        deadline_sentence=deadline_sentence(
            f"The deadline stays {milestone.title}", milestone.deadline, milestone.zone
        ),
        lines=note,
        link=kep.issue_url or link,
        link_label=f"KEP-{kep.number}",
        footer=footer,
        late_note=late,
    )


def _correction_message(request, number: int, *, what: str, footer: str, late: str) -> Message:
    correction = request.decision_corrections.filter(number=number).select_related("request__release").first()
    zone = request.release.zone
    link = _site(f"/admin/exceptions/exceptionrequest/{request.pk}/change/")
    if correction is None:  # the history row is gone with its request; nothing to tell
        return Message(headline=f"Decision on exception request #{request.pk} for {what} was corrected", footer=footer)
    verb = "reopened" if correction.action == "reopened" else "corrected"
    lines = [
        f"Was: {decision_text(correction.before, zone)}.",
        f"Now: {decision_text(correction.after, zone)}.",
        f"Reason: {correction.reason}",
    ]
    if correction.after is not None and correction.after.get("note") != correction.before.get("note"):
        lines.append(f"Note: {correction.after.get('note') or '(none)'}")
    return Message(
        headline=f"The decision on exception request #{request.pk} for {what} was {verb} by "
        f"{correction.corrected_by_label}",
        lines=tuple(lines),
        link=link,
        link_label=f"Request #{request.pk}",
        footer=footer,
        late_note=late,
    )


def _grant_ended_message(request, *, footer: str, late: str) -> Message:
    """The liaison's notice: the grant's end, and the two outcomes (Slack: buttons)."""
    grant_end = request.decision.grant_end
    tracked = tracked_label(request)
    return Message(
        headline=grant_end_text(grant_end),
        lines=(
            f"KEP-{request.enhancement.number} {request.enhancement.title} (SIG {request.enhancement.owning_sig}), "
            f"exception request #{request.pk} for {request.milestone.title}: {tracked}, or {REMOVED_LABEL}?",
        ),
        link=_site(f"/admin/?liaison={request.liaison_id or ''}#grant-ends"),
        link_label="Choose in the cockpit",
        footer=footer,
        late_note=late,
        buttons=(
            (GRANT_TRACKED_ACTION, tracked, str(grant_end.pk)),
            (GRANT_REMOVED_ACTION, REMOVED_LABEL, str(grant_end.pk)),
        ),
    )


# ------------------------------------------------------------------ renderers


def render_email(message: Message) -> tuple[str, str]:
    """(subject, plain-text body)."""
    parts = []
    if message.late_note:
        parts.append(message.late_note)
    parts.append(message.headline + ".")
    if message.deadline_sentence:
        parts.append(message.deadline_sentence)
    parts.extend(line for line in message.lines if line)
    if message.link:
        parts.append(f"{message.link_label or 'Link'}: {message.link}")
    if message.footer:
        parts.append(f"-- \n{message.footer}")
    return message.headline, "\n\n".join(parts) + "\n"


def render_slack(message: Message) -> dict:
    """Block Kit payload (with ``text`` as the notification fallback). Every piece of the
    message is text, escaped by ``slack_integration.mrkdwn``; the link is ours."""
    blocks: list[dict] = []
    if message.late_note:
        blocks.append(mrkdwn.context(f":warning: {mrkdwn.escape(message.late_note)}"))
    blocks.append(mrkdwn.section(f"*{mrkdwn.escape(message.headline)}*"))
    body = [mrkdwn.escape(line) for line in (message.deadline_sentence, *message.lines) if line]
    if message.link:
        body.append(mrkdwn.link(message.link, message.link_label or message.link))
    if body:
        blocks.append(mrkdwn.section("\n".join(body)))
    if message.buttons:
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": action,
                        "text": {"type": "plain_text", "text": label},
                        "value": value,
                    }
                    for action, label, value in message.buttons
                ],
            }
        )
    if message.footer:
        blocks.append(mrkdwn.context(mrkdwn.escape(message.footer)))
    fallback = message.headline + (f" — {message.deadline_sentence}" if message.deadline_sentence else "")
    return {"text": mrkdwn.fallback(fallback), "blocks": blocks}


# ------------------------------------------------------------------- digests
#
# Several deliveries due in the same sweep for the same channel (or email address) go
# out as one message listing each deadline. Slack refuses a section text over 3,000
# characters and a message of more than 50 blocks, so the Slack digest packs one entry
# per deadline into sections of at most 3,000 characters and the sections into messages
# of at most 50 blocks (a heading block and 49 sections); each part says which
# deliveries it carries, so the ledger marks exactly those sent when it is accepted.


@dataclass(frozen=True)
class DigestPart:
    payload: object  # Slack: the Block Kit payload; email: (subject, body)
    indexes: tuple[int, ...]  # the positions, in the digest's messages, of what it carries


def _slack_entry(message: Message) -> str:
    """One deadline of a digest, as mrkdwn of at most MAX_SECTION characters: the body is
    clipped if it must be, never the headline's line nor the footer that ties it to its row."""
    head = f"*{mrkdwn.escape(message.headline)}*"
    if message.late_note:
        head = f":warning: {mrkdwn.escape(message.late_note)}\n{head}"
    footer = mrkdwn.escape(message.footer) if message.footer else ""
    body = [mrkdwn.escape(line) for line in (message.deadline_sentence, *message.lines) if line]
    if message.link:
        body.append(mrkdwn.link(message.link, message.link_label or message.link))
    room = mrkdwn.MAX_SECTION - len(head) - len(footer) - 2
    text = head
    if body:
        text += "\n" + mrkdwn.clip("\n".join(body), max(room, 1))
    if footer:
        text += "\n" + footer
    return mrkdwn.clip(text)


def render_slack_digest(messages: list[Message]) -> list[DigestPart]:
    """Slack payloads for a digest: one message, or as many as Slack's limits require."""
    if len(messages) == 1:
        return [DigestPart(render_slack(messages[0]), (0,))]
    sections: list[tuple[str, list[int]]] = []
    for index, message in enumerate(messages):
        entry = _slack_entry(message)
        if sections and len(sections[-1][0]) + 2 + len(entry) <= mrkdwn.MAX_SECTION:
            text, indexes = sections[-1]
            sections[-1] = (f"{text}\n\n{entry}", [*indexes, index])
        else:
            sections.append((entry, [index]))
    per_message = mrkdwn.MAX_BLOCKS - 1  # one heading block
    chunks = [sections[i : i + per_message] for i in range(0, len(sections), per_message)]
    total = len(messages)
    parts = []
    for number, chunk in enumerate(chunks, 1):
        indexes = tuple(i for _, found in chunk for i in found)
        heading = f"{total} reminders"
        if len(chunks) > 1:
            heading = f"Reminders {indexes[0] + 1} to {indexes[-1] + 1} of {total} (message {number} of {len(chunks)})"
        blocks = [mrkdwn.section(f"*{heading}*"), *(mrkdwn.section(text) for text, _ in chunk)]
        fallback = f"{heading}: " + "; ".join(messages[i].headline for i in indexes)
        parts.append(DigestPart({"text": mrkdwn.fallback(fallback), "blocks": blocks}, indexes))
    return parts


def render_email_digest(messages: list[Message]) -> DigestPart:
    """One email listing every deadline (email has no size limit that matters here)."""
    if len(messages) == 1:
        return DigestPart(render_email(messages[0]), (0,))
    count = len(messages)
    subject = f"{count} reminders: {messages[0].headline} and {count - 1} more"
    bodies = [render_email(message)[1].rstrip("\n") for message in messages]
    body = f"{count} reminders.\n\n" + "\n\n========\n\n".join(bodies) + "\n"
    return DigestPart((subject, body), tuple(range(count)))
