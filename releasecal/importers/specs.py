"""What a schedule file says, whatever its format: the releases and milestones read
(``ReleaseSpec``, ``MilestoneSpec``), the warnings about them (``ImportWarning``, with
their kinds), and the rules every format shares: a milestone's kind from its name, a
release's dates and status from its milestones, picking one release of a file. Pure."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from releasecal import tz
from releasecal.importers.files import ImportFailed
from releasecal.models import Release

# ------------------------------------------------------------------- kinds

# Ordered: the first matching rule decides. Announcements ("Call for Exceptions",
# "Brace Yourself, Code Freeze is Coming") name a freeze without being one.
_KIND_RULES: list[tuple[str, str]] = [
    (r"\bexceptions?\b|brace yourself|is coming|\bcall for\b", "other"),
    (r"end of code freeze|lifting code freeze|code thaw|^thaw$|\bevaluation\b", "other"),
    (r"production readiness freeze|\bprr freeze|\bkep readiness deadline", "prr-freeze"),
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


# The names a release's schedule gives a kind instead of the kind's own: the name is
# stored on the milestone (``Milestone.kind_label``) and shown where the kind's name is.
# From v1.38 the PRR freeze is the "KEP Readiness Deadline" (kubernetes/community#9169).
_KIND_LABELS: list[tuple[str, str, str]] = [
    (r"\bkep readiness deadline\b", "prr-freeze", "KEP Readiness Deadline"),
]


def kind_label_for(title: str, kind: str) -> str:
    """The release's own name for the kind of a row titled ``title`` ("Begin KEP
    Readiness Deadline" -> "KEP Readiness Deadline"); empty when it uses the kind's name."""
    text = title.strip().lower()
    for pattern, slug, label in _KIND_LABELS:
        if slug == kind and re.search(pattern, text):
            return label
    return ""


# ------------------------------------------------------------------- specs


@dataclass
class MilestoneSpec:
    row: int
    title: str
    kind: str
    kind_label: str = ""  # the release's own name for the kind (kind_label_for), empty: the kind's name
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


def fill_release_dates(spec: ReleaseSpec, today: dt.date) -> None:
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


def select_releases(available: list[str], release_slug: str | None) -> list[str]:
    if release_slug is None:
        return available
    if release_slug not in available:
        raise ImportFailed(f"Release {release_slug!r} is not in the file; it has: {', '.join(available) or 'none'}.")
    return [release_slug]
