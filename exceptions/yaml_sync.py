"""exceptions.yaml both ways: import a sig-release record file into requests and
decisions, and export a release's requests and decisions in that format.

Import is idempotent: each entry is matched to the request it stands for (same release,
freeze and KEP, requested the same day, or the one pending request that the file has
now decided), so importing a file again changes nothing, and importing a newer version
records only what is new. What the file cannot tell is stored as "not recorded", never
made up: the granted deadline (``Decision.granted_until`` NULL), the days asked
(``days`` NULL), who asked and who decided. Dates without times are taken as the start
of that day in the release's zone, so the export writes back the same date.

Export edits the file that was imported (kept in ``ExceptionsYamlFile``) in place: a
status or review date that changed here is rewritten on its line, a request the file
does not have yet is added after the last entry of its freeze. A release with no
imported file gets a new one in the shape used since 1.33. Pending and withdrawn
requests are written with ``status: "pending"`` / ``"withdrawn"``, no review date, and a
comment line above naming the request, so the release team sees them in review; the
file's own entries are never removed.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from django.db import transaction

from exceptions.models import (
    Decision,
    ExceptionRequest,
    ExceptionRequestRevision,
    ExceptionsYamlFile,
)
from exceptions.yaml_format import (
    KIND_SECTIONS,
    Entry,
    NewEntry,
    RecordEditor,
    read_record_file,
)
from releasecal import tz
from releasecal.importers.files import http_url
from releasecal.models import Enhancement, Milestone, Release, Tracking
from releasecal.services import audit_record

IMPORT_NOTE = "Imported from sig-release exceptions.yaml"


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    decided: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _milestones_by_kind(release: Release) -> dict[str, Milestone]:
    found: dict[str, Milestone] = {}
    for milestone in (
        Milestone.objects.filter(release=release, cancelled=False)
        .select_related("kind", "release")
        .order_by("closes_at", "id")
    ):
        found.setdefault(milestone.kind.slug, milestone)
    return found


def _day_start(day: dt.date, zone: str) -> dt.datetime:
    return tz.start_of_day(day, zone)


def _local_date(instant: dt.datetime, zone: str) -> dt.date:
    return tz.local_date(instant, zone)


def match_request(*, release: Release, milestone: Milestone, entry: Entry) -> ExceptionRequest | None:
    """The request an entry stands for, if we have it."""
    if entry.kep_number is None:
        return None
    return _pick(_candidates(release=release, milestone=milestone, number=entry.kep_number), entry, release.zone)


def _candidates(*, release: Release, milestone: Milestone, number: int) -> list[ExceptionRequest]:
    """The release's requests of KEP ``number`` for ``milestone``, newest first (the
    model's ordering): the import matches an entry among them and finds a live one."""
    return list(
        ExceptionRequest.objects.filter(
            release=release, milestone=milestone, enhancement__number=number
        ).select_related("decision")
    )


def _pick(candidates: list[ExceptionRequest], entry: Entry, zone: str) -> ExceptionRequest | None:
    if entry.date_requested is not None:
        same_day = [r for r in candidates if _local_date(r.submitted_at, zone) == entry.date_requested]
        if len(same_day) >= 1:
            return same_day[0]
    elif len(candidates) == 1:
        return candidates[0]
    pending = [r for r in candidates if r.state == ExceptionRequest.State.PENDING]
    return pending[0] if len(pending) == 1 else None


def _where(entry: Entry) -> str:
    what = f"KEP-{entry.kep_number}" if entry.kep_number else (entry.issue_text or "no issue")
    return f"line {entry.line} ({what}, {entry.name[:60]!r})"


def _decided_at(entry: Entry, request_at: dt.datetime, zone: str) -> dt.datetime:
    if entry.date_reviewed is not None:
        return _day_start(entry.date_reviewed, zone)
    return request_at


