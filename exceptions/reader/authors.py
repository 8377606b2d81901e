"""Phase 2 of reading a thread: who wrote each message. Pure: no database.

Each message's author is read from its own mark (``messages`` finds the marks):

- ``From:`` header: the name (Google Groups' "'Name' via kubernetes-sig-release" is
  Name) and the address;
- ``[Name]``: a line that is only a name in brackets (the Google Groups archive's copy);
- the Google Groups web page's header (the name line above ``unread,`` and the date);
- a quote's "On ..., NAME <addr> wrote:" line;
- else a signature: a closing ("Thanks,", "Best,", "Cheers,") followed by a name in the
  message's last lines.

An author that cannot be read is unknown (""), never taken from another message.
"On behalf of ..." in a message's own text ("Sending this on behalf of Antonio") is kept
as ``on_behalf_of``.
"""

from __future__ import annotations

import email.utils
import re
from dataclasses import dataclass, field

from exceptions.reader.messages import HEADER_RE, Line, Message, Thread, name_like

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


_CLOSING_RE = re.compile(
    r"^(?:thanks?(?: you)?(?: so much| again| all)?|many thanks|thx|regards|best(?: regards| wishes)?|all the best"
    r"|cheers|kind regards|warm regards|sincerely|br)[^\S\n]*[!,.]?$",
    re.I,
)
# "Sending this on behalf of my co-owner, who ...", "On behalf of Antonio, I'd like ...".
_BEHALF_RE = re.compile(
    r"(?:^|[.!?][^\S\n]+|\b(?:send|sending|sent|file|filing|filed|submit|submitting|submitted|writ(?:e|ing)"
    r"|post|posting|request|requesting|ask|asking)\b[^.\n]{0,60}?)\bon[^\S\n]+behalf[^\S\n]+of[^\S\n]+"
    r"(?P<who>[^.,;:!?()\n]{1,80})",
    re.I,
)
_BEHALF_TRIM_RE = re.compile(r"\s+(?:who|which|because|since|while|as)\b.*$", re.I | re.S)
_ATTRIBUTION_ADDRESS_RE = re.compile(r"<([^<>@\s]+@[^<>\s]+)>\s*wrote:\s*$")


@dataclass
class Author:
    name: str = ""  # "" when it cannot be read: unknown
    address: str = ""
    mark: str = ""  # how it was read: from_header, bracket, google_groups, attribution, signature
    on_behalf_of: str = ""


@dataclass
class Authors:
    """Phase 2's answer: the author of each message of the thread."""

    thread: Thread
    by_message: list[Author] = field(default_factory=list)

    def of(self, line: Line) -> Author:
        """Who wrote ``line``: its message's author (unknown when it cannot be read)."""
        return self.by_message[self.thread.message_of[line.index]]


def _own_lines(thread: Thread, message: Message) -> list[Line]:
    """The message's own text lines, not its mark's."""
    mark = message.mark.lines if message.mark is not None else range(0)
    return [
        thread.lines[i]
        for i in message.lines
        if i not in mark and thread.lines[i].depth == message.depth and not thread.lines[i].blank
    ]


def _signature(lines: list[Line]) -> str:
    """The name after the message's last closing, when it is among its last lines."""
    for k in range(len(lines) - 1, max(-1, len(lines) - 6), -1):
        if _CLOSING_RE.match(lines[k].text.strip()):
            after = lines[k + 1 : k + 4]
            if after and len(lines) - k - 1 <= 3 and name_like(after[0].text):
                return display_name(after[0].text)
            return ""
    return ""


def _on_behalf_of(lines: list[Line]) -> str:
    for line in lines:
        if HEADER_RE.match(line.text):
            continue
        match = _BEHALF_RE.search(line.text[:2000])
        if match:
            return _BEHALF_TRIM_RE.sub("", match["who"]).strip()[:200]
    return ""


def read_author(thread: Thread, message: Message) -> Author:
    """The author of one message, from its mark, else its signature."""
    own = _own_lines(thread, message)
    author = Author(on_behalf_of=_on_behalf_of(own))
    mark = message.mark
    if mark is not None and mark.kind == "headers" and mark.headers.get("from"):
        value = mark.headers["from"]
        author.name, author.address = display_name(value), parse_address(value)[1]
    elif mark is not None and mark.kind in {"bracket", "google_groups"}:
        author.name = display_name(mark.text)
    elif mark is not None and (mark.kind == "attribution" or mark.attribution):
        line = mark.text if mark.kind == "attribution" else mark.attribution
        author.name = attribution_name(line)
        address = _ATTRIBUTION_ADDRESS_RE.search(line)
        author.address = address.group(1) if address else ""
        if author.name:
            author.mark = "attribution"
            return author
    if author.name:
        author.mark = "from_header" if mark.kind == "headers" else mark.kind
        return author
    author.name = _signature(own)
    author.mark = "signature" if author.name else ""
    return author


def read_authors(thread: Thread) -> Authors:
    """Phase 2: each message's author."""
    return Authors(thread, [read_author(thread, message) for message in thread.messages])
