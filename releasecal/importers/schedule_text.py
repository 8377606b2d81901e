"""Reading the free-text times of published release schedules.

Kubernetes writes its deadlines by hand, for example::

    02:00 UTC Friday 14th June 2024 / 19:00 PDT Thursday 13th June 2024
    Thursday 9th October 2025 (AoE) / Friday 10th October 2025, 12:00 UTC
    Monday 6th - Thursday 9th November 2023
    Mon August 23, 2021

``parse_when`` turns such a text into an instant (or a date, or a dated window) and a
list of warnings. The UTC part, when there is one, is authoritative; every other part is
checked against it (zone label in force at that instant, local hour and date, weekday)
and every disagreement becomes a warning, so a wrong "PDT" in February is reported,
never silently kept. Text it cannot read raises ``ValidationFailed``.

Labels and times are computed by ``releasecal.tz``, and a date and a clock time are
found by its one reader of written times (``tz.find_written_date``,
``tz.find_written_clock``; month and weekday names from ``tz.names``), as a written
deadline's are; this module adds the schedule's rules: the year placed from the whole
release, the UTC part checked against the others, "24:00" as the end of the day.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from releasecal import tz
from releasecal.errors import ValidationFailed

PACIFIC = tz.PACIFIC

_LABEL = re.compile(r"\(?\b(?P<label>[A-Za-z]{1,7})\b\)?")
# The text holds no "[" and the address no "(": a failed match ends at the next one
# (linear time; with them, a long run of "[" took quadratic time).
_MD_LINK = re.compile(r"\[([^\[\]]+)\]\(([^()\s]+)\)")
_MD_REF = re.compile(r"\[([^\[\]]+)\](?:\[[^\[\]]*\])?")


def clean_markdown(text: str) -> tuple[str, str]:
    """Strip the markdown a README table cell carries; return (text, first link URL)."""
    link = ""
    match = _MD_LINK.search(text)
    if match:
        link = match.group(2)
    text = _MD_LINK.sub(r"\1", text)
    text = _MD_REF.sub(r"\1", text)
    text = text.replace("**", "").replace("__", "").replace("`", "")
    # "[Enhancements Freeze][Enhancements Freeze (EOD PST)": an unclosed reference
    text = re.sub(r"\[[^\][(]*(?=\s*\(|$)", "", text)
    return " ".join(text.split()), link


@dataclass
class WhenPart:
    """One side of a ``/``-separated time text, as written."""

    raw: str
    day: dt.date | None = None
    day_end: dt.date | None = None
    date_text: str = ""
    weekday: int | None = None
    weekday_end: int | None = None
    date_text_end: str = ""
    time: dt.time | None = None
    label: str | None = None
    end_of_day: bool = False
    year_assumed: int | None = None
    typos: list[str] = field(default_factory=list)

    @property
    def zone(self) -> str | None:
        return tz.zone_for_label(self.label) if self.label else None

    @property
    def is_utc(self) -> bool:
        return self.zone == "UTC"

    @property
    def is_aoe(self) -> bool:
        return self.zone == tz.AOE


@dataclass
class ParsedWhen:
    """The reading of a time text: an instant, or a date (optionally a window)."""

    text: str
    at: dt.datetime | None = None
    on_date: dt.date | None = None
    ends_on: dt.date | None = None
    zone: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def first_day(self) -> dt.date | None:
        return self.on_date or (tz.local_date(self.at, self.zone) if self.at else None)


def _infer_year(month: int, day: int, weekday: int | None, hint: dt.date | None) -> int:
    """A date written without its year: the year that keeps it near the rest of the
    schedule (``hint``), preferring the one whose weekday matches the text."""
    base = hint or tz.utc_now().date()
    candidates = []
    for year in (base.year, base.year + 1, base.year - 1):
        try:
            candidates.append(dt.date(year, month, day))
        except ValueError:
            continue
    if not candidates:
        raise ValidationFailed(f"There is no day {day} in month {month}.")
    near = sorted(candidates, key=lambda d: abs((d - base).days))
    if weekday is not None:
        for candidate in near:
            if candidate.weekday() == weekday and abs((candidate - base).days) < 200:
                return candidate.year
    return near[0].year


@dataclass(frozen=True)
class WrittenDate:
    """A date as written: its year is None when the text gives none."""

    month: int
    day: int
    weekday: int | None
    year: int | None


class DateRecorder:
    """A year rule that places nothing: it records every date read, so a release's dates
    can be looked at together before any year is decided."""

    def __init__(self) -> None:
        self.dates: list[WrittenDate] = []


@dataclass(frozen=True)
class YearPlacement:
    """Where a release's dates without a year go: the cycle starts in ``year`` in
    ``first_month``; a month before ``first_month`` is in the following year.
    ``why`` says what placed it (repeated in each row's warning)."""

    year: int
    first_month: int
    why: str

    def year_for(self, month: int) -> int:
        return self.year if month >= self.first_month else self.year + 1


YearRule = dt.date | YearPlacement | DateRecorder | None


def _year(rule: YearRule, month: int, day: int, weekday: int | None, written: int | None, text: str) -> int:
    if isinstance(rule, DateRecorder):
        rule.dates.append(WrittenDate(month, day, weekday, written))
        return written or 2000  # a leap year: 29 February reads
    if written is not None:
        return written
    if isinstance(rule, YearPlacement):
        return rule.year_for(month)
    if isinstance(rule, dt.date):
        return _infer_year(month, day, weekday, rule)
    raise ValidationFailed(
        f"'{text.strip(' ,')}' has no year, and nothing in the schedule says which year it is; write the year.",
        extra={"text": text},
    )


def _make_date(year: int, month: int, day: int, text: str) -> dt.date:
    try:
        return dt.date(year, month, day)
    except ValueError:
        raise ValidationFailed(f"'{text}' is not a real date.", extra={"text": text}) from None


def _read_date(part: WhenPart, text: str, year_hint: YearRule) -> str:
    """Find the date (or date range) in ``text`` (``tz.find_written_date``); fill
    ``part``, placing a missing year by ``year_hint``; return the rest of the text."""
    written = tz.find_written_date(text)
    if written is None:
        return text
    part.typos.extend(written.ordinal_typos)
    rest = (text[: written.start] + " " + text[written.end :]).strip()
    part.weekday = written.weekday
    if written.iso:
        try:
            part.day = dt.date(written.year, written.month, written.day)
        except ValueError:
            raise ValidationFailed(f"'{written.iso}' is not a real date.") from None
        part.date_text = written.text
        return rest
    if written.last_day is not None:
        m1, d1, m2, d2 = written.month, written.day, written.last_month, written.last_day
        part.weekday_end = written.last_weekday
        if isinstance(year_hint, DateRecorder):
            _year(year_hint, m1, d1, part.weekday, written.year, written.written)
        year = _year(year_hint, m2, d2, part.weekday_end, written.year, written.written)
        if written.year is None and not isinstance(year_hint, DateRecorder):
            part.year_assumed = year
        year1 = year - 1 if m1 > m2 else year
        part.day = _make_date(year1, m1, d1, written.written)
        part.day_end = _make_date(year, m2, d2, written.written)
        part.date_text, part.date_text_end = written.first_text, written.last_text
        if part.day_end < part.day:
            raise ValidationFailed(f"The range '{written.text}' ends before it starts.")
        return rest
    year = _year(year_hint, written.month, written.day, part.weekday, written.year, written.written)
    if written.year is None and not isinstance(year_hint, DateRecorder):
        part.year_assumed = year
    part.day = _make_date(year, written.month, written.day, written.written)
    part.date_text = written.text
    return rest


def _read_part(raw: str, year_hint: YearRule) -> WhenPart:
    part = WhenPart(raw=raw.strip())
    rest = _read_date(part, part.raw, year_hint)
    clock = tz.find_written_clock(rest)
    if clock:
        hour, minute = clock.hour, clock.minute
        if clock.ampm:
            if not 1 <= hour <= 12:
                raise ValidationFailed(f"'{clock.written}' is not a valid time.")
            hour = hour % 12 + (12 if clock.ampm == "p" else 0)
        if hour > 23 or minute > 59:
            if hour == 24 and minute == 0:
                part.end_of_day = True
            else:
                raise ValidationFailed(f"'{clock.written}' is not a valid time.")
        else:
            part.time = dt.time(hour, minute)
        rest = rest[: clock.start] + " " + rest[clock.end :]
    if tz.END_OF_DAY_WORDS.search(rest):
        part.end_of_day = True
        rest = tz.END_OF_DAY_WORDS.sub(" ", rest)
    for match in _LABEL.finditer(rest):
        if part.label:
            break
        word = match["label"]
        if tz.zone_for_label(word) and (word.isupper() or word.upper() in {"AOE", "PACIFIC"}):
            part.label = word
            continue
        if word.isupper() and 2 <= len(word) <= 5 and word.endswith("T"):
            raise ValidationFailed(
                f"Unknown time zone label '{word}' in '{raw.strip()}'.", extra={"label": word, "text": raw}
            )
    if part.is_aoe and part.time is None:
        # A bare "(AoE)" date is a deadline at the end of that day Anywhere on Earth.
        part.end_of_day = True
    return part


def _weekday_name(day: dt.date) -> str:
    return tz.render_date(day).split(" ", 1)[0]


def _check_weekdays(part: WhenPart, warnings: list[str]) -> None:
    for written, day, text in (
        (part.weekday, part.day, part.date_text),
        (part.weekday_end, part.day_end, part.date_text_end),
    ):
        if written is not None and day is not None and written != day.weekday():
            warnings.append(f"weekday mismatch: '{text}' is a {_weekday_name(day)} ({tz.render_date(day)})")


def _check_local(part: WhenPart, instant: dt.datetime, default_zone: str, warnings: list[str]) -> None:
    """Check a local part (label, hour, date) against the authoritative instant."""
    zone = part.zone or default_zone
    actual_local = tz.to_zone(instant, zone)
    actual_abbr = tz.abbreviation(instant, zone)
    shown_actual = tz.render_in_zone(instant, zone)
    shown_utc = tz.render_in_zone(instant, "UTC")
    if part.time is None and part.end_of_day and part.day is not None:
        expected = tz.end_of_day(part.day, zone)
        if expected != instant:
            warnings.append(
                f"local/UTC mismatch: end of day {tz.render_date(part.day)} {part.label or zone} "
                f"is {tz.render_in_zone(expected, 'UTC')}, not {shown_utc}"
            )
        return
    if part.label and part.label.upper() not in tz.GENERIC_LABELS and part.label.upper() != actual_abbr.upper():
        message = (
            f"wrong zone label '{part.label}': on {tz.render_date(actual_local.date())} {zone} observes "
            f"{actual_abbr} (UTC{tz.format_offset(actual_local.utcoffset())}), so {shown_utc} is {shown_actual}"
        )
        literal = tz.label_offsets(zone, actual_local.year).get(part.label.upper())
        if literal is not None and part.time is not None and part.day is not None:
            read_literally = dt.datetime.combine(part.day, part.time, tzinfo=dt.timezone(literal))
            if read_literally != instant:
                message += (
                    f"; read literally, '{part.time:%H:%M} {part.label}' would be "
                    f"{tz.render_in_zone(read_literally, 'UTC')}"
                )
        warnings.append(message)
    if part.day is None:
        return
    if part.time is None:
        if part.day != actual_local.date():
            warnings.append(
                f"local/UTC mismatch: '{part.raw}' gives {tz.render_date(part.day)}, but {shown_utc} is {shown_actual}"
            )
        return
    written = dt.datetime.combine(part.day, part.time)
    if written != actual_local.replace(tzinfo=None, second=0, microsecond=0):
        what = "local hour" if part.day == actual_local.date() else "local date and time"
        message = f"{what} mismatch: '{part.raw}' does not match the UTC time: {shown_utc} is {shown_actual}"
        try:
            as_wall = tz.localize(written, zone)
        except ValidationFailed:
            as_wall = None
        if as_wall is not None:
            message += (
                f"; {part.time:%H:%M} on {tz.render_date(part.day)} in {zone} would be "
                f"{tz.render_in_zone(as_wall, 'UTC')}"
            )
        warnings.append(message)


def _localize_labelled(part: WhenPart, zone: str) -> dt.datetime:
    """A wall time read in ``zone``; a label (PDT/PST) settles a fall-back fold."""
    wall = dt.datetime.combine(part.day, part.time)
    try:
        return tz.localize(wall, zone)
    except tz.AmbiguousTime:
        if part.label:
            for fold in (0, 1):
                candidate = wall.replace(tzinfo=tz.get_zone(zone), fold=fold)
                if tz.abbreviation(candidate, zone).upper() == part.label.upper():
                    return candidate.astimezone(dt.UTC)
        raise


def parse_when(text: str, *, zone: str, year_hint: YearRule = None) -> ParsedWhen:
    """Read a schedule time text; ``zone`` is the release's zone (used for times with
    no label and for checking labels that name no zone of their own).

    A date written without its year takes it from ``year_hint``: a ``YearPlacement``
    (the release's year, decided from all its dates), or a nearby date (the year that
    keeps the date near it); with neither, it is an error."""
    zone = tz.normalize_zone_name(zone)
    cleaned, _ = clean_markdown(str(text or ""))
    if not cleaned:
        raise ValidationFailed("No date or time given.")
    raw_parts = [p for p in re.split(r"\s+/\s+|\s*\|\s*", cleaned) if p.strip()]
    parts = [_read_part(raw, year_hint) for raw in raw_parts]
    dated = [p for p in parts if p.day is not None]
    if not dated:
        raise ValidationFailed(f"Could not find a date in '{cleaned}'.", extra={"text": cleaned})
    for part in parts:
        # "17:00 UTC / 09:00 PDT Tuesday 13th December": one date written for both times.
        if part.day is None and part.time is not None:
            part.day = dated[0].day
    dated = [p for p in parts if p.day is not None]
    result = ParsedWhen(text=cleaned)
    warnings = result.warnings
    for part in parts:
        if part.year_assumed is not None:
            if isinstance(year_hint, YearPlacement):
                warnings.append(
                    f"no year in '{part.date_text or part.raw}'; read as {tz.render_date(part.day)}: {year_hint.why}"
                )
            else:
                warnings.append(f"no year in '{part.date_text or part.raw}'; read as {part.year_assumed}")
        _check_weekdays(part, warnings)
        warnings.extend(f"ordinal typo: {typo}, read as day {typo.split('the ')[1][:-2]}" for typo in part.typos)

    utc_part = next((p for p in dated if p.is_utc and p.time is not None), None)
    timed = [p for p in dated if p.time is not None or p.end_of_day]
    if utc_part is not None:
        result.at = dt.datetime.combine(utc_part.day, utc_part.time, tzinfo=dt.UTC)
        others = [p for p in parts if p is not utc_part]
        # "01:00 UTC ... / 02:00 BST ... / 18:00 PDT ...": the release's own zone first.
        labelled = next((p for p in others if p.zone == zone), None) or next(
            (p for p in others if p.zone and not p.is_utc), None
        )
        result.zone = labelled.zone if labelled else zone
        for part in others:
            if part.day is None and part.time is None:
                continue
            _check_local(part, result.at, result.zone if part.zone is None else part.zone, warnings)
    elif timed:
        first = timed[0]
        part_zone = first.zone or zone
        if first.time is None:
            result.at = tz.end_of_day(first.day, part_zone)
        else:
            result.at = _localize_labelled(first, part_zone)
        result.zone = part_zone
        if first.label:
            probe = result.at if first.time is not None else tz.end_of_day_in_force(first.day, part_zone)
            actual = tz.label_out_of_season(first.label, probe, part_zone)
            if actual and first.time is None:
                message = (
                    f"wrong zone label '{first.label}': {part_zone} observes {actual} on "
                    f"{tz.render_date(first.day)}; 'EOD {first.label}' is read as the end of that day there, "
                    f"{tz.render(result.at, part_zone)}"
                )
                literal = tz.label_offsets(part_zone, first.day.year).get(first.label.upper())
                if literal is not None:
                    read_literally = dt.datetime.combine(
                        first.day + dt.timedelta(days=1), dt.time(0), tzinfo=dt.timezone(literal)
                    )
                    message += (
                        f"; read literally as UTC{tz.format_offset(literal)} it would be "
                        f"{tz.render_in_zone(read_literally, 'UTC')}"
                    )
                warnings.append(message)
            elif actual:
                warnings.append(
                    f"wrong zone label '{first.label}': {part_zone} observes {actual} on "
                    f"{tz.render_date(first.day)}; read as the wall-clock time there, "
                    f"{tz.render(result.at, part_zone)}"
                )
        for part in parts:
            if part is not first and (part.day is not None or part.time is not None):
                _check_local(part, result.at, part.zone or part_zone, warnings)
    else:
        first = dated[0]
        result.on_date, result.ends_on, result.zone = first.day, first.day_end, zone
        for part in dated[1:]:
            if (part.day, part.day_end) != (first.day, first.day_end):
                warnings.append(f"the parts disagree: '{first.raw}' and '{part.raw}' give different dates")
    return result


# ------------------------------------------------------------- README tables


def month_of(text: str) -> int | None:
    """``JAN``, ``Feb``, ``**March**`` -> 1, 2, 3; None when the text is not just a month."""
    cleaned = clean_markdown(text)[0].strip(" .:").lower()
    month = tz.month_number(cleaned[:3]) if re.fullmatch(r"[a-z]{3,9}", cleaned) else None
    return month if month and tz.MONTHS[month - 1].lower().startswith(cleaned) else None


@dataclass
class TableRow:
    number: int  # 1-based among the table's data rows
    line: int  # 1-based line in the file
    cells: list[str]


@dataclass
class Table:
    header: list[str]
    rows: list[TableRow]
    line: int


# [^\S\n] (blanks but the newline) and no two optional blanks side by side: "\s*\|?\s*"
# backtracks in quadratic time on a long run of blanks, and "^\s*" spans newlines.
_MD_SEPARATOR = re.compile(r"^[^\S\n]*(?:\|[^\S\n]*)?:?-{3,}:?[^\S\n]*(?:\|[^\S\n]*:?-{3,}:?[^\S\n]*)*(?:\|[^\S\n]*)?$")
_HTML_TABLE = re.compile(r"<table[^>]*>(.*?)</table>", re.I | re.S)
_HTML_ROW = re.compile(r"<tr[^>]*>(.*?)</tr>", re.I | re.S)
_HTML_CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.I | re.S)


