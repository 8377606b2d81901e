"""Phase 1 of reading a thread: the text as lines, each with its quote depth, and the
headers that say where a message starts. Pure: no database.

Each line has a quote depth (the number of leading ``>``). A deeper quote is older than
the text around it (a top-posted reply quotes what it answers); at one depth, lower in
the text is later (a thread pasted in order).
"""

from __future__ import annotations

import datetime as dt
import email.utils
import re
from dataclasses import dataclass

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


@dataclass
class Thread:
    """The text a thread reads from, as lines."""

    text: str
    lines: list[Line]

    def headers(self, *names: str):
        """(line, name, value) of every header line named ``names``, top to bottom."""
        for line in self.lines:
            header = HEADER_RE.match(line.text)
            if header and header.group(1).lower() in names:
                yield line, header.group(1).lower(), header.group(2).strip()


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


def split_messages(text: str) -> Thread:
    """Phase 1: the thread's lines."""
    return Thread(text=text, lines=split_lines(text))


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


def date_before(lines: list[Line], line: Line) -> tuple[int, dt.datetime | None] | None:
    """The nearest ``Date:`` header above ``line`` at its depth: (index, instant)."""
    for i in range(line.index - 1, -1, -1):
        other = lines[i]
        if other.depth != line.depth:
            continue
        header = HEADER_RE.match(other.text)
        if header and header.group(1).lower() in {"date", "sent"}:
            return i, parse_date(header.group(2))
    return None
