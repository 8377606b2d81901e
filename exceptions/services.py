"""The exception workflow: submit, amend, sign off, approve, reject, withdraw.

Every face (admin, API, Slack, the email command) calls these, so the policy and its
messages are the same everywhere. State changes lock the request row and guard on the
current state: a second decision is a Conflict (409), never a second row.

Following a request up after it arrives (its liaison, its Slack thread and board item,
the end of its granted time) is ``exceptions.followup``.

Who reacts to each change is declared in ``exceptions/signals.py``: every state change
sends its signal inside its transaction, and each service below names its listeners.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Q

from exceptions import signals
from exceptions.fields import FIELD_LABELS, RequestFields
from exceptions.models import (
    Decision,
    DecisionCorrection,
    ExceptionRequest,
    ExceptionRequestRevision,
    ProposedDecision,
    SignOff,
    days_label,
)
from exceptions.reader import DecisionReading, ParsedRequest, ThreadReading
from exceptions.selectors import exception_milestone_get
from releasecal import tz
from releasecal.errors import Conflict, DomainError, NotAllowed, PolicyViolation, ValidationFailed
from releasecal.models import Enhancement, Milestone, MilestoneKind, Release, Tracking
from releasecal.selectors import (
    release_hard_stop,
    release_liaison_default,
    release_list_active,
    release_team_includes,
    sig_leaderships_of,
)
from releasecal.services import audit_record, enhancement_upsert, wall_time_record

# Kept for the admin's menus; deciding itself needs membership of the request's release
# team (``can_decide``), not this global permission.
DECIDE_PERMISSION = "exceptions.decide_exceptionrequest"


def _actor_label(actor, fallback: str = "") -> str:
    if actor is not None and getattr(actor, "is_authenticated", False):
        return actor.get_username()
    return fallback or "anonymous"


# Freezes where a request may ask for no extra time at all: an *admission* past the
# freeze ("None, PRR is approved": the PRR was done late, the KEP only needs to be let
# in). Such a request is granted until the freeze itself. Code, test and docs freezes
# are about finishing work, so there a request must ask for at least one day.
ADMISSION_KINDS = frozenset({"prr-freeze", "enhancements-freeze"})


def _check_days(days, milestone: Milestone | None = None) -> int:
    if isinstance(days, bool) or not isinstance(days, int):
        if isinstance(days, str) and len(days.strip()) > 6:
            raise ValidationFailed("Additional days must be a small whole number.", extra={"days": days[:20]})
        try:
            days = int(days)
        except (TypeError, ValueError):
            raise ValidationFailed("Additional days must be a whole number.", extra={"days": str(days)[:20]}) from None
    if days == 0 and milestone is not None and milestone.kind.slug in ADMISSION_KINDS:
        return days
    if days < 1:
        if milestone is not None and days == 0:
            raise PolicyViolation(
                f"A {milestone.kind_name} exception must ask for at least 1 day; asking for no time "
                f"(admission only) is for {' and '.join(sorted(ADMISSION_KINDS))} requests.",
                extra={"days": days, "kind": milestone.kind.slug},
            )
        raise PolicyViolation("At least 1 additional day must be requested.", extra={"days": days})
    if days > 366:
        raise PolicyViolation("An exception cannot ask for more than a year.", extra={"days": days})
    return days


def _check_fields(fields: RequestFields, milestone: Milestone | None = None) -> RequestFields:
    fields.days = _check_days(fields.days, milestone)
    if fields.stage and fields.stage not in Tracking.Stage.values:
        raise ValidationFailed(
            f"Unknown stage {fields.stage!r}; use one of {', '.join(Tracking.Stage.values)}.",
            extra={"stage": fields.stage},
        )
    if fields.until_zone:
        fields.until_zone = tz.normalize_zone_name(fields.until_zone)
    return fields


def request_window_hours(milestone: Milestone) -> int:
    """How many hours after ``milestone`` closes a request for it may arrive: the
    release's own setting for its kind, else the kind's (docs freeze 24, the others 72)."""
    return milestone.release.request_window_hours_for(milestone.kind)


def request_window_text(milestone: Milestone) -> str:
    """The window as the policy's messages word it: "72 hours after the freeze"."""
    hours = request_window_hours(milestone)
    return f"{hours} hour{'' if hours == 1 else 's'} after the freeze"


def request_window_closes(milestone: Milestone) -> dt.datetime:
    """The last instant a request for ``milestone`` may arrive: the freeze's closing
    plus its request window, counted on the UTC timeline (72 h is 72 h across a DST
    change)."""
    return milestone.deadline + dt.timedelta(hours=request_window_hours(milestone))


# The freezes one request may name together, first and second (the handbook, 2025-2026:
# "one request may cover both the PRR freeze and the enhancements freeze").
COMBINED_FREEZES = ("prr-freeze", "enhancements-freeze")


def check_combined_freezes(
    milestone: Milestone, also_milestone: Milestone | None
) -> tuple[Milestone, Milestone | None]:
    """(first freeze, second freeze) of a request, or PolicyViolation: a second freeze
    is only the enhancements freeze of a PRR freeze request, in the same release (named
    in either order: the PRR freeze comes first)."""
    if also_milestone is None:
        return milestone, None
    pair = {milestone.kind.slug, also_milestone.kind.slug}
    if pair != set(COMBINED_FREEZES) or milestone.release_id != also_milestone.release_id:
        raise PolicyViolation(
            "A request names two freezes only for the PRR freeze and the enhancements freeze of one release "
            f"(one completion date); {milestone.title} ({milestone.release.slug}) and {also_milestone.title} "
            f"({also_milestone.release.slug}) cannot be asked together: file one request per freeze.",
            extra={"milestone": milestone.pk, "also_milestone": also_milestone.pk},
        )
    if milestone.kind.slug != COMBINED_FREEZES[0]:
        milestone, also_milestone = also_milestone, milestone
    _check_extendable(also_milestone)
    return milestone, also_milestone


def _check_extendable(milestone: Milestone) -> None:
    if milestone.cancelled:
        raise PolicyViolation(f"{milestone.title} was cancelled; there is nothing to extend.")
    if not milestone.kind.allows_exceptions:
        raise PolicyViolation(
            f"{milestone.kind_name} deadlines cannot be extended by an exception.",
            extra={"milestone": milestone.pk, "kind": milestone.kind.slug},
        )


# A request that arrives this long after it was sent was not sent to us now: it is read
# from the archive (a thread ingested after the fact), and nobody is mailed about it.
ARCHIVE_AFTER = dt.timedelta(hours=24)


def request_from_archive(*, milestone: Milestone, submitted_at: dt.datetime, received_at: dt.datetime) -> bool:
    """True for a request releasecal received after its request window had closed, or more
    than 24 hours after it was sent: it is filed without the new-request mail and without
    nudges. ``received_at`` is when it reached our intake (the mailbox's ``Received:``
    time, which an intake outage does not move; the ingest command's run)."""
    return received_at > request_window_closes(milestone) or received_at - submitted_at > ARCHIVE_AFTER


def check_request_window(milestone: Milestone, submitted_at: dt.datetime) -> None:
    """PolicyViolation unless a request for ``milestone`` sent at ``submitted_at`` may be
    filed: the milestone is not cancelled, its kind allows exceptions, and the request
    window is open. Forms check it before filing (the Slack modal shows it inline beside
    the other fields' problems); ``exception_request_submit`` checks it again."""
    release = milestone.release
    _check_extendable(milestone)
    closes = request_window_closes(milestone)
    if submitted_at > closes:
        raise PolicyViolation(
            f"The request window for {milestone.title} closed at {tz.render_deadline(closes, release.zone)} "
            f"({request_window_text(milestone)}); this request was sent at "
            f"{tz.render(submitted_at, release.zone)}.",
            extra={"window_closed_at": tz.isoformat_utc(closes), "submitted_at": tz.isoformat_utc(submitted_at)},
        )


# Docs freeze: the days asked are for the technical review; the handbook (2025-2026)
# asks the grant to leave SIG Docs one business day after them for its approval.
SIG_DOCS_KINDS = frozenset({"docs-freeze"})


def next_business_day(day: dt.date) -> dt.date:
    """The first Monday-to-Friday after ``day`` (no holidays: the handbook names none)."""
    day += dt.timedelta(days=1)
    while day.weekday() >= 5:
        day += dt.timedelta(days=1)
    return day


