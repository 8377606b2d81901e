"""File what a mailbox message says, through the same services as ``ingest_exception``.

- A message in a thread we know (its In-Reply-To/References name a message that filed a
  request) is read with the rest of that thread: a change of the days is an amendment.
- Otherwise a message that reads as a request (a KEP and the days asked) is filed.
- A message about an exception that does not read as a request is a problem for the
  release team; anything else on the list is ignored (recorded, not filed).

The email's author is the requester (a user with that address, else their name as
written); the configured mailbox owner is the one who entered it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model

from exceptions.models import ExceptionRequest
from exceptions.parsing import FIELD_LABELS, parse_request_email
from exceptions.reader import ThreadReading, infer_milestone_kind, infer_release, resolve_milestone
from exceptions.services import RequestFields, exception_request_amend, exception_request_submit
from intake.mail import IncomingMail
from intake.models import IntakeMessage
from releasecal import tz
from releasecal.errors import DomainError
from releasecal.models import Enhancement
from releasecal.services import enhancement_upsert

_ABOUT_EXCEPTION = re.compile(r"\bexception\b", re.I)


class NotFiled(Exception):
    """A message about an exception that could not be filed; the message says why."""


@dataclass
class Filed:
    outcome: str
    request: ExceptionRequest | None = None
    detail: str = ""


def _requester(mail: IncomingMail):
    if not mail.sender_email:
        return None
    return get_user_model().objects.filter(email__iexact=mail.sender_email, is_active=True).order_by("pk").first()


def thread_request(mail: IncomingMail) -> ExceptionRequest | None:
    ids = mail.thread_ids
    if not ids:
        return None
    known = {
        m.message_id: m.request
        for m in IntakeMessage.objects.filter(message_id__in=ids, request__isnull=False).select_related("request")
    }
    for message_id in ids:  # nearest first
        if message_id in known:
            return known[message_id]
    return None


def _thread_text(request: ExceptionRequest, mail: IncomingMail) -> str:
    earlier = [m.text for m in _thread_messages(request)]
    return "\n\n".join([*earlier, mail.as_thread_part()])


def _thread_messages(request: ExceptionRequest):
    return request.intake_messages.order_by("sent_at", "read_at", "id")


def _fields(parsed, **changes) -> RequestFields:
    base = parsed.fields
    return RequestFields(**{**vars(base), "pr_urls": list(base.pr_urls), **changes})


def file_mail(mail: IncomingMail, *, entered_by=None) -> Filed:
    """File one message. Raises NotFiled with the reason for the problems list."""
    request = thread_request(mail)
    if request is not None:
        return _file_reply(mail, request, entered_by=entered_by)
    parsed = parse_request_email(mail.as_thread_part())
    is_request = parsed.kep_number is not None and "days" not in parsed.problems
    if not is_request:
        if _ABOUT_EXCEPTION.search(mail.subject) or _ABOUT_EXCEPTION.search(mail.text[:5000]):
            reasons = "; ".join(
                f"{FIELD_LABELS.get(name, 'KEP number')}: {parsed.problems.get(name, 'not read')}"
                for name in ("kep_number", "days")
                if name in parsed.problems or (name == "kep_number" and parsed.kep_number is None)
            )
            raise NotFiled(f"About an exception, but not readable as a request ({reasons}).")
        return Filed(IntakeMessage.Outcome.IGNORED, detail="Not about an exception request.")
    received_at = mail.sent_at or tz.utc_now()
    notes: list[str] = list(parsed.warnings)
    text = mail.as_thread_part()
    reading = ThreadReading(
        text=text,
        request=parsed,
        milestone_kind=infer_milestone_kind(parsed, text),
        release=infer_release(parsed.subject, text),
    )
    try:
        milestone, reason = resolve_milestone(reading, received_at=received_at)
    except DomainError as exc:
        raise NotFiled(exc.message) from None
    notes.append(f"Milestone: {reason}.")
    enhancement = Enhancement.objects.filter(number=parsed.kep_number).first()
    if enhancement is None:
        if not parsed.fields.sig:
            raise NotFiled(
                f"KEP-{parsed.kep_number} is not known here and the email names no SIG to create it with; "
                "import it (import_keps), then 'Try again'."
            )
        enhancement = enhancement_upsert(
            number=parsed.kep_number,
            title=parsed.fields.enhancement_name or f"KEP-{parsed.kep_number}",
            owning_sig=parsed.fields.sig,
            issue_url=parsed.fields.issue_url,
        )
    user = _requester(mail)
    try:
        request = exception_request_submit(
            enhancement=enhancement,
            milestone=milestone,
            fields=_fields(parsed, source_text=mail.text[:100_000]),
            requester=user,
            requester_name="" if user else (mail.sender_name or mail.sender_email or "email")[:200],
            submitted_at=received_at,
            entered_by=entered_by,
        )
        for amendment in parsed.amendments:
            request = exception_request_amend(
                request=request,
                fields=_fields(
                    parsed, days=amendment.days, until_text=amendment.until_text, source_text=amendment.text
                ),
                actor=user,
                actor_label=request.requester_label,
                at=received_at,
                entered_by=entered_by,
            )
    except DomainError as exc:
        raise NotFiled(exc.message) from None
    for name in parsed.missing:
        notes.append(f"Not read: {FIELD_LABELS[name]} ({parsed.problems[name]}).")
    detail = f"Request #{request.pk} for KEP-{enhancement.number}, {milestone.title} ({milestone.release.slug})."
    if entered_by is not None:
        detail += f" Entered by {entered_by.get_username()} (mailbox owner)."
    return Filed(IntakeMessage.Outcome.FILED, request=request, detail=" ".join([detail, *notes]))


def _file_reply(mail: IncomingMail, request: ExceptionRequest, *, entered_by=None) -> Filed:
    parsed = parse_request_email(_thread_text(request, mail))
    recorded = request.revisions.count() - 1
    new = parsed.amendments[recorded:]
    if not new:
        return Filed(IntakeMessage.Outcome.REPLY, request=request, detail=f"Reply in the thread of #{request.pk}.")
    if request.state != ExceptionRequest.State.PENDING:
        return Filed(
            IntakeMessage.Outcome.REPLY,
            request=request,
            detail=f"Asks for {new[-1].days} days, but request #{request.pk} is already {request.state}.",
        )
    user = _requester(mail)
    try:
        for amendment in new:
            at = mail.sent_at or tz.utc_now()
            revision = request.current
            request = exception_request_amend(
                request=request,
                fields=RequestFields(
                    days=amendment.days,
                    enhancement_name=revision.enhancement_name,
                    stage=revision.stage,
                    sig=revision.sig,
                    issue_url=revision.issue_url,
                    pr_urls=list(revision.pr_urls),
                    until_text=amendment.until_text,
                    until_zone=amendment.until_zone or revision.until_zone,
                    reason=revision.reason,
                    risks_adding=revision.risks_adding,
                    risks_cutting=revision.risks_cutting,
                    source_text=amendment.text or mail.text[:100_000],
                ),
                actor=user,
                actor_label=mail.sender_name or mail.sender_email,
                at=max(at, request.submitted_at),
                entered_by=entered_by,
            )
    except DomainError as exc:
        raise NotFiled(exc.message) from None
    return Filed(
        IntakeMessage.Outcome.AMENDED,
        request=request,
        detail=f"Request #{request.pk} amended to {request.days} days.",
    )
