"""Phase 1 of reading a thread: the text as lines, each with its quote depth, cut into
messages at the thread's own author marks. Pure: no database.

Each line has a quote depth (the number of leading ``>``). A deeper quote is older than
the text around it (a top-posted reply quotes what it answers); at one depth, lower in
the text is later (a thread pasted in order).

A message starts at an author mark at its depth (``authors`` reads the name in it):

- a header block (``From:``, ``Date:``, ``Sent:``, ``Subject:`` ... lines together);
- a line that is only a name in brackets, ``[Tim Hockin]``, as the Google Groups
  archive's plain-text copy marks each message;
- the Google Groups web page's header, copied with the text: the name (or "'Name' via
  dev"), ``unread,``, the date, ``to dev, kubernetes-sig-release``;
- a quote (a deeper depth) after a shallower line: one message, its author named by
  the "On ..., NAME <addr> wrote:" line above it when there is one.

Text before the first mark is a message of its own (its author may be read from a
signature). A shallower message goes on after a quote it holds (an inline reply).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from dataclasses import dataclass, field

from exceptions.reader import budget
from releasecal import tz

_QUOTE_RE = re.compile(r"^((?:[ \t]*>)+)[ \t]?")
_BULLET_RE = re.compile(r"^\s*(?:[*\u2022\u2023\u25e6\u25aa\u00b7+\-\u2013\u2014]|\d{1,2}[.)])\s+")
_FENCE_RE = re.compile(r"^\s*(?:```|~~~)[\w-]*\s*$")
HEADER_RE = re.compile(r"^\s*(from|date|sent|subject|to|cc|reply-to)\s*:\s*(.*)$", re.I)
ATTRIBUTION_RE = re.compile(r"^\s*(?:on\s.{4,200}\swrote:|-{3,}\s*(?:original|forwarded)\s+message\s*-{3,})\s*$", re.I)
SIGNOFF_RE = re.compile(
    r"^\s*(?:(?:thanks?(?: you)?|many thanks|thx|regards|best(?: regards| wishes)?|cheers|kind regards|--|-- )"
    r"\s*[!,.]?\s*$"
    r"|thanks?(?: you)?(?: (?:so much|in advance|for (?:your|the) (?:consideration|review|time|help)|for considering"
    r"(?: (?:this|it))?))[!,. ]*\S{0,40}$|(?:please )?let (?:me|us) know\b|(?:happy|glad) to (?:answer|discuss)\b)",
    re.I,
)
# A Markdown link, [text](url). Neither part may hold the other's opening bracket, so a
# failed match ends at the next "[" or "(": linear time on hostile text ("[" * 50,000 took
# 35 s when the text could hold "[" and the address "(").
MD_LINK_RE = re.compile(r"\[([^\[\]\n]+)\]\([^()\s]+\)")


@dataclass
class Line:
    index: int
    depth: int
    text: str  # without quote markers; trailing whitespace removed

    @property
    def blank(self) -> bool:
        return not self.text.strip()

    @property
    def order(self) -> tuple[int, int]:
        """Thread order: deeper quotes are older, then top to bottom."""
        return (-self.depth, self.index)


# A line that is a name in brackets and nothing else: "[Angelos Kolaitis]".
_BRACKET_MARK_RE = re.compile(r"^[^\S\n]*\[(?P<name>[^\[\]\n]{1,80})\][^\S\n]*$")
_NAME_WORD_RE = re.compile(r"[^\W\d_][^\W\d_.'\u2019-]*(?:[.'\u2019-][^\W\d_]*)*\.?")
_NAME_PARTICLES = frozenset({"van", "von", "de", "der", "den", "da", "del", "di", "la", "le", "du", "bin", "al"})
# Bracketed words that tag a message rather than name its author ("[Update]" alone on a line).
_TAGS = frozenset(
    {"draft", "update", "updated", "edit", "edited", "resend", "reminder", "urgent", "fyi", "note", "optional",
     "required", "action required", "important", "correction", "proposal", "request", "exception request"}
)  # fmt: skip
_VIA_RE = re.compile(r"^'?(?P<name>[^']{1,80}?)'? via \S{1,80}$")
_GG_UNREAD_RE = re.compile(r"^[^\S\n]*unread,?[^\S\n]*$", re.I)
_GG_DATE_RE = re.compile(
    r"^[^\S\n]*(?:[A-Z][a-z]{2}\s\d{1,2},\s\d{4}|\d{1,2}/\d{1,2}/\d{2,4}),?\s\d{1,2}:\d{2}(?::\d{2})?\s?[AP]M\b"
)
_GG_TO_RE = re.compile(r"^[^\S\n]*to\s\S", re.I)


def name_like(text: str) -> bool:
    """True for a person's name as a mark gives it: one to six capitalised words
    ("Tim Hockin", "Jean-Luc O'Neill", "Ana de la Cruz"), or "'Name' via list"."""
    text = " ".join(text.split())
    via = _VIA_RE.match(text)
    if via:
        text = via["name"].strip()
    words = text.split(" ")
    if not 1 <= len(words) <= 6 or len(text) > 80:
        return False
    capitalised = 0
    for word in words:
        if word.lower() in _NAME_PARTICLES:
            continue
        if not _NAME_WORD_RE.fullmatch(word) or not word[0].isupper():
            return False
        if len(word) > 1 and word.isupper() and not word.endswith("."):
            return False  # "[WIP]", "[LGTM]": a tag, not a name
        capitalised += 1
    return capitalised > 0


@dataclass
class Mark:
    """Where a message says who wrote it."""

    kind: str  # "headers" | "bracket" | "google_groups" | "attribution"
    lines: range  # the mark's own lines (not the message's text)
    text: str = ""  # the name as written (bracket, Google Groups), or the attribution line
    headers: dict[str, str] = field(default_factory=dict)  # a header block's first value of each name
    attribution: str = ""  # the "On ..., NAME wrote:" line above a quote this mark begins


@dataclass
class Message:
    """One message of the thread: its lines at one depth, from its mark to the next."""

    index: int
    depth: int
    mark: Mark | None
    lines: list[int] = field(default_factory=list)  # indexes into Thread.lines, the mark's included

    @property
    def sent_at(self) -> dt.datetime | None:
        """The message's own Date: (or Sent:) header, when its mark is a header block."""
        if self.mark is None or self.mark.kind != "headers":
            return None
        value = self.mark.headers.get("date") or self.mark.headers.get("sent")
        return parse_date(value) if value else None