def sig_docs_day(request: ExceptionRequest, days: int | None = None) -> dt.date | None:
    """For a docs-freeze request: SIG Docs' business day, the first Monday-to-Friday in
    the release's zone after the freeze day plus the days asked (the technical review).
    None for every other kind."""
    days = request.days if days is None else days
    if request.milestone.kind.slug not in SIG_DOCS_KINDS or not days:
        return None
    zone = request.release.zone
    review_day = tz.deadline_day(request.milestone.deadline, zone) + dt.timedelta(days=days)
    return next_business_day(review_day)


def default_granted_until(request: ExceptionRequest, days: int | None = None) -> dt.datetime:
    """Freeze + requested days, at end of day in the release's zone (0 days, an
    admission: the freeze itself); a docs-freeze request, to the end of SIG Docs'
    business day after those days (``sig_docs_day``).

    The freeze day is the day the freeze closes in the release's zone (a freeze at
    "end of day Thursday" counts as Thursday); "end of day D" is D+1 00:00 there
    (AoE: 12:00 UTC the next day).
    """
    days = request.days if days is None else days
    if days == 0:
        return request.milestone.deadline  # an admission: no extra time
    zone = request.release.zone
    docs_day = sig_docs_day(request, days)
    if docs_day is not None:
        return tz.end_of_day(docs_day, zone)
    freeze_day = tz.deadline_day(request.milestone.deadline, zone)
    return tz.end_of_day(freeze_day + dt.timedelta(days=days), zone)


def grant_warnings(request: ExceptionRequest, granted_until: dt.datetime | None) -> list[str]:
    """What a grant of ``request`` until ``granted_until`` breaks of the handbook without
    being refused: a docs-freeze grant that leaves SIG Docs no business day after the
    days asked. Shown where the grant is entered (the admin's approve form, the API's
    answer) and on the request afterwards."""
    docs_day = sig_docs_day(request)
    if docs_day is None or granted_until is None:
        return []
    zone = request.release.zone
    needed = tz.end_of_day(docs_day, zone)
    if granted_until >= needed:
        return []
    return [
        f"This grant ({tz.render_deadline_in_zone(granted_until, zone)}) leaves SIG Docs no business day after "
        f"the {days_label(request.days)} asked for the technical review: the handbook asks for one (Monday to "
        f"Friday in {zone}, no holidays), {tz.render_deadline(needed, zone)} or later."
    ]


def request_warnings(request: ExceptionRequest) -> list[str]:
    """Every warning of a request: its own (``ExceptionRequest.warnings``) and, once
    approved, its grant's (``grant_warnings``)."""
    found = list(request.warnings)
    decision = getattr(request, "decision", None) if request.state == ExceptionRequest.State.APPROVED else None
    if decision is not None:
        found += grant_warnings(request, decision.granted_until)
    return found


def _user_or_none(user):
    return user if user is not None and getattr(user, "is_authenticated", False) else None


