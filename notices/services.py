"""Schedule change notices: written once when a change is saved, sent once per recipient.

``notice_for_milestone_change`` and ``notice_for_hard_stop_change`` run inside the
transaction that saves the change (``notices/receivers.py`` calls them on the schedule's
signals ``milestone_moved`` and ``release_hard_stop_moved``): the notice, its content
and one delivery row per recipient commit with the change or not at all, and
the send task is queued on commit. ``notice_send`` claims each row with one
conditional UPDATE and proceeds only if it changed exactly one row, so a redelivered
or retried task, or two at once, never sends a row twice. A transient failure leaves
the row pending with ``next_attempt_at``; the minute sweep (``notices_sweep``) queues
it again, as it queues a notice whose task was lost after commit. The claim, lease,
backoff, give-up, rate-limit turn and the 429 rule are the outbox's (``outbox.ledger``;
this ledger: ``LEDGER``), the same as the reminders'.

What is a change people see: a milestone's deadline instant moved, the milestone was
cancelled or is back on, or the hard stop in force moved. A saved edit that changes
none of these (a title or notes, the same instant written in another zone) tells
nobody.
"""

from __future__ import annotations

import datetime as dt
import logging
import time

from celery import current_app
from django.conf import settings
from django.db import transaction

from exceptions.models import UNRECORDED_GRANT, ExceptionRequest, days_label
from exceptions.selectors import Deadline, decision_text, effective_deadline, grant_conflicts, hard_stop_conflicts
from notices.models import NoticeDelivery, ScheduleNotice
from outbox import ratelimit
from outbox.errors import TransportError
from outbox.ledger import Ledger
from outbox.smtp import send_email
from releasecal import tz
from releasecal.models import EnhancementOwner, Milestone, Release, SigContact, Tracking
from releasecal.selectors import release_hard_stop
from slack_integration import mrkdwn
from slack_integration.client import bot_client

log = logging.getLogger(__name__)

State = NoticeDelivery.State
Kind = ScheduleNotice.Kind
SEND_TASK = "notices.send"
# The notice ledger in the outbox's machinery: a row is claimable as soon as it is written.
LEDGER = Ledger(model=NoticeDelivery, name="notices")
# KEPs whose owners hear that a freeze moved: the ones the release still tracks.
TRACKED_STATUSES = (
    Tracking.Status.TRACKED,
    Tracking.Status.AT_RISK,
    Tracking.Status.EXCEPTION_PENDING,
    Tracking.Status.EXCEPTION_APPROVED,
)
MAX_CONFLICT_BLOCKS = mrkdwn.MAX_BLOCKS - 5


# ----------------------------------------------------------------------- writing


def _change_kind(old: Milestone, new: Milestone) -> str | None:
    if new.cancelled != old.cancelled:
        return Kind.CANCELLED if new.cancelled else Kind.RESTORED
    if new.cancelled or old.deadline == new.deadline:
        return None
    return Kind.MOVED


def _conflict_lines(conflicts: list[Deadline]) -> list[str]:
    lines = []
    for deadline in conflicts:
        verb = "superseded by the freeze" if deadline.superseded else "past the hard stop (rc.0)"
        lines.append(f"KEP-{deadline.keps[0]} (exception #{deadline.exception_id}): {verb}. {deadline.warning}")
    return lines


def _affected_keps(old: Milestone, milestone: Milestone, conflicts: list[Deadline]) -> set[int]:
    """KEP numbers whose owners hear of this change: those whose grants it overrides
    and, for a freeze, every KEP the release tracks (or that has a grant on it) whose
    effective deadline for it changed (a grant later than both stays as it was)."""
    affected = {deadline.keps[0] for deadline in conflicts}
    if not milestone.kind.is_freeze:
        return affected
    grants = {
        request.enhancement.number: request
        for request in ExceptionRequest.objects.filter(
            milestone=milestone, state=ExceptionRequest.State.APPROVED, decision__granted_until__isnull=False
        ).select_related("decision", "enhancement")
    }
    tracked = set(
        Tracking.objects.filter(release_id=milestone.release_id, status__in=TRACKED_STATUSES).values_list(
            "enhancement__number", flat=True
        )
    )
    for number in tracked | set(grants):
        if _applies(old, grants.get(number)) != _applies(milestone, grants.get(number)):
            affected.add(number)
    return affected


