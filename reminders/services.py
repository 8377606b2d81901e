"""Writes to the reminder ledger: materialise, claim, send, retry, sweep.

The ledger is the single source of truth. Rows are created (``deliveries_sync_*``)
when rules, milestones or decisions change; the minute sweep queues the due ones; a
send task claims its row with one conditional UPDATE and proceeds only if it changed
exactly one row. The claim, lease, backoff, give-up, rate-limit turn and the 429 rule
are the outbox's (``outbox.ledger``; this ledger: ``LEDGER``). See docs/reminders.md
for the exactly-once argument.
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from celery import current_app
from django.conf import settings
from django.core.mail import BadHeaderError
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, Prefetch, Q, prefetch_related_objects
from django.db.models.functions import Coalesce

from exceptions.followup import exception_grants_end
from exceptions.models import ExceptionRequest
from exceptions.selectors import effective_deadline
from outbox import ratelimit
from outbox.errors import TransportError
from outbox.ledger import Ledger
from releasecal import tz
from releasecal.errors import DomainError
from releasecal.models import EnhancementOwner, Milestone, MilestoneKind, Tracking
from releasecal.services import milestone_kinds_ensure
from reminders.channels import liaison_recipient, sender_for, target_key
from reminders.messages import message_for_delivery
from reminders.models import Channel, Delivery, ReminderRule
from reminders.offsets import parse_offsets

log = logging.getLogger(__name__)

State = Delivery.State
# The reminder ledger in the outbox's machinery: a row is claimable once its time has come.
LEDGER = Ledger(model=Delivery, name="reminders", due=lambda now: Q(due_at__lte=now), queued_field="queued_at")
Rule = ReminderRule.AppliesTo

TRACKED_STATUSES = (
    Tracking.Status.TRACKED,
    Tracking.Status.AT_RISK,
    Tracking.Status.EXCEPTION_PENDING,
    Tracking.Status.EXCEPTION_APPROVED,
)
EVENT_RULES = {
    "submitted": Rule.REQUEST_SUBMITTED,
    "approved": Rule.REQUEST_DECIDED,
    "rejected": Rule.REQUEST_DECIDED,
    "nudge": Rule.REQUEST_NUDGE,
}


def _grace() -> dt.timedelta:
    return dt.timedelta(minutes=settings.REMINDERS_GRACE_MINUTES)


@dataclass(frozen=True)
class _Wanted:
    rule: ReminderRule
    channel_id: int
    offset: str
    recipient: str
    due_at: dt.datetime
    deadline_at: dt.datetime
    zone: str


# ------------------------------------------------------------------ materialise


def _rules(applies_to: str, *, release_id: int, kind_id: int) -> list[ReminderRule]:
    rules = (
        ReminderRule.objects.filter(applies_to=applies_to, active=True)
        .filter(Q(release__isnull=True) | Q(release_id=release_id))
        .select_related("channel")
        .prefetch_related("kinds")
    )
    result = []
    for rule in rules:
        kinds = {k.pk for k in rule.kinds.all()}
        # Milestone rules cover the kinds they name; an extension or event rule with
        # no kinds covers every kind.
        if kind_id in kinds or (not kinds and applies_to != Rule.MILESTONES):
            result.append(rule)
    return result


def _release_owners(milestone: Milestone) -> list[EnhancementOwner]:
    return list(
        EnhancementOwner.objects.filter(
            enhancement__tracking__release_id=milestone.release_id, enhancement__tracking__status__in=TRACKED_STATUSES
        ).order_by("pk")
    )


def _wanted(rules: Iterable[ReminderRule], *, deadline: dt.datetime, zone: str, owners) -> list[_Wanted]:
    wanted = []
    if callable(owners):
        owners = functools.cache(owners)  # read once, however many rules ask
    for rule in rules:
        recipients = sender_for(rule.channel).recipients(owners=owners() if callable(owners) else owners)
        for offset in parse_offsets(rule.offsets):
            due = offset.due(deadline, zone)
            for recipient in recipients:
                wanted.append(_Wanted(rule, rule.channel_id, offset.spec, recipient, due, deadline, zone))
    return wanted


def _apply(
    existing: Iterable[Delivery], wanted: list[_Wanted], *, scope: dict, now: dt.datetime, why_gone: str
) -> None:
    """Make the open rows of one deadline match ``wanted``.

    Open rows (pending, missed, cancelled: nothing sent) are rescheduled, re-armed or
    cancelled; rows being sent or already sent or failed are history and stay as they
    are. A row whose time has passed by more than the grace period becomes ``missed``.
    """
    grace = _grace()
    by_key = {(d.offset, d.channel_id, d.recipient): d for d in existing}
    seen = set()
    to_create = []
    for want in wanted:
        key = (want.offset, want.channel_id, want.recipient)
        if key in seen:
            continue  # two rules asking for the same reminder: one row
        seen.add(key)
        row = by_key.get(key)
        late = want.due_at < now - grace
        if row is None:
            if want.deadline_at < now - grace:
                continue  # a deadline long past: nothing to remind of
            to_create.append(
                Delivery(
                    **scope,
                    rule=want.rule,
                    channel_id=want.channel_id,
                    offset=want.offset,
                    recipient=want.recipient,
                    due_at=want.due_at,
                    deadline_at=want.deadline_at,
                    deadline_zone=want.zone,
                    state=State.MISSED if late else State.PENDING,
                    reason=_missed_reason(want.due_at) if late else "",
                )
            )
            continue
        if row.state not in Delivery.OPEN_STATES:
            continue
        retrying = row.state == State.PENDING and (row.attempts > 0 or row.send_late)
        if late and not retrying:
            state, reason = State.MISSED, _missed_reason(want.due_at)
        else:
            state, reason = State.PENDING, ""
        changes = {
            "due_at": want.due_at,
            "deadline_at": want.deadline_at,
            "deadline_zone": want.zone,
            "state": state,
            "reason": reason,
            "rule_id": want.rule.pk,
        }
        if any(getattr(row, name) != value for name, value in changes.items()):
            if row.due_at != want.due_at:
                changes["queued_at"] = None
            Delivery.objects.filter(pk=row.pk, state__in=Delivery.OPEN_STATES).update(**changes, updated_at=now)
    gone = [d.pk for key, d in by_key.items() if key not in seen and d.state in (State.PENDING, State.MISSED)]
    if gone:
        Delivery.objects.filter(pk__in=gone, state__in=(State.PENDING, State.MISSED)).update(
            state=State.CANCELLED, reason=why_gone, updated_at=now
        )
    if to_create:
        Delivery.objects.bulk_create(to_create, ignore_conflicts=True)


def _missed_reason(due_at: dt.datetime) -> str:
    return (
        f"Its time ({tz.isoformat_utc(due_at)}) passed more than {settings.REMINDERS_GRACE_MINUTES} min before it "
        "could be sent; not sent late. Retry it to send it with a late note."
    )


@transaction.atomic
def deliveries_sync_for_milestone(
    *, milestone: Milestone, now: dt.datetime | None = None, created: bool = False
) -> None:
    """Create, reschedule or cancel the reminders of one milestone's own deadline.
    ``created``: the milestone was inserted in this transaction, so it has no rows yet
    and none is read (a README import creates ~1000)."""
    now = now or tz.utc_now()
    existing = (
        []
        if created
        else list(
            Delivery.objects.select_for_update()
            .filter(milestone=milestone, request__isnull=True)
            .exclude(offset__startswith="event:")
        )
    )
    if not existing and (milestone.cancelled or milestone.deadline < now - _grace()):
        # Nothing open to change and nothing to remind of (what _apply would conclude,
        # without reading the rules and every tracked KEP's owners): an import of a
        # past cycle's README calls this for each of its milestones.
        return
    wanted: list[_Wanted] = []
    if not milestone.cancelled:
        rules = _rules(Rule.MILESTONES, release_id=milestone.release_id, kind_id=milestone.kind_id)
        wanted = _wanted(
            rules, deadline=milestone.deadline, zone=milestone.zone, owners=lambda: _release_owners(milestone)
        )
    why = f"{milestone.title} was cancelled" if milestone.cancelled else "No active rule asks for it any more"
    _apply(existing, wanted, scope={"milestone": milestone, "request": None}, now=now, why_gone=why)


@transaction.atomic
def deliveries_sync_for_request(*, request: ExceptionRequest, now: dt.datetime | None = None) -> None:
    """Reminders of a granted extension (approved request); cancels them otherwise."""
    now = now or tz.utc_now()
    existing = list(Delivery.objects.select_for_update().filter(request=request).exclude(offset__startswith="event:"))
    wanted: list[_Wanted] = []
    # A grant the freeze superseded leaves the milestone's own reminders to apply.
    deadline = effective_deadline(milestone=request.milestone, request=request)
    if deadline.is_extension and deadline.grant_recorded:
        rules = _rules(Rule.EXTENSIONS, release_id=request.release_id, kind_id=request.milestone.kind_id)
        wanted = _wanted(
            rules,
            deadline=deadline.instant,
            zone=deadline.zone,
            owners=lambda: list(request.enhancement.owners.order_by("pk")),
        )
    _apply(
        existing,
        wanted,
        scope={"milestone_id": request.milestone_id, "request": request},
        now=now,
        why_gone=f"Request #{request.pk}'s grant is superseded by the freeze"
        if deadline.superseded
        else f"Request #{request.pk} is {request.state}",
    )


def deliveries_cancel_for_request(*, request: ExceptionRequest, reason: str, now: dt.datetime | None = None) -> int:
    """Cancel a request's pending extension reminders and nudges (not its decision notice)."""
    now = now or tz.utc_now()
    return (
        Delivery.objects.filter(request=request, state__in=(State.PENDING, State.MISSED))
        .filter(~Q(offset__startswith="event:") | Q(offset="event:nudge"))
        .update(state=State.CANCELLED, reason=reason[:300], updated_at=now)
    )


