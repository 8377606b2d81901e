"""The rows of one Kubernetes release, shared by the three Kubernetes formats (the
schedule-builder YAML, the shared JSON and the sig-release README): each row's name,
owner and free-text time read into a ``MilestoneSpec``, the dates written without a
year placed once for the whole release, and the README's summary cross-checked against
its table. Pure: every problem is collected in ``errors``, every doubt in ``warnings``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from dataclasses import dataclass, field

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, as_text
from releasecal.importers.schedule_text import (
    PACIFIC,
    DateRecorder,
    ParsedWhen,
    SummaryItem,
    WrittenDate,
    YearPlacement,
    clean_markdown,
    parse_when,
    split_name_time,
)
from releasecal.importers.specs import (
    ImportWarning,
    MilestoneSpec,
    ParsedSchedule,
    ReleaseSpec,
    fill_release_dates,
    kind_label_for,
    milestone_kind_for,
    select_releases,
)
from releasecal.importers.years import YearContext, YearUnplaceable, place_year


@dataclass(frozen=True)
class RowFields:
    """The keys of a row that hold a milestone's name, its owner and its time."""

    title: str
    who: str
    when: str


SCHEDULE_FIELDS = RowFields(title="what", who="who", when="when")  # schedule-builder and README rows
JSON_FIELDS = RowFields(title="name", who="who", when="local")  # the shared JSON's rows


@dataclass(frozen=True)
class PreparedRow:
    """A row named and with its time text, before any date is read."""

    number: int  # the row's number in its table (or list)
    row: dict
    title: str
    title_link: str
    written: str  # the time cell as written
    when: str  # the text read: the cell, plus a time written in the name ("(23:59 PDT)")

    @property
    def dated(self) -> bool:
        return bool(re.search(r"\d", self.when))


@dataclass(frozen=True)
class ReadRow:
    """A row read: the milestone it gives and the reading of its time text."""

    milestone: MilestoneSpec
    parsed: ParsedWhen


@dataclass(frozen=True)
class YearlessRow:
    """A row whose date was written without a year (the placement names the first)."""

    number: int
    title: str
    warning: str  # "no year in '...'; read as ..."


@dataclass
class RowsReading:
    """The second pass over a release's rows: what it reads into and what it has seen."""

    spec: ReleaseSpec
    fields: RowFields
    place: YearPlacement | None
    errors: list[str]
    warnings: list[ImportWarning]
    seen: dict[str, int] = field(default_factory=dict)  # title -> row number
    yearless: list[YearlessRow] = field(default_factory=list)


