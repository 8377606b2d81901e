"""Polling the mailbox: read each new message once, file it, never lose it.

IMAP client: the standard library's ``imaplib`` (kept with CPython, public API, no new
dependency). We use five commands (LOGIN, EXAMINE, UID SEARCH, UID FETCH, LOGOUT) and one
response (UIDVALIDITY), so a wrapper such as imapclient would add a dependency for little.
The folder is opened read-only (EXAMINE) and bodies are fetched with BODY.PEEK[], so the
poller never sets ``\\Seen`` or any other flag people use.

Where we are: ``MailboxState`` holds the folder's UIDVALIDITY and the last UID read.
A new UIDVALIDITY (the folder was recreated) starts again from UID 1, and the Message-ID
of every message read (``IntakeMessage``) keeps it from being filed twice. Each message
is filed, recorded and the last UID moved past it in one transaction, so a crash files
nothing twice and skips nothing.

Failures: a wrong password, a refused or dropped connection, a timeout are one line in
``MailboxState.last_error`` (admin, ``check_services``); the next poll tries again. A
message that cannot be read or filed becomes an ``IntakeProblem`` with the reason and
the raw bytes, and the poller moves on: it is never lost and never retried by itself
(the admin's "Try again" does, once the cause is fixed).
"""

from __future__ import annotations

import contextlib
import imaplib
import logging
import socket
import ssl
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.db import transaction

from intake.conf import MailboxConfig, mailbox_config
from intake.filing import NotFiled, file_mail
from intake.mail import UnreadableMail, read_mail
from intake.models import IntakeMessage, IntakeProblem, MailboxState
from releasecal import tz

logger = logging.getLogger(__name__)

RAW_LIMIT = 5 * 1024 * 1024


class MailboxError(Exception):
    """The mailbox could not be polled (one line, shown in the admin)."""


@dataclass
class PollResult:
    state: MailboxState | None = None
    read: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    problems: int = 0
    error: str = ""
    off: bool = False


def _connect(config: MailboxConfig) -> imaplib.IMAP4:
    if config.tls == "ssl":
        context = ssl.create_default_context()
        return imaplib.IMAP4_SSL(config.host, config.port, ssl_context=context, timeout=config.timeout)
    conn = imaplib.IMAP4(config.host, config.port, timeout=config.timeout)
    if config.tls == "starttls":
        conn.starttls(ssl_context=ssl.create_default_context())
    return conn


def _describe(exc: BaseException, stage: str) -> str:
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, bytes):
        text = exc.decode(errors="replace")
    if stage == "login":
        return f"Login refused for the intake mailbox: {text}"
    if isinstance(exc, socket.timeout | TimeoutError):
        return f"The IMAP server did not answer in time ({stage}): {text}"
    if isinstance(exc, ConnectionRefusedError):
        return f"The IMAP server refused the connection: {text}"
    if isinstance(exc, imaplib.IMAP4.abort | ConnectionError | EOFError):
        return f"The connection to the IMAP server was dropped ({stage}): {text}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS with the IMAP server failed: {text}"
    return f"IMAP {stage} failed: {text}"


def _ok(typ: str, data, what: str) -> None:
    if typ != "OK":
        detail = b" ".join(d for d in data if isinstance(d, bytes)).decode(errors="replace")
        raise imaplib.IMAP4.error(f"{what}: {typ} {detail}".strip())


def _entered_by(config: MailboxConfig):
    if not config.entered_by:
        return None
    return get_user_model().objects.filter(username=config.entered_by).first()


