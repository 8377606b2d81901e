"""Format ``ours`` (docs/schedule-format.md): ``release: {slug, name, zone, start_date,
ga_date, status, hard_stop}`` plus ``milestones: [...]``, each with a strict wall time
(``at``), a day (``date``) or a free-text time (``when``). The release's fields are
applied as written."""

from __future__ import annotations

import datetime as dt
from typing import Any

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, as_text
from releasecal.importers.schedule_text import PACIFIC, clean_markdown, parse_when
from releasecal.importers.specs import (
    ImportWarning,
    MilestoneSpec,
    ParsedSchedule,
    ReleaseSpec,
    fill_release_dates,
    kind_label_for,
    milestone_kind_for,
)
from releasecal.models import Release


def _date(value: Any, what: str) -> dt.date:
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    try:
        return dt.date.fromisoformat(as_text(value))
    except ValueError:
        raise ValidationFailed(f"{what} {value!r} is not a date (YYYY-MM-DD).") from None


def parse_ours(data: dict, *, release_slug: str | None, zone: str | None, today: dt.date) -> ParsedSchedule:
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
    fill_release_dates(spec, today)
    return ParsedSchedule(format="ours", releases=[spec], warnings=warnings)


def _our_milestone(
    number: int, title: str, row: dict, release: ReleaseSpec, warnings: list[ImportWarning]
) -> MilestoneSpec:
    if not title:
        raise ValidationFailed("title is missing.")
    kind = as_text(row.get("kind")) or milestone_kind_for(title)
    zone = tz.normalize_zone_name(as_text(row.get("zone")) or release.zone)
    spec = MilestoneSpec(
        row=number,
        title=title,
        kind=kind,
        kind_label=kind_label_for(title, kind),
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