def _write_revision(
    request: ExceptionRequest, fields: RequestFields, *, actor, at: dt.datetime, entered_by=None
) -> ExceptionRequestRevision:
    number = (request.revisions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    return ExceptionRequestRevision.objects.create(
        request=request,
        number=number,
        created_at=at,
        created_by=_user_or_none(actor),
        entered_by=_user_or_none(entered_by) or _user_or_none(actor),
        enhancement_name=fields.enhancement_name,
        stage=fields.stage,
        sig=fields.sig,
        issue_url=fields.issue_url,
        pr_urls=list(fields.pr_urls),
        days=fields.days,
        until_text=fields.until_text,
        until_zone=fields.until_zone,
        until_at=tz.check_plausible(fields.until_at, field="until_at") if fields.until_at else None,
        reason=fields.reason,
        risks_adding=fields.risks_adding,
        risks_cutting=fields.risks_cutting,
        source_text=fields.source_text,
    )


def _revision_dict(revision: ExceptionRequestRevision) -> dict:
    return {
        "number": revision.number,
        "days": revision.days,
        "until_text": revision.until_text,
        "until_zone": revision.until_zone,
        "stage": revision.stage,
        "sig": revision.sig,
        "pr_urls": revision.pr_urls,
    }


def _set_tracking_status(request: ExceptionRequest, status: str) -> str:
    """Set the KEP's tracking status for the release; return the previous one. A KEP
    removed from the milestone here (a rejection, a withdrawal back to "removed") missed
    the freeze its request was for."""
    tracking, _ = Tracking.objects.select_for_update().get_or_create(
        release=request.release,
        enhancement=request.enhancement,
        defaults={"stage": request.current.stage or Tracking.Stage.ALPHA, "status": Tracking.Status.AT_RISK},
    )
    previous = tracking.status
    tracking.status = status
    if status == Tracking.Status.REMOVED:
        tracking.missed_freeze = request.milestone
    tracking.save(update_fields=["status", "updated_at"])
    return previous


def check_removed_kep(enhancement: Enhancement, milestone: Milestone) -> None:
    """PolicyViolation when ``enhancement`` was removed from ``milestone``'s release and
    ``milestone`` is not the freeze it missed. The handbook: a KEP removed at a freeze
    may ask an exception for that freeze (that is how it gets back in), not for a later
    one without it; it is not in the release for those."""
    tracking = (
        Tracking.objects.filter(release=milestone.release, enhancement=enhancement)
        .select_related("missed_freeze", "release")
        .first()
    )
    if tracking is None or tracking.status != Tracking.Status.REMOVED or tracking.missed_freeze_id == milestone.pk:
        return
    slug, label = milestone.release.slug, f"KEP-{enhancement.number}"
    if tracking.missed_freeze_id is None:
        raise PolicyViolation(
            f"{label} was removed from the {slug} milestone; an exception extends a freeze it missed, and it missed "
            f"none. Ask the {slug} enhancements team to track it again.",
            extra={"tracking_status": tracking.status, "missed_freeze": None},
        )
    missed = tracking.missed_freeze
    raise PolicyViolation(
        f"{label} was removed from the {slug} milestone at {missed.title}: it may ask an exception for "
        f"{missed.title}, the freeze it missed, not for {milestone.title}. Without that exception it is not "
        f"in {slug}.",
        extra={"tracking_status": tracking.status, "missed_freeze": missed.pk, "milestone": milestone.pk},
    )


@transaction.atomic
def exception_request_submit(
    *,
    enhancement: Enhancement,
    milestone: Milestone,
    fields: RequestFields,
    requester=None,
    requester_name: str = "",
    submitted_at: dt.datetime | None = None,
    entered_by=None,
    requester_email: str = "",
    requester_mark: str = "",
    on_behalf_of: str = "",
    received_at: dt.datetime | None = None,
    after_window_allowed: bool = False,
    from_archive: bool = False,
    thread_url: str = "",
    also_milestone: Milestone | None = None,
) -> ExceptionRequest:
    """File a request. Enforces the window, one live request per KEP per milestone, and
    that a rejected request is not re-filed asking for fewer days.

    ``requester`` is who asks (an email's author); ``entered_by`` is who typed or
    ingested it (the release-team member running ``ingest_exception``, the API caller,
    the admin user); it defaults to the requester when that is a user.
    ``requester_email``: the address an emailed request came from (its author);
    ``requester_mark``: how ``requester_name`` was read from the thread (a ``From:``
    header, a ``[Name]`` line, ...; ``ExceptionRequest.RequesterMark``), empty when typed;
    ``on_behalf_of``: whom the requester says they ask for. ``received_at``: when it
    reached releasecal, when that is not when it was sent (an ingested thread); waiting for
    a decision counts from it, else from ``submitted_at``.
    ``after_window_allowed``: a request that was sent after its window closed is recorded,
    flagged ``filed_after_window``, for the team to decide, instead of refused (an emailed
    thread: the reader never drops a real request); self-service filing leaves it False.
    ``from_archive``: filed without the new-request mail and nudges (see
    ``request_from_archive``). ``thread_url``: the mailing list's page of the thread.
    ``also_milestone``: the second freeze of a combined
    request (``check_combined_freezes``: a PRR freeze request may also name the same
    release's enhancements freeze, with one completion date); the window is the first
    freeze's, and the one-live-request rule holds for each freeze.

    Sends ``exception_request_submitted`` in the transaction: the reminder ledger writes
    the "new request" notifications, Slack posts it to the release team on commit."""
    milestone, also_milestone = check_combined_freezes(milestone, also_milestone)
    fields = _check_fields(fields, milestone)
    release = milestone.release
    now = tz.utc_now()
    submitted_at = tz.check_plausible(submitted_at, field="submitted_at") if submitted_at else now
    if submitted_at > now + dt.timedelta(minutes=5):
        raise ValidationFailed(
            "A request cannot be dated in the future.", extra={"submitted_at": tz.isoformat_utc(submitted_at)}
        )
    received_at = tz.check_plausible(received_at, field="received_at") if received_at else None
    after_window = submitted_at > request_window_closes(milestone)
    if after_window and after_window_allowed:
        _check_extendable(milestone)
    else:
        check_request_window(milestone, submitted_at)
    check_removed_kep(enhancement, milestone)
    # Lock the KEP so two simultaneous filings for it serialise here.
    Enhancement.objects.select_for_update().get(pk=enhancement.pk)
    freezes = [milestone] + ([also_milestone] if also_milestone else [])
    for freeze in freezes[1:]:
        check_removed_kep(enhancement, freeze)
    named = Q(milestone__in=freezes) | Q(also_milestone__in=freezes)
    earlier = list(ExceptionRequest.objects.filter(named, enhancement=enhancement).order_by("-submitted_at"))
    for other in earlier:
        if other.state in ExceptionRequest.ACTIVE_STATES:
            both = {other.milestone_id, other.also_milestone_id}
            freeze = next(f for f in freezes if f.pk in both)
            raise PolicyViolation(
                f"KEP-{enhancement.number} already has a {other.state} exception request (#{other.pk}) "
                f"for {freeze.title}; amend that one instead of filing another.",
                extra={"existing_request": other.pk, "state": other.state},
            )
    # An imported rejection (exceptions.yaml) may not record the days asked: it bounds nothing.
    rejected_days = [
        other.days for other in earlier if other.state == ExceptionRequest.State.REJECTED and other.days is not None
    ]
    if rejected_days and fields.days < max(rejected_days):
        raise PolicyViolation(
            f"A request for {max(rejected_days)} days was rejected for KEP-{enhancement.number} and "
            f"{milestone.title}; a re-filed request cannot ask for fewer days ({fields.days}).",
            extra={"rejected_days": max(rejected_days), "days": fields.days},
        )
    try:
        with transaction.atomic():
            request = ExceptionRequest.objects.create(
                release=release,
                enhancement=enhancement,
                milestone=milestone,
                requester=requester if requester is not None and requester.is_authenticated else None,
                requester_name=requester_name or (_actor_label(requester) if _user_or_none(requester) else ""),
                requester_email=requester_email[:254],
                requester_mark=requester_mark if requester_name else "",
                on_behalf_of=on_behalf_of[:200],
                entered_by=_user_or_none(entered_by) or _user_or_none(requester),
                days=fields.days,
                submitted_at=submitted_at,
                received_at=received_at,
                filed_after_window=after_window,
                from_archive=from_archive,
                liaison=release_liaison_default(release),
                thread_url=thread_url[:500],
                also_milestone=also_milestone,
            )  # with its ExceptionRequestFreeze rows (ExceptionRequest.save)
    except IntegrityError:
        raise Conflict(
            f"KEP-{enhancement.number} already has a live exception request for {milestone.title}."
        ) from None
    revision = _write_revision(request, fields, actor=requester, at=submitted_at, entered_by=request.entered_by)
    request.tracking_status_before = _set_tracking_status(request, Tracking.Status.EXCEPTION_PENDING)
    request.save(update_fields=["tracking_status_before"])
    audit_record(
        action="exception.submit",
        obj=request,
        actor=requester,
        actor_label=request.requester_label,
        after=_revision_dict(revision),
        at=now,
    )
    signals.exception_request_submitted.send(sender=ExceptionRequest, request=request)
    return request


def _lock(request: ExceptionRequest) -> ExceptionRequest:
    return (
        ExceptionRequest.objects.select_for_update(of=("self",))
        .select_related("release", "milestone", "milestone__kind", "enhancement")
        .get(pk=request.pk)
    )


def _require_pending(request: ExceptionRequest, doing: str) -> None:
    if request.state != ExceptionRequest.State.PENDING:
        raise Conflict(
            f"Exception request #{request.pk} is already {request.state}; it cannot be {doing}.",
            extra={"state": request.state},
        )


def _is_requester(request: ExceptionRequest, user) -> bool:
    return user is not None and request.requester_id is not None and request.requester_id == user.pk


def _can_decide(user, request: ExceptionRequest) -> bool:
    return release_team_includes(request.release, user)


def decide_refusal(request: ExceptionRequest, user) -> str | None:
    """Why ``user`` may not decide ``request``, or None when they may. The one rule:

    - deciding needs membership of *this* release's team (its leads or its team);
    - the requester never decides their own request;
    - whoever entered a request decides it only when it names someone else who
      exists: another user as requester, or the author of the email it came from, as
      the thread itself marks them (a From: address, a ``[Name]`` line, ...: entering
      an emailed request on its author's behalf is the normal way in).
      Entering a request naming yourself, or naming nobody (free text), and then
      deciding it is deciding your own request.
    """
    if not _can_decide(user, request):
        return (
            f"Only the {request.release.slug} release team (its leads and team, kept per release) "
            "can approve or reject its exception requests."
        )
    if _is_requester(request, user):
        return "You filed this request, so someone else on the release team must decide it."
    if request.entered_by_id is not None and request.entered_by_id == user.pk:
        names_another_user = request.requester_id is not None and request.requester_id != user.pk
        names_an_email_author = request.requester_id is None and (
            bool(request.requester_email) or bool(request.requester_name and request.requester_mark)
        )
        if not (names_another_user or names_an_email_author):
            return (
                "You entered this request and it names no other person who exists (no user, no email author), "
                "so someone else on the release team must decide it."
            )
    return None


def _rejected_days(request: ExceptionRequest) -> int | None:
    """The most days a rejected request for the same KEP and milestone asked for."""
    days = (
        ExceptionRequest.objects.filter(
            enhancement_id=request.enhancement_id,
            milestone_id=request.milestone_id,
            state=ExceptionRequest.State.REJECTED,
            days__isnull=False,
        )
        .exclude(pk=request.pk)
        .values_list("days", flat=True)
    )
    return max(days, default=None)


@transaction.atomic
def exception_request_amend(
    *,
    request: ExceptionRequest,
    fields: RequestFields,
    actor=None,
    actor_label: str = "",
    at: dt.datetime | None = None,
    entered_by=None,
) -> ExceptionRequest:
    """Record a new version of a pending request (the requester changed 6 days to 3).

    ``entered_by`` as for submit (defaults to ``actor``). Sends
    ``exception_request_amended`` in the transaction: Slack updates the request's
    channel messages on commit."""
    request = _lock(request)
    fields = _check_fields(fields, request.milestone)
    _require_pending(request, "amended")
    if actor is not None and not (_is_requester(request, actor) or _can_decide(actor, request) or actor.is_staff):
        raise NotAllowed("Only the requester or the release team can amend this request.")
    # The re-filing rule holds for every version, not only the first: re-filing the
    # rejected days and then amending down would get around it.
    rejected = _rejected_days(request)
    if rejected is not None and fields.days < rejected:
        raise PolicyViolation(
            f"A request for {rejected} days was rejected for KEP-{request.enhancement.number} and "
            f"{request.milestone.title}; this request cannot ask for fewer days ({fields.days}).",
            extra={"rejected_days": rejected, "days": fields.days},
        )
    at = tz.check_plausible(at, field="at") if at else tz.utc_now()
    before = _revision_dict(request.current)
    revision = _write_revision(request, fields, actor=actor, at=at, entered_by=entered_by)
    request.days = fields.days
    request.save(update_fields=["days", "updated_at"])
    audit_record(
        action="exception.amend",
        obj=request,
        actor=actor,
        actor_label=actor_label or _actor_label(actor),
        before=before,
        after=_revision_dict(revision),
    )
    signals.exception_request_amended.send(sender=ExceptionRequest, request=request)
    return request


@transaction.atomic
def exception_request_signoff(
    *,
    request: ExceptionRequest,
    author=None,
    author_label: str = "",
    role: str = "",
    note: str = "",
    at: dt.datetime | None = None,
) -> SignOff:
    """A "+1" on a pending request. ``author``: a lead of a SIG named on the KEP (owning
    or participating) or a member of the release's team, never the requester; the role
    recorded comes from that membership. ``role`` is only used for an ``author_label``
    without a user (a sign-off read from an imported record). Sends
    ``exception_request_signed_off`` (no receiver yet)."""
    request = _lock(request)
    _require_pending(request, "signed off")
    if author is not None:
        role = _signoff_role(request, author)
    label = author_label or _actor_label(author)
    if author is not None and SignOff.objects.filter(request=request, author=author).exists():
        raise Conflict(f"{label} has already signed off request #{request.pk}.")
    signoff = SignOff.objects.create(
        request=request,
        author=author if author is not None and author.is_authenticated else None,
        author_label=label,
        role=role,
        note=note,
        at=tz.check_plausible(at, field="at") if at else tz.utc_now(),
    )
    audit_record(
        action="exception.signoff", obj=request, actor=author, actor_label=label, after={"role": role, "note": note}
    )
    signals.exception_request_signed_off.send(sender=ExceptionRequest, request=request, signoff=signoff)
    return signoff


def _signoff_role(request: ExceptionRequest, author) -> str:
    if not getattr(author, "is_authenticated", False):
        raise NotAllowed("Sign in to sign off a request.")
    if _is_requester(request, author):
        raise NotAllowed("The requester cannot sign off their own request.")
    enhancement = request.enhancement
    sigs = [enhancement.owning_sig, *(enhancement.participating_sigs or [])]
    leaderships = sig_leaderships_of(author, sigs)
    if leaderships:
        lead = leaderships[0]
        return f"SIG {lead.sig} {lead.get_role_display().lower()}"
    if _can_decide(author, request):
        return f"{request.release.slug} release team"
    raise NotAllowed(
        f"Only a lead of a SIG named on KEP-{enhancement.number} ({', '.join(s for s in sigs if s)}) "
        f"or a member of the {request.release.slug} release team can sign off this request."
    )


def _check_decider(request: ExceptionRequest, actor) -> None:
    refusal = decide_refusal(request, actor)
    if refusal:
        raise NotAllowed(refusal)


def _check_grant(request: ExceptionRequest, granted_until: dt.datetime) -> None:
    freeze = request.milestone.deadline
    zone = request.release.zone
    shown_grant, shown_freeze = tz.render_deadline(granted_until, zone), tz.render_deadline(freeze, zone)
    if request.days == 0:
        if granted_until < freeze:
            raise PolicyViolation(
                f"granted_until ({shown_grant}) is before the freeze ({shown_freeze}).",
                extra={"granted_until": tz.isoformat_utc(granted_until), "freeze": tz.isoformat_utc(freeze)},
            )
    elif granted_until <= freeze:
        raise PolicyViolation(
            f"granted_until ({shown_grant}) must be after the freeze ({shown_freeze}).",
            extra={"granted_until": tz.isoformat_utc(granted_until), "freeze": tz.isoformat_utc(freeze)},
        )
    hard_stop = release_hard_stop(request.release)
    if hard_stop is not None and granted_until > hard_stop:
        raise PolicyViolation(
            f"granted_until ({shown_grant}) is after the release's hard stop "
            f"({tz.render_deadline(hard_stop, zone)}, the rc.0 cut).",
            extra={"granted_until": tz.isoformat_utc(granted_until), "hard_stop": tz.isoformat_utc(hard_stop)},
        )


@transaction.atomic
def exception_request_approve(
    *,
    request: ExceptionRequest,
    actor,
    granted_until: dt.datetime | None = None,
    granted_zone: str | None = None,
    note: str = "",
    at: dt.datetime | None = None,
) -> Decision:
    """Approve a pending request. Without ``granted_until``: freeze + requested days, at end
    of day in the release's zone.

    Sends ``exception_request_decided`` in the transaction (``exceptions/signals.py``):
    the reminder ledger cancels the nudges, schedules the extension's reminders at the
    effective deadline and writes the "decided" notifications (same commit); Slack
    updates the channel messages and DMs the requester on commit. A failing receiver
    rolls the approval back."""
    request = _lock(request)
    _require_pending(request, "approved")
    _check_decider(request, actor)
    zone = tz.normalize_zone_name(granted_zone or request.release.zone)
    granted_until = (
        tz.check_plausible(granted_until, field="granted_until") if granted_until else default_granted_until(request)
    )
    _check_grant(request, granted_until)
    decision = _decide(
        request,
        actor=actor,
        outcome=Decision.Outcome.APPROVED,
        note=note,
        at=at,
        granted_until=granted_until,
        granted_zone=zone,
    )
    _set_tracking_status(request, Tracking.Status.EXCEPTION_APPROVED)
    signals.exception_request_decided.send(sender=ExceptionRequest, request=request, decision=decision)
    return decision


@transaction.atomic
def exception_request_reject(
    *, request: ExceptionRequest, actor, note: str = "", at: dt.datetime | None = None
) -> Decision:
    """Reject a pending request. Sends ``exception_request_decided`` in the transaction:
    the reminder ledger cancels the nudges and writes the "decided" notifications; Slack
    updates the channel messages and DMs the requester on commit."""
    request = _lock(request)
    _require_pending(request, "rejected")
    _check_decider(request, actor)
    decision = _decide(request, actor=actor, outcome=Decision.Outcome.REJECTED, note=note, at=at)
    _set_tracking_status(request, Tracking.Status.REMOVED)
    signals.exception_request_decided.send(sender=ExceptionRequest, request=request, decision=decision)
    return decision


def _decide(request, *, actor, outcome, note, at, granted_until=None, granted_zone="") -> Decision:
    at = tz.check_plausible(at, field="at") if at else tz.utc_now()
    try:
        with transaction.atomic():
            decision = Decision.objects.create(
                request=request,
                outcome=outcome,
                decided_by=actor,
                decided_at=at,
                note=note,
                granted_until=granted_until,
                granted_zone=granted_zone,
                granted_wall=wall_time_record(instant=granted_until, zone=granted_zone) if granted_until else None,
                freeze_at=request.milestone.deadline if granted_until else None,
            )
    except IntegrityError:
        # The row lock makes this unreachable on PostgreSQL; it stays as the last guard.
        raise Conflict(f"Exception request #{request.pk} has already been decided.") from None
    request.state = outcome
    request.save(update_fields=["state", "updated_at"])
    after = {"outcome": outcome, "note": note}
    if granted_until:
        after |= {"granted_until": tz.isoformat_utc(granted_until), "granted_zone": granted_zone}
    audit_record(
        action=f"exception.{outcome}", obj=request, actor=actor, before={"state": "pending"}, after=after, at=at
    )
    request.decision = decision
    return decision


@transaction.atomic
def decision_grant_retime(
    *, decision: Decision, granted_until: dt.datetime, actor=None, actor_label: str = ""
) -> Decision:
    """Move an approved grant's ``granted_until`` to the instant its kept wall time means
    under the running tzdata (``manage.py tzdata_check --apply``): the wall time and the
    zone stay, the audit log records the move, and ``exception_grant_moved`` is sent in
    the transaction (the reminder ledger reschedules the extension's reminders; Slack
    updates the channel messages on commit). Nothing else about the decision changes."""
    decision = Decision.objects.select_for_update().select_related("request__milestone").get(pk=decision.pk)
    if decision.outcome != Decision.Outcome.APPROVED or decision.granted_until is None:
        raise ValidationFailed(f"Decision #{decision.pk} grants no deadline to move.")
    granted_until = tz.check_plausible(granted_until, field="granted_until")
    if decision.freeze_at is not None and granted_until < decision.freeze_at:
        raise PolicyViolation(
            f"granted_until ({tz.render_deadline(granted_until, decision.granted_zone)}) would be before the freeze "
            f"it extends ({tz.render_deadline(decision.freeze_at, decision.granted_zone)}).",
            extra={"granted_until": tz.isoformat_utc(granted_until), "freeze": tz.isoformat_utc(decision.freeze_at)},
        )
    if granted_until == decision.granted_until:
        return decision
    # The wall time as text (naive: it is a wall clock in granted_zone, not an instant).
    before = {
        "granted_until": tz.isoformat_utc(decision.granted_until),
        "granted_wall": decision.granted_wall.isoformat() if decision.granted_wall else None,
        "granted_zone": decision.granted_zone,
    }
    decision.granted_wall = wall_time_record(
        instant=granted_until,
        zone=decision.granted_zone,
        old_instant=decision.granted_until,
        old_zone=decision.granted_zone,
        old_wall=decision.granted_wall,
    )
    decision.granted_until = granted_until
    decision.save(update_fields=["granted_until", "granted_wall"])
    audit_record(
        action="exception.grant_moved",
        obj=decision.request,
        actor=actor,
        actor_label=actor_label,
        before=before,
        after={
            "granted_until": tz.isoformat_utc(granted_until),
            "granted_wall": decision.granted_wall.isoformat() if decision.granted_wall else None,
            "granted_zone": decision.granted_zone,
        },
    )
    signals.exception_grant_moved.send(sender=ExceptionRequest, request=decision.request, decision=decision)
    return decision


def decision_values(decision: Decision) -> dict:
    """A decision as ``DecisionCorrection`` keeps it and ``exception_decision_corrected``
    carries it: instants in ISO 8601 UTC, the wall time as granted (naive, in its zone)."""
    return {
        "outcome": decision.outcome,
        "granted_until": tz.isoformat_utc(decision.granted_until) if decision.granted_until else None,
        "granted_zone": decision.granted_zone,
        "granted_wall": decision.granted_wall.isoformat() if decision.granted_wall else None,
        "note": decision.note,
        "decided_by": decision.decided_by.get_username() if decision.decided_by_id else None,
        "decided_at": tz.isoformat_utc(decision.decided_at),
    }


def _check_reason(reason: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed(
            "A correction needs a reason: say what the clerical error was (the decision is final otherwise).",
            extra={"reason": "required"},
        )
    if len(reason) > 5000:
        raise ValidationFailed("The reason is too long (at most 5000 characters).", extra={"reason": "too long"})
    return reason


def _lock_decided(request: ExceptionRequest, doing: str) -> tuple[ExceptionRequest, Decision]:
    request = _lock(request)
    decision = (
        Decision.objects.select_for_update(of=("self",)).select_related("decided_by").filter(request=request).first()
    )
    if decision is None or request.state not in (ExceptionRequest.State.APPROVED, ExceptionRequest.State.REJECTED):
        raise Conflict(
            f"Exception request #{request.pk} is {request.state} and has no decision; there is nothing to {doing}.",
            extra={"state": request.state},
        )
    return request, decision


def _correction_write(request, *, action: str, before: dict, after: dict | None, reason: str, actor, at):
    number = (request.decision_corrections.order_by("-number").values_list("number", flat=True).first() or 0) + 1
    return DecisionCorrection.objects.create(
        request=request,
        number=number,
        action=action,
        before=before,
        after=after,
        reason=reason,
        corrected_by=_user_or_none(actor),
        corrected_by_label=_actor_label(actor)[:200],
        at=at,
    )


def _state_change(request: ExceptionRequest, state: str) -> None:
    """Move a decided request to ``state``; a request going live again (a rejection
    corrected to an approval, a reopen) may meet another live request for its KEP and
    freeze filed since: the database's one-live-request rule refuses it, a Conflict."""
    if request.state == state:
        return
    request.state = state
    try:
        with transaction.atomic():
            request.save(update_fields=["state", "updated_at"])
    except IntegrityError:
        raise Conflict(
            f"KEP-{request.enhancement.number} has another live exception request for {request.milestone.title}; "
            f"request #{request.pk} cannot be {state} again. Withdraw or correct that one first.",
            extra={"state": state},
        ) from None


@transaction.atomic
def exception_decision_correct(
    *,
    request: ExceptionRequest,
    actor,
    reason: str,
    outcome: str | None = None,
    granted_until: dt.datetime | None = None,
    granted_zone: str | None = None,
    note: str | None = None,
    at: dt.datetime | None = None,
) -> DecisionCorrection:
    """Correct a clerical error in a made decision (the wrong grant time, approved for
    rejected, the note), with a required ``reason``; same authority as deciding
    (``decide_refusal``). The ``Decision`` row is updated in place (who decided and when
    stay) and a ``DecisionCorrection`` keeps before and after, the reason, who and when.

    ``outcome``: the corrected outcome (default: unchanged). An approval's grant:
    ``granted_until`` (default: the grant in force, or for a rejection corrected to an
    approval the freeze plus the days asked), checked as an approval's is (after the
    freeze, not after the hard stop); ``granted_zone`` (default: the grant's, else the
    release's). ``note``: the corrected note (default: unchanged). A correction that
    changes nothing is refused.

    Writes one audit row (``exception.decision_corrected``) and sends
    ``exception_decision_corrected`` in the transaction: the reminders follow the new
    grant and the decision's recipients are told, the board is written, Slack's
    messages updated."""
    request, decision = _lock_decided(request, "correct")
    _check_decider(request, actor)
    reason = _check_reason(reason)
    if outcome is not None and outcome not in Decision.Outcome.values:
        raise ValidationFailed(
            f"Unknown outcome {outcome!r}; use approved or rejected.", extra={"outcome": str(outcome)[:20]}
        )
    outcome = outcome or decision.outcome
    before = decision_values(decision)
    if outcome == Decision.Outcome.APPROVED:
        zone = tz.normalize_zone_name(granted_zone or decision.granted_zone or request.release.zone)
        if granted_until is not None:
            granted_until = tz.check_plausible(granted_until, field="granted_until")
        elif decision.outcome == Decision.Outcome.APPROVED:
            granted_until = decision.granted_until  # None: an imported grant, deadline not recorded
        else:
            granted_until = default_granted_until(request)
        if granted_until is not None:
            _check_grant(request, granted_until)
        decision.granted_zone = zone if granted_until is not None else ""
        if granted_until != decision.granted_until or decision.granted_zone != before["granted_zone"]:
            decision.granted_wall = (
                wall_time_record(instant=granted_until, zone=zone) if granted_until is not None else None
            )
        decision.granted_until = granted_until
        decision.freeze_at = request.milestone.deadline if granted_until is not None else None
    elif granted_until is not None:
        raise ValidationFailed("A rejection grants no deadline; leave granted_until empty.")
    else:
        decision.granted_until, decision.granted_zone, decision.granted_wall, decision.freeze_at = None, "", None, None
    decision.outcome = outcome
    if note is not None:
        decision.note = note
    after = decision_values(decision)
    if after == before:
        raise ValidationFailed(
            "The correction changes nothing: give another outcome, grant or note.", extra={"decision": before}
        )
    decision.save()
    _state_change(request, outcome)
    if before["outcome"] != outcome:
        _set_tracking_status(
            request,
            Tracking.Status.EXCEPTION_APPROVED if outcome == Decision.Outcome.APPROVED else Tracking.Status.REMOVED,
        )
    at = tz.check_plausible(at, field="at") if at else tz.utc_now()
    correction = _correction_write(
        request, action=DecisionCorrection.Action.CORRECTED, before=before, after=after, reason=reason,
        actor=actor, at=at,
    )  # fmt: skip
    audit_record(
        action="exception.decision_corrected",
        obj=request,
        actor=actor,
        before=before,
        after={**after, "reason": reason, "correction": correction.number},
        at=at,
    )
    request.decision = decision
    signals.exception_decision_corrected.send(
        sender=ExceptionRequest, request=request, correction=correction, old=before, new=after, reason=reason
    )
    return correction


@transaction.atomic
def exception_decision_reopen(
    *, request: ExceptionRequest, actor, reason: str, at: dt.datetime | None = None
) -> DecisionCorrection:
    """Undo a decision made on the wrong request: the request is pending again (to be
    decided anew), with a required ``reason``; same authority as deciding. The
    ``Decision`` row is deleted (the request has none in force) and a
    ``DecisionCorrection`` (``reopened``) keeps it, with the reason, who and when; the
    KEP's tracking status is "exception pending" again.

    Writes one audit row (``exception.decision_reopened``) and sends
    ``exception_decision_corrected`` with ``new=None`` in the transaction: the
    extension's reminders are cancelled and the decision's recipients told, the board is
    written, Slack's messages updated (with Approve/Reject again)."""
    request, decision = _lock_decided(request, "reopen")
    _check_decider(request, actor)
    reason = _check_reason(reason)
    before = decision_values(decision)
    _state_change(request, ExceptionRequest.State.PENDING)
    decision.delete()
    _set_tracking_status(request, Tracking.Status.EXCEPTION_PENDING)
    at = tz.check_plausible(at, field="at") if at else tz.utc_now()
    correction = _correction_write(
        request, action=DecisionCorrection.Action.REOPENED, before=before, after=None, reason=reason,
        actor=actor, at=at,
    )  # fmt: skip
    audit_record(
        action="exception.decision_reopened",
        obj=request,
        actor=actor,
        before=before,
        after={"state": "pending", "reason": reason, "correction": correction.number},
        at=at,
    )
    # The instance's cached one-to-one is gone with the row.
    request = _lock(request)
    signals.exception_decision_corrected.send(
        sender=ExceptionRequest, request=request, correction=correction, old=before, new=None, reason=reason
    )
    return correction


@transaction.atomic
def exception_request_withdraw(
    *, request: ExceptionRequest, actor=None, actor_label: str = "", note: str = ""
) -> ExceptionRequest:
    """Withdraw a pending request (its requester or the release team). Sends
    ``exception_request_withdrawn`` in the transaction: the reminder ledger cancels the
    nudges; Slack updates the channel messages on commit."""
    request = _lock(request)
    _require_pending(request, "withdrawn")
    if actor is not None and not (_is_requester(request, actor) or _can_decide(actor, request) or actor.is_staff):
        raise NotAllowed("Only the requester or the release team can withdraw this request.")
    request.state = ExceptionRequest.State.WITHDRAWN
    request.save(update_fields=["state", "updated_at"])
    _set_tracking_status(request, request.tracking_status_before or Tracking.Status.AT_RISK)
    audit_record(
        action="exception.withdraw",
        obj=request,
        actor=actor,
        actor_label=actor_label or _actor_label(actor),
        before={"state": "pending"},
        after={"state": "withdrawn", "note": note},
    )
    signals.exception_request_withdrawn.send(sender=ExceptionRequest, request=request)
    return request


# ------------------------------------------------------------- proposed decisions


def proposed_decision_from_reading(
    *,
    request: ExceptionRequest,
    decision: DecisionReading,
    entered_by=None,
    author_name: str = "",
    sent_at: dt.datetime | None = None,
) -> ProposedDecision:
    """Propose the decision a thread's reply reads as (``exceptions.reader``): the one
    mapping from a reading to a proposal, for ingest_exception and the mailbox intake.
    ``author_name`` and ``sent_at`` stand in where the reply's own were not read (the
    mail's sender and Date:)."""
    granted = decision.granted
    return proposed_decision_create(
        request=request,
        outcome=decision.outcome,
        source_text=decision.source_text,
        granted_text=granted.text if granted else "",
        granted_until=granted.instant if granted else None,
        granted_zone=granted.zone if granted and granted.instant else "",
        warnings=decision.warnings,
        readings=list(granted.readings) if granted else [],
        author_name=decision.author or author_name,
        sent_at=decision.sent_at or sent_at,
        entered_by=entered_by,
    )


@transaction.atomic
def proposed_decision_create(
    *,
    request: ExceptionRequest,
    outcome: str,
    source_text: str,
    granted_text: str = "",
    granted_until: dt.datetime | None = None,
    granted_zone: str = "",
    warnings: list[str] | None = None,
    readings: list[dict] | None = None,
    author_name: str = "",
    sent_at: dt.datetime | None = None,
    entered_by=None,
) -> ProposedDecision:
    """Record a decision read from a thread, for a release-team member to confirm.

    Nothing about the request changes here. A request that is no longer pending gets
    no proposal (Conflict); a second open proposal replaces nothing (Conflict)."""
    if outcome not in Decision.Outcome.values:
        raise ValidationFailed(f"Unknown outcome {outcome!r}.", extra={"outcome": outcome})
    request = _lock(request)
    _require_pending(request, "given a proposed decision")
    if request.proposed_decisions.filter(state=ProposedDecision.State.PROPOSED).exists():
        raise Conflict(
            f"Exception request #{request.pk} already has a proposed decision waiting; confirm or dismiss it first.",
            extra={"request": request.pk},
        )
    granted_until = tz.check_plausible(granted_until, field="granted_until") if granted_until else None
    granted_zone = tz.normalize_zone_name(granted_zone) if granted_zone else ""
    proposal = ProposedDecision.objects.create(
        request=request,
        outcome=outcome,
        granted_text=granted_text[:300],
        granted_until=granted_until,
        granted_zone=granted_zone,
        granted_wall=(
            wall_time_record(instant=granted_until, zone=granted_zone) if granted_until and granted_zone else None
        ),
        warnings=list(warnings or []),
        readings=list(readings or []),
        author_name=author_name[:200],
        sent_at=tz.check_plausible(sent_at, field="sent_at") if sent_at else None,
        source_text=source_text,
        entered_by=_user_or_none(entered_by),
    )
    audit_record(
        action="exception.propose_decision",
        obj=request,
        actor=_user_or_none(entered_by),
        actor_label=_actor_label(entered_by, "email"),
        after={
            "outcome": outcome,
            "granted_text": proposal.granted_text,
            "granted_until": tz.isoformat_utc(proposal.granted_until) if proposal.granted_until else None,
        },
    )
    return proposal


def _lock_proposal(proposal: ProposedDecision) -> ProposedDecision:
    proposal = ProposedDecision.objects.select_for_update().get(pk=proposal.pk)
    if proposal.state != ProposedDecision.State.PROPOSED:
        raise Conflict(
            f"Proposed decision #{proposal.pk} is already {proposal.state}.", extra={"state": proposal.state}
        )
    return proposal


@transaction.atomic
def proposed_decision_confirm(
    *,
    proposal: ProposedDecision,
    actor,
    granted_until: dt.datetime | None = None,
    granted_zone: str | None = None,
    note: str = "",
) -> Decision:
    """Apply a proposed decision through ``exception_request_approve``/``_reject`` (same
    permission and policy checks). ``granted_until`` overrides the proposed deadline; it
    is required when the reply's deadline could not be read unambiguously."""
    proposal = _lock_proposal(proposal)
    note = note or f"Confirmed from the thread: {proposal.granted_text or proposal.outcome}"
    if proposal.outcome == Decision.Outcome.APPROVED:
        until = granted_until or proposal.granted_until
        if granted_until is None and proposal.granted_until and proposal.granted_wall and proposal.granted_zone:
            # The wall time read, under the zone rules now in force (a tzdata upgrade
            # since the reply was read moves the instant, not the wall time).
            until, _ = tz.instant_for_wall(proposal.granted_wall, proposal.granted_zone, proposal.granted_until)
        if until is None and proposal.granted_text:
            raise ValidationFailed(
                f"The reply's deadline {proposal.granted_text!r} could not be read unambiguously; "
                "give the granted deadline to confirm.",
                extra={"warnings": proposal.warnings, "readings": proposal.readings},
            )
        decision = exception_request_approve(
            request=proposal.request,
            actor=actor,
            granted_until=until,
            granted_zone=granted_zone or proposal.granted_zone or None,
            note=note,
        )
    else:
        decision = exception_request_reject(request=proposal.request, actor=actor, note=note)
    proposal.state = ProposedDecision.State.CONFIRMED
    proposal.resolved_by = actor
    proposal.resolved_at = tz.utc_now()
    proposal.save(update_fields=["state", "resolved_by", "resolved_at"])
    return decision


@transaction.atomic
def proposed_decision_dismiss(*, proposal: ProposedDecision, actor, note: str = "") -> ProposedDecision:
    """Drop a proposed decision that was misread; the request stays as it is."""
    proposal = _lock_proposal(proposal)
    if not _can_decide(actor, proposal.request):
        raise NotAllowed("Only members of the release team can dismiss a proposed decision.")
    proposal.state = ProposedDecision.State.DISMISSED
    proposal.resolved_by = actor
    proposal.resolved_at = tz.utc_now()
    proposal.save(update_fields=["state", "resolved_by", "resolved_at"])
    audit_record(action="exception.dismiss_proposed_decision", obj=proposal.request, actor=actor, after={"note": note})
    return proposal


# ------------------------------------------------------------ filing a thread


@dataclass
class FiledThread:
    """What ``exception_thread_file`` wrote (or, in a dry run, would write)."""

    request: object  # ExceptionRequest
    proposal: object | None  # ProposedDecision
    milestone_reason: str
    notes: list[str]
    report: list[str]  # the lines the command prints


class _Rollback(Exception):
    pass


def _describe(milestone) -> str:
    return f"{milestone.title} of {milestone.release.slug} (#{milestone.pk})"


def exception_thread_milestone_resolve(
    reading: ThreadReading,
    *,
    release_slug: str | None = None,
    milestone_opt: str | None = None,
    received_at: dt.datetime,
) -> tuple[Milestone, Milestone | None, str]:
    """(milestone, second freeze or None, reason): ``_thread_milestone_resolve``'s freeze
    and, when the thread names the PRR and the enhancements freeze together ("PRR and
    Enhancements Freeze", ``Inference.also``) and that freeze is one of the two, the other
    freeze of the same release (``check_combined_freezes``). A release without the other
    freeze files the one found, and the reason says so."""
    pair = reading.milestone_kind.also
    milestone, reason = _thread_milestone_resolve(
        reading, release_slug=release_slug, milestone_opt=milestone_opt, received_at=received_at
    )
    pair_kinds = {reading.milestone_kind.value, pair}
    if not pair or milestone.kind.slug not in pair_kinds:
        return milestone, None, reason
    (other,) = pair_kinds - {milestone.kind.slug}
    found = list(
        Milestone.objects.select_related("release", "kind").filter(
            release=milestone.release, kind__slug=other, cancelled=False
        )
    )
    if len(found) != 1:
        reason += (
            f"; note: {reading.milestone_kind.reason}, but release {milestone.release.slug} has "
            f"{len(found) or 'no'} {other!r} milestone{'s' if len(found) > 1 else ''}: filed for "
            f"{milestone.title} alone"
        )
        return milestone, None, reason
    also = found[0]
    return milestone, also, f"{reason}; also {_describe(also)}: one request for both freezes"


def _thread_milestone_resolve(
    reading: ThreadReading,
    *,
    release_slug: str | None = None,
    milestone_opt: str | None = None,
    received_at: dt.datetime,
) -> tuple[Milestone, str]:
    """(milestone, reason) from the options and what the thread says; ValidationFailed
    (one sentence) when it cannot be told.

    Milestone, when not given: the freeze the subject names, else the body, else the
    template's answers; else the one freeze whose request window (freeze .. freeze + its
    window hours) holds the date the request was sent. Release, when not given:
    a "1.NN" the subject or body names, else the active release holding that freeze.
    Every inference is reported with its reason."""
    qs = Milestone.objects.select_related("release", "kind")
    if milestone_opt and str(milestone_opt).strip().isdigit():
        if len(str(milestone_opt).strip()) > 18:
            raise ValidationFailed(f"No milestone with id {str(milestone_opt)[:20]}.")
        milestone = exception_milestone_get(milestone_id=int(milestone_opt), release_slug=release_slug)
        return milestone, f"{_describe(milestone)}, as given"

    release = None
    release_reason = ""
    if release_slug:
        release = Release.objects.filter(slug=release_slug).first()
        if release is None:
            raise ValidationFailed(f"No release {release_slug!r}.", extra={"release": release_slug})
        release_reason = "as given"
    elif reading.release.value:
        release = Release.objects.filter(slug=reading.release.value).first()
        if release is not None:
            release_reason = f"inferred: {reading.release.reason}"

    kind = (milestone_opt or "").strip()
    kind_reason = "as given" if kind else ""
    if not kind and reading.milestone_kind.value:
        kind, kind_reason = reading.milestone_kind.value, f"inferred: {reading.milestone_kind.reason}"
        also = reading.milestone_kind.also
        if also and release is not None and not release.milestones.filter(kind__slug=kind, cancelled=False).exists():
            kind = also  # the pair named in a release without a PRR freeze: the other freeze
    if kind and not MilestoneKind.objects.filter(slug=kind).exists():
        slugs = ", ".join(MilestoneKind.objects.values_list("slug", flat=True))
        raise ValidationFailed(f"Unknown milestone kind {kind!r}; use one of: {slugs}, or a milestone id.")
    if kind and release is not None:
        # Named by release and kind (given or read from the text): the one shared rule.
        milestone = exception_milestone_get(release_slug=release.slug, kind=kind)
        return milestone, f"{_describe(milestone)}, freeze {kind_reason}; release {release.slug} {release_reason}"

    scope = qs.filter(cancelled=False, kind__allows_exceptions=True)
    scope = scope.filter(release=release) if release is not None else scope.filter(release__in=release_list_active())
    if kind:
        scope = scope.filter(kind__slug=kind)
    candidates = list(scope)
    by_date = ""
    if kind and len(candidates) == 1:
        milestone = candidates[0]
    else:
        # By date: the freeze whose request window holds the time the request was sent;
        # for a named freeze, else the one whose window had not closed yet (filed ahead).
        chosen = [m for m in candidates if m.deadline <= received_at <= request_window_closes(m)]
        if len(chosen) != 1 and kind:
            chosen = [m for m in candidates if received_at <= request_window_closes(m)]
        late = False
        if not chosen:
            # Sent after every window closed: the freeze it missed is the last one before it
            # (the thread is filed, flagged "filed after the window", never dropped for it).
            # Only when every freeze in scope has passed: one sent before a freeze still ahead
            # may be early for it as well as late for the one before, and is asked about.
            passed = sorted((m for m in candidates if m.deadline <= received_at), key=lambda m: m.deadline)
            ahead = any(m.deadline > received_at for m in candidates)
            if passed and not ahead and (len(passed) == 1 or passed[-2].deadline != passed[-1].deadline):
                chosen, late = [passed[-1]], True
        if len(chosen) != 1:
            said = reading.milestone_kind.reason if not kind else f"the freeze is {kind}"
            where = f"release {release.slug}" if release is not None else "the active releases"
            raise ValidationFailed(
                f"Could not tell which freeze the request is for ({said}; {len(chosen)} freezes of {where} "
                f"fit the time it was sent, {tz.render(received_at, 'UTC')}); pass --milestone "
                "(a kind slug such as code-freeze, or a milestone id) and --release.",
                extra={"candidates": len(chosen)},
            )
        milestone = chosen[0]
        window = (
            f"its request window ({tz.render_in_zone(milestone.deadline, milestone.release.zone)} + "
            f"{request_window_hours(milestone)} hours) holds the time the request was sent, "
            f"{tz.render_in_zone(received_at, milestone.release.zone)}"
        )
        if late:
            window = (
                f"the last freeze before the request was sent, "
                f"{tz.render_in_zone(received_at, milestone.release.zone)}; its request window had closed"
            )
        by_date = f"inferred by date ({reading.milestone_kind.reason}): {window}" if not kind else f"by date: {window}"
    reason = f"{_describe(milestone)}, {'; '.join(r for r in (kind_reason, by_date) if r) or 'the only one'}"
    if release_reason:
        reason += f"; release {milestone.release.slug} {release_reason}"
    elif reading.release.value and reading.release.value != milestone.release.slug:
        reason += f"; note: {reading.release.reason}, which is not a known release"
    return milestone, reason


def _requester_user(reading: ThreadReading):
    """The user whose email address wrote the request, when exactly one has it."""
    address = reading.request.sender_address
    if not address:
        return None
    users = list(get_user_model().objects.filter(email__iexact=address, is_active=True)[:2])
    return users[0] if len(users) == 1 else None


def exception_thread_file(
    *,
    reading: ThreadReading,
    entered_by,
    release: str | None = None,
    milestone: str | None = None,
    received_at: dt.datetime | None = None,
    arrived_at: dt.datetime | None = None,
    requester=None,
    create_kep: bool = False,
    allow_missing: bool = False,
    dry_run: bool = False,
) -> FiledThread:
    """File what ``reading`` (``exceptions.reader.read_thread``) says: the request with
    ``exception_request_submit``, each amendment with ``exception_request_amend`` (a
    revision each) and the decision as a ``ProposedDecision`` (``proposed_decision_create``):
    never applied, a release-team member confirms it.

    ``received_at``: when the email was sent (``--received-at``; default its ``Date:``).
    ``arrived_at``: when it reached releasecal's intake (the mailbox's ``Received:`` time;
    default now). A request sent after its window closed is recorded and flagged "filed
    after the window" for the team to decide, never dropped; one that arrived after its
    window had closed or more than 24 hours after it was sent is from the archive
    (``request_from_archive``): no new-request mail, no nudges.

    ``requester``: the user who asked (default: the user whose email address sent the
    request, else none and the From: name is kept). ``entered_by``: who ran the command
    or owns the mailbox. Raises DomainError subclasses with one sentence each; in a
    dry run nothing is saved and the report says what would be.
    """
    parsed = reading.request
    notes = list(dict.fromkeys([*parsed.warnings, *reading.warnings]))
    required = [n for n in ("days", "kep_number") if n in parsed.problems]
    if required:
        raise ValidationFailed(_field_error(parsed, required), extra={"problems": parsed.problems})
    if parsed.missing and not allow_missing:
        raise ValidationFailed(
            _field_error(parsed, parsed.missing) + " Fix the email or pass --allow-missing.",
            extra={"problems": parsed.problems},
        )
    hint = ""
    if received_at is not None:
        received_at = tz.to_utc(received_at)
    elif parsed.sent_at is not None:
        received_at = parsed.sent_at
    else:
        received_at = tz.utc_now()
        hint = " (The email has no readable Date: header, so it was taken as sent now; pass --received-at.)"
        notes.append("No readable Date: header and no --received-at; the request is recorded as sent now.")
    try:
        return _file_thread(
            reading=reading,
            notes=notes,
            release=release,
            milestone=milestone,
            received_at=received_at,
            arrived_at=tz.to_utc(arrived_at) if arrived_at is not None else tz.utc_now(),
            entered_by=entered_by,
            requester=requester,
            create_kep=create_kep,
            dry_run=dry_run,
        )
    except DomainError as exc:
        if hint:
            raise type(exc)(exc.message + hint, extra=exc.extra) from None
        raise


def _file_thread(
    *,
    reading: ThreadReading,
    notes: list[str],
    release: str | None,
    milestone: str | None,
    received_at: dt.datetime,
    arrived_at: dt.datetime,
    entered_by,
    requester,
    create_kep: bool,
    dry_run: bool,
) -> FiledThread:
    parsed = reading.request
    target, also_target, reason = exception_thread_milestone_resolve(
        reading, release_slug=release, milestone_opt=milestone, received_at=received_at
    )
    for name in parsed.missing:
        notes.append(f"Not read: {FIELD_LABELS[name]} ({parsed.problems[name]}).")
    for until_text, zone in [(parsed.fields.until_text, parsed.fields.until_zone)]:
        written = tz.seasonal_label(until_text)
        if written and zone and (reading.until is None or reading.until.instant is None):
            in_force = tz.abbreviation(received_at, zone)
            if in_force != written:
                notes.append(f"'until {until_text}' says {written}, but {in_force} is in force in {zone} then.")

    if requester is None:
        requester = _requester_user(reading)
    # The author as the thread marks them; unknown ("") when no mark names them.
    requester_name = "" if requester is not None else parsed.sender[:200]
    report: list[str] = []
    result: FiledThread | None = None
    try:
        with transaction.atomic():
            enhancement = Enhancement.objects.filter(number=parsed.kep_number).first()
            if enhancement is None:
                if not create_kep:
                    raise ValidationFailed(
                        f"KEP-{parsed.kep_number} is not known; import it first (import_keps) "
                        "or pass --create-kep to create it from the email.",
                        extra={"kep": parsed.kep_number},
                    )
                if not parsed.fields.sig:
                    raise ValidationFailed(
                        f"--create-kep needs the SIG of KEP-{parsed.kep_number}, but the 'SIG:' field could not "
                        "be read."
                    )
                enhancement = enhancement_upsert(
                    number=parsed.kep_number,
                    title=parsed.fields.enhancement_name or f"KEP-{parsed.kep_number}",
                    owning_sig=parsed.fields.sig,
                    issue_url=parsed.fields.issue_url,
                )
            base = parsed.fields
            request = exception_request_submit(
                enhancement=enhancement,
                milestone=target,
                also_milestone=also_target,
                fields=RequestFields(**{**vars(base), "pr_urls": list(base.pr_urls)}),
                requester=requester,
                requester_name=requester_name,
                requester_email=parsed.sender_address if requester is None else "",
                requester_mark=parsed.sender_mark if requester is None else "",
                on_behalf_of=parsed.on_behalf_of,
                submitted_at=received_at,
                entered_by=entered_by,
                received_at=max(arrived_at, received_at),
                after_window_allowed=True,
                from_archive=request_from_archive(
                    milestone=target, submitted_at=received_at, received_at=max(arrived_at, received_at)
                ),
                thread_url=reading.thread_url,
            )
            previous = base
            for amendment in parsed.amendments:
                at = amendment.sent_at if amendment.sent_at and amendment.sent_at >= received_at else received_at
                until = (
                    tz.read_deadline_text(
                        amendment.until_text, reference=at, default_zone=amendment.until_zone or previous.until_zone
                    )
                    if amendment.until_text
                    else None
                )
                # Each revision takes the answers its own message gives again; the others
                # stay as the revision before had them.
                fields = RequestFields(
                    **{
                        **vars(previous),
                        **amendment.prose,
                        "pr_urls": list(previous.pr_urls),
                        "days": amendment.days,
                        # The old "until" no longer holds; the zone the requester works in does.
                        "until_text": amendment.until_text,
                        "until_zone": amendment.until_zone or previous.until_zone,
                        "until_at": until.instant if until else None,
                        "source_text": amendment.text,
                    }
                )
                previous = fields
                request = exception_request_amend(
                    request=request,
                    fields=fields,
                    actor=requester if requester is not None and amendment.author == parsed.sender else None,
                    actor_label=amendment.author or "unknown",
                    at=at,
                    entered_by=entered_by,
                )
            proposal = None
            decision = reading.decision
            if decision is not None:
                proposal = proposed_decision_from_reading(request=request, decision=decision, entered_by=entered_by)
            report = _report(request, proposal, reason, notes, entered_by, dry_run=dry_run)
            result = FiledThread(request, proposal, reason, notes, report)
            if dry_run:
                raise _Rollback
    except _Rollback:
        pass
    assert result is not None
    return result


def _field_error(parsed: ParsedRequest, names: list[str]) -> str:
    parts = []
    for name in names:
        label = FIELD_LABELS.get(name, "KEP number")
        parts.append(f"'{label}' ({parsed.problems.get(name, 'not read')})")
    noun = "field" if len(parts) == 1 else "fields"
    return f"Could not read the {noun} " + "; ".join(parts) + "."


def _report(request, proposal, reason: str, notes: list[str], entered_by, *, dry_run: bool) -> list[str]:
    zone = request.release.zone
    head = (
        "Dry run, nothing saved. Would create exception request"
        if dry_run
        else (f"Created exception request #{request.pk}")
    )
    entered = entered_by.get_username() if entered_by is not None else "unknown (pass --entered-by)"
    lines = [
        f"{head} for KEP-{request.enhancement.number} ({request.freezes_title}, release {request.release.slug}): "
        f"{request.state}, {request.days} days{' (admission only, no extra time)' if request.days == 0 else ''}, "
        f"requested by {request.requester_label}, entered by {entered}, sent {tz.render(request.submitted_at, zone)}",
        f"  milestone: {reason}",
    ]
    for revision in request.revisions.order_by("number"):
        until = f", until {revision.until_text!r}" if revision.until_text else ""
        in_zone = f" ({revision.until_zone})" if revision.until_zone else ""
        at = f" = {tz.render_deadline(revision.until_at, revision.until_zone or zone)}" if revision.until_at else ""
        lines.append(
            f"  v{revision.number}: {revision.days} days{until}{in_zone}{at}, "
            f"recorded {tz.render(revision.created_at, zone)}"
        )
    if proposal is not None:
        granted = (
            f", granted until {tz.render_deadline(proposal.granted_until, proposal.granted_zone or zone)}"
            if proposal.granted_until
            else (f", deadline {proposal.granted_text!r} not placed" if proposal.granted_text else "")
        )
        by = f" by {proposal.author_name}" if proposal.author_name else ""
        lines.append(
            f"  proposed decision{' #' + str(proposal.pk) if not dry_run else ''}: {proposal.outcome}{granted} "
            f"(read from the reply{by}); not applied: a release-team member confirms it in the admin or with "
            f"POST /api/v1/exceptions/proposed-decisions/<id>/confirm/"
        )
        for warning in proposal.warnings:
            lines.append(f"  decision warning: {warning}")
    if request.from_archive:
        lines.append(
            f"  from the archive: received {tz.render(request.received_at, zone)}, after its request window "
            "or more than 24 hours after it was sent: no new-request mail, no nudges"
        )
    for warning in [*request.warnings, *notes]:
        lines.append(f"  warning: {warning}")
    return lines
