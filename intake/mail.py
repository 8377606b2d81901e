"""One raw email as the poller needs it: who wrote it, when, which thread, and its text.

The standard library's ``email`` package parses (``policy.default``, which records
defects instead of raising on most malformed input). Text comes from the first
``text/plain`` part that is not an attachment, else from ``text/html`` turned into text
(quoted ``<blockquote>`` lines get "> " so a reply's quote reads as a quote).

Google Groups rewrites the sender of list mail to "'Jane Doe' via kubernetes-sig-release
<kubernetes-sig-release@googlegroups.com>" and keeps the author in X-Original-From /
X-Original-Sender (and often Reply-To): ``author`` maps it back to the person.
"""

from __future__ import annotations

import datetime as dt
import email
import email.policy
import email.utils
import re
from dataclasses import dataclass, field
from email.message import EmailMessage
from html.parser import HTMLParser

from exceptions.reader import parse_address
from releasecal import tz

# Matched against the name with its whitespace collapsed to single spaces: with \s+ around
# "via", a display name of many blanks backtracked in cubic time.
_VIA = re.compile(r"^['\"]?(?P<name>.+?)['\"]? via (?P<list>.+)$", re.I)
_MSGID = re.compile(r"<[^<>\s]+>")


class UnreadableMail(ValueError):
    """The bytes are not an email we can read (one sentence, for the problems list)."""


@dataclass
class IncomingMail:
    message_id: str
    subject: str
    sender_name: str
    sender_email: str
    sent_at: dt.datetime | None
    in_reply_to: str
    references: list[str]
    text: str
    list_rewritten: bool = False
    notes: list[str] = field(default_factory=list)
    # When the mailbox's server received it: the date of the topmost Received: header.
    # The poller being down does not move it, so a current request read late still gets
    # its mails, while an old thread put into the mailbox later is from the archive.
    arrived_at: dt.datetime | None = None

    @property
    def thread_ids(self) -> list[str]:
        """Message-IDs this one answers, nearest first."""
        ids = [self.in_reply_to] if self.in_reply_to else []
        ids += [ref for ref in reversed(self.references) if ref not in ids]
        return ids

    def as_thread_part(self) -> str:
        """The message with the headers the request reader looks for."""
        head = [f"From: {self.sender_name} <{self.sender_email}>" if self.sender_email else f"From: {self.sender_name}"]
        if self.sent_at is not None:
            head.append(f"Date: {email.utils.format_datetime(self.sent_at)}")
        head.append(f"Subject: {self.subject}")
        return "\n".join(head) + "\n\n" + self.text.strip() + "\n"


def _header(msg: EmailMessage, name: str) -> str:
    try:
        value = msg.get(name)
    except Exception:  # noqa: BLE001 - a header the parser cannot decode is as good as absent
        return ""
    return str(value).strip() if value is not None else ""


def _ids(value: str) -> list[str]:
    return _MSGID.findall(value or "")


def author(msg: EmailMessage) -> tuple[str, str, bool]:
    """(name, address, rewritten by the list) of the person who wrote ``msg``."""
    name, address = parse_address(_header(msg, "From"))
    via = _VIA.match(" ".join((name or "").split()))
    if not via:
        return name.strip(), address.strip().lower(), False
    person = via.group("name").strip().strip("'\"")
    list_address = address.strip().lower()
    for header in ("X-Original-From", "X-Original-Sender", "Reply-To"):
        found_name, found_address = parse_address(_header(msg, header))
        found_address = found_address.strip().lower()
        if found_address and found_address != list_address and "@" in found_address:
            return (found_name.strip() or person), found_address, True
    return person, "", True