@transaction.atomic
def deliveries_sync_for_kep_owners(*, enhancement, now: dt.datetime | None = None) -> None:
    """A KEP's owners changed: re-sync, at once, the open deliveries that go to owners:
    the deadlines of the releases tracking it (their rules may address every tracked
    KEP's owners) and its granted extensions."""
    now = now or tz.utc_now()
    horizon = now - _grace()
    milestones = Milestone.objects.filter(release__tracking__enhancement=enhancement).select_related("release", "kind")
    for milestone in milestones.distinct():
        if milestone.deadline >= horizon or milestone.deliveries.filter(state=State.PENDING).exists():
            deliveries_sync_for_milestone(milestone=milestone, now=now)
    for request in ExceptionRequest.objects.filter(
        enhancement=enhancement, state=ExceptionRequest.State.APPROVED, decision__granted_until__gte=horizon
    ).select_related("decision", "release", "milestone", "enhancement"):
        deliveries_sync_for_request(request=request, now=now)


def deliveries_sync_all(*, now: dt.datetime | None = None) -> None:
    """Re-sync every deadline that can still be reminded of (after a rule changed)."""
    now = now or tz.utc_now()
    horizon = now - _grace()
    for milestone in Milestone.objects.select_related("release", "kind"):
        if milestone.deadline >= horizon or milestone.deliveries.filter(state=State.PENDING).exists():
            deliveries_sync_for_milestone(milestone=milestone, now=now)
    for request in ExceptionRequest.objects.filter(
        state=ExceptionRequest.State.APPROVED, decision__granted_until__gte=horizon
    ):
        deliveries_sync_for_request(request=request, now=now)