def _applies(milestone: Milestone, request: ExceptionRequest | None) -> dt.datetime | None:
    """The effective deadline under ``milestone`` as it is or was (None: cancelled)."""
    if milestone.cancelled:
        return None
    return effective_deadline(milestone=milestone, request=request).instant


def _slack_on() -> bool:
    return bool(settings.SLACK_BOT_TOKEN)


def _recipients(keps: set[int]) -> dict[str, list[int]]:
    """recipient -> the KEPs it owns among ``keps``: the release team's Slack channel
    (no KEPs), and each owner once, by Slack DM when their Slack identity is known (a
    linked account's, else the one the KEP lists), by email otherwise."""
    found: dict[str, list[int]] = {}
    if _slack_on() and settings.SLACK_RELEASE_TEAM_CHANNEL:
        found[f"channel:{settings.SLACK_RELEASE_TEAM_CHANNEL}"] = []
    owners = (
        EnhancementOwner.objects.filter(enhancement__number__in=keps)
        .select_related("enhancement", "user__slack_identity")
        .order_by("enhancement__number", "pk")
    )
    for owner in owners:
        linked = getattr(owner.user, "slack_identity", None) if owner.user_id else None
        slack_user = linked.slack_user_id if linked is not None else owner.slack_id
        email = owner.email or (owner.user.email if owner.user_id else "")
        if _slack_on() and slack_user:
            recipient = f"slack:{slack_user}"
        elif email:
            recipient = f"email:{email.strip().lower()}"
        else:
            continue
        numbers = found.setdefault(recipient, [])
        if owner.enhancement.number not in numbers:
            numbers.append(owner.enhancement.number)
    return found


def _notice_create(
    *, key: str, kind: str, release: Release, milestone: Milestone | None, title: str, lines: list[str],
    conflicts: list[Deadline], keps: set[int], recipients: dict[str, list[int]] | None = None,
) -> ScheduleNotice | None:  # fmt: skip
    notice, created = ScheduleNotice.objects.get_or_create(
        key=key,
        defaults={
            "kind": kind,
            "release": release,
            "milestone": milestone,
            "title": title[:300],
            "lines": lines,
            "conflict_lines": _conflict_lines(conflicts),
            "exception_ids": [deadline.exception_id for deadline in conflicts],
        },
    )
    if not created:
        return None  # this change was told already (a hook replayed)
    rows = [
        NoticeDelivery(notice=notice, recipient=recipient, keps=sorted(numbers))
        for recipient, numbers in (_recipients(keps) if recipients is None else recipients).items()
    ]
    NoticeDelivery.objects.bulk_create(rows, ignore_conflicts=True)
    if rows:
        transaction.on_commit(lambda: _enqueue(notice.pk), robust=True)
    return notice


def notice_for_milestone_change(*, old: Milestone, milestone: Milestone) -> ScheduleNotice | None:
    """The notice of a saved milestone edit (``old``: the row before it), or None when
    the edit changes nothing people are told of. Call inside the saving transaction."""
    kind = _change_kind(old, milestone)
    if kind is None:
        return None
    release = milestone.release
    conflicts = [] if milestone.cancelled else grant_conflicts(milestone=milestone, previous=old)
    where = f"{milestone.title} ({release.name})"
    if kind == Kind.MOVED:
        title = f"{release.slug}: {milestone.title} moved"
        lines = [
            f"{where} moved.",
            f"Was: {tz.render_deadline(old.deadline, old.zone)}",
            f"Now: {tz.render_deadline(milestone.deadline, milestone.zone)}",
        ]
    elif kind == Kind.CANCELLED:
        title = f"{release.slug}: {milestone.title} cancelled"
        lines = [f"{where} is cancelled.", f"Was: {tz.render_deadline(old.deadline, old.zone)}"]
    else:
        title = f"{release.slug}: {milestone.title} is back on"
        lines = [f"{where} is no longer cancelled.", f"Now: {tz.render_deadline(milestone.deadline, milestone.zone)}"]
    return _notice_create(
        key=f"milestone:{milestone.pk}:{milestone.sequence}", kind=kind, release=release, milestone=milestone,
        title=title, lines=lines, conflicts=conflicts, keps=_affected_keps(old, milestone, conflicts),
    )  # fmt: skip