def _md_cells(line: str) -> list[str]:
    text = line.strip()
    text = text[1:] if text.startswith("|") else text
    text = text[:-1] if text.endswith("|") else text
    return [cell.strip() for cell in text.split("|")]


def _is_timeline_header(cells: list[str]) -> bool:
    names = [clean_markdown(c)[0].lower() for c in cells]
    return "what" in names and ("when" in names or any(month_of(c) for c in cells))


def read_timeline_table(text: str) -> Table | None:
    """The first table whose header has a *What* column and a *When* column or month
    columns (``| **What** | **Who** | **JAN** | **FEB** |``): markdown or HTML."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if not line.lstrip().startswith("|") or not re.search(r"\bwhat\b", line, re.I):
            continue
        header = _md_cells(line)
        if not _is_timeline_header(header):
            continue
        rows: list[TableRow] = []
        for number, row_line in enumerate(lines[index + 1 :], start=index + 2):
            if not row_line.strip().startswith("|"):
                break
            if _MD_SEPARATOR.match(row_line):
                continue
            rows.append(TableRow(number=len(rows) + 1, line=number, cells=_md_cells(row_line)))
        return Table(header=header, rows=rows, line=index + 1)
    for table in _HTML_TABLE.finditer(text):
        parsed: list[tuple[int, list[str]]] = []
        for row in _HTML_ROW.finditer(table.group(1)):
            line = text.count("\n", 0, table.start(1) + row.start()) + 1
            parsed.append((line, [" ".join(c.split()) for c in _HTML_CELL.findall(row.group(1))]))
        if parsed and _is_timeline_header(parsed[0][1]):
            rows = [TableRow(number=n, line=line, cells=cells) for n, (line, cells) in enumerate(parsed[1:], start=1)]
            return Table(header=parsed[0][1], rows=rows, line=parsed[0][0])
    return None


# A time written in a milestone's name: "(23:59 PDT)", "10:00am PDT", "(EOD PST)",
# "(16:00 UTC)", "at 10:00 AM (PDT)". The label must be one the time module knows.
_NAME_TIME = re.compile(
    r"(?:\bat\s+)?(?:\(\s*)?(?P<when>(?:\bEOD\b|\bend of (?:the )?day\b|\d{1,2}:\d{2}(?:\s*[ap]\.?m\.?)?)"
    r"\s*(?:\(\s*)?(?P<label>[A-Za-z]{2,7})\)?)\s*\)?",
    re.I,
)


def split_name_time(name: str) -> tuple[str, str]:
    """("Begin Enhancements Freeze (23:59 PDT)") -> ("Begin Enhancements Freeze", "23:59 PDT")."""
    for match in _NAME_TIME.finditer(name):
        if not tz.zone_for_label(match["label"]):
            continue
        when = " ".join(match["when"].replace("(", " ").replace(")", " ").split())
        rest = (name[: match.start()] + " " + name[match.end() :]).strip()
        rest = re.sub(r"\(\s*\)", "", rest)
        rest = re.sub(r"\s+([:,])", r"\1", " ".join(rest.split()))
        return rest.strip(" -:,"), when
    return name, ""


# ----------------------------------------------------------- README summary


@dataclass
class SummaryItem:
    """One date of a README's summary: a bullet (``- **Tuesday, January 29**: Week 4 -
    [Enhancements Freeze]``) or a bold date in the tl;dr prose of older READMEs."""

    line: int
    when: str
    label: str
    week: int | None = None


_SUMMARY_HEADING = re.compile(r"^#{1,4}\s*(?:tl;dr|summary|major release cycle events)\b", re.I)
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_STRUCK = re.compile(r"~~.*?~~")


def read_summary(text: str) -> list[SummaryItem]:
    lines = text.splitlines()
    items: list[SummaryItem] = []
    in_section = False
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if in_section and re.match(r"[-*]\s+\*\*", stripped):
            # A bullet may go on over indented lines.
            for following in lines[number:]:
                if not following.startswith((" ", "\t")) or re.match(r"\s*[-*]\s", following):
                    break
                stripped += " " + following.strip()
        if stripped.startswith("#"):
            in_section = bool(_SUMMARY_HEADING.match(stripped))
            continue
        if stripped.lower().startswith("**tl;dr**"):
            items.extend(_prose_items(number, _STRUCK.sub("", stripped[len("**tl;dr**") :])))
            continue
        if in_section and re.match(r"[-*]\s+\*\*", stripped):
            items.append(_bullet_item(number, _STRUCK.sub("", stripped[1:].strip())))
    return [item for item in items if item.when]


def _bullet_item(number: int, text: str) -> SummaryItem:
    when_parts = []
    position = 0
    for match in _BOLD.finditer(text):
        between = text[position : match.start()].strip()
        if position and between not in {"/", ""}:
            break
        when_parts.append(match.group(1))
        position = match.end()
    when = " / ".join(re.sub(r"\(https?://[^)]*\)", "", clean_markdown(p)[0]).strip(" :") for p in when_parts)
    label = clean_markdown(text[position:])[0]
    week = re.match(r"^[\s:\-\u2013\u2014]*week\s*(\d+)", label, re.I)
    label = re.sub(r"^[\s:\-\u2013\u2014]*(?:week\s*\d+\s*[\-\u2013\u2014:]+\s*)?", "", label, flags=re.I)
    label, label_time = split_name_time(label)
    if label_time and not re.search(r"\d{1,2}:\d{2}|\bEOD\b", when, re.I):
        when = f"{when} {label_time}"
    return SummaryItem(line=number, when=when, label=label, week=int(week[1]) if week else None)


def _prose_items(number: int, text: str) -> list[SummaryItem]:
    items = []
    for sentence in re.split(r"(?<=[.!])\s+(?=[A-Z])", text):
        head = ""
        position = 0
        for index, match in enumerate(_BOLD.finditer(sentence)):
            before = clean_markdown(sentence[position : match.start()])[0].strip(" ,")
            if index == 0:
                head = before
            label = before if index == 0 else f"{head} \u2026 {before}"
            when = clean_markdown(match.group(1))[0].strip(" ,")
            if re.search(r"\d", when):
                items.append(SummaryItem(line=number, when=when, label=label))
            position = match.end()
    return items