def deliveries_create_for_event(
    *, request: ExceptionRequest, event: str, now: dt.datetime | None = None, enqueue_on_commit: bool = True
) -> list[int]:
    """One notification per event-rule recipient, due now, at most once per request.

    The unique constraint makes it once: a second call (two sweeps nudging at once, a
    replayed hook) finds the row and creates nothing. A request from the archive (a thread
    ingested after the fact, ``ExceptionRequest.from_archive``) gets no new-request mail
    and no nudge; its decision is still told.
    """
    if request.from_archive and event in ("submitted", "nudge"):
        return []
    now = now or tz.utc_now()
    rules = _rules(EVENT_RULES[event], release_id=request.release_id, kind_id=request.milestone.kind_id)
    created = []
    # A request reopened and decided again is told of its new decision: the rows of the
    # decision it had before (``event:approved``) keep theirs.
    offset = f"event:{event}{decision_generation_suffix(request)}" if event in DECIDED_EVENTS else f"event:{event}"
    requester_email = ""
    if event in ("approved", "rejected") and request.requester_id and request.requester.email:
        requester_email = request.requester.email
    for rule in rules:
        owners = list(request.enhancement.owners.order_by("pk")) if rule.channel.kind == Channel.Kind.KEP_OWNERS else []
        for recipient in sender_for(rule.channel).recipients(
            owners=owners, requester_email=requester_email if rule.channel.kind == Channel.Kind.KEP_OWNERS else ""
        ):
            try:
                with transaction.atomic():
                    row, was_created = Delivery.objects.get_or_create(
                        request=request,
                        offset=offset,
                        channel=rule.channel,
                        recipient=recipient,
                        defaults={
                            "rule": rule,
                            "milestone_id": request.milestone_id,
                            "due_at": now,
                            "deadline_zone": request.release.zone,
                        },
                    )
            except IntegrityError:
                continue  # created concurrently by someone else: theirs is the one
            if was_created:
                created.append(row.pk)
    if enqueue_on_commit and created:
        transaction.on_commit(lambda: _enqueue_all(created), robust=True)
    return created


DECIDED_EVENTS = ("approved", "rejected")


def decision_generation_suffix(request: ExceptionRequest, *, reopens: int | None = None) -> str:
    """``""`` for a request's first decision, ``":<n>"`` for the one after its n-th reopen:
    the offset suffix of that decision's notification rows."""
    if reopens is None:
        reopens = request.decision_corrections.filter(action="reopened").count()
    return f":{reopens}" if reopens else ""


def deliveries_create_for_correction(
    *, request: ExceptionRequest, correction, now: dt.datetime | None = None
) -> list[int]:
    """The correction's notification (``event:corrected:<number>``) to everyone the
    decision's own notification reached (its ``event:approved``/``event:rejected`` rows
    already sent, or being sent), once each: same channel, same recipient. A decision
    notification not sent yet needs no correction: it is written when sent, from the
    decision in force; one of a reopened decision is cancelled (there is none in force)."""
    now = now or tz.utc_now()
    reopened = correction.action == "reopened"
    reopens = request.decision_corrections.filter(action="reopened", number__lte=correction.number).count()
    suffix = decision_generation_suffix(request, reopens=reopens - 1 if reopened else reopens)
    decided = Delivery.objects.filter(request=request, offset__in=[f"event:{e}{suffix}" for e in DECIDED_EVENTS])
    if reopened:
        decided.filter(state__in=(State.PENDING, State.MISSED)).update(
            state=State.CANCELLED, reason=f"Request #{request.pk}'s decision was reopened"[:300], updated_at=now
        )
    created = []
    for row in decided.filter(state__in=(State.SENT, State.SENDING)).select_related("channel").order_by("pk"):
        try:
            with transaction.atomic():
                new, was_created = Delivery.objects.get_or_create(
                    request=request,
                    offset=f"event:corrected:{correction.number}",
                    channel=row.channel,
                    recipient=row.recipient,
                    defaults={
                        "rule_id": row.rule_id,
                        "milestone_id": request.milestone_id,
                        "due_at": now,
                        "deadline_zone": request.release.zone,
                    },
                )
        except IntegrityError:
            continue
        if was_created:
            created.append(new.pk)
    if created:
        transaction.on_commit(lambda: _enqueue_all(created), robust=True)
    return created


