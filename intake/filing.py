"""File what a mailbox message says, through the same reader and services as
``ingest_exception`` (``exceptions.reader.read_thread`` /
``exceptions.services.exception_thread_file``).

- A message in a thread we know (its In-Reply-To/References name a message that filed a
  request) is read with the rest of that thread: a change of the days is an amendment
  (a revision), the release team's decision is a *proposed* decision for a release-team
  member to confirm (never applied by itself).
- Otherwise a message that reads as a request is filed with ``exception_thread_file``.
- Text that the reader refuses (a release-team reply to a thread we never read, an
  exceptions.yaml entry, ...) or a message about an exception that does not read as a
  request is a problem for the release team; anything else on the list is ignored
  (recorded, not filed).

The email's author is the requester (the user with that address, else the name as
written); the configured mailbox owner is ``entered_by``.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q

from exceptions.fields import RequestFields
from exceptions.models import ExceptionRequest, ProposedDecision
from exceptions.reader import NotARequest, UnreadableInput, read_thread
from exceptions.services import exception_request_amend, exception_thread_file, proposed_decision_from_reading
from intake.mail import IncomingMail
from intake.models import IntakeMessage
from releasecal import tz
from releasecal.errors import DomainError
from releasecal.models import Enhancement

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
    users = list(get_user_model().objects.filter(email__iexact=mail.sender_email, is_active=True)[:2])
    return users[0] if len(users) == 1 else None


_REPLY_PREFIX = re.compile(r"^\s*(?:(?:re|aw|sv|fwd?|wg)\s*(?:\[\d+\])?\s*:\s*)+", re.I)
SUBJECT_THREAD_DAYS = 60


def _subject_core(subject: str) -> tuple[bool, str]:
    """(is a reply, the subject without Re:/Fwd: and spacing) for threading by subject."""
    stripped = _REPLY_PREFIX.sub("", subject or "")
    return stripped != (subject or ""), re.sub(r"\s+", " ", stripped).strip().lower()


def thread_request(mail: IncomingMail) -> ExceptionRequest | None:
    """The request of the thread ``mail`` belongs to: by In-Reply-To/References, else (a
    reply whose headers were lost, as in archives and some clients) by the same subject
    after "Re:" within SUBJECT_THREAD_DAYS of the request."""
    ids = mail.thread_ids
    if ids:
        known = {
            m.message_id: m.request
            for m in IntakeMessage.objects.filter(message_id__in=ids, request__isnull=False).select_related("request")
        }
        for message_id in ids:  # nearest first
            if message_id in known:
                return known[message_id]
    is_reply, core = _subject_core(mail.subject)
    if not is_reply or len(core) < 12:
        return None
    since = (mail.sent_at or tz.utc_now()) - dt.timedelta(days=SUBJECT_THREAD_DAYS)
    candidates = (
        IntakeMessage.objects.filter(request__isnull=False, subject__icontains=core[:60])
        .filter(Q(sent_at__gte=since) | Q(sent_at__isnull=True, read_at__gte=since))
        .select_related("request")
    )
    for message in candidates.order_by("-read_at", "-id"):
        if _subject_core(message.subject)[1] == core:
            return message.request
    return None


def _about_exception(mail: IncomingMail) -> bool:
    return bool(_ABOUT_EXCEPTION.search(mail.subject) or _ABOUT_EXCEPTION.search(mail.text[:5000]))


def file_mail(mail: IncomingMail, *, entered_by=None) -> Filed:
    """File one message. Raises NotFiled with the reason for the problems list."""
    request = thread_request(mail)
    if request is not None:
        return _file_reply(mail, request, entered_by=entered_by)
    try:
        reading = read_thread(mail.as_thread_part(), received_at=mail.sent_at)
    except (UnreadableInput, NotARequest) as exc:
        if _about_exception(mail):
            raise NotFiled(exc.message) from None
        return Filed(IntakeMessage.Outcome.IGNORED, detail=f"Not a request: {exc.message}")
    parsed = reading.request
    if parsed.kep_number is None or "days" in parsed.problems:
        if _about_exception(mail):
            missing = "; ".join(
                f"{name}: {parsed.problems.get(name, 'not read')}"
                for name in ("kep_number", "days")
                if name in parsed.problems or (name == "kep_number" and parsed.kep_number is None)
            )
            raise NotFiled(f"About an exception, but not readable as a request ({missing}).")
        return Filed(IntakeMessage.Outcome.IGNORED, detail="Not about an exception request.")
    if not Enhancement.objects.filter(number=parsed.kep_number).exists() and not parsed.fields.sig:
        raise NotFiled(
            f"KEP-{parsed.kep_number} is not known here and the email names no SIG to create it with; "
            "import it (import_keps), then 'Try again'."
        )
    try:
        filed = exception_thread_file(
            reading=reading,
            received_at=mail.sent_at,
            # A message without Received: is taken as arrived when it was sent.
            arrived_at=mail.arrived_at or mail.sent_at,
            entered_by=entered_by,
            requester=_requester(mail),
            create_kep=True,
            allow_missing=True,
        )
    except DomainError as exc:
        raise NotFiled(exc.message) from None
    outcome = IntakeMessage.Outcome.PROPOSED if filed.proposal is not None else IntakeMessage.Outcome.FILED
    request = filed.request
    detail = (
        f"Request #{request.pk} for KEP-{request.enhancement.number}, {request.freezes_title} "
        f"({request.release.slug}); milestone: {filed.milestone_reason}."
    )
    return Filed(outcome, request=request, detail=" ".join([detail, *filed.notes]))


def _thread_text(request: ExceptionRequest, mail: IncomingMail) -> str:
    earlier = [m.text for m in request.intake_messages.order_by("sent_at", "read_at", "id")]
    return "\n\n".join([*earlier, mail.as_thread_part()])


def _file_reply(mail: IncomingMail, request: ExceptionRequest, *, entered_by=None) -> Filed:
    try:
        reading = read_thread(_thread_text(request, mail))
    except (UnreadableInput, NotARequest) as exc:
        raise NotFiled(f"A reply in the thread of request #{request.pk} could not be read: {exc.message}") from None
    new = reading.request.amendments[request.revisions.count() - 1 :]
    decision = reading.decision
    if not new and decision is None:
        return Filed(IntakeMessage.Outcome.REPLY, request=request, detail=f"Reply in the thread of #{request.pk}.")
    if request.state != ExceptionRequest.State.PENDING:
        return Filed(
            IntakeMessage.Outcome.REPLY,
            request=request,
            detail=f"Request #{request.pk} is already {request.state}; the reply changes nothing.",
        )
    user = _requester(mail)
    at = max(mail.sent_at or tz.utc_now(), request.submitted_at)
    try:
        for amendment in new:
            revision = request.current
            zone = amendment.until_zone or revision.until_zone
            until = (
                tz.read_deadline_text(amendment.until_text, reference=at, default_zone=zone)
                if amendment.until_text
                else None
            )
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
                    until_zone=zone,
                    until_at=until.instant if until else None,
                    # The answers the amending message gives again, else the revision's.
                    reason=amendment.prose.get("reason", revision.reason),
                    risks_adding=amendment.prose.get("risks_adding", revision.risks_adding),
                    risks_cutting=amendment.prose.get("risks_cutting", revision.risks_cutting),
                    source_text=amendment.text or mail.text[:100_000],
                ),
                actor=user,
                actor_label=mail.sender_name or mail.sender_email,
                at=at,
                entered_by=entered_by,
            )
        if decision is not None and _no_proposal_yet(request, decision):
            proposed_decision_from_reading(
                request=request,
                decision=decision,
                entered_by=entered_by,
                author_name=mail.sender_name,
                sent_at=mail.sent_at,
            )
            return Filed(
                IntakeMessage.Outcome.PROPOSED,
                request=request,
                detail=f"Proposed decision for request #{request.pk}: {decision.outcome} "
                f"({'; '.join(decision.warnings) or 'confirm it in the admin'}).",
            )
    except DomainError as exc:
        raise NotFiled(exc.message) from None
    if not new:
        return Filed(IntakeMessage.Outcome.REPLY, request=request, detail=f"Reply in the thread of #{request.pk}.")
    return Filed(
        IntakeMessage.Outcome.AMENDED, request=request, detail=f"Request #{request.pk} amended to {request.days} days."
    )


def _no_proposal_yet(request: ExceptionRequest, decision) -> bool:
    """The thread is read whole each time: a decision already proposed (or confirmed or
    dismissed) from it is not proposed again."""
    return not request.proposed_decisions.filter(source_text=decision.source_text).exists() and not (
        request.proposed_decisions.filter(state=ProposedDecision.State.PROPOSED).exists()
    )