@transaction.atomic
def exceptions_yaml_import(
    *, release: Release, text: str, file_name: str = "", actor=None, now: dt.datetime | None = None
) -> ImportReport:
    """Read every entry of ``text`` into ``release``. Raises RecordFileError for a text
    that is not such a file; entries it cannot file are listed in ``skipped`` with why."""
    now = now or tz.utc_now()
    record = read_record_file(text)
    report = ImportReport()
    if record.lenient:
        report.notes.append(f"The file is {record.note}.")
    milestones = _milestones_by_kind(release)
    # One read for every KEP the file names (filled in as the import creates them)
    # instead of one an entry.
    numbers = {entry.kep_number for entry in record.entries if entry.kep_number is not None}
    enhancements = Enhancement.objects.in_bulk(numbers, field_name="number")
    for entry in record.entries:
        if entry.is_blank:
            report.skipped.append(f"line {entry.line}: the empty template entry")
            continue
        if not entry.kind:
            report.skipped.append(f"{_where(entry)}: the file does not say which freeze it is for")
            continue
        milestone = milestones.get(entry.kind)
        if milestone is None:
            report.skipped.append(f"{_where(entry)}: release {release.slug} has no {entry.kind} milestone")
            continue
        if entry.refused:
            report.skipped.append(f"{_where(entry)}: {entry.refused.rstrip('.')}; the entry is left out")
            continue
        if entry.kep_number is None:
            report.skipped.append(f"{_where(entry)}: {entry.problems[0] if entry.problems else 'no KEP'}")
            continue
        if not entry.outcome:
            report.skipped.append(f"{_where(entry)}: {entry.problems[-1]}")
            continue
        for problem in entry.problems:
            report.notes.append(f"{_where(entry)}: {problem}")
        candidates = _candidates(release=release, milestone=milestone, number=entry.kep_number)
        existing = _pick(candidates, entry, release.zone)
        if existing is None and entry.outcome in ("pending", "withdrawn"):
            # A request nobody decided is filed with its days asked (ingest_exception, the
            # API); the file has no days, so it cannot file one.
            report.skipped.append(
                f"{_where(entry)}: {entry.outcome} in the file and unknown here; file it with ingest_exception "
                "or the API, which record the days asked"
            )
            continue
        if existing is None:
            _create(
                release,
                milestone,
                entry,
                candidates=candidates,
                enhancements=enhancements,
                actor=actor,
                report=report,
                now=now,
            )
        else:
            _reconcile(existing, entry, actor=actor, report=report)
    ExceptionsYamlFile.objects.update_or_create(
        release=release,
        defaults={
            "text": text,
            "file_name": file_name[:300],
            "imported_at": now,
            "imported_by": actor if actor is not None and actor.is_authenticated else None,
        },
    )
    return report


def _user(actor):
    """The release-team member who ran the import: who entered what it files."""
    return actor if actor is not None and actor.is_authenticated else None


def _issue_url(entry: Entry) -> str:
    return http_url(entry.issue_text) or f"https://github.com/kubernetes/enhancements/issues/{entry.kep_number}"


def _enhancement(entry: Entry, enhancements: dict[int, Enhancement]) -> Enhancement:
    enhancement = enhancements.get(entry.kep_number)
    if enhancement is None:
        # The file names no SIG; owning_sig stays empty until import_keps fills it.
        enhancement = Enhancement.objects.create(
            number=entry.kep_number,
            title=(entry.name or f"KEP-{entry.kep_number}")[:300],
            owning_sig="",
            issue_url=_issue_url(entry),
        )
        enhancements[entry.kep_number] = enhancement
    return enhancement