LIAISON_CHANNEL = "Exception liaisons"


def deliveries_create_for_grant_end(*, request: ExceptionRequest, grant_end) -> list[int]:
    """The liaison's notice that a granted time ended: one row (``event:grant_ended``) on
    the liaisons' channel, to the liaison's Slack when linked, else their email, due now.
    Written by the minute sweep (``exception_grants_end`` in ``deliveries_sweep``), whose
    next step queues it. None for a liaison with neither (the cockpit lists the grant all
    the same)."""
    recipient = liaison_recipient(request.liaison)
    if not recipient:
        log.warning("request #%s: its grant ended and its liaison has neither Slack nor email", request.pk)
        return []
    channel, _ = Channel.objects.get_or_create(name=LIAISON_CHANNEL, defaults={"kind": Channel.Kind.LIAISON})
    row, created = Delivery.objects.get_or_create(
        request=request,
        offset="event:grant_ended",
        channel=channel,
        recipient=recipient,
        defaults={
            "milestone_id": request.milestone_id,
            "due_at": grant_end.recorded_at,
            "deadline_at": grant_end.ended_at,
            "deadline_zone": grant_end.ended_zone,
        },
    )
    return [row.pk] if created else []


# ------------------------------------------------------------------------- send


def delivery_claim(*, delivery_id: int, now: dt.datetime) -> bool:
    """Take the row for sending: true for exactly one caller, however many try."""
    return LEDGER.claim([delivery_id], now=now) == [delivery_id]


def deliveries_claim(*, delivery_ids: list[int], now: dt.datetime) -> list[int]:
    """Take the claimable rows of a digest for sending, together: the ids claimed, each
    for exactly one caller however many try (``outbox.ledger.Ledger.claim``); a row
    cancelled, sent or not yet due is left out."""
    return LEDGER.claim(delivery_ids, now=now)


def delivery_send(*, delivery_id: int, now: dt.datetime | None = None) -> str:
    """Claim, send and record one delivery. Returns what happened (for logs and tests)."""
    return deliveries_send(delivery_ids=[delivery_id], now=now)


# Where in its reserved second a queued send wakes: just inside it (a timer firing a
# hair early would queue it again), leaving the rest of the second for the worker's
# start-up and the post's travel (Slack counts a post in the second it arrives).
SLOT_AIM_SECONDS = 0.05


def _requeue(delivery_ids: list[int], slot: float, countdown: float) -> None:
    """Queue the send for its reserved second (a countdown of at most
    OUTBOX_SLACK_MAX_WAIT_SECONDS, far below the broker's visibility timeout)."""
    args = [delivery_ids[0] if len(delivery_ids) == 1 else delivery_ids]
    countdown = max(0.0, countdown + SLOT_AIM_SECONDS)
    current_app.tasks[SEND_TASK].apply_async(args=args, kwargs={"slot": slot}, countdown=countdown)


def _wait_for_turn(
    key: str, delivery_ids: list[int], *, slot: float | None, now: dt.datetime, requeue: Callable
) -> str | None:
    """None when this send may post to ``key`` now; otherwise what was done instead: the
    send queued again for the second it reserved, or (no second free soon enough) the rows
    left to a later sweep. Only pending rows are touched: nothing is claimed yet."""
    wait = LEDGER.wait_for_turn(key, delivery_ids, slot=slot, now=now)
    if wait is None:
        return None
    if wait.until is not None:
        try:
            requeue(delivery_ids, wait.until, wait.until - time.time())
        except Exception:  # broker down: queued_at lets a later sweep queue it again
            log.warning("could not queue deliveries %s again", delivery_ids, exc_info=True)
    return "deferred"