@dataclass
class Thread:
    """The text a thread reads from: its lines and its messages."""

    text: str
    lines: list[Line]
    messages: list[Message] = field(default_factory=list)
    message_of: list[int] = field(default_factory=list)  # per line, the index of its message

    def message(self, line: Line) -> Message:
        return self.messages[self.message_of[line.index]]

    def date_of(self, line: Line) -> tuple[int, dt.datetime | None] | None:
        """The ``Date:`` (or ``Sent:``) header of the message holding ``line``: (its line's
        index, the instant, None when unreadable); None when the message has none."""
        mark = self.message(line).mark
        if mark is None or mark.kind != "headers":
            return None
        for i in mark.lines:
            header = HEADER_RE.match(self.lines[i].text)
            if header and header.group(1).lower() in {"date", "sent"}:
                return i, parse_date(header.group(2))
        return None

    @property
    def mark_starts(self) -> set[int]:
        """Indexes of the first line of every mark: an answer never runs past one."""
        return {m.mark.lines.start for m in self.messages if m.mark is not None and len(m.mark.lines)}


def split_lines(text: str) -> list[Line]:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = text.replace("\u00a0", " ").replace("\u200b", "").replace("\ufeff", "").replace("\t", "    ")
    lines = []
    for index, raw in enumerate(text.split("\n")):
        match = _QUOTE_RE.match(raw)
        depth = match.group(1).count(">") if match else 0
        body = raw[match.end() :] if match else raw
        if _FENCE_RE.match(body):
            body = ""  # a code fence around the template is layout, not text
        lines.append(Line(index=index, depth=depth, text=body.rstrip()))
    return lines


def _header_block(lines: list[Line], i: int) -> Mark | None:
    """The header lines starting at ``i`` (at one depth, none blank), when ``i`` starts them."""
    line = lines[i]
    if not HEADER_RE.match(line.text):
        return None
    if i > 0 and lines[i - 1].depth == line.depth and HEADER_RE.match(lines[i - 1].text):
        return None  # inside a block that started above
    headers: dict[str, str] = {}
    end = i
    while end < len(lines) and lines[end].depth == line.depth:
        header = HEADER_RE.match(lines[end].text)
        if not header:
            break
        headers.setdefault(header.group(1).lower(), header.group(2).strip())
        end += 1
    return Mark("headers", range(i, end), headers=headers)


