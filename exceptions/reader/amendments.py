"""Phase 4 of reading a thread: later changes of the requested days. Pure.

After the original request, in thread order, any other "Additional time needed" line and
any sentence that changes the days ("Updating the time requested to N days", "update: we
need N days", "actually 4 days", ...) is an amendment. The same sentence quoted again is
one amendment; a statement that repeats the current days is no change; statements in one
message (same depth, no other change between) giving the same days are merged into one
amendment ("Updating to 2 days." followed by the re-quoted "Additional time needed ...: 2").
An amendment's ``sent_at`` is a later ``Date:`` header at its own depth, else None (the
caller then uses the request's time).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from exceptions.fields import LENGTH_LIMITS
from exceptions.reader import budget
from exceptions.reader.authors import Authors
from exceptions.reader.days import amendment_match, is_amendment_line, read_days, read_until
from exceptions.reader.messages import HEADER_RE, Line, Thread, normalized
from exceptions.reader.template import Occurrence, TemplateReading, clean_answer, until_of
from releasecal import tz


@dataclass
class Amendment:
    """A later change of the requested days, in thread order."""

    days: int
    until_text: str = ""
    until_zone: str = ""
    text: str = ""
    sent_at: dt.datetime | None = None
    # The answers the amending message gives again (reason, risks_adding, risks_cutting):
    # its revision takes them; a field the message does not give stays as it was.
    prose: dict[str, str] = field(default_factory=dict)
    author: str = ""  # who wrote the amending message ("" when it cannot be read)

    def as_dict(self) -> dict:
        return {
            "days": self.days,
            "until_text": self.until_text,
            "until_zone": self.until_zone,
            "text": self.text,
            "sent_at": tz.isoformat_utc(self.sent_at) if self.sent_at else None,
            "prose": dict(self.prose),
            "author": self.author,
        }


@dataclass
class AmendmentReading:
    """Phase 4's answer."""

    amendments: list[Amendment] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Signal:
    line: Line
    days: int
    until_text: str
    until_zone: str
    text: str

    @property
    def key(self) -> tuple[int, int]:
        return self.line.order


_PROSE = ("reason", "risks_adding", "risks_cutting")


def _prose(thread: Thread, template: TemplateReading, line: Line) -> dict[str, str]:
    """The prose answers the message holding ``line`` gives after the request (never the
    request's own copies)."""
    base = template.base
    message = thread.message_of[line.index]
    prose: dict[str, str] = {}
    for occ in template.occurrences:
        if (
            occ.name in _PROSE
            and occ is not template.chosen.get(occ.name)
            and thread.message_of[occ.line.index] == message
            and occ.key > base.key
        ):
            value = clean_answer(occ.value, occ.name)
            if value:
                prose.setdefault(occ.name, value)
    return prose


def read_amendments(thread: Thread, template: TemplateReading, authors: Authors, *, base_date) -> AmendmentReading:
    """Phase 4: the amendments after the request (``template.base``), each with the prose
    and the author of its own message; ``base_date`` is the request's own Date: header
    (``Thread.date_of`` its line), or None."""
    base = template.base
    if base is None or template.days_read is None:
        return AmendmentReading()
    warnings: list[str] = []
    amendments = _amendments(thread, template, base, warnings, base_date)
    for amendment, line in amendments:
        amendment.author = authors.of(line).name
    return AmendmentReading(amendments=[a for a, _ in amendments], warnings=warnings)


def _amendments(
    thread: Thread, template: TemplateReading, base: Occurrence, warnings: list[str], base_date
) -> list[tuple[Amendment, Line]]:
    lines = thread.lines
    occurrences, consumed = template.occurrences, template.consumed
    days, until_text = template.days_read, template.fields.until_text
    base_text = normalized(base.line.text)
    signals: dict[str, _Signal] = {}

    def add(signal: _Signal) -> None:
        if signal.key <= base.key:
            return  # before the request in the thread (a greeting, an older copy)
        norm = normalized(signal.text)
        if norm == base_text:
            return  # the request's own line, quoted again
        known = signals.get(norm)
        if known is None or signal.key < known.key:
            signals[norm] = signal

    for occ in occurrences:
        if occ.name != "days" or occ is base:
            continue
        value = clean_answer(occ.value, "days")
        got, problem, more = read_days(value)
        if got is None:
            warnings.append(f"A later 'Additional time needed' line could not be read ({problem}); it was ignored.")
            continue
        warnings.extend(more)
        u_text, u_zone, more = until_of(occ, value)
        warnings.extend(more)
        add(_Signal(line=occ.line, days=got, until_text=u_text, until_zone=u_zone, text=occ.line.text.strip()))

    for line in lines:
        if not line.index % 512:
            budget.check()
        if line.index in consumed or line.blank or HEADER_RE.match(line.text):
            continue
        match = amendment_match(line.text)
        if match and len(match["days"]) > 4:
            # int() of 5,000 digits raised ValueError (a 500): no day count has five digits.
            digits = len(match["days"])
            warnings.append(f"A change of the days to a {digits:,}-digit number is not a number of days; ignored.")
        elif match:
            rest = line.text[match.end() :]
            u_text = read_until(rest)
            u_zone, more = tz.zone_from_text(u_text or rest)
            warnings.extend(more)
            add(_Signal(line, int(match["days"]), u_text, u_zone, line.text.strip()))
        elif is_amendment_line(line.text) and (-line.depth, line.index) > base.key:
            warnings.append(
                f"{line.text.strip()!r} changes the days in words; write the number in digits. It was ignored."
            )

    amendments: list[tuple[Amendment, Line]] = []
    current = (days, until_text)
    previous: _Signal | None = None
    for signal in sorted(signals.values(), key=lambda s: s.key):
        if (
            amendments
            and previous is not None
            and signal.line.depth == previous.line.depth
            and signal.days == amendments[-1][0].days
        ):
            last = amendments[-1][0]
            last.text = f"{last.text}\n{signal.text}"
            last.until_text = last.until_text or signal.until_text
            last.until_zone = last.until_zone or signal.until_zone
            for name, value in _prose(thread, template, signal.line).items():
                last.prose.setdefault(name, value)
            previous = signal
            continue
        if signal.days == current[0] and (not signal.until_text or signal.until_text == current[1]):
            continue  # repeats what is already asked
        sent_at = None
        found = thread.date_of(signal.line)
        if found is not None and (base_date is None or found[0] != base_date[0]):
            sent_at = found[1]
        amendment = Amendment(
            days=signal.days,
            until_text=signal.until_text[: LENGTH_LIMITS["until_text"]],
            until_zone=signal.until_zone,
            text=signal.text,
            sent_at=sent_at,
            prose=_prose(thread, template, signal.line),
        )
        amendments.append((amendment, signal.line))
        current = (signal.days, signal.until_text)
        previous = signal
    return amendments