def deliveries_send(
    *,
    delivery_ids: list[int],
    now: dt.datetime | None = None,
    slot: float | None = None,
    requeue: Callable | None = None,
) -> str:
    """Claim, send and record a digest: the rows one sweep found due together for one
    channel (or email address), or a single row. Returns what happened.

    The rows move together: claimed in one transaction (a row cancelled meanwhile is not
    claimed and drops out), sent as one message (or as few as Slack's limits allow: each
    part's rows are marked sent in one UPDATE once Slack accepted it), and on failure
    retried together (one next attempt time). Posting to Slack waits for its channel's
    turn (``outbox.ratelimit``) before anything is claimed; a 429 puts the rows back
    to pending with ``next_attempt_at`` = now + Retry-After for a later sweep (the 429
    rule, ``outbox.ledger.Ledger.record_failure``).
    """
    injected = now is not None
    now = now or tz.utc_now()
    requeue = requeue or _requeue
    # Loaded before the claim (the rate limit needs the channel first); the claim then
    # decides which of them this send holds. Three statements for a lone milestone
    # reminder: load, claim, record; a request's row adds one (its request, KEP and
    # release). The request's tables are not joined into the load: every row would pay
    # for planning and reading seven tables (half the load's cost) to fill nulls.
    loaded = list(
        Delivery.objects.select_related("channel", "milestone__release", "milestone__kind")
        .filter(LEDGER.claimable(now), pk__in=delivery_ids)
        .order_by(F("deadline_at").asc(nulls_last=True), "due_at", "pk")
    )
    if not loaded:
        return "not-claimed"
    if any(row.request_id for row in loaded):
        prefetch_related_objects(
            loaded,
            Prefetch(
                "request",
                queryset=ExceptionRequest.objects.select_related(
                    "enhancement", "release", "milestone", "also_milestone"
                ),
            ),
        )
    first = loaded[0]
    key = target_key(first.channel, first.recipient) if settings.OUTBOX_SLACK_CHANNEL_RATE > 0 else None
    if key is not None:
        waited = _wait_for_turn(key, delivery_ids, slot=slot, now=now, requeue=requeue)
        if waited is not None:
            return waited
    if len(loaded) == 1:
        claimed = {first.pk} if delivery_claim(delivery_id=first.pk, now=now) else set()
    else:
        claimed = set(deliveries_claim(delivery_ids=[row.pk for row in loaded], now=now))
    if not claimed:
        return "not-claimed"
    rows = [row for row in loaded if row.pk in claimed]
    for row in rows:
        row.attempts += 1  # what the claim did
    outcome = "sent"
    failing = [row for row in rows if row.channel.failing]
    for row in failing:
        channel = row.channel
        LEDGER.held([row.pk], now=now).update(
            state=State.FAILED,
            last_error=f"Channel {channel.name} is failing: {channel.last_error}. Fix and save it, then retry."[:2000],
            updated_at=now,
        )
        outcome = "failed"
    rows = [row for row in rows if not row.channel.failing]
    messages, ready = [], []
    checker = sender_for(rows[0].channel) if rows else None
    for row in rows:
        try:
            message = message_for_delivery(row, now=now)
            checker.check(message, row.recipient)
            messages.append(message)
            ready.append(row)
        except BadHeaderError as exc:  # unsendable as it stands (CR/LF in a title): this row alone fails
            log.warning("delivery %s dropped from its digest, unsendable: %s", row.pk, exc)
            error = TransportError(f"Unsendable: {exc}", permanent=True)
            outcome = _record_failure([row], error, now=now)
        except Exception as exc:  # a bug: this row fails (retried up to the bound), the others go
            log.exception("delivery %s: unexpected error", row.pk)
            outcome = _record_failure([row], TransportError(f"{exc.__class__.__name__}: {exc}"), now=now)
    if not ready:
        return outcome
    recipient = ready[0].recipient
    sender = sender_for(ready[0].channel)
    try:
        parts = sender.parts(messages, recipient)
    except Exception as exc:
        log.exception("deliveries %s: unexpected error", [row.pk for row in ready])
        return _record_failure(ready, TransportError(f"{exc.__class__.__name__}: {exc}"), now=now)
    for number, part in enumerate(parts):
        part_rows = [ready[i] for i in part.indexes]
        left = [ready[i] for later in parts[number:] for i in later.indexes]
        if number and key is not None:
            # The next message of a split digest takes its own turn: the rest is released
            # (nothing was sent for it) and waits for its second like any send.
            released = [row.pk for row in left]
            LEDGER.give_back(released, now=now)
            waited = _wait_for_turn(key, released, slot=None, now=now, requeue=requeue)
            if waited is not None:
                return waited
            if not deliveries_claim(delivery_ids=released, now=now):
                return "not-claimed"
        try:
            sender.send_part(part, recipient)
        except TransportError as exc:
            return _record_failure(left, exc, now=now, target=key)
        except Exception as exc:  # a bug or a soft time limit: retried up to the bound, visible in the admin
            log.exception("deliveries %s: unexpected error", [row.pk for row in left])
            return _record_failure(left, TransportError(f"{exc.__class__.__name__}: {exc}"), now=now)
        # One UPDATE: every row of the message is sent, or (had it failed) none.
        LEDGER.record_sent([row.pk for row in part_rows], now=now, sent_at=now if injected else tz.utc_now())
    return outcome


def _record_failure(rows: list[Delivery], exc: TransportError, *, now: dt.datetime, target: str | None = None) -> str:
    """A failed send of ``rows`` (one message): a channel the error disables is marked
    failing; the rest (the 429 rule, retry, give-up) is the outbox's."""
    if exc.disable_channel:
        for channel in {row.channel_id: row.channel for row in rows}.values():
            channel_mark_failing(channel=channel, error=str(exc)[:2000], now=now)
    return LEDGER.record_failure(rows, exc, now=now, target=target)


def channel_mark_failing(*, channel: Channel, error: str, now: dt.datetime | None = None) -> None:
    now = now or tz.utc_now()
    Channel.objects.filter(pk=channel.pk, failing=False).update(failing=True, failing_since=now)
    Channel.objects.filter(pk=channel.pk).update(last_error=error[:2000], updated_at=now)


def channel_clear_failing(*, channel: Channel) -> None:
    Channel.objects.filter(pk=channel.pk).update(failing=False, failing_since=None, updated_at=tz.utc_now())