def _create(
    release,
    milestone,
    entry: Entry,
    *,
    candidates: list[ExceptionRequest],
    enhancements: dict[int, Enhancement],
    actor,
    report: ImportReport,
    now,
) -> None:
    zone = release.zone
    enhancement = _enhancement(entry, enhancements)
    # The milestone is the release's, so the KEP's live request for it, if any, is one
    # of the candidates the entry was matched among (newest first, as .first() read it).
    live = next((r for r in candidates if r.state in ExceptionRequest.ACTIVE_STATES), None)
    if live is not None and entry.outcome == "approved":
        report.skipped.append(
            f"{_where(entry)}: KEP-{enhancement.number} already has a {live.state} request #{live.pk} for "
            f"{milestone.title} requested on {_local_date(live.submitted_at, zone)}; one live request per KEP "
            "and freeze, so this entry is left out"
        )
        return
    if entry.date_requested is not None:
        submitted_at = _day_start(entry.date_requested, zone)
    else:
        submitted_at = milestone.deadline
        report.notes.append(f"{_where(entry)}: no date_requested; recorded as requested at the freeze itself")
    if entry.date_reviewed and entry.date_requested and entry.date_reviewed < entry.date_requested:
        report.notes.append(
            f"{_where(entry)}: reviewed {entry.date_reviewed} before it was requested {entry.date_requested}; "
            "kept as written"
        )
    state = ExceptionRequest.State.PENDING  # until _record_decision below
    request = ExceptionRequest.objects.create(
        release=release,
        enhancement=enhancement,
        milestone=milestone,
        requester=None,
        requester_name="",
        state=state,
        days=None,
        submitted_at=submitted_at,
        entered_by=_user(actor),
        thread_url=http_url(entry.thread),
    )
    ExceptionRequestRevision.objects.create(
        request=request,
        number=1,
        created_at=submitted_at,
        created_by=_user(actor),
        entered_by=_user(actor),
        enhancement_name=entry.name[:300],
        issue_url=_issue_url(entry),
        pr_urls=entry.pull_requests,
        days=None,
        source_text=f"{IMPORT_NOTE}, line {entry.line}",
    )
    audit_record(
        action="exception.import",
        obj=request,
        actor=actor,
        after={"line": entry.line, "status": entry.status_word, "thread": request.thread_url},
        at=now,
    )
    _record_decision(request, entry, actor=actor, now=now)
    report.created.append(f"#{request.pk} KEP-{enhancement.number} {milestone.kind.slug}: {entry.status_word or state}")


def _record_decision(request: ExceptionRequest, entry: Entry, *, actor, now) -> Decision:
    zone = request.release.zone
    note = f"{IMPORT_NOTE}: status {entry.status_word!r}"
    if entry.outcome == "approved":
        note += "; the file records no granted deadline"
    if entry.removed_after_approval:
        note += f"; {entry.status_word.lower()} after approval (the work left the release)"
    decision = Decision.objects.create(
        request=request,
        outcome=entry.outcome,
        decided_by=None,
        decided_at=_decided_at(entry, request.submitted_at, zone),
        note=note,
        granted_until=None,
        granted_zone="",
        freeze_at=None,
    )
    request.state = entry.outcome
    request.save(update_fields=["state", "updated_at"])
    if entry.outcome == "approved" and not entry.removed_after_approval:
        status = Tracking.Status.EXCEPTION_APPROVED
    else:
        status = Tracking.Status.REMOVED
    # Removed (rejected, or removed after approval): it missed the freeze of its request.
    missed = request.milestone if status == Tracking.Status.REMOVED else None
    tracking, created = Tracking.objects.get_or_create(
        release=request.release,
        enhancement=request.enhancement,
        defaults={"stage": Tracking.Stage.ALPHA, "status": status, "missed_freeze": missed},
    )
    if not created and (tracking.status, tracking.missed_freeze_id) != (status, missed and missed.pk):
        tracking.status, tracking.missed_freeze = status, missed
        tracking.save(update_fields=["status", "updated_at"])
    audit_record(
        action=f"exception.{entry.outcome}",
        obj=request,
        actor=actor,
        before={"state": "pending"},
        after={"outcome": entry.outcome, "note": note, "granted_until": None},
        at=now,
    )
    return decision


