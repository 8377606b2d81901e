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
from exceptions.reader.days import amendment_match, is_amendment_line, read_days, read_until
from exceptions.reader.messages import HEADER_RE, Line, Thread, date_before, normalized
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

    def as_dict(self) -> dict:
        return {
            "days": self.days,
            "until_text": self.until_text,
            "until_zone": self.until_zone,
            "text": self.text,
            "sent_at": tz.isoformat_utc(self.sent_at) if self.sent_at else None,
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


def read_amendments(thread: Thread, template: TemplateReading, *, base_date) -> AmendmentReading:
    """Phase 4: the amendments after the request (``template.base``); ``base_date`` is the
    request's own Date: header (``date_before`` of its line), or None."""
    base = template.base
    if base is None or template.days_read is None:
        return AmendmentReading()
    warnings: list[str] = []
    amendments = _amendments(thread.lines, template, base, warnings, base_date)
    return AmendmentReading(amendments=amendments, warnings=warnings)


def _amendments(
    lines: list[Line], template: TemplateReading, base: Occurrence, warnings: list[str], base_date
) -> list[Amendment]:
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
        if line.index in consumed or line.blank or HEADER_RE.match(line.text):
            continue
        match = amendment_match(line.text)
        if match:
            rest = line.text[match.end() :]
            u_text = read_until(rest)
            u_zone, more = tz.zone_from_text(u_text or rest)
            warnings.extend(more)
            add(_Signal(line, int(match["days"]), u_text, u_zone, line.text.strip()))
        elif is_amendment_line(line.text) and (-line.depth, line.index) > base.key:
            warnings.append(
                f"{line.text.strip()!r} changes the days in words; write the number in digits. It was ignored."
            )

    amendments: list[Amendment] = []
    current = (days, until_text)
    previous: _Signal | None = None
    for signal in sorted(signals.values(), key=lambda s: s.key):
        if (
            amendments
            and previous is not None
            and signal.line.depth == previous.line.depth
            and signal.days == amendments[-1].days
        ):
            last = amendments[-1]
            last.text = f"{last.text}\n{signal.text}"
            last.until_text = last.until_text or signal.until_text
            last.until_zone = last.until_zone or signal.until_zone
            previous = signal
            continue
        if signal.days == current[0] and (not signal.until_text or signal.until_text == current[1]):
            continue  # repeats what is already asked
        sent_at = None
        found = date_before(lines, signal.line)
        if found is not None and (base_date is None or found[0] != base_date[0]):
            sent_at = found[1]
        amendments.append(
            Amendment(
                days=signal.days,
                until_text=signal.until_text[: LENGTH_LIMITS["until_text"]],
                until_zone=signal.until_zone,
                text=signal.text,
                sent_at=sent_at,
            )
        )
        current = (signal.days, signal.until_text)
        previous = signal
    return amendments
