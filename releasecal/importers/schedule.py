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

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, as_text, load_data, read_file
from releasecal.importers.schedule_text import PACIFIC, clean_markdown, parse_when
from releasecal.models import Milestone, MilestoneKind, Release
from releasecal.services import milestone_save

# ------------------------------------------------------------------- kinds


# Ordered: the first matching rule decides. Announcements ("Call for Exceptions",
# "Brace Yourself, Code Freeze is Coming") name a freeze without being one.
_KIND_RULES: list[tuple[str, str]] = [
    (r"\bexceptions?\b|brace yourself|is coming|\bcall for\b", "other"),
    (r"production readiness freeze|\bprr freeze", "prr-freeze"),
    (r"enhancements? freeze", "enhancements-freeze"),
    (r"feature blogs? freeze", "feature-blog-freeze"),
    (r"code freeze", "code-freeze"),
    (r"test freeze", "test-freeze"),
    (r"docs? freeze", "docs-freeze"),
    (r"\d+\.\d+\.\d+-alpha\.\d+", "alpha"),
    (r"\d+\.\d+\.\d+-beta\.\d+", "beta"),
    (r"\d+\.\d+\.\d+-rc\.\d+", "rc"),
    (r"^(?:kubernetes\s+)?v?\d+\.\d+(?:\.0)?\s+(?:is\s+)?released\b", "ga"),
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


@dataclass(frozen=True)
class ImportWarning:
    release: str
    row: int
    title: str
    message: str

    def __str__(self) -> str:
        return f"{self.release} row {self.row} '{self.title}': {self.message}"


@dataclass
class ParsedSchedule:
    format: str
    releases: list[ReleaseSpec]
    warnings: list[ImportWarning]


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


def _k8s_rows(
    slug: str,
    rows: list,
    *,
    zone: str | None,
    fields: tuple[str, str, str],
    errors: list[str],
    warnings: list[ImportWarning],
) -> ReleaseSpec:
    """Rows of one Kubernetes release: ``fields`` names the (title, owner, time) keys."""
    title_key, who_key, when_key = fields
    uses_aoe = any("aoe" in as_text(row.get(when_key)).lower() for row in rows if isinstance(row, dict))
    release_zone = tz.normalize_zone_name(zone) if zone else (tz.AOE if uses_aoe else PACIFIC)
    spec = ReleaseSpec(slug=slug, name=f"Kubernetes v{slug}", zone=release_zone)
    hint: dt.date | None = None
    seen: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            errors.append(f"{slug} row {number}: expected a mapping, got {row!r}.")
            continue
        title, title_link = clean_markdown(as_text(row.get(title_key)))
        if not title:
            errors.append(f"{slug} row {number}: '{title_key}' is missing.")
            continue
        if title in seen:
            # Titles identify milestones on re-import; a repeated one gets its date added.
            title = f"{title} ({as_text(row.get(when_key))})"
        seen[title] = number
        when = as_text(row.get(when_key))
        _, when_link = clean_markdown(when)
        if not re.search(r"\d", when):
            # "TBD", "n/a" or empty: nothing to put on a calendar yet, and nothing wrong with the rest.
            warnings.append(ImportWarning(slug, number, title, f"no date yet ({when or 'empty'!r}); row skipped"))
            continue
        try:
            parsed = parse_when(when, zone=release_zone, year_hint=hint)
        except ValidationFailed as exc:
            errors.append(f"{slug} row {number} '{title}': {exc.message}")
            continue
        hint = parsed.first_day or hint
        row_warnings = list(parsed.warnings)
        row_warnings += _check_against_source(row, parsed)
        warnings.extend(ImportWarning(slug, number, title, w) for w in row_warnings)
        who = as_text(row.get(who_key))
        week = as_text(row.get("week"))
        details = [f"Who: {who}" if who else "", week.capitalize() if week else "", f"As published: {parsed.text}"]
        spec.milestones.append(
            MilestoneSpec(
                row=number,
                title=title,
                kind=milestone_kind_for(title),
                at=parsed.at,
                on_date=parsed.on_date,
                ends_on=parsed.ends_on,
                zone=parsed.zone or release_zone,
                description=". ".join(d for d in details if d),
                link=as_text(row.get("time_link")) or when_link or title_link,
            )
        )
    return spec


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


_TABLE_HEADER = re.compile(r"^\s*\|(?P<cells>.*\bwhat\b.*\bwhen\b.*)\|\s*$", re.I | re.M)
_README_RELEASE = re.compile(r"Kubernetes v?(\d+\.\d+)\b|release-(\d+\.\d+)\b")


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _parse_readme(text: str, *, release_slug, zone, today) -> ParsedSchedule:
    """The Timeline table of a sig-release ``releases/release-1.XX/README.md``."""
    header = _TABLE_HEADER.search(text)
    names = [clean_markdown(c)[0].lower() for c in _cells(header.group(0))]
    lines = text[header.end() :].lstrip("\n").splitlines()
    rows = []
    for line in lines:
        if not line.strip().startswith("|"):
            break
        cells = _cells(line)
        if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue
        rows.append(dict(zip(names, cells, strict=False)))
    slug = release_slug
    if not slug:
        match = _README_RELEASE.search(text)
        if not match:
            raise ImportFailed("Cannot tell which release this README is for; pass --release.")
        slug = match.group(1) or match.group(2)
    errors: list[str] = []
    warnings: list[ImportWarning] = []
    spec = _k8s_rows(slug, rows, zone=zone, fields=("what", "who", "when"), errors=errors, warnings=warnings)
    if errors:
        raise ImportFailed(f"{len(errors)} problem(s) in the schedule; nothing was imported:", errors=errors)
    if not spec.milestones:
        raise ImportFailed("The README's timeline table has no rows.")
    _fill_release_dates(spec, today)
    return ParsedSchedule(format="k8s-readme", releases=[spec], warnings=warnings)


def schedule_parse(
    text: str,
    *,
    release_slug: str | None = None,
    zone: str | None = None,
    today: dt.date | None = None,
    source: str = "input",
) -> ParsedSchedule:
    """Read a schedule file's text; raise ImportFailed listing every problem."""
    if zone:
        try:
            zone = tz.normalize_zone_name(zone)
        except ValidationFailed as exc:
            raise ImportFailed(f"--zone: {exc.message}") from None
    today = today or tz.utc_now().date()
    if _TABLE_HEADER.search(text):
        return _parse_readme(text, release_slug=release_slug, zone=zone, today=today)
    data = load_data(text, source=source)
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
        release = Release.objects.create(slug=spec.slug, **fields)
        result.releases_created.append(spec.slug)
    elif spec.authoritative:
        changed = [key for key, value in fields.items() if getattr(release, key) != value]
        if changed:
            for key in changed:
                setattr(release, key, fields[key])
            release.save()
    return release


def _apply(parsed: ParsedSchedule, result: ImportResult, actor_label: str) -> None:
    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    unknown = sorted({m.kind for spec in parsed.releases for m in spec.milestones if m.kind not in kinds})
    if unknown:
        raise ImportFailed(f"Unknown milestone kind(s) {', '.join(unknown)}; known kinds: {', '.join(sorted(kinds))}.")
    for spec in parsed.releases:
        release = _release_upsert(spec, result)
        result.releases.append(spec.slug)
        existing = {m.title: m for m in Milestone.objects.filter(release=release).select_related("kind")}
        titles = set()
        for item in spec.milestones:
            titles.add(item.title)
            milestone = existing.get(item.title) or Milestone(release=release, title=item.title)
            is_new = milestone.pk is None
            before = milestone.sequence
            milestone.kind = kinds[item.kind]
            milestone.at, milestone.on_date = item.at, item.on_date
            milestone.ends_at, milestone.ends_on = item.ends_at, item.ends_on
            milestone.zone = item.zone or spec.zone
            milestone.description, milestone.link = item.description, item.link
            milestone.cancelled = item.cancelled
            try:
                milestone_save(milestone=milestone, actor_label=actor_label)
            except ValidationFailed as exc:
                raise ImportFailed(f"{spec.slug} row {item.row} '{item.title}': {exc.message}") from None
            if is_new:
                result.created += 1
            elif milestone.sequence != before:
                result.updated += 1
            else:
                result.unchanged += 1
        result.not_in_file += len(set(existing) - titles)


def schedule_import(
    *,
    text: str | None = None,
    path: str | Path | None = None,
    release_slug: str | None = None,
    zone: str | None = None,
    dry_run: bool = False,
    today: dt.date | None = None,
    actor_label: str = "import_schedule",
) -> ImportResult:
    """Import a schedule file: all of it or nothing. With ``dry_run`` the work is done
    in a transaction that is rolled back, so the summary is exact."""
    if text is None:
        if path is None:
            raise ImportFailed("Give a file to import.")
        text = read_file(path)
    parsed = schedule_parse(text, release_slug=release_slug, zone=zone, today=today, source=str(path or "input"))
    if not parsed.releases:
        raise ImportFailed("The file holds no milestones.")
    result = ImportResult(format=parsed.format, warnings=parsed.warnings, dry_run=dry_run)
    try:
        with transaction.atomic():
            _apply(parsed, result, actor_label)
            if dry_run:
                raise _DryRun
    except _DryRun:
        pass
    return result


# ------------------------------------------------------------------------ KEPs
