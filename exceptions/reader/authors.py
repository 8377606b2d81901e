"""Phase 2 of reading a thread: who wrote what. Pure: no database.

The requester is whoever wrote the message holding the template: the nearest From:
header above it at its depth, else the "On ..., NAME <addr> wrote:" line that
introduces its quote; Google Groups' "'Name' via kubernetes-sig-release" is Name.
"""

from __future__ import annotations

import email.utils
import re
from dataclasses import dataclass

from exceptions.reader.messages import HEADER_RE, Line, Thread

# RFC 5322 caps a line at 998 characters. The standard library's address parser takes
# quadratic time on a longer hostile value (7 s on 50,000 "@") and recurses past Python's
# limit on nested ones (":<" * 2,000 raised RecursionError).
_ADDRESS_MAX = 998


def parse_address(value: str) -> tuple[str, str]:
    """``email.utils.parseaddr``, bounded: (display name, address); ("", "") when the value
    nests too deep to read."""
    try:
        return email.utils.parseaddr(value[:_ADDRESS_MAX])
    except RecursionError:
        return "", ""


def display_name(value: str) -> str:
    """The person in a From: value; Google Groups' "'Name' via kubernetes-sig-release" is Name."""
    if "@" in value or "<" in value:
        display, address = parse_address(value)
        name = display or address or value.strip()
    else:
        name = value.strip().strip("\"'")
    name = " ".join(name.split())  # one space between words: the pattern below is linear then
    via = re.match(r"^'?(?P<name>.+?)'? via \S.*$", name)
    return (via["name"] if via else name).strip()


def author_before(lines: list[Line], line: Line) -> str:
    """Who wrote ``line``: the nearest From: header above it at its depth, else the
    "On ..., NAME <addr> wrote:" line that introduces its quote."""
    for i in range(line.index - 1, -1, -1):
        other = lines[i]
        if other.depth == line.depth:
            header = HEADER_RE.match(other.text)
            if header and header.group(1).lower() == "from":
                return display_name(header.group(2))
        elif other.depth < line.depth:
            who = attribution_name(other.text)
            if who:
                return who
            if other.text.strip():
                break
    return ""


def address_before(lines: list[Line], line: Line) -> str:
    for i in range(line.index - 1, -1, -1):
        other = lines[i]
        header = HEADER_RE.match(other.text) if other.depth == line.depth else None
        if header and header.group(1).lower() == "from":
            return parse_address(header.group(2))[1]
        if other.depth < line.depth and other.text.strip():
            address = re.search(r"<([^<>@\s]+@[^<>\s]+)>\s*wrote:\s*$", other.text)
            return address.group(1) if address else ""
    return ""


def attribution_name(text: str) -> str:
    """The name in "On Tue, Jul 23, 2024 at 8:10 PM Jane Doe <jane@example.com> wrote:"."""
    # Whitespace collapsed first: "\s*" beside a lazy ".+?" is quadratic on long blanks.
    match = re.match(r"^on (?P<body>.+?) ?wrote: ?$", " ".join(text.split()), re.I)
    if not match:
        return ""
    body = re.sub(r" ?(?:<[^<>]*>|\([^()]*\))$", "", match["body"])
    stamps = re.finditer(r"\b(?:[AP]M|\d{1,2}:\d{2}(?::\d{2})?(?:\s*[+-]\d{4})?|\d{4})\b,?", body, re.I)
    cut = max((stamp.end() for stamp in stamps), default=0)
    name = body[cut:].strip(" ,")
    return display_name(name) if name and len(name) <= 100 else ""


@dataclass
class Authors:
    """Phase 2's answer: the thread's first From: header, and who wrote any line."""

    thread: Thread
    sender: str = ""  # the first From: header's person, anywhere in the text
    sender_address: str = ""

    def of(self, line: Line) -> tuple[str, str]:
        """(name, address) of whoever wrote ``line``; "" for what cannot be told."""
        return author_before(self.thread.lines, line), address_before(self.thread.lines, line)


def read_authors(thread: Thread) -> Authors:
    """Phase 2: the first From: anywhere that names someone, top block first."""
    authors = Authors(thread)
    for line in thread.lines:
        header = HEADER_RE.match(line.text)
        if header and header.group(1).lower() == "from" and not authors.sender:
            value = header.group(2).strip()
            authors.sender, authors.sender_address = display_name(value), parse_address(value)[1]
    return authors
