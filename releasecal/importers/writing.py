"""Writing what was read: each release upserted, each milestone saved through
``services.milestone_save`` matched on (release, title), so re-importing the same file
changes nothing and bumps no ``sequence``. All files in one transaction, or nothing
(``schedule_write``; a dry run does the work and rolls it back)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, http_url
from releasecal.importers.specs import ImportWarning, ParsedSchedule, ReleaseSpec
from releasecal.models import Milestone, MilestoneKind, Release
from releasecal.services import milestone_save, milestone_snapshot, release_save


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


# A name or title is one line of text; a description keeps its line breaks and tabs.
_CONTROL_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_TEXT = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """A name as one line: control characters (CR/LF included) become spaces, runs of
    spaces one. A title with CR/LF made its release's, SIG's and KEP's feeds fail."""
    return " ".join(_CONTROL_ONE_LINE.sub(" ", text).split())


def description_text(text: str) -> str:
    """A description: line breaks as ``\n``, no other control character but tab."""
    return _CONTROL_TEXT.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def _normalise(parsed: ParsedSchedule) -> list[ImportWarning]:
    """Names, titles and descriptions without control characters; links that are not
    one http(s) URL (``files.http_url``) dropped, each with a warning naming its row."""
    warnings = []
    for spec in parsed.releases:
        spec.name = one_line(spec.name)
        for item in spec.milestones:
            title = one_line(item.title)
            if title != item.title:
                warnings.append(ImportWarning(spec.slug, item.row, title, "control characters in the title removed"))
            item.title, item.description = title, description_text(item.description)
            if item.link and not http_url(item.link):
                shown = one_line(item.link)[:60]
                warnings.append(ImportWarning(spec.slug, item.row, title, f"link {shown!r} is not http(s): left out"))
                item.link = ""
    return warnings


def _apply(parsed: ParsedSchedule, result: ImportResult, actor_label: str, source: str = "input") -> None:
    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    unknown = sorted({m.kind for spec in parsed.releases for m in spec.milestones if m.kind not in kinds})
    if unknown:
        raise ImportFailed(f"Unknown milestone kind(s) {', '.join(unknown)}; known kinds: {', '.join(sorted(kinds))}.")
    normalised = _normalise(parsed)
    parsed.warnings.extend(normalised)
    result.warnings.extend(w for w in normalised if w not in result.warnings)
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
            milestone.kind_label = item.kind_label
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


def schedule_write(
    parsed_files: list[tuple[str, ParsedSchedule]],
    *,
    warnings: list[ImportWarning],
    dry_run: bool,
    actor_label: str,
) -> ImportResult:
    """Write every file read (source, reading), in the order given, in one transaction;
    with ``dry_run`` the transaction is rolled back, so the counts are exact."""
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
