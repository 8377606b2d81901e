"""Format ``schedule-builder``: Kubernetes' ``releases: [{version, timeline: [{what,
who, when, week}]}]``, with the free-text times of the release README."""

from __future__ import annotations

import datetime as dt

from releasecal.importers.files import ImportFailed, as_text
from releasecal.importers.formats.kubernetes import SCHEDULE_FIELDS, kubernetes_schedule
from releasecal.importers.specs import ParsedSchedule


def parse_schedule_builder(data: dict, *, release_slug: str | None, zone: str | None, today: dt.date) -> ParsedSchedule:
    entries = {}
    for index, entry in enumerate(data["releases"], start=1):
        if not isinstance(entry, dict):
            raise ImportFailed(f"releases[{index}] must be a mapping with version and timeline.")
        slug = as_text(entry.get("version") or entry.get("release")).removeprefix("v")
        if not slug:
            raise ImportFailed(f"releases[{index}] has no 'version' (or 'release').")
        entries[slug] = entry.get("timeline") or []
    return kubernetes_schedule(
        "schedule-builder", entries, fields=SCHEDULE_FIELDS, release_slug=release_slug, zone=zone, today=today
    )
