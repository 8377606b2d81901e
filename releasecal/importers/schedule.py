"""Importing schedules and KEPs from files.

Three schedule formats are read (docs/schedule-format.md describes ours):

- ``ours``: ``release: {...}`` plus ``milestones: [...]`` with strict wall times;
- ``schedule-builder``: Kubernetes' ``releases: [{version, timeline: [{what, who, when,
  week}]}]`` with the free-text times of the release README;
- ``k8s-json``: ``{"releases": {"1.29": [{name, who, local, utc_iso, date, ...}]}}``,
  the shared demo data.

Reading (``schedule_parse``) is pure and collects every row error before anything is
written; writing (``schedule_import``) upserts milestones through
``services.milestone_save`` matched on (release, title), so re-importing the same file
changes nothing and bumps no ``sequence``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, as_text, load_data, read_file
from releasecal.importers.schedule_text import (
    MONTH_NAMES,
    PACIFIC,
    DateRecorder,
    SummaryItem,
    Table,
    WrittenDate,
    YearPlacement,
    clean_markdown,
    month_of,
    parse_when,
    read_summary,
    read_timeline_table,
    split_name_time,
)
from releasecal.models import Milestone, MilestoneKind, Release
from releasecal.services import milestone_save, milestone_snapshot, release_save

# ------------------------------------------------------------------- kinds


# Ordered: the first matching rule decides. Announcements ("Call for Exceptions",
# "Brace Yourself, Code Freeze is Coming") name a freeze without being one.
_KIND_RULES: list[tuple[str, str]] = [
    (r"\bexceptions?\b|brace yourself|is coming|\bcall for\b", "other"),
    (r"end of code freeze|lifting code freeze|code thaw|^thaw$|\bevaluation\b", "other"),
    (r"production readiness freeze|\bprr freeze", "prr-freeze"),
    (r"enhancements? freeze|^\W*feature freeze\W", "enhancements-freeze"),
    (r"feature blogs? freeze", "feature-blog-freeze"),
    (r"code (?:and test )?freeze", "code-freeze"),
    (r"test freeze", "test-freeze"),
    (r"docs? freeze", "docs-freeze"),
    (r"\d+\.\d+\.\d+-alpha\.\d+", "alpha"),
    (r"\d+\.\d+\.\d+-beta\.\d+", "beta"),
    (r"\d+\.\d+\.\d+-rc\.\d+", "rc"),
    (r"^(?:kubernetes\s+)?v?\d+\.\d+(?:\.0)?\s+(?:is\s+)?released\b|^v?\d+\.\d+\.0$", "ga"),
    (r"start of (?:the )?release cycle|release cycle begins", "release-start"),
    (r"kubecon|cloudnativecon|contributor summit", "event"),
]


def milestone_kind_for(title: str) -> str:
    """Map a schedule row's name to a MilestoneKind slug ("v1.31 released" -> ga)."""
    text = title.strip().lower()
    for pattern, slug in _KIND_RULES:
        if re.search(pattern, text):
            return slug
    return "other"


# ------------------------------------------------------------------- specs


@dataclass
class MilestoneSpec:
    row: int
    title: str
    kind: str
    at: dt.datetime | None = None
    on_date: dt.date | None = None
    ends_at: dt.datetime | None = None
    ends_on: dt.date | None = None
    zone: str = ""
    description: str = ""
    link: str = ""
    cancelled: bool = False
    week: str = ""  # as the table writes it ("week 5"), for checking the summary's


@dataclass
class ReleaseSpec:
    slug: str
    name: str = ""
    zone: str = ""
    start_date: dt.date | None = None
    ga_date: dt.date | None = None
    status: str = ""
    hard_stop: dt.datetime | None = None
    # True when the file states the release's fields (our format): they are applied.
    # Kubernetes formats only create a missing release from what the rows imply.
    authoritative: bool = False
    milestones: list[MilestoneSpec] = field(default_factory=list)
    undated: list[str] = field(default_factory=list)  # rows whose date is "TBD"/"TBC": reported, not stored


@dataclass(frozen=True)
class ImportWarning:
    release: str
    row: int
    title: str
    message: str

    def __str__(self) -> str:
        where = f"row {self.row}" if self.row else "summary"
        return f"{self.release} {where} '{self.title}': {self.message}"

    @property
    def kind(self) -> str:
        """What kind of inconsistency this is (for counting): the first matching rule."""
        for pattern, kind in _WARNING_KINDS:
            if re.search(pattern, self.message):
                return kind
        return "other"


_WARNING_KINDS = [
    (r"^summary and table disagree on the week", "summary-week"),
    (r"^summary and table disagree", "summary-vs-table"),
    (r"^summary \(line \d+\)", "summary-text"),
    (r"^no year written", "year-placed"),
    (r"^wrong zone label '[^']+': .*'EOD", "eod-label-season"),
    (r"^wrong zone label", "label-season"),
    (r"^weekday mismatch", "weekday"),
    (r"^(?:local hour|local date and time|local/UTC) mismatch", "local-vs-utc"),
    (r"is not a date yet", "undated"),
    (r"struck-out|tentative|^no month in", "table-note"),
    (r"cells|split over two lines", "table-shape"),
    (r"^the file's|^the file gives|^the source contradicts", "source-note"),
    (r"^the parts disagree", "parts-disagree"),
    (r"^ordinal typo", "typo"),
]


@dataclass
class ParsedSchedule:
    format: str
    releases: list[ReleaseSpec]
    warnings: list[ImportWarning]


@dataclass
class ReleaseCounts:
    source: str
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    warnings: int = 0
    undated: list[str] = field(default_factory=list)

    def line(self, slug: str) -> str:
        text = (
            f"  {slug} ({self.source}): {self.created + self.updated + self.unchanged} milestones: "
            f"{self.created} created, {self.updated} updated, {self.unchanged} unchanged; {self.warnings} warnings"
        )
        if self.undated:
            text += f"; undated, not imported: {'; '.join(self.undated)}"
        return text