def notice_for_hard_stop_change(*, release: Release, before: dt.datetime | None) -> ScheduleNotice | None:
    """The notice that the hard stop in force moved (``before``: the one before the
    edit), with the grants it now cuts. Call inside the saving transaction."""
    after = release_hard_stop(release)
    if after == before:
        return None
    conflicts = hard_stop_conflicts(release=release, previous=before)
    lines = [
        f"The hard stop of {release.name} (no extension may end after it) moved.",
        f"Was: {tz.render_deadline(before, release.zone) if before else 'none'}",
        f"Now: {tz.render_deadline(after, release.zone) if after else 'none'}",
    ]
    return _notice_create(
        key=f"release:{release.pk}:hard-stop:{release.updated_at.isoformat()}", kind=Kind.HARD_STOP,
        release=release, milestone=None, title=f"{release.slug}: hard stop moved", lines=lines,
        conflicts=conflicts, keps={deadline.keps[0] for deadline in conflicts},
    )  # fmt: skip


# ------------------------------------------------------------ announcements
#
# The 2026 process: an approved exception is announced to the dev list and the owning
# SIG's list. Off by default (``Release.announce_approvals``); one notice per approval
# (key ``exception:<id>:approved:<decision id>``) and per correction of an announced
# approval (``exception:<id>:correction:<n>``), one delivery row per list address: the
# ledger sends each once, however often the hook or the task runs.


def _announcement_recipients(request: ExceptionRequest) -> dict[str, list[int]]:
    release = request.release
    addresses = []
    if release.announce_dev_list:
        addresses.append(release.announce_dev_list)
    if release.announce_sig_list and request.enhancement.owning_sig:
        contact = SigContact.objects.filter(sig=request.enhancement.owning_sig.lower()).first()
        if contact is not None and contact.mailing_list:
            addresses.append(contact.mailing_list)
    return {f"email:{address.strip().lower()}": [] for address in addresses}


def _announces(request: ExceptionRequest) -> bool:
    # A thread ingested from the archive is history, not news for the lists.
    return request.release.announce_approvals and not request.from_archive


def _kep_words(request: ExceptionRequest) -> str:
    kep = request.enhancement
    sig = f", SIG {kep.owning_sig}" if kep.owning_sig else ""
    return f"KEP-{kep.number} ({kep.title}{sig})"


def _freezes(request: ExceptionRequest) -> list:
    """The freezes the request names: its milestone, and the second of a combined request."""
    return [request.milestone] + ([request.also_milestone] if request.also_milestone_id else [])


def _freeze_lines(request: ExceptionRequest) -> list[str]:
    """One line per freeze the request names, with its deadline."""
    return [f"{m.title}: {tz.render_deadline(m.deadline, m.zone)}" for m in _freezes(request)]


def _grant_words(request: ExceptionRequest, granted_until: dt.datetime | None, zone: str) -> str:
    if granted_until is None:
        return UNRECORDED_GRANT
    return tz.render_deadline(granted_until, zone or request.release.zone)


def notice_for_approval(*, request: ExceptionRequest, decision) -> ScheduleNotice | None:
    """The announcement of an approval to the release's lists, or None (announcements
    off, not an approval, no list, from the archive, told already). Call inside the
    deciding transaction (``notices.receivers.exception_request_decided``)."""
    if decision.outcome != "approved" or not _announces(request):
        return None
    recipients = _announcement_recipients(request)
    if not recipients:
        return None
    release, milestone = request.release, request.milestone
    by = decision.decided_by.get_username() if decision.decided_by_id else "the release team"
    both = " (one completion date for both)" if request.also_milestone_id else ""
    lines = [
        f"The {release.name} release team approved an exception for {_kep_words(request)}: "
        f"{request.freezes_title}, {days_label(request.days)} asked{both}.",
        *_freeze_lines(request),
        f"Granted until: {_grant_words(request, decision.granted_until, decision.granted_zone)}",
        f"Approved by {by}.",
    ]
    if decision.note:
        lines.append(f"Note: {decision.note}")
    if request.enhancement.issue_url:
        lines.append(f"KEP: {request.enhancement.issue_url}")
    lines.append(f"Exceptions of {release.slug}: {settings.SITE_URL}/releases/{release.slug}/exceptions/")
    return _notice_create(
        key=f"exception:{request.pk}:approved:{decision.pk}", kind=Kind.APPROVAL, release=release,
        milestone=milestone, title=f"{release.slug}: exception approved for KEP-{request.enhancement.number}",
        lines=lines, conflicts=[], keps=set(), recipients=recipients,
    )  # fmt: skip


