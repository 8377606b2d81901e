"""Format ``k8s-json``: ``{"releases": {"1.29": [{name, who, local, utc_iso, date,
notes}, ...]}}``, the shape of the shared demo data. Its ``utc_iso``, ``date`` and
``notes`` are checked against the text, never trusted over it."""

from __future__ import annotations

import datetime as dt

from releasecal.importers.files import ImportFailed
from releasecal.importers.formats.kubernetes import JSON_FIELDS, kubernetes_schedule
from releasecal.importers.specs import ParsedSchedule, select_releases


def parse_k8s_json(data: dict, *, release_slug: str | None, zone: str | None, today: dt.date) -> ParsedSchedule:
    for slug in select_releases(list(data["releases"]), release_slug):
        if not isinstance(data["releases"][slug], list):
            raise ImportFailed(f"releases[{slug!r}] must be a list of rows.")
    return kubernetes_schedule(
        "k8s-json", data["releases"], fields=JSON_FIELDS, release_slug=release_slug, zone=zone, today=today
    )