def delivery_retry(*, delivery: Delivery, now: dt.datetime | None = None) -> bool:
    """The admin's retry: a failed, missed or cancelled row goes back to pending now.

    A row whose time has passed is sent with a "late" note, never silently late.
    """
    now = now or tz.utc_now()
    delivery.refresh_from_db(fields=["due_at"])
    changed = Delivery.objects.filter(pk=delivery.pk, state__in=(State.FAILED, State.MISSED, State.CANCELLED)).update(
        state=State.PENDING,
        next_attempt_at=None,
        queued_at=None,
        send_late=delivery.due_at < now - _grace(),
        reason="",
        updated_at=now,
    )
    if changed:
        transaction.on_commit(lambda: _enqueue_all([delivery.pk]), robust=True)
    return changed == 1


# ------------------------------------------------------------------------ sweep


@dataclass
class SweepResult:
    reclaimed: int = 0
    missed: int = 0
    nudged: int = 0
    grants_ended: int = 0
    queued: list[int] = field(default_factory=list)
    enqueue_failed: int = 0


# The send task's name (reminders/tasks.py registers it under this name): services find
# it in Celery's task registry, so they need not import the tasks module that imports them.
SEND_TASK = "reminders.send"


def _enqueue_one(delivery_id: int) -> None:
    current_app.tasks[SEND_TASK].delay(delivery_id)


# How far ahead of the sweep's clock its reservations start: the first row of a channel
# gets the next second, not the rest of the current one (which publishing may outlast).
SWEEP_SLOT_LEAD_SECONDS = 1.0


def _slack_targets(ids: list[int]) -> dict[int, str]:
    """The Slack target (``channels.target_key``) of each row of ``ids`` that posts to
    Slack, in one query."""
    if settings.OUTBOX_SLACK_CHANNEL_RATE <= 0 or not ids:
        return {}
    targets = {}
    for row in Delivery.objects.filter(pk__in=ids).select_related("channel").only("pk", "recipient", "channel"):
        key = target_key(row.channel, row.recipient)
        if key is not None:
            targets[row.pk] = key
    return targets


def _enqueue_in_turn(group: list[int], key: str | None) -> bool:
    """Queue one send (a row or a digest). A Slack post reserves its channel's second
    here, once, and is queued with a countdown to it (at most
    OUTBOX_SLACK_MAX_WAIT_SECONDS); the task posts in that second without reserving
    again. False when no second within that wait has room: the rows are left to a later
    sweep (the caller sets their ``next_attempt_at``)."""
    arg = group[0] if len(group) == 1 else group
    if key is None:
        _enqueue_one(arg)
        return True
    clock = time.time()
    slot = ratelimit.reserve(key, now=clock + SWEEP_SLOT_LEAD_SECONDS)
    if slot is None:
        return False
    _requeue(group, slot, slot - time.time())
    return True


def _enqueue_all(ids: list[int]) -> None:
    for delivery_id in ids:
        _enqueue_one(delivery_id)


def deliveries_sweep(
    *, now: dt.datetime | None = None, enqueue: Callable[[int], object] | None = None, limit: int | None = None
) -> SweepResult:
    """The minute sweep. Safe to run twice at once and as often as you like.

    1. Rows stuck in ``sending`` past the lease (a worker died mid-send) go back to
       pending, or to failed once attempts are used up.
    2. Pending rows more than the grace period past due, never attempted, become
       ``missed`` (not sent late silently).
    3. Requests pending too long get their one nudge; grants whose time ended are
       recorded once each (``exceptions.followup.exception_grants_end``) and their
       liaison's notice written.
    4. Due pending rows are marked queued and one send task per digest (the rows due
       for one channel or address whose rules may be combined; else per row) is queued.
       A Slack post's second is reserved here, once, and its task queued with a
       countdown to it; rows with no second free within OUTBOX_SLACK_MAX_WAIT_SECONDS
       wait (``next_attempt_at``) for a later sweep.
       A row queued less than ``OUTBOX_REQUEUE_SECONDS`` ago is not queued again: a
       lost broker message costs at most that long.
    """
    now = now or tz.utc_now()
    result = SweepResult()
    result.reclaimed, result.missed = _reclaim_and_miss(now=now)
    result.nudged = _nudge(now)
    result.grants_ended = len(exception_grants_end(now=now))
    ids = _mark_due_queued(now=now, limit=limit)
    # Queued to the broker by the sweep itself: each Slack post's second is reserved
    # here (an injected ``enqueue`` gets the ids alone and the send reserves its own).
    targets = _slack_targets(ids) if enqueue is None else {}
    failed: list[int] = []
    later: list[int] = []
    for group in digest_groups(ids):
        try:
            if enqueue is not None:
                # One task per digest: its ids (a lone row: its id, as before).
                enqueue(group[0] if len(group) == 1 else group)
            elif not _enqueue_in_turn(group, targets.get(group[0])):
                later.extend(group)
        except Exception:  # broker down: the rows are queued again by a later sweep
            log.warning("could not queue deliveries %s", group, exc_info=True)
            failed.extend(group)
    if failed:
        Delivery.objects.filter(pk__in=failed, state=State.PENDING).update(queued_at=None)
    if later:  # their channel's seconds are reserved as far as we wait: a later sweep
        wait = dt.timedelta(seconds=settings.OUTBOX_SLACK_MAX_WAIT_SECONDS)
        Delivery.objects.filter(pk__in=later, state=State.PENDING).update(
            queued_at=None, next_attempt_at=now + wait, updated_at=now
        )
    skipped = set(failed) | set(later)
    result.queued = [i for i in ids if i not in skipped]
    result.enqueue_failed = len(failed)
    return result