def _reconcile(request: ExceptionRequest, entry: Entry, *, actor, report: ImportReport) -> None:
    changed = False
    if not request.thread_url and http_url(entry.thread):
        request.thread_url = http_url(entry.thread)
        request.save(update_fields=["thread_url", "updated_at"])
        changed = True
    if request.state == entry.outcome:
        if not changed:
            report.unchanged += 1
        return
    if request.state == ExceptionRequest.State.PENDING and entry.outcome in ("approved", "rejected"):
        request = ExceptionRequest.objects.select_for_update().get(pk=request.pk)
        _record_decision(request, entry, actor=actor, now=tz.utc_now())
        report.decided.append(f"#{request.pk} KEP-{entry.kep_number}: {entry.status_word}")
        return
    if request.state == ExceptionRequest.State.PENDING and entry.outcome == "withdrawn":
        from exceptions.services import exception_request_withdraw

        exception_request_withdraw(request=request, actor=None, actor_label="exceptions.yaml", note=IMPORT_NOTE)
        report.decided.append(f"#{request.pk} KEP-{entry.kep_number}: withdrawn")
        return
    report.skipped.append(
        f"{_where(entry)}: says {entry.status_word or 'pending'}, but request #{request.pk} is {request.state} "
        "here; left as it is"
    )


# --- export ----------------------------------------------------------------------------

_STATUS_OF_STATE = {
    ExceptionRequest.State.APPROVED: "approved",
    ExceptionRequest.State.REJECTED: "rejected",
    ExceptionRequest.State.PENDING: "pending",
    ExceptionRequest.State.WITHDRAWN: "withdrawn",
}


def _new_entry(request: ExceptionRequest) -> NewEntry:
    zone = request.release.zone
    revision = request.current
    decision = getattr(request, "decision", None)
    comment = ""
    if request.state == ExceptionRequest.State.PENDING:
        comment = f"releasecal request #{request.pk}: pending, not decided yet"
    elif request.state == ExceptionRequest.State.WITHDRAWN:
        comment = f"releasecal request #{request.pk}: withdrawn by the requester, not decided"
    return NewEntry(
        kind=request.milestone.kind.slug,
        name=(revision.enhancement_name if revision else "") or request.enhancement.title,
        kep_number=request.enhancement.number,
        date_requested=_local_date(request.submitted_at, zone),
        date_reviewed=_local_date(decision.decided_at, zone) if decision is not None else None,
        thread=request.thread_url,
        pull_requests=list(revision.pr_urls) if revision else [],
        status=_STATUS_OF_STATE[request.state],
        comment=comment,
    )


def exceptions_yaml_export(*, release: Release) -> str:
    """The release's exceptions.yaml text, ready to commit to kubernetes/sig-release."""
    requests = list(
        ExceptionRequest.objects.filter(release=release)
        .select_related("milestone__kind", "enhancement", "decision", "release")
        .order_by("submitted_at", "id")
    )
    kinds = sorted(
        {r.milestone.kind.slug for r in requests if r.milestone.kind.slug in KIND_SECTIONS}
        | {"enhancements-freeze", "code-freeze"},
        key=lambda k: list(KIND_SECTIONS).index(k),
    )
    stored = ExceptionsYamlFile.objects.filter(release=release).first()
    if stored is not None:
        editor = RecordEditor(stored.text)
    else:
        leads = [user.get_full_name() or user.get_username() for user in release.leads.order_by("username")]
        editor = RecordEditor.fresh(release_slug=release.slug, leads=leads, kinds=kinds)
    milestones = _milestones_by_kind(release)
    written: set[int] = set()
    for entry in editor.record.entries:
        milestone = milestones.get(entry.kind)
        if milestone is None or entry.is_blank:
            continue
        request = match_request(release=release, milestone=milestone, entry=entry)
        if request is None or request.pk in written:
            continue
        written.add(request.pk)
        decision = getattr(request, "decision", None)
        status_changed = editor.set_status(entry, _STATUS_OF_STATE[request.state])
        # A file without review dates (1.10, 1.11) gets one only where we changed the status.
        if decision is not None and ("date_reviewed" in entry.key_lines or status_changed):
            editor.set_date_reviewed(entry, _local_date(decision.decided_at, release.zone))
    for request in requests:
        if request.pk in written or request.milestone.kind.slug not in KIND_SECTIONS:
            continue
        editor.add(_new_entry(request))
    return editor.text()