def mailbox_poll(*, config: MailboxConfig | None = None) -> PollResult:
    """One poll: read every message after the last UID. Never raises for mailbox trouble."""
    config = config or mailbox_config()
    if not config.enabled:
        return PollResult(off=True)
    state, _ = MailboxState.objects.get_or_create(mailbox=config.key)
    now = tz.utc_now()
    MailboxState.objects.filter(pk=state.pk).update(last_poll_at=now)
    result = PollResult(state=state)
    conn = None
    stage = "connect"
    try:
        conn = _connect(config)
        stage = "login"
        conn.login(config.user, config.password)
        stage = "select"
        typ, data = conn.select(_quoted(config.folder), readonly=True)
        _ok(typ, data, f"Folder {config.folder!r}")
        uidvalidity = int(conn.response("UIDVALIDITY")[1][0])
        stage = "search"
        state.refresh_from_db()
        if state.uidvalidity != uidvalidity:
            if state.uidvalidity is not None:
                logger.warning("intake: UIDVALIDITY of %s changed; reading it again by Message-ID", config.key)
            state.uidvalidity = uidvalidity
            state.last_uid = 0
            state.save(update_fields=["uidvalidity", "last_uid"])
        typ, data = conn.uid("SEARCH", None, f"UID {state.last_uid + 1}:*")
        _ok(typ, data, "UID SEARCH")
        uids = sorted(int(u) for u in (data[0] or b"").split() if int(u) > state.last_uid)[: config.batch]
        entered_by = _entered_by(config)
        stage = "fetch"
        for uid in uids:
            typ, data = conn.uid("FETCH", str(uid), "(BODY.PEEK[])")
            raw = _raw_body(data) if typ == "OK" else None
            outcome = _read_one(state, uidvalidity, uid, raw, entered_by=entered_by)
            result.read += 1
            result.outcomes[outcome] = result.outcomes.get(outcome, 0) + 1
            if outcome == IntakeMessage.Outcome.PROBLEM:
                result.problems += 1
        MailboxState.objects.filter(pk=state.pk).update(
            last_success_at=tz.utc_now(), last_error="", last_error_at=None, failures=0
        )
    except (imaplib.IMAP4.error, OSError, EOFError, ValueError) as exc:
        result.error = _describe(exc, stage)[:2000]
        state.refresh_from_db()
        MailboxState.objects.filter(pk=state.pk).update(
            last_error=result.error, last_error_at=tz.utc_now(), failures=state.failures + 1
        )
        logger.warning("intake: %s", result.error)
    finally:
        if conn is not None:
            with contextlib.suppress(imaplib.IMAP4.error, OSError, EOFError):
                conn.logout()
    state.refresh_from_db()
    result.state = state
    return result


def _quoted(folder: str) -> str:
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _raw_body(data) -> bytes | None:
    for item in data or []:
        if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], bytes):
            return item[1]
    return None


def _read_one(state: MailboxState, uidvalidity: int, uid: int, raw: bytes | None, *, entered_by) -> str:
    """Read, file and record one message, and move past it, in one transaction."""
    fallback_id = f"<uid-{uid}.uidvalidity-{uidvalidity}@{state.mailbox}>"
    with transaction.atomic():
        locked = MailboxState.objects.select_for_update().get(pk=state.pk)
        if locked.uidvalidity != uidvalidity or uid <= locked.last_uid:
            return "skipped"  # another poll got here first
        outcome = _file(locked, uidvalidity, uid, raw, fallback_id, entered_by=entered_by)
        locked.last_uid = uid
        locked.messages_read += 1
        locked.save(update_fields=["last_uid", "messages_read"])
    return outcome


def _problem(state, uidvalidity, uid, raw: bytes | None, reason: str, *, message_id="", subject="", sender=""):
    raw = raw or b""
    IntakeProblem.objects.create(
        mailbox=state,
        message_id=message_id[:900],
        uidvalidity=uidvalidity,
        uid=uid,
        subject=subject[:500],
        sender=sender[:300],
        reason=reason,
        raw=raw[:RAW_LIMIT],
        raw_size=len(raw),
        created_at=tz.utc_now(),
    )


