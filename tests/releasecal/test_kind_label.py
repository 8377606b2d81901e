"""A kind named differently per release: v1.38 calls the PRR freeze the "KEP Readiness
Deadline" (kubernetes/community#9169). The importer reads both names as the one kind and
keeps the release's own name (``Milestone.kind_label``), which every face shows."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.test import Client

from releasecal.importers.schedule import schedule_import
from releasecal.importers.specs import kind_label_for, milestone_kind_for
from releasecal.models import Milestone
from tests.support.paths import SHARED_DATA

UTC = dt.UTC
TODAY = dt.date(2026, 11, 30)
READMES = SHARED_DATA / "k8s-readmes"

# Shaped like the v1.38 README once sig-release#3108 renames the table's row too.
README_138 = """# Kubernetes v1.38

## Summary

- **Monday 31st August 2026**: Week 1 — Release cycle begins
- **Tuesday 22nd September 2026 (AoE) / Wednesday 23th September 2026, 12:00 UTC**: Week 4 — [KEP Readiness Deadline][KEP Readiness Deadline]
- **Tuesday 29th September 2026 (AoE) / Wednesday 30th September 2026, 12:00 UTC**: Week 5 — [Enhancements Freeze][Enhancements Freeze]

## Timeline

| **What** | **Who** | **When** | **Week** | **Release Signal** |
|---|---|---|---|---|
| Start of Release Cycle | Lead | Monday 31st August 2026 | week 1 | |
| **Begin [KEP Readiness Deadline]** | Enhancements Lead | Tuesday 22nd September 2026 (AoE) / Wednesday 23th September 2026 12:00 UTC | week 4 | |
| **Begin [Enhancements Freeze]** | Enhancements Lead | Tuesday 29th September 2026 (AoE) / Wednesday 30th September 2026 12:00 UTC | week 5 | |
| **v1.38.0 released** | Branch Manager | Wednesday 16th December 2026 | week 16 | |

## Phases

[KEP Readiness Deadline]: ../release_phases.md#prr-freeze
"""  # noqa: E501 (the README's own lines)


def test_both_names_are_the_prr_freeze_and_only_the_new_one_is_a_label():
    assert milestone_kind_for("Begin KEP Readiness Deadline") == "prr-freeze"
    assert milestone_kind_for("Begin Production Readiness Freeze") == "prr-freeze"
    assert kind_label_for("Begin KEP Readiness Deadline", "prr-freeze") == "KEP Readiness Deadline"
    assert kind_label_for("Begin Production Readiness Freeze", "prr-freeze") == ""
    assert kind_label_for("Call for KEP Readiness Deadline Exceptions", "other") == ""


@pytest.fixture
def v138(kinds):
    return schedule_import(text=README_138, today=TODAY)


def test_the_138_readme_imports_the_kep_readiness_deadline_as_the_prr_freeze(v138):
    assert (v138.format, v138.releases, v138.created) == ("k8s-readme", ["1.38"], 4)
    # The summary's new name finds its row (no "summary and table disagree"); the real
    # README's "23th" is reported in both places.
    assert [str(w) for w in v138.warnings] == [
        "1.38 row 2 'Begin KEP Readiness Deadline': ordinal typo: '23th' for the 23rd, read as day 23",
        "1.38 row 2 'Begin KEP Readiness Deadline': summary (line 6) 'KEP Readiness Deadline: Tuesday 22nd "
        "September 2026 (AoE) / Wednesday 23th September 2026, 12:00 UTC': ordinal typo: '23th' for the 23rd, "
        "read as day 23",
    ]
    milestone = v138_milestone()
    assert (milestone.kind.slug, milestone.kind.name) == ("prr-freeze", "Production Readiness Freeze")
    assert (milestone.kind_label, milestone.kind_name) == ("KEP Readiness Deadline", "KEP Readiness Deadline")
    assert milestone.at == dt.datetime(2026, 9, 23, 12, tzinfo=UTC)
    enhancements = milestone.release.milestones.get(kind__slug="enhancements-freeze")
    assert (enhancements.kind_label, enhancements.kind_name) == ("", "Enhancements Freeze")


def v138_milestone():
    return Milestone.objects.select_related("kind", "release").get(release__slug="1.38", kind__slug="prr-freeze")


def test_the_faces_show_the_releases_own_name(v138):
    client = Client()
    rows = client.get("/api/v1/releases/1.38/milestones/", {"kind": "prr-freeze"}).json()["results"]
    assert [(r["kind"], r["kind_name"], r["title"]) for r in rows] == [
        ("prr-freeze", "KEP Readiness Deadline", "Begin KEP Readiness Deadline")
    ]
    feed = client.get("/calendar/1.38.ics").content.decode()
    assert "CATEGORIES:KEP Readiness Deadline\r\n" in feed
    assert "CATEGORIES:Production Readiness Freeze" not in feed
    page = client.get("/releases/1.38/").content.decode()
    assert '<span class="kind">KEP Readiness Deadline</span>' in page
    assert "Production Readiness Freeze" not in page


def test_a_reimport_is_unchanged_and_keeps_the_name(v138):
    again = schedule_import(text=README_138, today=TODAY)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 4)
    assert v138_milestone().kind_name == "KEP Readiness Deadline"


def test_the_older_readmes_keep_the_kinds_own_name(kinds):
    paths = sorted(READMES.glob("release-1.*.md"), key=lambda p: int(p.stem.split(".")[1]))
    assert len(paths) == 28
    schedule_import(paths=paths, today=TODAY)
    prr = Milestone.objects.filter(kind__slug="prr-freeze").select_related("kind", "release")
    assert sorted({m.kind_name for m in prr}) == ["Production Readiness Freeze"]
    assert Milestone.objects.exclude(kind_label="").count() == 0
    assert len(prr) == len([m for m in prr if re.search(r"production readiness", m.title, re.I)])