def _row_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> "1-3, 7, 9-10"."""
    ranges: list[list[int]] = []
    for n in sorted(set(numbers)):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


def _prepare_rows(slug: str, rows: list, fields: RowFields, errors: list[str]) -> list[PreparedRow]:
    prepared = []
    for index, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            errors.append(f"{slug} row {index}: expected a mapping, got {row!r}.")
            continue
        number = row.get("_row", index)
        title, title_link = clean_markdown(as_text(row.get(fields.title)))
        title, name_time = split_name_time(title)
        if not title:
            errors.append(f"{slug} row {number}: '{fields.title}' is missing.")
            continue
        written = as_text(row.get(fields.when))
        when = f"{written} {name_time}".strip() if re.search(r"\d", written) else written
        prepared.append(PreparedRow(number, row, title, title_link, written, when))
    return prepared


def _written_dates(texts: list[str], zone: str) -> list[WrittenDate]:
    """Every date in ``texts`` as written (year or not), nothing placed: the first pass."""
    recorder = DateRecorder()
    for text in texts:
        with contextlib.suppress(ValidationFailed):  # reported by the second pass
            parse_when(text, zone=zone, year_hint=recorder)
    return recorder.dates


def kubernetes_release(
    slug: str,
    rows: list,
    *,
    zone: str | None,
    fields: RowFields,
    errors: list[str],
    warnings: list[ImportWarning],
    context: YearContext | None = None,
    summary: list[SummaryItem] | None = None,
    readme_years: list[int] | None = None,
) -> ReleaseSpec:
    """Rows of one Kubernetes release, read in two passes: the dates of every row (and
    of the summary) first, so a date written without its year is placed from the whole
    release (``place_year``), then every row with that year."""
    context = context or YearContext()
    summary = summary or []
    uses_aoe = any("aoe" in as_text(row.get(fields.when)).lower() for row in rows if isinstance(row, dict))
    release_zone = tz.normalize_zone_name(zone) if zone else (tz.AOE if uses_aoe else PACIFIC)
    spec = ReleaseSpec(slug=slug, name=f"Kubernetes v{slug}", zone=release_zone)
    prepared = _prepare_rows(slug, rows, fields, errors)
    table_dates = _written_dates([p.when for p in prepared if p.dated], release_zone)
    summary_dates = _written_dates([item.when for item in summary], release_zone)
    first_missing = next(
        (
            f"row {p.number} '{p.title}' ('{p.written}')"
            for p in prepared
            if p.dated and not re.search(r"\b\d{4}\b", p.when)
        ),
        "a date",
    )
    try:
        place = place_year(slug, table_dates, summary_dates, readme_years or [], context, first_missing)
    except YearUnplaceable as exc:
        errors.append(exc.message)
        return spec
    reading = RowsReading(spec, fields, place, errors, warnings)
    read_rows: list[ReadRow] = []
    for prepared_row in prepared:
        read = _read_row(prepared_row, reading)
        if read is not None:
            spec.milestones.append(read.milestone)
            read_rows.append(read)
    yearless = reading.yearless
    if yearless and place is not None:
        # One decision places every date without a year: one warning, on the first such row.
        first = yearless[0]
        years = (
            f"{place.year}"
            if all(m.on_date is None or m.on_date.year == place.year for m in spec.milestones)
            else (f"{place.year} (months before {tz.MONTHS[place.first_month - 1]} in {place.year + 1})")
        )
        warnings.append(
            ImportWarning(
                slug,
                first.number,
                first.title,
                f"no year written in {len(yearless)} date(s) (rows {_row_ranges([y.number for y in yearless])}), "
                f"e.g. {first.warning.removeprefix('no year in ')}; all placed in {years}",
            )
        )
    if summary and not errors:
        _cross_check_summary(slug, summary, read_rows, release_zone, place, warnings)
    return spec


def _read_row(prepared: PreparedRow, reading: RowsReading) -> ReadRow | None:
    """One row's milestone (None when it is undated or cannot be read: reported)."""
    spec, seen, warnings = reading.spec, reading.seen, reading.warnings
    slug, number, row, written, when = spec.slug, prepared.number, prepared.row, prepared.written, prepared.when
    title = prepared.title
    if title in seen:
        # Titles identify milestones on re-import; a repeated one gets its date added.
        title = f"{title} ({written})"
    seen[title] = number
    for note in row.get("_notes", []):
        warnings.append(ImportWarning(slug, number, title, note))
    _, when_link = clean_markdown(written)
    if not re.search(r"\d", written):
        # "TBD", "TBC", empty: nothing to put on a calendar yet; kept as undated and reported.
        shown = written or "empty"
        spec.undated.append(f"row {number} '{title}' ({shown})")
        warnings.append(
            ImportWarning(slug, number, title, f"'{shown}' is not a date yet: kept as undated, not on the calendar")
        )
        return None
    try:
        parsed = parse_when(when, zone=spec.zone, year_hint=reading.place)
    except ValidationFailed as exc:
        reading.errors.append(f"{slug} row {number} '{title}': {exc.message}")
        return None
    row_warnings = [w for w in parsed.warnings if not w.startswith("no year in")]
    if len(row_warnings) < len(parsed.warnings):
        reading.yearless.append(
            YearlessRow(number, title, next(w for w in parsed.warnings if w.startswith("no year in")))
        )
    row_warnings += _check_against_source(row, parsed)
    warnings.extend(ImportWarning(slug, number, title, w) for w in row_warnings)
    who = clean_markdown(as_text(row.get(reading.fields.who)))[0]
    week = as_text(row.get("week"))
    details = [f"Who: {who}" if who else "", week.capitalize() if week else "", f"As published: {when}"]
    kind = milestone_kind_for(title)
    other_version = re.search(r"\b1\.(\d+)\b", title)
    if kind in {"release-start", "ga"} and other_version and other_version.group(0) != slug:
        kind = "other"  # "1.11 Release Cycle Begins" in the 1.10 schedule
    milestone = MilestoneSpec(
        row=number,
        title=title,
        kind=kind,
        kind_label=kind_label_for(title, kind),
        at=parsed.at,
        on_date=parsed.on_date,
        ends_on=parsed.ends_on,
        zone=parsed.zone or spec.zone,
        description=". ".join(d for d in details if d),
        link=as_text(row.get("time_link")) or when_link or prepared.title_link,
        week=week,
    )
    return ReadRow(milestone, parsed)