def _file(state, uidvalidity, uid, raw, fallback_id, *, entered_by) -> str:
    if raw is None:
        _problem(state, uidvalidity, uid, raw, "The server did not give this message's content (UID FETCH failed).")
        return IntakeMessage.Outcome.PROBLEM
    try:
        mail = read_mail(raw, fallback_id=fallback_id)
    except UnreadableMail as exc:
        _problem(state, uidvalidity, uid, raw, str(exc))
        return IntakeMessage.Outcome.PROBLEM
    except Exception as exc:
        logger.exception("intake: reading UID %s failed", uid)
        _problem(state, uidvalidity, uid, raw, f"The message could not be read ({type(exc).__name__}: {exc}).")
        return IntakeMessage.Outcome.PROBLEM
    if IntakeMessage.objects.filter(message_id=mail.message_id).exists():
        return "duplicate"  # read before (a copy, or the folder was recreated)
    sender = f"{mail.sender_name} <{mail.sender_email}>" if mail.sender_email else mail.sender_name
    try:
        with transaction.atomic():
            filed = file_mail(mail, entered_by=entered_by)
    except NotFiled as exc:
        reason = str(exc)
    except Exception as exc:
        logger.exception("intake: filing UID %s failed", uid)
        reason = f"Filing failed ({type(exc).__name__}: {exc})."
    else:
        # List chatter is recorded (so it is read once) but its text is not kept.
        ignored = filed.outcome == IntakeMessage.Outcome.IGNORED
        _record(
            state,
            uidvalidity,
            uid,
            mail,
            outcome=filed.outcome,
            request=filed.request,
            keep_text=not ignored,
            detail=" ".join([filed.detail, *mail.notes]).strip(),
        )
        return filed.outcome
    _problem(state, uidvalidity, uid, raw, reason, message_id=mail.message_id, subject=mail.subject, sender=sender)
    _record(state, uidvalidity, uid, mail, outcome=IntakeMessage.Outcome.PROBLEM, detail=reason)
    return IntakeMessage.Outcome.PROBLEM


def _record(state, uidvalidity, uid, mail, *, outcome, detail, request=None, keep_text=True) -> IntakeMessage:
    """The mailbox's record that it read this message (so it is read once), with what
    came of it."""
    return IntakeMessage.objects.create(
        mailbox=state,
        message_id=mail.message_id[:900],
        uidvalidity=uidvalidity,
        uid=uid,
        in_reply_to=mail.in_reply_to[:900],
        references=" ".join(mail.references),
        subject=mail.subject,
        sender_name=mail.sender_name,
        sender_email=mail.sender_email,
        sent_at=mail.sent_at,
        text=mail.as_thread_part() if keep_text else "",
        outcome=outcome,
        detail=detail,
        request=request,
        read_at=tz.utc_now(),
    )


@transaction.atomic
def intake_problem_retry(*, problem: IntakeProblem, actor=None) -> str:
    """File a problem's message again (after its cause was fixed). Returns what happened."""
    problem = IntakeProblem.objects.select_for_update().get(pk=problem.pk)
    if problem.resolved_at is not None:
        return f"Already resolved: {problem.resolution}"
    raw = bytes(problem.raw)
    fallback_id = f"<uid-{problem.uid}.uidvalidity-{problem.uidvalidity}@{problem.mailbox.mailbox}>"
    try:
        mail = read_mail(raw, fallback_id=fallback_id)
        with transaction.atomic():
            filed = file_mail(mail, entered_by=actor)
    except (UnreadableMail, NotFiled) as exc:
        problem.reason = f"{exc} (tried again {tz.render_in_zone(tz.utc_now(), 'UTC')})"
        problem.save(update_fields=["reason"])
        return f"Still not filed: {exc}"
    IntakeMessage.objects.filter(message_id=mail.message_id).update(
        outcome=filed.outcome, request=filed.request, detail=filed.detail
    )
    problem.resolved_at = tz.utc_now()
    problem.resolved_by = actor if actor is not None and actor.is_authenticated else None
    problem.resolution = filed.detail or filed.outcome
    problem.save(update_fields=["resolved_at", "resolved_by", "resolution"])
    return filed.detail or filed.outcome
