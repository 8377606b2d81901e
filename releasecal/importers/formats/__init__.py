"""The schedule formats, one module each: ``ours`` (our YAML), ``schedule_builder``
(Kubernetes' schedule-builder YAML), ``k8s_json`` (the shared JSON) and ``readme`` (a
sig-release README's timeline table); ``kubernetes`` reads the rows the last three
share. A YAML or JSON file's format is told by its shape (``detect_format``); a README
is told by its timeline table (``releasecal.importers.schedule.schedule_parse``)."""

from __future__ import annotations

from typing import Any

from releasecal.importers.files import ImportFailed
from releasecal.importers.formats.k8s_json import parse_k8s_json
from releasecal.importers.formats.ours import parse_ours
from releasecal.importers.formats.schedule_builder import parse_schedule_builder

# The data formats by name, each read by ``parser(data, release_slug=, zone=, today=)``.
DATA_FORMATS = {"ours": parse_ours, "schedule-builder": parse_schedule_builder, "k8s-json": parse_k8s_json}


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