# The summary's topics and the table rows they describe, first match wins.
_TOPICS: list[tuple[str, str, str]] = [
    # (topic, summary label pattern, table title pattern)
    ("release", r"release day|\breleased\b", r"^(?:kubernetes\s+)?v?{v}(?:\.0)?(?:\s+(?:is\s+)?released)?$"),
    ("code freeze ends", r"code freeze.*\bends\b|code thaw", r"end of code freeze|code thaw"),
    ("cycle begins", r"cycle begins", r"start of release cycle|^{v} release cycle begins"),
    ("production readiness freeze", r"production readiness|kep readiness", r"production readiness|kep readiness"),
    ("enhancements freeze", r"enhancements? freeze|feature freeze", r"enhancements? freeze|feature freeze"),
    ("code slush", r"code slush", r"code slush"),
    ("feature blog freeze", r"feature blog freeze", r"feature blog freeze"),
    ("code freeze", r"code freeze", r"^(?:begin\s+)?code (?:and test )?freeze|^begin code freeze"),
    ("test freeze", r"test freeze", r"test freeze"),
    ("docs", r"docs? (?:must be completed|freeze|complete)", r"docs? (?:complete|freeze)"),
    ("retrospective", r"retrospective", r"retrospective"),
    ("kubecon", r"kubecon", r"kubecon"),
    ("release candidate", r"\brc\b|release candidate", r"-rc\.\d"),
]


_ANNOUNCEMENT = re.compile(r"\bexceptions?\b|\bcall for\b|brace yourself|is coming", re.I)


def _agrees(said: ParsedWhen, parsed: ParsedWhen) -> bool:
    if said.at is not None and parsed.at is not None:
        return said.at == parsed.at
    return _day_of(said) == _day_of(parsed)


def _summary_row(
    slug: str, label: str, said: ParsedWhen | None, read_rows: list[ReadRow]
) -> tuple[str | None, ReadRow | None]:
    """The topic of a summary item and the table row it names: among the rows of that
    topic, the one that agrees with it, else the one sharing most of its words."""
    text = label.lower()
    for topic, label_pattern, title_pattern in _TOPICS:
        if not re.search(label_pattern, text):
            continue
        pattern = title_pattern.replace("{v}", re.escape(slug))
        candidates = [
            r
            for r in read_rows
            if re.search(pattern, r.milestone.title.lower()) and not _ANNOUNCEMENT.search(r.milestone.title)
        ]
        part = re.search(r"part\s*(\d)", text)
        if topic == "retrospective" and part:
            candidates = [r for r in candidates if re.search(rf"part\s*{part.group(1)}\b", r.milestone.title.lower())]
        if not candidates and topic == "docs":
            candidates = [r for r in read_rows if re.search(r"\bdocs?\b", r.milestone.title.lower())]
        if not candidates:
            return topic, None
        words = set(re.findall(r"[a-z]{3,}", text))
        scores = [
            (
                said is not None and _agrees(said, r.parsed),
                len(words & set(re.findall(r"[a-z]{3,}", r.milestone.title.lower()))),
            )
            for r in candidates
        ]
        return topic, candidates[scores.index(max(scores))]
    return None, None


def _day_of(parsed: ParsedWhen) -> dt.date:
    if parsed.at is None:
        return parsed.on_date
    return tz.deadline_day(parsed.at, parsed.zone)


