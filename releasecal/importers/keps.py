"""Importing KEPs from kubernetes/enhancements' ``keps/`` tree: every ``kep.yaml``, and the
PRR approvers of ``prod-readiness/<sig>/<number>.yaml``.

What the real tree holds (656 kep.yaml, 453 PRR files when this was written), and how
each shape is read, is in docs/kep-import.md; every odd shape has a test with an excerpt
in tests/releasecal/test_import_keps.py. One bad file is one line and the rest goes on.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from releasecal.errors import ValidationFailed
from releasecal.importers.files import ImportFailed, as_text, load_data, plain_text
from releasecal.models import Enhancement, Release, Tracking
from releasecal.services import KepRecord, enhancement_kep_records_save, tracking_set

KEP_YAML_MAX_BYTES = 64_000  # the largest real kep.yaml is 2.6 KB, the largest PRR file 0.2 KB
MAX_KEP_NUMBER = Enhancement.MAX_NUMBER
TITLE_MAX = 300  # Enhancement.title

# A folder of the template (NNNN-kep-template) or of a process document without a KEP
# issue (sig-architecture/0000-kep-process): skipped with a note, not refused.
_UNNUMBERED_FOLDER = re.compile(r"^(?:N+|0+)-", re.I)
_FOLDER_NUMBER = re.compile(r"^(\d+)-")
# A GitHub handle: 1 to 39 letters, digits and hyphens, not starting with a hyphen.
_HANDLE = r"[A-Za-z0-9][A-Za-z0-9-]{0,38}"
_HANDLE_ALONE = re.compile(rf"@?({_HANDLE})")
_HANDLE_THEN_WORDS = re.compile(rf"@({_HANDLE})\s+[-\u2013\u2014(:,].*")  # "@deads2k - For Kube API Server portion"
_QUOTES = "\"'`\u201c\u201d\u2018\u2019"  # typographic quotes too: "\u201c@neolit123\u201d"
_RELEASE = re.compile(r"v?(\d{1,3})\.(\d{1,3})", re.I)
# What kep.yaml writes for "no release (yet)": never a warning.
_NO_RELEASE = {"", "tbd", "todo", "x.y", "n/a", "na", "none", "never", "-", "0.0", "v0.0"}
_TRACKING_STAGE = {
    "alpha": Tracking.Stage.ALPHA,
    "beta": Tracking.Stage.BETA,
    "stable": Tracking.Stage.STABLE,
    "deprecated": Tracking.Stage.DEPRECATION,
    "disabled": Tracking.Stage.DEPRECATION,
    "removed": Tracking.Stage.DEPRECATION,
}
_STAGES = Enhancement.KepStage.values
_STATUSES = Enhancement.KepStatus.values
_GROUP = re.compile(r"(sig|wg|ug|committee)-([a-z0-9][a-z0-9-]*)")
# Names of SIGs as kep.yaml files write them by mistake (participating-sigs).
_SIG_ALIASES = {
    "arch": "architecture",
    "apimachinery": "api-machinery",
    "machinery": "api-machinery",
    "scheduler": "scheduling",
    "contribex": "contributor-experience",
}


@dataclass
class KepWarning:
    kind: str  # stage, status, milestone, handle, sig, number, duplicate, prr, owning-sig, tracking
    text: str


@dataclass
class KepFileResult:
    path: str  # under the directory given
    number: int | None = None
    title: str = ""
    error: str = ""  # refused: nothing of it was imported
    skipped: str = ""  # a template, an unnumbered folder, a second file of one number: why
    skipped_kind: str = ""  # template, unnumbered, duplicate
    outcome: str = ""  # created, updated, unchanged
    warnings: list[KepWarning] = field(default_factory=list)


@dataclass
class KepImportResult:
    files: list[KepFileResult] = field(default_factory=list)
    notes: list[KepWarning] = field(default_factory=list)  # about the tree, not one kep.yaml
    tracked: int = 0
    seconds: float = 0.0

    @property
    def failed(self) -> list[KepFileResult]:
        return [f for f in self.files if f.error]

    @property
    def skipped(self) -> list[KepFileResult]:
        return [f for f in self.files if f.skipped and not f.error]

    @property
    def imported(self) -> list[KepFileResult]:
        return [f for f in self.files if f.outcome]

    @property
    def warnings(self) -> list[tuple[str, KepWarning]]:
        return [(f.path, w) for f in self.files for w in f.warnings] + [("", w) for w in self.notes]

    def outcomes(self) -> Counter:
        return Counter(f.outcome for f in self.imported)

    def warnings_by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(w.kind for _, w in self.warnings).items()))

    def skipped_by_kind(self) -> dict[str, int]:
        return dict(sorted(Counter(f.skipped_kind for f in self.skipped).items()))


# ---------------------------------------------------------------------- reading


def read_handles(value: Any, *, field_name: str, warnings: list[KepWarning]) -> list[str]:
    """The GitHub handles of a kep.yaml list (``authors``, ``approvers``, ``reviewers``):
    a list or one string (commas between handles), each ``@handle`` or ``handle``, in
    typographic quotes too; ``@handle - what for`` is the handle. Anything else (a team,
    ``with input from @a, @b``, ``@jane.doe``) is a warning and left out. No handle twice,
    in any case."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    handles: list[str] = []
    for item in items:
        if isinstance(item, dict | list):
            warnings.append(KepWarning("handle", f"{field_name}: {str(item)[:60]!r} is not a GitHub handle; left out"))
            continue
        text = " ".join(as_text(item).split()).strip(_QUOTES).strip()
        if not text:
            continue
        match = _HANDLE_ALONE.fullmatch(text) or _HANDLE_THEN_WORDS.fullmatch(text)
        if match is None:
            why = "names a team, not a person" if "/" in text else "is not a GitHub handle"
            warnings.append(KepWarning("handle", f"{field_name}: {text[:80]!r} {why}; left out"))
            continue
        handle = match.group(1)
        if handle.lower() not in {h.lower() for h in handles}:
            handles.append(handle)
    return handles