def _google_groups_header(lines: list[Line], i: int) -> Mark | None:
    """Name / unread, / date / to ...: the web page's header, copied with the message."""
    line = lines[i]
    if not name_like(line.text):
        return None
    following = [j for j in range(i + 1, min(i + 8, len(lines))) if not lines[j].blank][:4]
    if not following or lines[following[0]].depth != line.depth:
        return None
    if not (_GG_UNREAD_RE.match(lines[following[0]].text) or _GG_DATE_RE.match(lines[following[0]].text)):
        return None
    for j in following[1:]:
        if lines[j].depth != line.depth:
            return None
        if _GG_TO_RE.match(lines[j].text):
            return Mark("google_groups", range(i, j + 1), text=line.text.strip())
        if not (_GG_DATE_RE.match(lines[j].text) or _GG_UNREAD_RE.match(lines[j].text)):
            return None
    return None


def mark_at(lines: list[Line], i: int) -> Mark | None:
    """The author mark that starts at line ``i``, if one does."""
    line = lines[i]
    if line.blank:
        return None
    block = _header_block(lines, i)
    if block is not None:
        return block
    bracket = _BRACKET_MARK_RE.match(line.text)
    if bracket and name_like(bracket["name"]) and " ".join(bracket["name"].lower().split()) not in _TAGS:
        return Mark("bracket", range(i, i + 1), text=bracket["name"].strip())
    return _google_groups_header(lines, i)


def split_messages(text: str) -> Thread:
    """Phase 1: the thread's lines and its messages (see the module docstring)."""
    lines = split_lines(text)
    thread = Thread(text=text, lines=lines, message_of=[0] * len(lines))
    open_at: dict[int, Message] = {}  # the message going on at each depth
    previous: Line | None = None  # the last non-blank line
    skip_to = 0

    def start(depth: int, mark: Mark | None) -> Message:
        message = Message(index=len(thread.messages), depth=depth, mark=mark)
        thread.messages.append(message)
        open_at[depth] = message
        for deeper in [d for d in open_at if d > depth]:
            del open_at[deeper]
        return message

    for line in lines:
        if not line.index % 512:
            budget.check()
        if line.index < skip_to:
            message = open_at[line.depth]
            previous = line if not line.blank else previous
        elif line.blank:
            message = open_at.get(line.depth) or (thread.messages[-1] if thread.messages else start(line.depth, None))
        else:
            # A quote begins here: its author is named by the attribution above it, if any.
            above = previous if previous is not None and previous.depth < line.depth else None
            attribution = above.text if above is not None and ATTRIBUTION_RE.match(above.text) else ""
            mark = mark_at(lines, line.index)
            if mark is not None:
                mark.attribution = attribution
                message = start(line.depth, mark)
                skip_to = mark.lines.stop
            elif line.depth not in open_at or above is not None:
                message = start(line.depth, Mark("attribution", range(0), text=attribution) if attribution else None)
            else:
                message = open_at[line.depth]
            previous = line
        message.lines.append(line.index)
        thread.message_of[line.index] = message.index
    return thread


def strip_bullet(text: str) -> str:
    text = _BULLET_RE.sub("", text, count=1)
    # Bold keys: "**SIG:** node", and "*SIG:* node" as mail clients render HTML bold.
    return re.sub(r"^[*_]+", "", text.replace("**", "").replace("__", "").strip()).strip()


def normalized(text: str) -> str:
    """A line as compared with its quoted copies: no bullet, one space, lower case."""
    return re.sub(r"\s+", " ", strip_bullet(text)).strip().lower()


def parse_date(value: str) -> dt.datetime | None:
    try:
        parsed = email.utils.parsedate_to_datetime(value.strip())
        if parsed is None:
            return None
        if parsed.tzinfo is None:  # "-0000": the time is UTC, the sender's zone unknown (RFC 5322)
            parsed = parsed.replace(tzinfo=dt.UTC)
        return tz.to_utc(parsed)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None  # year 1 at a negative offset overflows; the reader refuses such dates