def _cross_check_summary(
    slug: str,
    summary: list[SummaryItem],
    read_rows: list[ReadRow],
    zone: str,
    place: YearPlacement | None,
    warnings: list[ImportWarning],
) -> None:
    """Each dated summary item is read like a row and compared with the table row it
    names; the table is what is imported, every disagreement is a warning naming both."""
    for item in summary:
        quoted = f"summary (line {item.line}) '{item.label}: {item.when}'"
        try:
            said = parse_when(item.when, zone=zone, year_hint=place)
        except ValidationFailed as exc:
            said = None
            problem = exc.message
        topic, match = _summary_row(slug, item.label, said, read_rows)
        if topic is None:
            continue
        if said is None:
            if re.search(r"\d", item.when):
                warnings.append(ImportWarning(slug, 0, item.label, f"{quoted} cannot be read: {problem}"))
            continue
        row, title = (match.milestone.row, match.milestone.title) if match else (0, item.label)
        same_text = match is not None and said.text == match.parsed.text
        for message in said.warnings:
            # The same text as its row's says the same wrong thing: reported once, on the row.
            if not message.startswith("no year") and not same_text:
                warnings.append(ImportWarning(slug, row, title, f"{quoted}: {message}"))
        if match is None:
            warnings.append(ImportWarning(slug, 0, item.label, f"{quoted} names no row of the timeline table"))
            continue
        milestone, parsed = match.milestone, match.parsed
        if said.at is not None and parsed.at is not None:
            differs = said.at != parsed.at
            shown_said, shown_row = tz.render(said.at, said.zone), tz.render(parsed.at, parsed.zone)
        else:
            differs = _day_of(said) != _day_of(parsed)
            shown_said, shown_row = tz.render_date(_day_of(said)), tz.render_date(_day_of(parsed))
        if differs:
            warnings.append(
                ImportWarning(
                    slug,
                    milestone.row,
                    milestone.title,
                    f"summary and table disagree: the {quoted} is read as {shown_said}, the table's "
                    f"'{parsed.text}' as {shown_row}; the table is imported",
                )
            )
        table_week = re.fullmatch(r"week\s*(\d+)", milestone.week.strip(), re.I)
        if item.week is not None and table_week and int(table_week[1]) != item.week and not differs:
            warnings.append(
                ImportWarning(
                    slug,
                    milestone.row,
                    milestone.title,
                    f"summary and table disagree on the week: the {quoted} says Week {item.week}, "
                    f"the table's row says '{milestone.week}' (same date)",
                )
            )
        if not differs and said.at is not None and parsed.at is None and parsed.ends_on is None:
            # 1.15: the table gives the day, only the summary its end ("Tuesday, April 30th,
            # EOD PST"): a timed deadline written in the README is imported as an instant.
            milestone.at, milestone.on_date, milestone.zone = said.at, None, said.zone
            milestone.description += f". Time from the summary (line {item.line}): {said.text}"


def _check_against_source(row: dict, parsed: ParsedWhen) -> list[str]:
    """The shared JSON also states the instant it derived and notes known conflicts
    between the README's summary and its table: both are surfaced, never dropped."""
    found = []
    utc_iso = row.get("utc_iso")
    if utc_iso and parsed.at is not None and tz.isoformat_utc(parsed.at) != utc_iso:
        found.append(f"the file's utc_iso {utc_iso} disagrees with the text, read as {tz.isoformat_utc(parsed.at)}")
    if utc_iso and parsed.at is None:
        found.append(f"the file gives utc_iso {utc_iso} but the text has no time of day")
    stated = row.get("date")
    if stated and parsed.on_date is not None and parsed.on_date.isoformat() != stated:
        found.append(f"the file's date {stated} disagrees with the text, read as {parsed.on_date.isoformat()}")
    notes = as_text(row.get("notes"))
    if notes.upper().startswith("CONFLICT"):
        found.append(f"the source contradicts itself: {notes}")
    return found


def kubernetes_schedule(
    format_name: str,
    releases: dict[str, list],
    *,
    fields: RowFields,
    release_slug: str | None,
    zone: str | None,
    today: dt.date,
) -> ParsedSchedule:
    """Several Kubernetes releases given as rows (``releases``: slug -> rows), the one
    picked by ``release_slug`` or all; raises ImportFailed listing every problem."""
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    specs = [
        kubernetes_release(slug, releases[slug], zone=zone, fields=fields, errors=errors, warnings=warnings)
        for slug in select_releases(list(releases), release_slug)
    ]
    if errors:
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    for spec in specs:
        if spec.milestones:
            fill_release_dates(spec, today)
    return ParsedSchedule(format=format_name, releases=[s for s in specs if s.milestones], warnings=warnings)