def notice_for_decision_correction(*, request: ExceptionRequest, correction) -> ScheduleNotice | None:
    """The announcement that an announced approval was corrected or reopened, or that a
    rejection was corrected to an approval; None otherwise (see ``notice_for_approval``)."""
    if not _announces(request):
        return None
    announced = ScheduleNotice.objects.filter(
        key__startswith=f"exception:{request.pk}:", kind__in=(Kind.APPROVAL, Kind.CORRECTION)
    ).exists()
    now_approved = correction.after is not None and correction.after["outcome"] == "approved"
    if not (announced or now_approved):
        return None
    recipients = _announcement_recipients(request)
    if not recipients:
        return None
    release, milestone = request.release, request.milestone
    verb = "reopened (it is pending again)" if correction.action == "reopened" else "corrected"
    lines = [
        f"The {release.name} release team {verb} its decision on the exception for {_kep_words(request)}: "
        f"{request.freezes_title}.",
        *_freeze_lines(request),
        f"Was: {decision_text(correction.before, release.zone)}",
        f"Now: {decision_text(correction.after, release.zone)}",
        f"Reason: {correction.reason}",
        f"Corrected by {correction.corrected_by_label}.",
        f"Exceptions of {release.slug}: {settings.SITE_URL}/releases/{release.slug}/exceptions/",
    ]
    return _notice_create(
        key=f"exception:{request.pk}:correction:{correction.number}", kind=Kind.CORRECTION, release=release,
        milestone=milestone,
        title=f"{release.slug}: exception decision corrected for KEP-{request.enhancement.number}",
        lines=lines, conflicts=[], keps=set(), recipients=recipients,
    )  # fmt: skip


# ----------------------------------------------------------------------- sending


def _enqueue(notice_id: int) -> None:
    current_app.tasks[SEND_TASK].delay(notice_id)


def _owner_line(keps: list[int]) -> str:
    return "You get this as an owner of " + ", ".join(f"KEP-{number}" for number in keps) + "."


def slack_message(notice: ScheduleNotice, keps: list[int]) -> tuple[str, list[dict]]:
    """The notification text and Block Kit blocks of a notice for one recipient."""
    blocks = [mrkdwn.header(notice.title), mrkdwn.section("\n".join(mrkdwn.escape(line) for line in notice.lines))]
    if notice.conflict_lines:
        blocks.append(mrkdwn.context("Granted extensions this change overrides:"))
        shown = notice.conflict_lines[:MAX_CONFLICT_BLOCKS]
        blocks += [mrkdwn.section("• " + mrkdwn.escape(line)) for line in shown]
        if len(notice.conflict_lines) > len(shown):
            blocks.append(mrkdwn.context(f"and {len(notice.conflict_lines) - len(shown)} more (see the admin)."))
    if keps:
        blocks.append(mrkdwn.context(mrkdwn.escape(_owner_line(keps))))
    return mrkdwn.fallback(notice.title), blocks


def email_message(notice: ScheduleNotice, keps: list[int]) -> tuple[str, str]:
    """Subject and plain-text body of a notice for one owner."""
    body = list(notice.lines)
    if notice.conflict_lines:
        body += ["", "Granted extensions this change overrides:", *[f"- {line}" for line in notice.conflict_lines]]
    if keps:
        body += ["", _owner_line(keps)]
    return f"[releasecal] {notice.title}", "\n".join(body) + "\n"


def _send_one(notice: ScheduleNotice, delivery: NoticeDelivery) -> None:
    kind, _, address = delivery.recipient.partition(":")
    if kind == "email":
        subject, body = email_message(notice, delivery.keps)
        send_email(subject=subject, body=body, address=address)
        return
    client = bot_client()
    if client is None:
        raise TransportError("Slack is not configured (SLACK_BOT_TOKEN)", permanent=True)
    text, blocks = slack_message(notice, delivery.keps)
    client.post_message(channel=address, text=text, blocks=blocks, unfurl_links=False)