@dataclass
class ImportResult:
    format: str
    releases: list[str] = field(default_factory=list)
    releases_created: list[str] = field(default_factory=list)
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    not_in_file: int = 0
    warnings: list[ImportWarning] = field(default_factory=list)
    dry_run: bool = False
    per_release: dict[str, ReleaseCounts] = field(default_factory=dict)

    def release_lines(self) -> list[str]:
        return [counts.line(slug) for slug, counts in self.per_release.items()]

    def warnings_by_kind(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for warning in self.warnings:
            counts[warning.kind] = counts.get(warning.kind, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    def summary(self) -> str:
        prefix = "Dry run, nothing saved: " if self.dry_run else ""
        made = f" (created release {', '.join(self.releases_created)})" if self.releases_created else ""
        text = (
            f"{prefix}{self.format} schedule for {', '.join(self.releases)}{made}: {self.created} created, "
            f"{self.updated} updated, {self.unchanged} unchanged, {len(self.warnings)} warnings"
        )
        if self.not_in_file:
            text += f"; {self.not_in_file} existing milestones not in the file were left as they are"
        return text + "."


# ---------------------------------------------------------------- format: ours


def _date(value: Any, what: str) -> dt.date:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    try:
        return dt.date.fromisoformat(as_text(value))
    except ValueError:
        raise ValidationFailed(f"{what} {value!r} is not a date (YYYY-MM-DD).") from None


def _parse_ours(data: dict, *, release_slug: str | None, zone: str | None, today: dt.date) -> ParsedSchedule:
    raw_release = data.get("release")
    if not isinstance(raw_release, dict):
        raise ImportFailed("The 'release' key must be a mapping with slug, name, zone, start_date, ...")
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    slug = as_text(raw_release.get("slug")) or (release_slug or "")
    if release_slug and slug != release_slug:
        raise ImportFailed(f"The file describes release {slug!r}, not {release_slug!r}.")
    if not slug:
        raise ImportFailed("release.slug is missing (or pass --release).")
    spec = ReleaseSpec(slug=slug, name=as_text(raw_release.get("name")) or f"Release {slug}", authoritative=True)
    try:
        spec.zone = tz.normalize_zone_name(as_text(raw_release.get("zone")) or zone or PACIFIC)
    except ValidationFailed as exc:
        raise ImportFailed(f"release.zone: {exc.message}") from None
    for key in ("start_date", "ga_date"):
        if raw_release.get(key) not in (None, ""):
            try:
                setattr(spec, key, _date(raw_release[key], f"release.{key}"))
            except ValidationFailed as exc:
                errors.append(exc.message)
    status = as_text(raw_release.get("status"))
    if status and status not in Release.Status.values:
        errors.append(f"release.status {status!r} is not one of {', '.join(Release.Status.values)}.")
    spec.status = status
    if raw_release.get("hard_stop"):
        try:
            spec.hard_stop = tz.parse_wall_time(as_text(raw_release["hard_stop"]), spec.zone)
        except ValidationFailed as exc:
            errors.append(f"release.hard_stop: {exc.message}")
    rows = data.get("milestones") or []
    if not isinstance(rows, list):
        raise ImportFailed("'milestones' must be a list.")
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            errors.append(f"milestone {number}: expected a mapping, got {row!r}.")
            continue
        title = clean_markdown(as_text(row.get("title")))[0]
        label = f"milestone {number} '{title or '?'}'"
        try:
            spec.milestones.append(_our_milestone(number, title, row, spec, warnings))
        except ValidationFailed as exc:
            errors.append(f"{label}: {exc.message}")
    if errors:
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    _fill_release_dates(spec, today)
    return ParsedSchedule(format="ours", releases=[spec], warnings=warnings)


def _our_milestone(number: int, title: str, row: dict, release: ReleaseSpec, warnings) -> MilestoneSpec:
    if not title:
        raise ValidationFailed("title is missing.")
    kind = as_text(row.get("kind")) or milestone_kind_for(title)
    zone = tz.normalize_zone_name(as_text(row.get("zone")) or release.zone)
    spec = MilestoneSpec(
        row=number,
        title=title,
        kind=kind,
        zone=zone,
        description=as_text(row.get("description")),
        link=as_text(row.get("link")),
        cancelled=bool(row.get("cancelled", False)),
    )
    given = [key for key in ("at", "date", "when") if row.get(key) not in (None, "")]
    if len(given) != 1:
        raise ValidationFailed("give exactly one of 'at' (a wall time), 'date' (a day) or 'when' (free text).")
    if given[0] == "at":
        spec.at = tz.parse_wall_time(as_text(row["at"]), zone)
    elif given[0] == "date":
        spec.on_date = _date(row["date"], "date")
    else:
        parsed = parse_when(as_text(row["when"]), zone=zone, year_hint=release.start_date)
        spec.at, spec.on_date, spec.ends_on = parsed.at, parsed.on_date, parsed.ends_on
        if as_text(row.get("zone")) == "" and parsed.zone:
            spec.zone = parsed.zone
        warnings.extend(ImportWarning(release.slug, number, title, w) for w in parsed.warnings)
    if row.get("ends_at") not in (None, ""):
        if spec.at is None:
            raise ValidationFailed("ends_at needs a timed milestone ('at'); use ends_on with 'date'.")
        spec.ends_at = tz.parse_wall_time(as_text(row["ends_at"]), zone)
    if row.get("ends_on") not in (None, ""):
        if spec.on_date is None:
            raise ValidationFailed("ends_on needs a date-only milestone ('date'); use ends_at with 'at'.")
        spec.ends_on = _date(row["ends_on"], "ends_on")
    return spec


# ---------------------------------------------------------- formats: Kubernetes


@dataclass(frozen=True)
class YearContext:
    """What places a release whose dates are written without a year, beside its own
    text: the releases just before and after it (slug, start date), and today (an
    inferred year never puts a date after it)."""

    before: tuple[str, dt.date] | None = None
    after: tuple[str, dt.date] | None = None
    today: dt.date | None = None


class YearUnplaceable(ImportFailed):
    """A release's dates have no year and nothing places them with confidence."""


def _start_year(date: WrittenDate, first_month: int) -> int:
    return date.year if date.month >= first_month else date.year - 1


def _placed(date: WrittenDate, place: YearPlacement) -> dt.date | None:
    try:
        return dt.date(place.year_for(date.month), date.month, date.day)
    except ValueError:
        return None


def _weekday_misses(dates: list[WrittenDate], place: YearPlacement) -> int:
    misses = 0
    for date in dates:
        if date.weekday is None:
            continue
        day = _placed(date, place)
        misses += day is None or day.weekday() != date.weekday
    return misses


def _place_year(
    slug: str,
    table: list[WrittenDate],
    summary: list[WrittenDate],
    readme_years: list[int],
    context: YearContext,
    first_row: str,
) -> YearPlacement | None:
    """The year a release's cycle starts in, for its dates written without one: from
    the years of its other rows, else its summary's dates, else the years its README
    mentions, else its neighbouring releases; the weekdays written must agree, and an
    inferred year never puts a date after today. None when every date has its year."""
    missing = [d for d in table + summary if d.year is None]
    if not missing:
        return None
    first_month = (table or summary)[0].month
    with_weekday = [d for d in missing if d.weekday is not None]
    today = context.today or tz.utc_now().date()
    for dates, source in ((table, "the release's other rows"), (summary, "the README's summary")):
        written = [_start_year(d, first_month) for d in dates if d.year is not None]
        if written:
            year = max(set(written), key=written.count)
            place = YearPlacement(year, first_month, "")
            agree = len(with_weekday) - _weekday_misses(with_weekday, place)
            why = f"{source} give{'s' if source.endswith('summary') else ''} the year" + (
                f", and {agree} of {len(with_weekday)} weekdays written agree" if with_weekday else ""
            )
            return YearPlacement(year, first_month, why)
    if readme_years:
        candidates = sorted({y for year in readme_years for y in (year - 1, year)})
        source = f"the README mentions {', '.join(map(str, sorted(set(readme_years))))}"
        low, high = None, None
    else:
        low = context.before[1] if context.before else None
        high = context.after[1] if context.after else None
        if low is None and high is None:
            low = today.replace(year=today.year - 30)
        elif low is None:
            low = high.replace(year=high.year - 2)
        high = min(high or today, today)
        candidates = list(range(low.year, high.year + 1))
        around = [f"after {context.before[0]} (starts {tz.render_date(context.before[1])})"] if context.before else []
        if context.after:
            around.append(f"before {context.after[0]} (starts {tz.render_date(context.after[1])})")
        source = "it lies " + " and ".join(around) if around else "nothing in the README gives a year"
    fits = []
    for year in candidates:
        place = YearPlacement(year, first_month, "")
        days = [_placed(d, place) for d in missing]
        if any(day is None for day in days):
            continue
        if max(days) > today:
            continue  # never a guess into the future
        if low is not None and min(days) < low - dt.timedelta(days=31):
            continue
        if high is not None and context.after and min(days) >= context.after[1]:
            continue
        misses = _weekday_misses(with_weekday, place)
        if misses <= len(with_weekday) // 10:
            fits.append((year, misses))
    if len(fits) != 1 or not with_weekday:
        shown = ", ".join(str(y) for y, _ in fits) or "none"
        raise YearUnplaceable(
            f"release {slug}: {first_row} has no year and it cannot be placed with confidence: {source}, and "
            f"the years whose weekdays fit are: {shown}. Import it with its neighbouring releases "
            "(import_schedule DIR) or after them, or write the year."
        )
    year, misses = fits[0]
    return YearPlacement(
        year,
        first_month,
        f"{source}, and only {year} fits the {len(with_weekday)} weekdays written"
        + (f" ({misses} of them wrong)" if misses else ""),
    )


def _row_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> "1-3, 7, 9-10"."""
    ranges: list[list[int]] = []
    for n in sorted(set(numbers)):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


def _k8s_rows(
    slug: str,
    rows: list,
    *,
    zone: str | None,
    fields: tuple[str, str, str],
    errors: list[str],
    warnings: list[ImportWarning],
    context: YearContext | None = None,
    summary: list[SummaryItem] | None = None,
    readme_years: list[int] | None = None,
) -> ReleaseSpec:
    """Rows of one Kubernetes release: ``fields`` names the (title, owner, time) keys.

    Two passes: the dates of every row (and of the summary) are read first, so a date
    written without its year is placed from the whole release (``_place_year``), then
    every row is read with that year."""
    title_key, who_key, when_key = fields
    context = context or YearContext()
    summary = summary or []
    uses_aoe = any("aoe" in as_text(row.get(when_key)).lower() for row in rows if isinstance(row, dict))
    release_zone = tz.normalize_zone_name(zone) if zone else (tz.AOE if uses_aoe else PACIFIC)
    spec = ReleaseSpec(slug=slug, name=f"Kubernetes v{slug}", zone=release_zone)
    prepared = []
    table_dates = DateRecorder()
    for index, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            errors.append(f"{slug} row {index}: expected a mapping, got {row!r}.")
            continue
        number = row.get("_row", index)
        title, title_link = clean_markdown(as_text(row.get(title_key)))
        title, name_time = split_name_time(title)
        if not title:
            errors.append(f"{slug} row {number}: '{title_key}' is missing.")
            continue
        written = as_text(row.get(when_key))
        when = f"{written} {name_time}".strip() if re.search(r"\d", written) else written
        prepared.append((number, row, title, title_link, written, when, name_time))
        if re.search(r"\d", when):
            with contextlib.suppress(ValidationFailed):  # reported by the second pass
                parse_when(when, zone=release_zone, year_hint=table_dates)
    summary_dates = DateRecorder()
    for item in summary:
        with contextlib.suppress(ValidationFailed):
            parse_when(item.when, zone=release_zone, year_hint=summary_dates)
    first_missing = next(
        (
            f"row {n} '{t}' ('{w}')"
            for n, _r, t, _l, w, wh, _nt in prepared
            if re.search(r"\d", wh) and not re.search(r"\b\d{4}\b", wh)
        ),
        "a date",
    )
    try:
        place = _place_year(slug, table_dates.dates, summary_dates.dates, readme_years or [], context, first_missing)
    except YearUnplaceable as exc:
        errors.append(exc.message)
        return spec
    seen: dict[str, int] = {}
    parsed_rows = []
    yearless: list[tuple[int, str, str]] = []
    for number, row, title, title_link, written, when, _name_time in prepared:
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
            continue
        try:
            parsed = parse_when(when, zone=release_zone, year_hint=place)
        except ValidationFailed as exc:
            errors.append(f"{slug} row {number} '{title}': {exc.message}")
            continue
        row_warnings = [w for w in parsed.warnings if not w.startswith("no year in")]
        if len(row_warnings) < len(parsed.warnings):
            yearless.append((number, title, next(w for w in parsed.warnings if w.startswith("no year in"))))
        row_warnings += _check_against_source(row, parsed)
        warnings.extend(ImportWarning(slug, number, title, w) for w in row_warnings)
        who = clean_markdown(as_text(row.get(who_key)))[0]
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
            at=parsed.at,
            on_date=parsed.on_date,
            ends_on=parsed.ends_on,
            zone=parsed.zone or release_zone,
            description=". ".join(d for d in details if d),
            link=as_text(row.get("time_link")) or when_link or title_link,
            week=week,
        )
        spec.milestones.append(milestone)
        parsed_rows.append((milestone, parsed))
    if yearless and place is not None:
        # One decision places every date without a year: one warning, on the first such row.
        number, title, example = yearless[0]
        years = (
            f"{place.year}"
            if all(m.on_date is None or m.on_date.year == place.year for m in spec.milestones)
            else (f"{place.year} (months before {MONTH_NAMES[place.first_month - 1]} in {place.year + 1})")
        )
        warnings.append(
            ImportWarning(
                slug,
                number,
                title,
                f"no year written in {len(yearless)} date(s) (rows {_row_ranges([n for n, _t, _w in yearless])}), "
                f"e.g. {example.removeprefix('no year in ')}; all placed in {years}",
            )
        )
    if summary and not errors:
        _cross_check_summary(slug, summary, parsed_rows, release_zone, place, warnings)
    return spec


# The summary's topics and the table rows they describe, first match wins.
_TOPICS: list[tuple[str, str, str]] = [
    # (topic, summary label pattern, table title pattern)
    ("release", r"release day|\breleased\b", r"^(?:kubernetes\s+)?v?{v}(?:\.0)?(?:\s+(?:is\s+)?released)?$"),
    ("code freeze ends", r"code freeze.*\bends\b|code thaw", r"end of code freeze|code thaw"),
    ("cycle begins", r"cycle begins", r"start of release cycle|^{v} release cycle begins"),
    ("production readiness freeze", r"production readiness", r"production readiness"),
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


def _agrees(said, parsed) -> bool:
    if said.at is not None and parsed.at is not None:
        return said.at == parsed.at
    return _day_of(said) == _day_of(parsed)


def _summary_row(slug: str, label: str, said, parsed_rows):
    """The topic of a summary item and the table row it names: among the rows of that
    topic, the one that agrees with it, else the one sharing most of its words."""
    text = label.lower()
    for topic, label_pattern, title_pattern in _TOPICS:
        if not re.search(label_pattern, text):
            continue
        pattern = title_pattern.replace("{v}", re.escape(slug))
        candidates = [
            (m, p) for m, p in parsed_rows if re.search(pattern, m.title.lower()) and not _ANNOUNCEMENT.search(m.title)
        ]
        part = re.search(r"part\s*(\d)", text)
        if topic == "retrospective" and part:
            candidates = [(m, p) for m, p in candidates if re.search(rf"part\s*{part.group(1)}\b", m.title.lower())]
        if not candidates and topic == "docs":
            candidates = [(m, p) for m, p in parsed_rows if re.search(r"\bdocs?\b", m.title.lower())]
        if not candidates:
            return topic, None
        words = set(re.findall(r"[a-z]{3,}", text))
        scores = [
            (said is not None and _agrees(said, p), len(words & set(re.findall(r"[a-z]{3,}", m.title.lower()))))
            for m, p in candidates
        ]
        return topic, candidates[scores.index(max(scores))]
    return None, None


def _day_of(parsed) -> dt.date:
    if parsed.at is None:
        return parsed.on_date
    return tz.deadline_day(parsed.at, parsed.zone)


def _cross_check_summary(slug, summary, parsed_rows, zone, place, warnings) -> None:
    """Each dated summary item is read like a row and compared with the table row it
    names; the table is what is imported, every disagreement is a warning naming both."""
    for item in summary:
        quoted = f"summary (line {item.line}) '{item.label}: {item.when}'"
        try:
            said = parse_when(item.when, zone=zone, year_hint=place)
        except ValidationFailed as exc:
            said = None
            problem = exc.message
        topic, match = _summary_row(slug, item.label, said, parsed_rows)
        if topic is None:
            continue
        if said is None:
            if re.search(r"\d", item.when):
                warnings.append(ImportWarning(slug, 0, item.label, f"{quoted} cannot be read: {problem}"))
            continue
        row, title = (match[0].row, match[0].title) if match else (0, item.label)
        same_text = match is not None and said.text == match[1].text
        for message in said.warnings:
            # The same text as its row's says the same wrong thing: reported once, on the row.
            if not message.startswith("no year") and not same_text:
                warnings.append(ImportWarning(slug, row, title, f"{quoted}: {message}"))
        if match is None:
            warnings.append(ImportWarning(slug, 0, item.label, f"{quoted} names no row of the timeline table"))
            continue
        milestone, parsed = match
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


def _check_against_source(row: dict, parsed) -> list[str]:
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


def _fill_release_dates(spec: ReleaseSpec, today: dt.date) -> None:
    days = [m.on_date or tz.local_date(m.at, m.zone) for m in spec.milestones]
    if spec.start_date is None and not days:
        raise ImportFailed(f"Release {spec.slug}: no start_date and no milestones to take it from.")
    if spec.start_date is None:
        starts = [m for m in spec.milestones if m.kind == "release-start"]
        spec.start_date = (starts[0].on_date or tz.local_date(starts[0].at, starts[0].zone)) if starts else min(days)
    if spec.ga_date is None:
        gas = [m for m in spec.milestones if m.kind == "ga"]
        if gas:
            spec.ga_date = gas[0].on_date or tz.local_date(gas[0].at, gas[0].zone)
    if not spec.status:
        if spec.ga_date and spec.ga_date < today:
            spec.status = Release.Status.RELEASED
        elif spec.start_date <= today:
            spec.status = Release.Status.ACTIVE
        else:
            spec.status = Release.Status.PLANNING


def _select(available: list[str], release_slug: str | None) -> list[str]:
    if release_slug is None:
        return available
    if release_slug not in available:
        raise ImportFailed(f"Release {release_slug!r} is not in the file; it has: {', '.join(available) or 'none'}.")
    return [release_slug]


def _parse_schedule_builder(data: dict, *, release_slug, zone, today) -> ParsedSchedule:
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    entries = {}
    for index, entry in enumerate(data["releases"], start=1):
        if not isinstance(entry, dict):
            raise ImportFailed(f"releases[{index}] must be a mapping with version and timeline.")
        slug = as_text(entry.get("version") or entry.get("release")).removeprefix("v")
        if not slug:
            raise ImportFailed(f"releases[{index}] has no 'version' (or 'release').")
        entries[slug] = entry.get("timeline") or []
    specs = []
    for slug in _select(list(entries), release_slug):
        specs.append(
            _k8s_rows(slug, entries[slug], zone=zone, fields=("what", "who", "when"), errors=errors, warnings=warnings)
        )
    if errors:
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    for spec in specs:
        if spec.milestones:
            _fill_release_dates(spec, today)
    return ParsedSchedule(format="schedule-builder", releases=[s for s in specs if s.milestones], warnings=warnings)


def _parse_k8s_json(data: dict, *, release_slug, zone, today) -> ParsedSchedule:
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    specs = []
    for slug in _select(list(data["releases"]), release_slug):
        rows = data["releases"][slug]
        if not isinstance(rows, list):
            raise ImportFailed(f"releases[{slug!r}] must be a list of rows.")
        specs.append(
            _k8s_rows(slug, rows, zone=zone, fields=("name", "who", "local"), errors=errors, warnings=warnings)
        )
    if errors:
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    for spec in specs:
        if spec.milestones:
            _fill_release_dates(spec, today)
    return ParsedSchedule(format="k8s-json", releases=[s for s in specs if s.milestones], warnings=warnings)


def detect_format(data: Any) -> str:
    if isinstance(data, dict):
        if isinstance(data.get("release"), dict) and "milestones" in data:
            return "ours"
        releases = data.get("releases")
        if isinstance(releases, list) and all(isinstance(r, dict) and "timeline" in r for r in releases):
            return "schedule-builder"
        if isinstance(releases, dict) and all(isinstance(v, list) for v in releases.values()):
            return "k8s-json"
    keys = ", ".join(map(str, data)) if isinstance(data, dict) else type(data).__name__
    raise ImportFailed(
        "Unknown schedule format (found: "
        f"{keys or 'nothing'}). Expected our format (release + milestones, see docs/schedule-format.md), "
        "the Kubernetes schedule-builder format (releases: [{version, timeline: [{what, who, when, week}]}]) "
        'or the JSON shape {"releases": {"1.29": [{name, local, ...}]}}.'
    )


_README_RELEASE = re.compile(r"Kubernetes v?(\d+\.\d+)\b|release-(\d+\.\d+)\b|\b(1\.\d+) release cycle\b")
_DAY_CELL = re.compile(
    r"(?:(?P<wd>\b(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)[a-z]*)\.?,?\s*)?(?P<d1>\d{1,2})(?:\s*[-\u2013]\s*(?P<d2>\d{1,2}))?\b",
    re.I,
)
_STRUCK_CELL = re.compile(r"~~(.*?)~~")


def _month_cell(cell: str, month: int) -> tuple[str, list[str]]:
    """A day under a month column ("2", "Mon 7", "13 - 15", "~~25~~ moved to **27**",
    "27?") as a date text, and notes on what the cell says beside the day."""
    struck = [clean_markdown(s)[0] for s in _STRUCK_CELL.findall(cell)]
    text = clean_markdown(_STRUCK_CELL.sub(" ", cell))[0]
    match = _DAY_CELL.search(text)
    if not match:
        raise ValidationFailed(f"'{cell}' under {MONTH_NAMES[month - 1]} is not a day of the month.")
    name = MONTH_NAMES[month - 1]
    when = f"{match['d1']} - {match['d2']} {name}" if match["d2"] else f"{match['d1']} {name}"
    if match["wd"]:
        when = f"{match['wd']} {when}"
    notes = []
    if struck:
        notes.append(
            f"'{cell}' under {name}: the struck-out day {', '.join(struck)} was replaced; "
            f"read as {match.group(0)} {name}"
        )
    if "?" in text:
        notes.append(f"'{cell}' under {name} is marked tentative ('?'); read as {match.group(0)} {name}")
    return when, notes


def _readme_rows(table: Table, slug: str, errors: list[str]) -> list[dict]:
    """The timeline table as rows of {what, who, when, week}: a *When* column (with
    day-only cells under month heading rows) or one column per month."""
    names = [clean_markdown(c)[0].lower() for c in table.header]
    what = names.index("what")
    who = names.index("who") if "who" in names else None
    when = names.index("when") if "when" in names else None
    time = next((i for i, n in enumerate(names) if n in {"time", "time (utc)"}), None)
    week = next((i for i, n in enumerate(names) if "week" in n), None)
    months = [(i, month_of(h)) for i, h in enumerate(table.header) if month_of(h)]
    heading_month: int | None = None
    rows = []
    for row in table.rows:
        cells = row.cells + [""] * (len(names) - len(row.cells))
        title = clean_markdown(cells[what])[0]
        where = f"{slug} row {row.number} (line {row.line})"
        others = [clean_markdown(c)[0] for i, c in enumerate(row.cells) if i != what]
        if month_of(cells[what]) and not any(others):
            heading_month = month_of(cells[what])
            continue
        notes = []
        extra = [c for c in row.cells[len(names) :] if clean_markdown(c)[0]]
        if not title:
            # "| | 1.11-blocking, master-blocking |": the rest of the row above, split over two lines.
            shown = " | ".join(o for o in others if o)
            if any(others) and not any(_looks_like_day(o) for o in others):
                rows.append({"_stray": f"line {row.line} has no milestone name and no date: '{shown}'"})
                continue
            errors.append(f"{where}: the row has a date but no milestone name (merged or missing cells?): '{shown}'")
            continue
        if months:
            filled = [(i, m) for i, m in months if clean_markdown(_STRUCK_CELL.sub("", cells[i]))[0]]
            if len(filled) > 1:
                shown = ", ".join(f"'{cells[i]}' under {MONTH_NAMES[m - 1]}" for i, m in filled)
                errors.append(f"{where} '{title}': days in two month columns ({shown}): merged cells?")
                continue
            if not filled:
                missing = ""
                if len(row.cells) < len(names):
                    missing = " (the row has fewer cells than the header: missing cells?)"
                errors.append(f"{where} '{title}': no day under any month column{missing}.")
                continue
            index, month = filled[0]
            try:
                when_text, notes = _month_cell(cells[index], month)
            except ValidationFailed as exc:
                errors.append(f"{where} '{title}': {exc.message}")
                continue
        else:
            if when is None or len(row.cells) <= when:
                errors.append(
                    f"{where} '{title}': the row has {len(row.cells)} cells and no When cell "
                    f"(the header has {len(names)}: merged or missing cells?)."
                )
                continue
            when_text = cells[when]
            written_month = re.search(_MONTH_WORD, clean_markdown(when_text)[0], re.I)
            if written_month:
                heading_month = month_of(written_month.group(0)[:3]) or heading_month
            elif heading_month and re.search(r"\d", when_text):
                # "Tue 24" under "Mon September 23" (or under a month heading row).
                notes.append(
                    f"no month in '{clean_markdown(when_text)[0]}': read in {MONTH_NAMES[heading_month - 1]}, "
                    "the month of the rows above"
                )
                when_text = f"{when_text} {MONTH_NAMES[heading_month - 1]}"
        if time is not None and clean_markdown(cells[time])[0]:
            when_text = f"{when_text} {cells[time]}"
        if extra:
            notes.append(
                f"the row has {len(row.cells)} cells, the header {len(names)}: extra cell(s) "
                f"{', '.join(repr(e) for e in extra)} ignored"
            )
        rows.append(
            {
                "what": cells[what],
                "who": cells[who] if who is not None else "",
                "when": when_text,
                "week": clean_markdown(cells[week])[0] if week is not None else "",
                "_row": row.number,
                "_notes": notes,
            }
        )
    return rows


def _looks_like_day(cell: str) -> bool:
    # CI board names ("1.11-blocking") carry digits that are not days.
    return bool(re.search(r"\d", cell)) and not re.search(r"blocking|upgrade|informing", cell)


_MONTH_WORD = r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"


def _parse_readme(text: str, *, release_slug, zone, today, years: YearContext | None = None) -> ParsedSchedule:
    """The Timeline table of a sig-release ``releases/release-1.XX/README.md``, with its
    summary (bullets or tl;dr) cross-checked against it."""
    slug = release_slug
    if not slug:
        match = _README_RELEASE.search(text)
        if not match:
            raise ImportFailed("Cannot tell which release this README is for; pass --release.")
        slug = next(g for g in match.groups() if g)
    table = read_timeline_table(text)
    if table is None:
        raise ImportFailed(
            f"release {slug}: no timeline table (a table whose header has What and When, or What and month columns)."
        )
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    rows = _readme_rows(table, slug, errors)
    for number, row in enumerate(rows):
        if "_stray" in row:
            previous = next((r for r in reversed(rows[:number]) if "_row" in r), None)
            label = clean_markdown(previous["what"])[0] if previous else "?"
            warnings.append(
                ImportWarning(
                    slug,
                    previous["_row"] if previous else 0,
                    label,
                    f"{row['_stray']}; it reads as the rest of this row split over two lines and is ignored",
                )
            )
    rows = [r for r in rows if "_stray" not in r]
    body = text[: table_start(text, table)] + "\n" + text[table_end(text, table) :]
    readme_years = [int(y) for y in re.findall(r"\b(20\d\d)\b", body)]
    context = years or YearContext(today=today)
    if context.today is None:
        context = YearContext(before=context.before, after=context.after, today=today)
    spec = _k8s_rows(
        slug,
        rows,
        zone=zone,
        fields=("what", "who", "when"),
        errors=errors,
        warnings=warnings,
        context=context,
        summary=read_summary(text),
        readme_years=readme_years,
    )
    if errors:
        unplaceable = [e for e in errors if "cannot be placed with confidence" in e]
        if unplaceable and len(unplaceable) == len(errors):
            raise YearUnplaceable(unplaceable[0])
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    if not spec.milestones:
        raise ImportFailed(f"release {slug}: the timeline table has no dated rows.")
    _fill_release_dates(spec, today)
    return ParsedSchedule(format="k8s-readme", releases=[spec], warnings=warnings)


def table_start(text: str, table: Table) -> int:
    lines = text.splitlines(keepends=True)
    return sum(len(line) for line in lines[: table.line - 1])


def table_end(text: str, table: Table) -> int:
    lines = text.splitlines(keepends=True)
    last = table.rows[-1].line if table.rows else table.line
    return sum(len(line) for line in lines[:last])


def schedule_parse(
    text: str,
    *,
    release_slug: str | None = None,
    zone: str | None = None,
    today: dt.date | None = None,
    source: str = "input",
    years: YearContext | None = None,
) -> ParsedSchedule:
    """Read a schedule file's text; raise ImportFailed listing every problem.

    ``years`` places a README whose dates have no year at all (its neighbouring
    releases); ``schedule_import`` fills it from the database and the other files."""
    if zone:
        try:
            zone = tz.normalize_zone_name(zone)
        except ValidationFailed as exc:
            raise ImportFailed(f"--zone: {exc.message}") from None
    today = today or tz.utc_now().date()
    is_markdown = str(source).lower().endswith((".md", ".markdown"))
    if is_markdown or read_timeline_table(text) is not None:
        return _parse_readme(text, release_slug=release_slug, zone=zone, today=today, years=years)
    data = load_data(text, source=source)
    if isinstance(data, str) and re.search(r"^#{1,6}\s|^[^\S\n]*\|", text, re.M):
        return _parse_readme(text, release_slug=release_slug, zone=zone, today=today, years=years)
    parser = {"ours": _parse_ours, "schedule-builder": _parse_schedule_builder, "k8s-json": _parse_k8s_json}[
        detect_format(data)
    ]
    return parser(data, release_slug=release_slug, zone=zone, today=today)


# -------------------------------------------------------------------- writing


class _DryRun(Exception):
    pass


def _release_upsert(spec: ReleaseSpec, result: ImportResult) -> Release:
    release = Release.objects.filter(slug=spec.slug).first()
    fields = {
        "name": spec.name,
        "zone": spec.zone,
        "start_date": spec.start_date,
        "ga_date": spec.ga_date,
        "status": spec.status,
        "hard_stop": spec.hard_stop,
    }
    if release is None:
        release = release_save(release=Release(slug=spec.slug, **fields))
        result.releases_created.append(spec.slug)
    elif spec.authoritative:
        changed = [key for key, value in fields.items() if getattr(release, key) != value]
        if changed:
            for key in changed:
                setattr(release, key, fields[key])
            release_save(release=release)
    return release


def week_number(text: str) -> int | None:
    """The number of the Week column's ``week 5`` (None when the cell says no week)."""
    match = re.fullmatch(r"week\s*(\d{1,2})", text.strip(), re.I)
    return int(match[1]) if match else None


def _apply(parsed: ParsedSchedule, result: ImportResult, actor_label: str, source: str = "input") -> None:
    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    unknown = sorted({m.kind for spec in parsed.releases for m in spec.milestones if m.kind not in kinds})
    if unknown:
        raise ImportFailed(f"Unknown milestone kind(s) {', '.join(unknown)}; known kinds: {', '.join(sorted(kinds))}.")
    for spec in parsed.releases:
        result.per_release[spec.slug] = ReleaseCounts(
            source=source,
            warnings=sum(1 for w in parsed.warnings if w.release == spec.slug),
            undated=list(spec.undated),
        )
        release = _release_upsert(spec, result)
        result.releases.append(spec.slug)
        existing = {m.title: m for m in Milestone.objects.filter(release=release).select_related("kind")}
        titles = set()
        for item in spec.milestones:
            titles.add(item.title)
            milestone = existing.get(item.title) or Milestone(release=release, title=item.title)
            is_new = milestone.pk is None
            before = milestone.sequence
            stored = None if is_new else milestone_snapshot(milestone)
            milestone.kind = kinds[item.kind]
            milestone.at, milestone.on_date = item.at, item.on_date
            milestone.ends_at, milestone.ends_on = item.ends_at, item.ends_on
            milestone.zone = item.zone or spec.zone
            milestone.description, milestone.link = item.description, item.link
            milestone.cancelled = item.cancelled
            milestone.week = week_number(item.week)
            counts = result.per_release[spec.slug]
            if stored is not None and milestone_snapshot(milestone) == stored:
                # Exactly what is stored (and was validated when stored): nothing to save.
                result.unchanged += 1
                counts.unchanged += 1
                continue
            try:
                milestone_save(milestone=milestone, actor_label=actor_label)
            except ValidationFailed as exc:
                raise ImportFailed(f"{spec.slug} row {item.row} '{item.title}': {exc.message}") from None
            if is_new:
                result.created += 1
                counts.created += 1
            elif milestone.sequence != before:
                result.updated += 1
                counts.updated += 1
            else:
                result.unchanged += 1
                counts.unchanged += 1
        result.not_in_file += len(set(existing) - titles)


def _version(slug: str) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in slug.split("."))
    except ValueError:
        return None


def _year_context(slug: str | None, starts: dict[str, dt.date], today: dt.date) -> YearContext:
    """The releases just before and after ``slug`` (by version) whose start is known."""
    key = _version(slug) if slug else None
    if key is None:
        return YearContext(today=today)
    known = sorted((_version(s), s, d) for s, d in starts.items() if s != slug and _version(s) and d)
    before = [(s, d) for v, s, d in known if v < key]
    after = [(s, d) for v, s, d in known if v > key]
    return YearContext(before=before[-1] if before else None, after=after[0] if after else None, today=today)


def _is_schedule_file(path: Path) -> bool:
    if path.suffix.lower() in {".yaml", ".yml", ".json"}:
        return True
    # A sig-release checkout (releases/release-1.XX/README.md) or copies named release-1.XX.md.
    return path.suffix.lower() == ".md" and any(
        re.search(r"release-\d+\.\d+", p) for p in (path.name, path.parent.name)
    )


def schedule_files(paths: list[str | Path]) -> list[Path]:
    """Files to import: each file given, and the schedule files inside each directory
    (YAML, JSON, and release READMEs), in version order."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*") if p.is_file() and _is_schedule_file(p))
            if not inside:
                raise ImportFailed(f"{path}: no schedule files in this directory (YAML, JSON or release-1.XX READMEs).")
            found.extend(inside)
        else:
            found.append(path)

    def order(path: Path):
        match = re.search(r"(\d+)\.(\d+)", f"{path.parent.name}/{path.name}")
        return (0, int(match[1]), int(match[2]), str(path)) if match else (1, 0, 0, str(path))

    return sorted(dict.fromkeys(found), key=order)


def _readme_slug(text: str) -> str | None:
    match = _README_RELEASE.search(text)
    return next(g for g in match.groups() if g) if match else None


def schedule_parse_many(
    sources: list[tuple[str, str]],
    *,
    release_slug: str | None = None,
    zone: str | None = None,
    today: dt.date | None = None,
    starts: dict[str, dt.date] | None = None,
) -> list[tuple[str, ParsedSchedule]]:
    """Read several schedule files (name, text), pure: a README whose dates have no
    year is read again once the files around it are read (``starts``: the start dates
    already known, e.g. from the database). Raises ImportFailed listing every file's
    problems."""
    today = today or tz.utc_now().date()
    starts = dict(starts or {})
    parsed_files: list[tuple[str, ParsedSchedule]] = []
    problems: list[str] = []
    pending = sources
    while pending:
        waiting = []
        for source, content in pending:
            context = _year_context(release_slug or _readme_slug(content), starts, today)
            try:
                parsed = schedule_parse(
                    content, release_slug=release_slug, zone=zone, today=today, source=source, years=context
                )
            except YearUnplaceable as exc:
                waiting.append((source, content, exc))
                continue
            except ImportFailed as exc:
                if len(sources) == 1:
                    raise ImportFailed(f"{source}: {exc.head}", errors=exc.errors) from None
                problems.append(f"{source}: {exc.message}")
                continue
            for spec in parsed.releases:
                starts[spec.slug] = spec.start_date
            parsed_files.append((source, parsed))
        if len(waiting) == len(pending):
            # Nothing new placed: the rest cannot be placed by what is known.
            problems.extend(f"{source}: {exc.message}" for source, _content, exc in waiting)
            break
        pending = [(source, content) for source, content, _exc in waiting]
    seen: dict[str, str] = {}
    for source, parsed in parsed_files:
        for spec in parsed.releases:
            if spec.slug in seen:
                problems.append(f"{source}: release {spec.slug} is also in {seen[spec.slug]}.")
            seen.setdefault(spec.slug, source)
    if problems:
        if len(problems) == 1 and len(sources) == 1:
            raise ImportFailed(problems[0])
        raise ImportFailed(f"{len(problems)} file(s) cannot be imported; nothing was imported:", errors=problems)
    if not any(parsed.releases for _source, parsed in parsed_files):
        raise ImportFailed("The file holds no milestones.")
    return parsed_files


def schedule_import(
    *,
    text: str | None = None,
    path: str | Path | None = None,
    paths: list[str | Path] | None = None,
    release_slug: str | None = None,
    zone: str | None = None,
    dry_run: bool = False,
    strict: bool = False,
    today: dt.date | None = None,
    actor_label: str = "import_schedule",
) -> ImportResult:
    """Import one schedule (``text`` or ``path``) or many (``paths``: files and
    directories) in one transaction: all of it or nothing. A README whose dates have no
    year is placed by its neighbouring releases, from the other files or the database.
    With ``strict`` every warning is a problem. With ``dry_run`` the work is done in a
    transaction that is rolled back, so the summary is exact."""
    today = today or tz.utc_now().date()
    if text is not None:
        sources = [(str(path or "input"), text)]
    else:
        given = list(paths or []) + ([path] if path is not None else [])
        files = schedule_files(given) if given else []
        if not files:
            raise ImportFailed("Give a file to import.")
        if release_slug and len(files) > 1:
            raise ImportFailed("--release picks one release of one file; give a single file with it.")
        sources = [(str(f), read_file(f)) for f in files]
    starts = dict(Release.objects.filter(start_date__isnull=False).values_list("slug", "start_date"))
    parsed_files = schedule_parse_many(sources, release_slug=release_slug, zone=zone, today=today, starts=starts)
    warnings = [w for _source, parsed in parsed_files for w in parsed.warnings]
    if strict and warnings:
        raise ImportFailed(
            f"{len(warnings)} warning(s) and --strict: nothing was imported:",
            errors=[f"{source}: {w}" for source, parsed in parsed_files for w in parsed.warnings],
        )
    parsed_files.sort(key=lambda item: min((_version(s.slug) or (0,) for s in item[1].releases), default=(0,)))
    formats = ", ".join(dict.fromkeys(parsed.format for _source, parsed in parsed_files))
    result = ImportResult(format=formats, warnings=warnings, dry_run=dry_run)
    try:
        with transaction.atomic():
            for source, parsed in parsed_files:
                _apply(parsed, result, actor_label, source=Path(source).name)
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return result


# ------------------------------------------------------------------------ KEPs