class _TextFromHtml(HTMLParser):
    _BREAKS = {"br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "table", "ul", "ol"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self.quote = 0
        self.skip = 0

    def _newline(self):
        self.lines.append("")

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style", "head"):
            self.skip += 1
        elif tag == "blockquote":
            self._newline()
            self.quote += 1
        elif tag in self._BREAKS:
            self._newline()
            if tag == "li":
                self.lines[-1] = "- "

    def handle_endtag(self, tag):
        if tag in ("script", "style", "head"):
            self.skip = max(0, self.skip - 1)
        elif tag == "blockquote":
            self.quote = max(0, self.quote - 1)
            self._newline()
        elif tag in self._BREAKS:
            self._newline()

    def handle_data(self, data):
        if self.skip:
            return
        text = re.sub(r"[ \t\r\n\xa0]+", " ", data)
        if not text.strip() and not self.lines[-1]:
            return
        if not self.lines[-1] and self.quote:
            self.lines[-1] = "> " * self.quote
        self.lines[-1] += text

    def text(self) -> str:
        out = [line.rstrip() for line in self.lines]
        return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip() + "\n"


def html_to_text(markup: str) -> str:
    parser = _TextFromHtml()
    parser.feed(markup)
    parser.close()
    return parser.text()


def _part_text(part) -> str:
    try:
        return part.get_content()
    except (LookupError, UnicodeError, AssertionError, KeyError):
        payload = part.get_payload(decode=True) or b""
        return payload.decode("utf-8", errors="replace")


def body_text(msg: EmailMessage) -> str:
    plain = html_part = None
    for part in msg.walk() if msg.is_multipart() else [msg]:
        if part.is_multipart() or part.get_content_disposition() == "attachment":
            continue
        kind = part.get_content_type()
        if kind == "text/plain" and plain is None:
            plain = part
        elif kind == "text/html" and html_part is None:
            html_part = part
    if plain is not None:
        return _part_text(plain)
    if html_part is not None:
        return html_to_text(_part_text(html_part))
    return ""


def read_mail(raw: bytes, *, fallback_id: str) -> IncomingMail:
    """Read one message; raises UnreadableMail for bytes that are no email at all."""
    if not raw or not raw.strip():
        raise UnreadableMail("The message is empty.")
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
        text = body_text(msg)
    except RecursionError:
        # The standard library's parser recurses once per nested part (3,000 deep raised
        # RecursionError, which no poll caught: the message would stop the mailbox).
        raise UnreadableMail("The message's MIME parts are nested too deep to read.") from None
    if not msg.keys():
        raise UnreadableMail("The message has no headers: it is not an email.")
    ids = _ids(_header(msg, "Message-ID"))
    notes = []
    if not ids:
        notes.append(f"No Message-ID; known here as {fallback_id}.")
    sent_at = None
    date_text = _header(msg, "Date")
    if date_text:
        try:
            parsed = email.utils.parsedate_to_datetime(date_text)
        except (TypeError, ValueError, IndexError, OverflowError):
            parsed = None
        if parsed is not None and parsed.tzinfo is not None and 1970 <= parsed.year <= 2099:
            sent_at = tz.to_utc(parsed)
        else:
            notes.append(f"Date: {date_text[:80]!r} could not be read.")
    name, address, rewritten = author(msg)
    arrived_at = _received_at(msg)
    if not text.strip():
        raise UnreadableMail("The message has no text part (neither text/plain nor text/html) to read.")
    in_reply_to = _ids(_header(msg, "In-Reply-To"))
    return IncomingMail(
        message_id=ids[0] if ids else fallback_id,
        subject=_header(msg, "Subject")[:500],
        sender_name=name[:200],
        sender_email=address[:254],
        sent_at=sent_at,
        in_reply_to=in_reply_to[0] if in_reply_to else "",
        references=_ids(_header(msg, "References")),
        text=text,
        list_rewritten=rewritten,
        notes=notes,
        arrived_at=arrived_at,
    )


def _received_at(msg: EmailMessage) -> dt.datetime | None:
    """The date of the topmost ``Received:`` header ("...; Tue, 23 Jul 2024 20:10:05 -0700"),
    added by the server that delivered the message into the mailbox; None without one."""
    try:
        received = msg.get_all("Received") or []
    except Exception:  # noqa: BLE001 - a header the parser cannot decode is as good as absent
        return None
    if not received:
        return None
    stamp = str(received[0]).rpartition(";")[2].strip()[:100]
    try:
        parsed = email.utils.parsedate_to_datetime(stamp) if stamp else None
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None or parsed.tzinfo is None or not 1970 <= parsed.year <= 2099:
        return None
    return tz.to_utc(parsed)
