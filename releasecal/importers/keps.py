"""Importing KEPs from kubernetes/enhancements' kep.yaml files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, as_text, load_data, read_file
from releasecal.models import Release
from releasecal.services import enhancement_upsert, tracking_set


@dataclass
class KepFileResult:
    path: str
    number: int | None = None
    title: str = ""
    error: str = ""


@dataclass
class KepImportResult:
    files: list[KepFileResult] = field(default_factory=list)
    tracked: int = 0

    @property
    def failed(self) -> list[KepFileResult]:
        return [f for f in self.files if f.error]

    @property
    def imported(self) -> list[KepFileResult]:
        return [f for f in self.files if not f.error]


_STAGES = {"alpha": "alpha", "beta": "beta", "stable": "stable", "ga": "stable", "deprecated": "deprecation"}


def _sig(value: Any) -> str:
    text = as_text(value).lower()
    text = re.sub(r"^sig[-_ ]", "", text)
    return re.sub(r"[^a-z0-9-]+", "-", text).strip("-")


def _handle(author: Any) -> str:
    text = as_text(author)
    match = re.search(r"@?([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))", text)
    return match.group(1) if match else ""


def kep_parse(data: Any) -> dict[str, Any]:
    """The fields of a kep.yaml document, checked; raise ValidationFailed naming the field."""
    if not isinstance(data, dict):
        raise ValidationFailed("not a kep.yaml mapping (title, kep-number, owning-sig, ...).")
    number = data.get("kep-number")
    try:
        number = int(str(number).strip())
    except (TypeError, ValueError):
        raise ValidationFailed(f"kep-number {number!r} is not a number.") from None
    title = as_text(data.get("title"))
    if not title:
        raise ValidationFailed("title is missing.")
    owning_sig = _sig(data.get("owning-sig"))
    if not owning_sig:
        raise ValidationFailed("owning-sig is missing.")
    participating = data.get("participating-sigs") or []
    if not isinstance(participating, list):
        participating = [participating]
    authors = data.get("authors") or []
    if not isinstance(authors, list):
        authors = [authors]
    stage = as_text(data.get("stage")).lower()
    if stage and stage not in _STAGES:
        raise ValidationFailed(f"stage {stage!r} is not one of alpha, beta, stable, deprecated.")
    return {
        "number": number,
        "title": title,
        "owning_sig": owning_sig,
        "participating_sigs": [s for s in (_sig(p) for p in participating) if s],
        "owners": [{"github": h} for h in (_handle(a) for a in authors) if h],
        "stage": _STAGES.get(stage, ""),
        "status": as_text(data.get("status")),
        "latest_milestone": as_text(data.get("latest-milestone")),
    }


def keps_import(*, directory: str | Path, release_slug: str | None = None) -> KepImportResult:
    """Upsert every kep.yaml under ``directory``; one bad file does not stop the rest."""
    root = Path(directory)
    if not root.is_dir():
        raise ImportFailed(f"{root}: no such directory.")
    release = None
    if release_slug:
        release = Release.objects.filter(slug=release_slug).first()
        if release is None:
            raise ImportFailed(f"No release {release_slug!r}; import its schedule first.")
    result = KepImportResult()
    paths = sorted(root.rglob("kep.yaml"))
    if not paths:
        raise ImportFailed(f"{root}: no kep.yaml files found.")
    for path in paths:
        item = KepFileResult(path=str(path))
        result.files.append(item)
        try:
            fields = kep_parse(load_data(read_file(path), source=""))
            item.number, item.title = fields["number"], fields["title"]
            with transaction.atomic():
                enhancement = enhancement_upsert(
                    number=fields["number"],
                    title=fields["title"],
                    owning_sig=fields["owning_sig"],
                    participating_sigs=fields["participating_sigs"],
                    owners=fields["owners"],
                )
                if release is not None:
                    if not fields["stage"]:
                        raise ValidationFailed("stage is missing, so it cannot be tracked in a release.")
                    tracking_set(release=release, enhancement=enhancement, stage=fields["stage"])
                    result.tracked += 1
        except ValidationFailed as exc:
            item.error = exc.message
    return result