def _read_sig(value: Any, *, field_name: str) -> str:
    """A SIG label (``sig-node`` and ``node`` are ``node``; ``wg-lts`` stays), or
    ValidationFailed."""
    text = plain_text(value, field=field_name, max_length=68).lower()
    label = re.sub(r"^sig[-_ ]", "", text)
    label = re.sub(r"[\s_]+", "-", label)
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", label):
        raise ValidationFailed(f"{field_name} {text[:70]!r} is not a SIG (sig-node).")
    return label


def _read_participating(value: Any, owning: str, warnings: list[KepWarning]) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else [value]
    sigs: list[str] = []
    for item in items:
        text = " ".join(as_text(item).split()).lower() if not isinstance(item, dict | list) else ""
        group = _GROUP.fullmatch(text)
        if group is None:
            shown = str(item)[:60] if isinstance(item, dict | list) else as_text(item)[:60]
            warnings.append(KepWarning("sig", f"participating-sigs {shown!r} names no SIG (sig-..., wg-...); left out"))
            continue
        label = text.removeprefix("sig-") if group.group(1) == "sig" else text
        if label in _SIG_ALIASES:
            warnings.append(KepWarning("sig", f"participating-sigs {text!r} read as sig-{_SIG_ALIASES[label]}"))
            label = _SIG_ALIASES[label]
        if label != owning and label not in sigs:
            sigs.append(label)
    return sorted(sigs)