def digest_groups(ids: list[int]) -> list[list[int]]:
    """The due rows of one sweep as digests: the rows whose rules may be combined
    (``ReminderRule.combine``) that go to the same channel and recipient, or to the same
    email address through any channel, form one group; every other row is its own.
    With ``REMINDERS_DIGESTS`` off, every row is its own."""
    if not settings.REMINDERS_DIGESTS:
        return [[pk] for pk in ids]
    groups: dict[tuple, list[int]] = {}
    rows = Delivery.objects.filter(pk__in=ids).values_list("pk", "channel_id", "recipient", "rule__combine")
    for pk, channel_id, recipient, combine in rows.order_by("pk"):
        if not combine:  # the rule says no, or the row has no rule any more
            key: tuple = ("alone", pk)
        elif recipient.startswith("email:"):
            key = ("email", recipient)
        else:
            key = ("channel", channel_id, recipient)
        groups.setdefault(key, []).append(pk)
    return sorted(groups.values())


def _reclaim_and_miss(*, now: dt.datetime) -> tuple[int, int]:
    """Steps 1 and 2 of the sweep, each one conditional UPDATE (it runs every minute).

    A row in ``sending`` past its lease goes back to ``pending`` (``failed`` when its
    attempts are used up); a never-attempted ``pending`` row past the grace period
    becomes ``missed``. Each UPDATE re-checks the state it changes, so a row a worker
    has just finished is left alone. Returns (reclaimed, missed).
    """
    reclaimed = LEDGER.reclaim_expired(now=now)
    missed = Delivery.objects.filter(
        state=State.PENDING, attempts=0, send_late=False, due_at__lt=now - _grace()
    ).update(state=State.MISSED, reason=_missed_reason_generic(), updated_at=now)
    return reclaimed, missed


def _mark_due_queued(*, now: dt.datetime, limit: int | None) -> list[int]:
    """Mark due rows queued and return their ids.

    Rows queued less than OUTBOX_REQUEUE_SECONDS ago are left alone; rows another
    sweep is marking right now are skipped (``select_for_update(skip_locked=True)``,
    held until this transaction commits), so two sweeps at once split the work instead
    of both queuing it.
    """
    cutoff = now - dt.timedelta(seconds=settings.OUTBOX_REQUEUE_SECONDS)
    due = (
        Delivery.objects.select_for_update(skip_locked=True)
        .filter(state=State.PENDING, due_at__lte=now)
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .filter(Q(queued_at__isnull=True) | Q(queued_at__lt=cutoff))
        .order_by("due_at", "id")
    )
    with transaction.atomic():
        ids = sorted(due[:limit].values_list("id", flat=True) if limit else due.values_list("id", flat=True))
        if ids:
            Delivery.objects.filter(pk__in=ids).update(queued_at=now)
    return ids


def _missed_reason_generic() -> str:
    return (
        f"Not sent within {settings.REMINDERS_GRACE_MINUTES} min of its time (no worker ran it); not sent late. "
        "Retry it to send it with a late note."
    )


def _nudge(now: dt.datetime) -> int:
    waited = now - dt.timedelta(hours=settings.EXCEPTION_NUDGE_AFTER_HOURS)
    # One query: nothing comes back unless a nudge rule is active. Waiting counts from
    # receipt (a 2024 thread ingested today has not waited since 2024), and a request
    # from the archive is never nudged.
    waiting = (
        ExceptionRequest.objects.filter(state=ExceptionRequest.State.PENDING, from_archive=False)
        .alias(since=Coalesce("received_at", "submitted_at"))
        .filter(since__lte=waited)
        .filter(Exists(ReminderRule.objects.filter(applies_to=Rule.REQUEST_NUDGE, active=True)))
        .exclude(deliveries__offset="event:nudge")
        .select_related("release", "milestone", "enhancement")
    )
    count = 0
    for request in waiting:
        count += len(deliveries_create_for_event(request=request, event="nudge", now=now, enqueue_on_commit=False))
    return count


# ------------------------------------------------------------------------ seeds


TEAM_EMAIL_CHANNEL = "Release team (email)"
EXAMPLE_DOMAINS = ("example.com", "example.net", "example.org")


def is_example_address(address: str) -> bool:
    """An RFC 2606 example address (the default ``REMINDERS_RELEASE_TEAM_EMAIL``), which
    no mail reaches."""
    domain = address.rsplit("@", 1)[-1].strip().lower().rstrip(".")
    return domain.endswith(".example") or any(domain == d or domain.endswith("." + d) for d in EXAMPLE_DOMAINS)


@dataclass
class DefaultsSetup:
    channels_created: int
    channels_total: int
    rules_created: int
    rules_total: int


