"""Phase 0 of reading a thread: the input as text. Pure: no database.

``source`` is pasted text, a raw message (``.eml``, MIME decoded), a whole mbox file,
bytes of any of these, or an ``email.message.Message``. An mbox file's messages are
sorted by ``Date:`` and joined, oldest first, as a thread pasted in order. Unreadable
input (empty, binary, a NUL byte, over ``MAX_CHARS``, an implausible Date: header) is
refused with ``UnreadableInput`` (400) and one sentence that says what to do.
"""

from __future__ import annotations

import datetime as dt
import email
import email.message
import email.policy
import html
import re

from exceptions.reader.messages import HEADER_RE, Line, parse_date
from releasecal import tz
from releasecal.errors import ValidationFailed

# A request thread is a few kilobytes; a long one with quoted replies some tens.
MAX_CHARS = 1_000_000


class UnreadableInput(ValidationFailed):
    """The input is not text the reader can read (400)."""

    code = "unreadable"


def _refuse(message: str, **extra) -> UnreadableInput:
    return UnreadableInput(message, extra=extra)


def _decode(data: bytes) -> str:
    if len(data) > MAX_CHARS * 4:
        raise _refuse(f"The input is {len(data) / 1e6:.1f} MB; the reader takes at most {MAX_CHARS:,} characters.")
    if b"\x00" in data:
        offset = data.index(b"\x00")
        raise _refuse(
            f"The input has a NUL byte at offset {offset}: it is binary or corrupted, not an email.", offset=offset
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _check_text(text: str) -> str:
    if len(text) > MAX_CHARS:
        raise _refuse(
            f"The text is {len(text):,} characters; the reader takes at most {MAX_CHARS:,} "
            "(a request thread is a few thousand). Paste the request and its replies only.",
            length=len(text),
        )
    if "\x00" in text:
        offset = text.index("\x00")
        raise _refuse(
            f"The text has a NUL byte at character {offset}: it is binary or corrupted, not an email.", offset=offset
        )
    if not text.strip():
        raise _refuse("The email is empty: there is nothing to read.")
    sample = text[:20000]
    control = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\t\n\r\f\v") or ch == "\ufffd")
    if control > max(8, len(sample) // 50):
        raise _refuse(
            f"This looks like binary data ({control} control or undecodable characters in the first "
            f"{len(sample):,}), not an email."
        )
    return text


_MIME_HEADER_RE = re.compile(r"^(?:mime-version|content-type|content-transfer-encoding)\s*:", re.I | re.M)


def html_to_text(markup: str) -> str:
    markup = re.sub(r"(?is)<(script|style)\b.*?</\1>", "", markup)
    markup = re.sub(r"(?i)<li\b[^>]*>", "\n* ", markup)
    markup = re.sub(r"(?i)<br\s*/?>|</(?:p|div|li|tr|h\d)>", "\n", markup)
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def unwrap_mime(text: str) -> str:
    """A raw message (``.eml`` with MIME headers) as readable text; other text unchanged.

    Quoted-printable and base64 bodies and encoded subjects are decoded; the text part
    is preferred, an HTML-only message is reduced to its text. Subject, From and Date
    are kept as header lines on top so the parser reads them like a pasted email.
    """
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    header_block = normalized.lstrip().split("\n\n", 1)[0]
    if not _MIME_HEADER_RE.search(header_block):
        return text
    try:
        message = email.message_from_string(normalized.lstrip(), policy=email.policy.default)
        part = message.get_body(preferencelist=("plain", "html"))
        content = part.get_content() if part is not None else ""
        if part is not None and part.get_content_type() == "text/html":
            content = html_to_text(content)
        headers = [f"{name}: {message[name]}" for name in ("From", "Date", "Subject") if message[name]]
    except RecursionError:
        raise _too_deep() from None
    except (LookupError, ValueError, TypeError, AttributeError):
        return text
    return "\n".join(headers) + "\n\n" + str(content)


# An mbox separator line, "From sender Thu Jan  1 00:00:00 2024", is read without a
# pattern: "From \S+.*\d{4}" on one long line backtracks in quadratic time ("From " +
# "a" * 40,000 kept a gunicorn worker past its timeout).
_MBOX_LINE_MAX = 1000


def _is_mbox_from_line(line: str) -> bool:
    if not line.startswith("From ") or len(line) > _MBOX_LINE_MAX:
        return False
    rest = line[5:].rstrip(" \t")
    return len(rest) >= 5 and not rest[0].isspace() and rest[-4:].isdigit()


def _parse_message(text: str) -> email.message.Message:
    try:
        return email.message_from_string(text, policy=email.policy.default)
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> UnreadableInput:
    # The standard library's parser recurses once per nested part: multipart/mixed nested
    # 3,000 deep raised RecursionError (a 500 at the public parse endpoint).
    return _refuse("The message's MIME parts are nested too deep to read; send the request as plain text.")


def _message_text(message: email.message.Message) -> str:
    """A message as the parser reads a pasted one: From/Date/Subject lines, then its text."""
    headers = [f"{name}: {message[name]}" for name in ("From", "Date", "Subject") if message[name]]
    try:
        if isinstance(message, email.message.EmailMessage):
            part = message.get_body(preferencelist=("plain", "html"))
        else:
            part = next((p for p in message.walk() if p.get_content_type() in {"text/plain", "text/html"}), None)
        if part is None:
            body = ""
        elif isinstance(part, email.message.EmailMessage):
            body = part.get_content()
        else:
            payload = part.get_payload(decode=True) or b""
            body = payload.decode(part.get_content_charset() or "utf-8", errors="replace")
        if part is not None and part.get_content_type() == "text/html":
            body = html_to_text(body)
    except RecursionError:
        raise _too_deep() from None
    except (LookupError, ValueError, TypeError, AttributeError) as exc:
        raise _refuse(f"The message's body could not be decoded ({exc.__class__.__name__}).") from None
    return "\n".join(headers) + "\n\n" + str(body)


def _split_mbox(text: str) -> list[str] | None:
    """The messages of an mbox file, oldest first; None when ``text`` is not one."""
    lines = text.replace("\r\n", "\n").lstrip("\n").split("\n")
    if not _is_mbox_from_line(lines[0]):
        return None
    chunks: list[list[str]] = []
    for number, line in enumerate(lines):
        # A separator ends its line (the last line of the file is text, as before).
        if _is_mbox_from_line(line) and (number + 1 < len(lines) or not chunks):
            chunks.append([])
        else:
            chunks[-1].append(line)
    messages = []
    for chunk in ("\n".join(c) for c in chunks if any(line.strip() for line in c)):
        chunk = re.sub(r"^>(>*From )", r"\1", chunk, flags=re.M)  # mboxrd quoting
        message = _parse_message(chunk)
        messages.append((parse_date(str(message["Date"] or "")), len(messages), _message_text(message)))
    # Oldest first: the parser reads a pasted thread top to bottom.
    messages.sort(key=lambda m: (m[0] is None, m[0] or dt.datetime.min.replace(tzinfo=dt.UTC), m[1]))
    return [m[2] for m in messages]


def source_text(source: str | bytes | email.message.Message) -> str:
    """The text the parser reads, from any accepted source; refuses unreadable input."""
    if isinstance(source, email.message.Message):
        return _check_text(_message_text(source))
    if isinstance(source, bytes | bytearray):
        source = _decode(bytes(source))
    if not isinstance(source, str):
        raise _refuse(f"Expected text, bytes or an email message, not {type(source).__name__}.")
    text = _check_text(source)
    messages = _split_mbox(text)
    if messages is not None:
        return _check_text("\n\n".join(messages))
    return text


# ------------------------------------------------------------------ plausibility

_YEAR_IN_DATE_RE = re.compile(r"\b(\d{1,4})\s+\d{1,2}:\d{2}")


def check_dates(lines: list[Line]) -> None:
    """Every Date: header must be an instant between 1970 and 2100 (a year 1 or 9999
    header is a forged or broken message, never a request's real time)."""
    for line in lines:
        header = HEADER_RE.match(line.text)
        if not header or header.group(1).lower() not in {"date", "sent"}:
            continue
        value = header.group(2).strip()
        instant = parse_date(value)
        # The year as written: the email parser reads "0001" as 2001 (two-digit years).
        year = _YEAR_IN_DATE_RE.search(value)
        written = int(year.group(1)) if year and len(year.group(1)) >= 3 else None
        try:
            if instant is not None:
                tz.check_plausible(instant, field="Date: header")
            if written is not None:
                tz.check_plausible_date(dt.date(max(written, 1), 1, 1), field="Date: header", shown=value[:60])
        except tz.ImplausibleInstant:
            raise _refuse(
                f"The Date: header {value[:60]!r} is not a plausible time for an email "
                "(expected between 1970 and 2099); fix it or give --received-at.",
                date=value[:60],
            ) from None