def _slack_key(delivery: NoticeDelivery) -> str | None:
    """The rate-limit key of a Slack post (the key reminders use for the same target)."""
    kind, _, address = delivery.recipient.partition(":")
    return ratelimit.conversation_key(address) if kind in ("channel", "slack") else None


def _requeue(notice_id: int, slots: dict[str, float], countdown: float) -> None:
    """Queue the send again for the seconds it reserved (a countdown of at most
    OUTBOX_SLACK_MAX_WAIT_SECONDS, far below the broker's visibility timeout)."""
    current_app.tasks[SEND_TASK].apply_async(args=[notice_id], kwargs={"slots": slots}, countdown=countdown)


def notice_send(
    *, notice_id: int, now: dt.datetime | None = None, slots: dict[str, float] | None = None, requeue=None
) -> dict:
    """Send every due row of one notice that nobody else holds. Returns counts of what
    happened (sent, retry, failed, waiting, not-claimed) for logs and tests; a row that
    Slack rate-limited (429) is waiting, not failed (the 429 rule, ``outbox.ledger``).

    A Slack post waits for its channel's turn before its row is claimed: a turn a
    second or more ahead queues the task again for it (``slots`` carries the reserved
    seconds), so the worker is free meanwhile."""
    counts = {"sent": 0, "retry": 0, "failed": 0, "waiting": 0, "not-claimed": 0}
    notice = ScheduleNotice.objects.filter(pk=notice_id).first()
    if notice is None:
        return counts
    now = now or tz.utc_now()
    slots = slots or {}
    later: dict[str, float] = {}
    for delivery in NoticeDelivery.objects.filter(LEDGER.claimable(now), notice=notice):
        key = _slack_key(delivery) if settings.OUTBOX_SLACK_CHANNEL_RATE > 0 else None
        if key is not None:
            wait = LEDGER.wait_for_turn(key, [delivery.pk], slot=slots.get(str(delivery.pk)), now=now)
            if wait is not None:
                if wait.until is not None:
                    later[str(delivery.pk)] = wait.until
                counts["waiting"] += 1
                continue
        if not LEDGER.claim([delivery.pk], now=now):
            counts["not-claimed"] += 1
            continue
        delivery.refresh_from_db()
        try:
            _send_one(notice, delivery)
        except Exception as exc:
            if not isinstance(exc, TransportError):  # a bug: retried up to the bound, visible in the admin
                log.exception("notice delivery %s: unexpected error", delivery.pk)
                exc = TransportError(f"{exc.__class__.__name__}: {exc}")
            outcome = LEDGER.record_failure([delivery], exc, now=now, target=key)
            counts["waiting" if outcome == "rate-limited" else outcome] += 1
            continue
        LEDGER.record_sent([delivery.pk], now=now, sent_at=tz.utc_now())
        counts["sent"] += 1
    if later:
        countdown = max(0.0, min(later.values()) - time.time())
        try:
            (requeue or _requeue)(notice.pk, later, countdown)
        except Exception:  # broker down: the rows are pending; the sweep queues them again
            log.warning("could not queue notice %s again", notice.pk, exc_info=True)
    return counts


def notices_sweep(*, now: dt.datetime | None = None) -> list[int]:
    """Queue the send task of every notice with a row due and not held (a retry whose
    time came, a task lost after commit, a worker lost mid-send). Rows touched in the
    last minute are left to the task that is on them. A row whose sender was lost as
    often as it may be tried fails (the outbox's lease, ``Ledger.reclaim_expired``)."""
    now = now or tz.utc_now()
    quiet = now - dt.timedelta(seconds=60)
    ids = sorted(
        set(
            NoticeDelivery.objects.filter(LEDGER.claimable(now), updated_at__lt=quiet).values_list(
                "notice_id", flat=True
            )
        )
    )
    LEDGER.reclaim_expired(now=now)
    for notice_id in ids:
        try:
            _enqueue(notice_id)
        except Exception:  # broker down: the next sweep tries again
            log.warning("could not queue notice %s", notice_id, exc_info=True)
    return ids