def _read_number(value: Any) -> int | None:
    """The KEP number; None for an unnumbered one (``NNNN``, ``0000``); ValidationFailed
    for anything else that is not a number we can keep."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise ValidationFailed(f"kep-number {value!r} is not a number.")
    text = as_text(value)
    if re.fullmatch(r"N+", text, re.I):
        return None
    if not re.fullmatch(r"\d{1,12}", text):
        raise ValidationFailed(f"kep-number {text[:40]!r} is not a number.")
    number = int(text)
    if number == 0:
        return None
    if number > MAX_KEP_NUMBER:
        raise ValidationFailed(f"kep-number {number} is past the largest KEP number kept ({MAX_KEP_NUMBER:,}).")
    return number


def _read_stage(value: Any, warnings: list[KepWarning]) -> str:
    text = " ".join(as_text(value).split()).lower()
    if not text or text in _STAGES:
        return text
    inner = re.fullmatch(r"([a-z]+)\s*\(\s*([a-z]+)\s*\)", text)  # "alpha (deprecated)": now deprecated
    if inner and inner.group(2) in _STAGES:
        warnings.append(KepWarning("stage", f"stage {text!r} read as {inner.group(2)}"))
        return inner.group(2)
    if text == "ga":
        warnings.append(KepWarning("stage", "stage 'ga' read as stable"))
        return "stable"
    why = "is the template's list of choices" if "|" in text else f"is none of {', '.join(_STAGES)}"
    warnings.append(KepWarning("stage", f"stage {text[:100]!r} {why}; not recorded"))
    return ""


def _read_status(value: Any, warnings: list[KepWarning]) -> str:
    text = " ".join(as_text(value).split()).lower()
    if not text or text in _STATUSES:
        return text
    why = "is the template's list of choices" if "|" in text else f"is none of {', '.join(_STATUSES)}"
    warnings.append(KepWarning("status", f"status {text[:100]!r} {why}; not recorded"))
    return ""


def _read_release(value: Any, *, field_name: str, warnings: list[KepWarning]) -> str:
    """A release as its slug (``v1.34`` and ``1.34`` are ``1.34``); "" for none."""
    if isinstance(value, dict | list):
        warnings.append(KepWarning("milestone", f"{field_name} {str(value)[:60]!r} is not a release; not recorded"))
        return ""
    text = " ".join(as_text(value).split())
    if text.lower() in _NO_RELEASE:
        return ""
    match = _RELEASE.fullmatch(text)
    if match is None:
        warnings.append(KepWarning("milestone", f"{field_name} {text[:60]!r} is not a release (v1.34); not recorded"))
        return ""
    return f"{int(match.group(1))}.{int(match.group(2))}"


def _read_milestones(value: Any, warnings: list[KepWarning]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append(KepWarning("milestone", f"milestone {str(value)[:60]!r} is not a map of stages; not recorded"))
        return {}
    milestones = {}
    for key, release in value.items():
        stage = as_text(key).lower()
        if stage not in _STAGES:
            warnings.append(KepWarning("milestone", f"milestone {as_text(key)[:40]!r} is not a stage; not recorded"))
            continue
        slug = _read_release(release, field_name=f"milestone {stage}", warnings=warnings)
        if slug:
            milestones[stage] = slug
    return milestones


def kep_read(data: Any, *, path: str = "") -> tuple[KepRecord | None, list[KepWarning]]:
    """What a kep.yaml document says, checked. (None, []) for an unnumbered KEP
    (``kep-number: NNNN`` or ``0000``); ValidationFailed, naming the field, when it
    cannot be imported; warnings for what is left out or read another way."""
    if not isinstance(data, dict):
        raise ValidationFailed("not a kep.yaml mapping (title, kep-number, owning-sig, ...).")
    number = _read_number(data.get("kep-number"))
    if number is None:
        return None, []
    warnings: list[KepWarning] = []
    title = plain_text(data.get("title"), field="title", max_length=TITLE_MAX)
    if not title:
        raise ValidationFailed("title is missing.")
    if data.get("owning-sig") is None or not as_text(data.get("owning-sig")):
        raise ValidationFailed("owning-sig is missing.")
    owning = _read_sig(data.get("owning-sig"), field_name="owning-sig")
    record = KepRecord(
        number=number,
        title=title,
        owning_sig=owning,
        participating_sigs=_read_participating(data.get("participating-sigs"), owning, warnings),
        kep_status=_read_status(data.get("status"), warnings),
        kep_stage=_read_stage(data.get("stage"), warnings),
        latest_milestone=_read_release(data.get("latest-milestone"), field_name="latest-milestone", warnings=warnings),
        stage_milestones=_read_milestones(data.get("milestone"), warnings),
        kep_path=path[:300],
        authors=read_handles(data.get("authors"), field_name="authors", warnings=warnings),
        approvers=read_handles(data.get("approvers"), field_name="approvers", warnings=warnings),
        reviewers=read_handles(data.get("reviewers"), field_name="reviewers", warnings=warnings),
    )
    return record, warnings


def prr_read(data: Any, *, number: int, warnings: list[KepWarning]) -> dict[str, str]:
    """The PRR approver of each stage in a ``prod-readiness/<sig>/<number>.yaml``
    (``{"alpha": {"approver": "@deads2k"}}``)."""
    if not isinstance(data, dict):
        warnings.append(KepWarning("prr", "the PRR file is not a mapping of stages; not read"))
        return {}
    written = data.get("kep-number")
    if written is not None and as_text(written) != str(number):
        warnings.append(KepWarning("prr", f"the PRR file {number}.yaml says kep-number {as_text(written)[:20]}"))
    approvers = {}
    for key, value in data.items():
        stage = as_text(key).lower()
        if stage == "kep-number":
            continue
        if stage not in _STAGES or not isinstance(value, dict):
            warnings.append(KepWarning("prr", f"the PRR file's {as_text(key)[:40]!r} is not a stage; not read"))
            continue
        handles = read_handles(value.get("approver"), field_name=f"PRR {stage} approver", warnings=warnings)
        if handles:
            approvers[stage] = handles[0]
    return approvers


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise ValidationFailed("not a regular file.")
    size = path.stat().st_size
    if size > KEP_YAML_MAX_BYTES:
        raise ValidationFailed(f"{size:,} bytes; a kep.yaml is a few kilobytes (at most {KEP_YAML_MAX_BYTES:,}).")
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationFailed(f"not UTF-8 text (byte {exc.start}).") from None


def _prr_files(root: Path) -> dict[int, list[Path]]:
    """``prod-readiness/<sig>/<number>.yaml`` beside the KEPs (in the directory given, or
    its parent when it is one SIG's folder), by number."""
    for folder in (root / "prod-readiness", root.parent / "prod-readiness"):
        if folder.is_dir():
            files: dict[int, list[Path]] = {}
            for path in sorted(folder.glob("*/*.yaml")):
                if path.stem.isdigit() and int(path.stem) > 0:
                    files.setdefault(int(path.stem), []).append(path)
            return files
    return {}


def _prr_approvers(record: KepRecord, files: list[Path], root: Path, warnings: list[KepWarning]) -> dict[str, str]:
    if not files:
        return {}
    # The owning SIG's folder first: a KEP that moved SIG may have left a copy behind.
    files = sorted(files, key=lambda p: p.parent.name.removeprefix("sig-") != record.owning_sig)
    path = files[0]
    try:
        data = load_data(_read_text(path), source="")
    except ValidationFailed as exc:
        warnings.append(KepWarning("prr", f"{path.relative_to(root.parent)}: {exc.message} PRR approvers not read"))
        return {}
    return prr_read(data, number=record.number, warnings=warnings)


def _skip_reason(rel: Path) -> tuple[str, str]:
    """(kind, why) for a folder that holds no KEP, else ("", "")."""
    folder = rel.parent.name
    if _UNNUMBERED_FOLDER.match(folder):
        if folder.upper().startswith("N") or "template" in folder.lower():
            return "template", f"the KEP template ({folder}), not a KEP"
        return "unnumbered", f"a folder without a KEP number ({folder}), not a KEP"
    return "", ""


def keps_import(*, directory: str | Path, release_slug: str | None = None) -> KepImportResult:
    """Upsert every kep.yaml under ``directory`` (``<clone>/keps``) with the PRR
    approvers of ``prod-readiness/``; one bad file does not stop the rest (every file is
    read and checked first; what passes is saved in one transaction). A second run on
    the same tree changes nothing."""
    started = time.monotonic()
    root = Path(directory)
    if not root.is_dir():
        raise ImportFailed(f"{root}: no such directory.")
    release = None
    if release_slug:
        release = Release.objects.filter(slug=release_slug).first()
        if release is None:
            raise ImportFailed(f"No release {release_slug!r}; import its schedule first.")
    paths = sorted(root.rglob("kep.yaml"))
    if not paths:
        raise ImportFailed(f"{root}: no kep.yaml files found.")
    result = KepImportResult()
    prr = _prr_files(root)
    read: dict[int, list[tuple[KepFileResult, KepRecord]]] = {}
    for path in paths:
        rel = path.relative_to(root)
        item = KepFileResult(path=str(path))
        result.files.append(item)
        item.skipped_kind, item.skipped = _skip_reason(rel)
        if item.skipped:
            continue
        try:
            record, item.warnings = kep_read(load_data(_read_text(path), source=""), path=rel.as_posix())
        except ValidationFailed as exc:
            item.error = exc.message
            continue
        if record is None:
            item.skipped_kind, item.skipped = "unnumbered", "kep-number NNNN or 0000: not a numbered KEP"
            continue
        item.number, item.title = record.number, record.title
        folder = _FOLDER_NUMBER.match(rel.parent.name)
        if folder and int(folder.group(1)) != record.number:
            item.warnings.append(
                KepWarning("number", f"the folder says {int(folder.group(1))}; kep-number {record.number} is used")
            )
        read.setdefault(record.number, []).append((item, record))
    chosen = [_one_per_number(read[number]) for number in sorted(read)]
    for item, record in chosen:
        record.prr_approvers = _prr_approvers(record, prr.pop(record.number, []), root, item.warnings)
    for number, files in sorted(prr.items()):
        shown = ", ".join(str(p.relative_to(root.parent)) for p in files)
        result.notes.append(KepWarning("prr", f"{shown}: no kep.yaml has number {number}"))
    with transaction.atomic():
        saved = enhancement_kep_records_save(records=[record for _, record in chosen])
        for (item, record), one in zip(chosen, saved, strict=True):
            item.outcome = one.outcome
            item.warnings += [KepWarning("owning-sig", note) for note in one.notes]
            if release is None:
                continue
            stage = _TRACKING_STAGE.get(record.kep_stage)
            if stage is None:
                item.warnings.append(KepWarning("tracking", f"no stage, so not tracked in {release.slug}"))
                continue
            tracking_set(release=release, enhancement=one.enhancement, stage=stage)
            result.tracked += 1
    result.seconds = time.monotonic() - started
    return result


def _one_per_number(files: list[tuple[KepFileResult, KepRecord]]) -> tuple[KepFileResult, KepRecord]:
    """Two kep.yaml with one number (sig-node's and sig-cloud-provider's 2133, the
    second replaced by the first): the one not replaced (withdrawn, rejected) is kept,
    else the first by path; each other is skipped, saying which one is kept."""
    gone = {"replaced", "withdrawn", "rejected"}
    ranked = sorted(files, key=lambda pair: (pair[1].kep_status in gone, pair[0].path))
    kept_item, kept = ranked[0]
    for item, record in ranked[1:]:
        status = f" (status {record.kep_status})" if record.kep_status else ""
        item.skipped_kind = "duplicate"
        item.skipped = f"KEP-{record.number}{status} is also {kept.kep_path}, which is imported"
    return kept_item, kept
