"""Importing release schedules from files: the public entry points.

Four schedule formats are read, one module each in ``releasecal.importers.formats``
(docs/schedule-format.md describes ours):

- ``ours``: ``release: {...}`` plus ``milestones: [...]`` with strict wall times;
- ``schedule-builder``: Kubernetes' ``releases: [{version, timeline: [{what, who, when,
  week}]}]`` with the free-text times of the release README;
- ``k8s-json``: ``{"releases": {"1.29": [{name, who, local, utc_iso, date, ...}]}}``,
  the shared demo data;
- ``k8s-readme``: the timeline table of a sig-release README (every shape since 1.10),
  its summary cross-checked against it.

Reading (``schedule_parse``, ``schedule_parse_many``) is pure and collects every row
error before anything is written; a date written without its year is placed by
``releasecal.importers.years``. Writing (``schedule_import``, through
``releasecal.importers.writing``) upserts milestones through ``services.milestone_save``
matched on (release, title), so re-importing the same file changes nothing and bumps no
``sequence``.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, load_data, read_file
from releasecal.importers.formats import DATA_FORMATS, detect_format
from releasecal.importers.formats.readme import parse_readme, readme_slug
from releasecal.importers.schedule_text import read_timeline_table
from releasecal.importers.specs import ParsedSchedule, milestone_kind_for
from releasecal.importers.writing import ImportResult, schedule_write, week_number
from releasecal.importers.years import YearContext, YearUnplaceable, release_version, year_context
from releasecal.models import Release

# Kept importable from here, where callers have always found them.
__all__ = [
    "ImportResult",
    "ParsedSchedule",
    "YearContext",
    "detect_format",
    "milestone_kind_for",
    "schedule_files",
    "schedule_import",
    "schedule_parse",
    "schedule_parse_many",
    "week_number",
]


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
        return parse_readme(text, release_slug=release_slug, zone=zone, today=today, years=years)
    data = load_data(text, source=source)
    if isinstance(data, str) and re.search(r"^#{1,6}\s|^[^\S\n]*\|", text, re.M):
        return parse_readme(text, release_slug=release_slug, zone=zone, today=today, years=years)
    parser = DATA_FORMATS[detect_format(data)]
    return parser(data, release_slug=release_slug, zone=zone, today=today)


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
            context = year_context(release_slug or readme_slug(content), starts, today)
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
    parsed_files.sort(key=lambda item: min((release_version(s.slug) or (0,) for s in item[1].releases), default=(0,)))
    return schedule_write(parsed_files, warnings=warnings, dry_run=dry_run, actor_label=actor_label)