@transaction.atomic
def reminder_defaults_setup(*, allow_example_address: bool = False, now: dt.datetime | None = None) -> DefaultsSetup:
    """``manage.py setup_defaults``: the milestone kinds, then the default channels and
    reminder rules (``reminder_rules_seed_defaults``), on any database; idempotent.

    Under production settings (``RELEASECAL_PRODUCTION``) an example release-team
    address, in ``REMINDERS_RELEASE_TEAM_EMAIL`` or in an existing "Release team (email)"
    channel, is refused: the reminders would go nowhere. The demo allows it.
    """
    if settings.RELEASECAL_PRODUCTION and not allow_example_address:
        addresses = [settings.REMINDERS_RELEASE_TEAM_EMAIL]
        existing = Channel.objects.filter(name=TEAM_EMAIL_CHANNEL).first()
        if existing is not None:
            addresses = list(existing.config.get("to", []))
        examples = [a for a in addresses if is_example_address(a)]
        if examples:
            where = (
                f"the channel {TEAM_EMAIL_CHANNEL!r} (edit it in the admin)"
                if existing is not None
                else "REMINDERS_RELEASE_TEAM_EMAIL"
            )
            raise DomainError(
                f"{', '.join(examples)} is an example address, which no mail reaches: set the release team's "
                f"real address in {where} and run setup_defaults again.",
                extra={"addresses": examples},
            )
    milestone_kinds_ensure()
    channels_before = Channel.objects.count()
    rules_before = ReminderRule.objects.count()
    reminder_rules_seed_defaults(now=now)
    channels, rules = Channel.objects.count(), ReminderRule.objects.count()
    return DefaultsSetup(
        channels_created=channels - channels_before,
        channels_total=channels,
        rules_created=rules - rules_before,
        rules_total=rules,
    )


def reminder_rules_seed_defaults(*, now: dt.datetime | None = None) -> list[ReminderRule]:
    """The Kubernetes release team's reminders, as rules (idempotent).

    2 weeks, 1.5 weeks (10 days), 3 days and 1 day before every freeze and "now in
    effect" at it; the day before a granted extension ends, to the KEP's owners; new
    requests, decisions and nudges. Slack rules are active only when SLACK_BOT_TOKEN is
    set; the email ones print to the console in the embedded default.
    """
    team_email, _ = Channel.objects.get_or_create(
        name=TEAM_EMAIL_CHANNEL,
        defaults={"kind": Channel.Kind.EMAIL, "config": {"to": [settings.REMINDERS_RELEASE_TEAM_EMAIL]}},
    )
    team_slack, _ = Channel.objects.get_or_create(
        name="Release team (Slack)",
        defaults={"kind": Channel.Kind.SLACK_BOT, "config": {"channel": settings.REMINDERS_RELEASE_TEAM_SLACK_CHANNEL}},
    )
    owners, _ = Channel.objects.get_or_create(
        name="KEP owners", defaults={"kind": Channel.Kind.KEP_OWNERS, "config": {"via": "email"}}
    )
    slack_on = bool(settings.SLACK_BOT_TOKEN)
    # The Slack app (slack_integration) already posts new requests, with Approve/Reject
    # buttons, to SLACK_RELEASE_TEAM_CHANNEL: do not announce them twice.
    submitted_on_slack = slack_on and not getattr(settings, "SLACK_RELEASE_TEAM_CHANNEL", "")
    freezes = list(MilestoneKind.objects.filter(is_freeze=True))
    specs = [
        ("Freeze reminders (email)", Rule.MILESTONES, "14d, 10d, 3d, 1d, 0", team_email, True, freezes),
        ("Freeze reminders (Slack)", Rule.MILESTONES, "14d, 10d, 3d, 1d, 0", team_slack, slack_on, freezes),
        ("Extension ends tomorrow (KEP owners)", Rule.EXTENSIONS, "1d", owners, True, []),
        ("New exception request (email)", Rule.REQUEST_SUBMITTED, "", team_email, True, []),
        ("New exception request (Slack)", Rule.REQUEST_SUBMITTED, "", team_slack, submitted_on_slack, []),
        ("Decision (KEP owners and requester)", Rule.REQUEST_DECIDED, "", owners, True, []),
        ("Request waiting for a decision (email)", Rule.REQUEST_NUDGE, "", team_email, True, []),
        ("Request waiting for a decision (Slack)", Rule.REQUEST_NUDGE, "", team_slack, slack_on, []),
    ]
    if slack_on:
        # A token configured since the last seed: switch the Slack rules on.
        turned_on = ReminderRule.objects.filter(channel=team_slack)
        if not submitted_on_slack:
            turned_on = turned_on.exclude(applies_to=Rule.REQUEST_SUBMITTED)
        turned_on.update(active=True)
    rules = []
    for name, applies_to, offsets, channel, active, kinds in specs:
        rule, created = ReminderRule.objects.get_or_create(
            name=name, defaults={"applies_to": applies_to, "offsets": offsets, "channel": channel, "active": active}
        )
        # A milestone rule with no kinds covers nothing: one seeded before the kinds
        # existed (or emptied by mistake) gets the freezes again.
        if kinds and (created or not rule.kinds.exists()):
            rule.kinds.set(kinds)
        rules.append(rule)
    deliveries_sync_all(now=now)
    return rules
