"""The outbox's machinery, written once for every ledger: the claim, the lease, the
backoff, the give-up, the rate-limit turn and the 429 rule.

A ledger is a table of messages to send, one row per message and recipient, that keeps
its own content and message building (reminders' ``Delivery``, schedule notices'
``NoticeDelivery``, the GitHub board writes' ``BoardWrite``, the KEP issues' comments'
``IssueComment``). What the machinery needs of a row:

- ``state``: ``pending`` → ``sending`` → ``sent`` | ``failed`` (a ledger may have more
  states of its own, such as reminders' ``missed`` and ``cancelled``; the machinery
  leaves them alone);
- ``attempts`` (int), ``claimed_at``, ``next_attempt_at``, ``sent_at``, ``updated_at``
  (datetimes), ``last_error`` (text);
- optionally a "queued at" datetime (reminders' ``queued_at``), cleared whenever a row
  goes back to pending so that the ledger's sweep queues it again.

A ledger describes its table once, as a :class:`Ledger`, and its send does, for the rows
of one message:

1. ``wait_for_turn(target, ids, ...)`` when it posts to a rate-limited target (a Slack
   channel: ``outbox.ratelimit``): ``None`` means post now; a :class:`Wait` means the rows
   wait (nothing is claimed) and the send is queued again for ``Wait.until``, or, with
   ``until`` None, left to a later sweep;
2. ``claim(ids, now=...)``: the conditional UPDATE (as healthchecks' ``sendalerts``): a
   row moves to ``sending`` for exactly one caller, however many try at once; the ids
   returned are the rows this send holds (``held``);
3. build and send the message through a transport, which raises
   :class:`~outbox.errors.TransportError` when it did not go;
4. ``record_sent(ids, ...)`` or ``record_failure(rows, exc, ...)``.

``record_failure`` decides everything a failure does to a row, so no ledger can differ:

- **the 429 rule**: a rate-limited answer (``exc.rate_limited``: Slack's or GitHub's
  429) is not a failed attempt. The claim's attempt is given back, the row waits,
  pending, until Retry-After has passed (``next_attempt_at``) and the target's next
  seconds are held for every worker; six 429s never fail a row;
- a permanent error fails the row at once;
- otherwise the row retries after ``backoff_delay`` (exponential with jitter, never
  before Retry-After), and fails once ``OUTBOX_MAX_ATTEMPTS`` attempts are used up (the
  give-up).

The lease: a row left in ``sending`` longer than ``OUTBOX_LEASE_SECONDS`` (its worker
died) may be claimed again while it has attempts left; ``reclaim_expired`` (each
ledger's sweep calls it) puts such rows back to pending, or fails them once their
attempts are used up. A send task's time limit is 80% of the lease, so a live worker is
never reclaimed: the one case a message can go twice is a worker lost after the
transport accepted and before ``record_sent`` (said in the row's ``last_error``).

A ledger plugs in as the GitHub board writes did (``github/writes.py``): a model with
the fields above, a ``Ledger(model=..., name="board")``, a send that follows steps 1-4,
and a sweep that calls ``reclaim_expired`` and queues the rows ``claimable`` says are
due. ``tests/outbox/test_ledger.py`` runs these rules against each of the three.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Case, F, Q, Value, When

from outbox import ratelimit
from outbox.errors import TransportError, backoff_delay

log = logging.getLogger(__name__)

PENDING, SENDING, SENT, FAILED = "pending", "sending", "sent", "failed"


def _always(now: dt.datetime) -> Q:
    return Q()


@dataclass(frozen=True)
class Wait:
    """A send that may not post yet: its rows wait, pending, nothing claimed.

    ``until``: the second reserved for it (epoch seconds; queue the send again for it),
    or None when no second within ``OUTBOX_SLACK_MAX_WAIT_SECONDS`` had room (the rows
    wait in the ledger, ``next_attempt_at``, for a later sweep)."""

    until: float | None


@dataclass(frozen=True)
class Ledger:
    """One ledger's table as the machinery sees it.

    ``due``: a further condition a pending row must meet to be claimed at ``now``
    (reminders: its time has come, ``due_at <= now``). ``queued_field``: the row's
    "queued at" field, if it has one, cleared when a row goes back to pending.
    """

    model: type[models.Model]
    name: str
    due: Callable[[dt.datetime], Q] = field(default=_always)
    queued_field: str | None = None

    # --------------------------------------------------------------- the claim

    def claimable(self, now: dt.datetime) -> Q:
        """Rows a send may take at ``now``: pending, their time come and no retry
        waiting, or left in ``sending`` past the lease with attempts left."""
        ready = Q(state=PENDING) & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now)) & self.due(now)
        lease_over = Q(
            state=SENDING,
            claimed_at__lt=now - dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS),
            attempts__lt=settings.OUTBOX_MAX_ATTEMPTS,
        )
        return ready | lease_over

    def claim(self, ids: Iterable[int], *, now: dt.datetime) -> list[int]:
        """Take rows for sending: the ids claimed, each for exactly one caller however
        many try. One row: one conditional UPDATE that must change exactly one row.
        Several (one message for them all): locked in id order (no deadlock between two
        claimers), re-checked and moved to ``sending`` in one transaction; a row
        cancelled, sent or not yet due meanwhile is left out."""
        ids = sorted(ids)
        claiming = {"state": SENDING, "claimed_at": now, "attempts": F("attempts") + 1, "updated_at": now}
        if len(ids) == 1:
            changed = self.model.objects.filter(self.claimable(now), pk=ids[0]).update(**claiming)
            return ids if changed == 1 else []
        due = self.model.objects.filter(self.claimable(now), pk__in=ids).order_by("pk")
        with transaction.atomic():
            locked = list(due.select_for_update().values_list("pk", flat=True))
            if not locked:
                return []
            due.filter(pk__in=locked).update(**claiming)
            # (Without row locks, as on SQLite, the conditional UPDATE alone decides.)
            return list(self.held(locked, now=now).order_by("pk").values_list("pk", flat=True))

    def held(self, ids: Iterable[int], *, now: dt.datetime) -> models.QuerySet:
        """The rows of ``ids`` the send that claimed them at ``now`` still holds."""
        return self.model.objects.filter(pk__in=list(ids), state=SENDING, claimed_at=now)

    def give_back(self, ids: Iterable[int], *, now: dt.datetime) -> int:
        """Release held rows unsent (pending again, the claim's attempt given back): the
        rest of a message split in parts, before it takes its own turn."""
        return self.held(ids, now=now).update(state=PENDING, attempts=F("attempts") - 1, updated_at=now)

    # ---------------------------------------------------------------- the turn

    def wait_for_turn(self, target: str, ids: Iterable[int], *, slot: float | None, now: dt.datetime) -> Wait | None:
        """None when a post to ``target`` may go now; otherwise a :class:`Wait`, the
        pending rows of ``ids`` marked for it (queued for the reserved second, or left
        to a later sweep). ``slot``: the second reserved earlier for this send."""
        clock = time.time()
        reserved = ratelimit.turn(target, slot=slot, now=clock)
        if reserved is not None and reserved <= clock:
            return None
        waiting = self.model.objects.filter(pk__in=list(ids), state=PENDING)
        if reserved is None:
            wait = dt.timedelta(seconds=settings.OUTBOX_SLACK_MAX_WAIT_SECONDS)
            waiting.update(next_attempt_at=now + wait, updated_at=now, **self._unqueued())
        else:
            waiting.update(updated_at=now, **({self.queued_field: now} if self.queued_field else {}))
        return Wait(until=reserved)

    # ------------------------------------------------------------ the outcomes

    def record_sent(self, ids: Iterable[int], *, now: dt.datetime, sent_at: dt.datetime | None = None) -> int:
        """The transport accepted the message of held rows ``ids``: one UPDATE, every row
        of the message sent or (had it failed) none."""
        return self.held(ids, now=now).update(
            state=SENT, sent_at=sent_at or now, last_error="", next_attempt_at=None, updated_at=now
        )

    def record_failure(
        self,
        rows: list[Any],
        exc: TransportError,
        *,
        now: dt.datetime,
        target: str | None = None,
        service: str = "Slack",
    ) -> str:
        """What a failed send of held ``rows`` (one message; each with ``pk`` and the
        ``attempts`` its claim counted) does to them; returns ``"rate-limited"``,
        ``"retry"`` or ``"failed"``. The rows move together: one next attempt time.

        The 429 rule comes first (see the module docstring): a rate-limited answer is
        never a failed attempt, so it cannot fail a row, however often it comes.
        ``target``: the rate-limit key the rows posted to (held for every worker);
        ``service``: who answered, for the row's ``last_error``."""
        if exc.rate_limited:
            return self.record_rate_limited(rows, exc, now=now, target=target, service=service)
        error = str(exc)[:2000]
        ids = [row.pk for row in rows]
        log.warning("%s rows %s: %s", self.name, ids, error)
        if exc.permanent:
            self.held(ids, now=now).update(state=FAILED, last_error=error, next_attempt_at=None, updated_at=now)
            return "failed"
        limit = settings.OUTBOX_MAX_ATTEMPTS
        used_up = [row for row in rows if row.attempts >= limit]
        for attempts in sorted({row.attempts for row in used_up}):
            self.held([row.pk for row in used_up if row.attempts == attempts], now=now).update(
                state=FAILED,
                last_error=f"Gave up after {attempts} attempts: {error}"[:2000],
                next_attempt_at=None,
                updated_at=now,
            )
        retrying = [row for row in rows if row.attempts < limit]
        if not retrying:
            return "failed"
        delay = backoff_delay(
            max(row.attempts for row in retrying) - 1,
            base=settings.OUTBOX_RETRY_BASE_SECONDS,
            cap=settings.OUTBOX_RETRY_MAX_SECONDS,
            retry_after=exc.retry_after,
        )
        self.held([row.pk for row in retrying], now=now).update(
            state=PENDING,
            last_error=error,
            next_attempt_at=now + dt.timedelta(seconds=delay),
            updated_at=now,
            **self._unqueued(),
        )
        return "retry"

    def record_rate_limited(
        self, rows: list[Any], exc: TransportError, *, now: dt.datetime, target: str | None, service: str = "Slack"
    ) -> str:
        """The 429 rule: the rows wait, pending, until Retry-After has passed, and a
        later sweep sends them. Not a failed attempt (the claim's count is given back),
        no worker sleeps through it, and the target's next seconds are marked full."""
        wait = exc.retry_after if exc.retry_after is not None else 1.0
        if target is not None:
            ratelimit.hold(target, wait)
        self.held([row.pk for row in rows], now=now).update(
            state=PENDING,
            attempts=F("attempts") - 1,
            last_error=f"Rate limited by {service} ({exc.status or 429}): not before {wait:g} s later"[:2000],
            next_attempt_at=now + dt.timedelta(seconds=wait),
            updated_at=now,
            **self._unqueued(),
        )
        return "rate-limited"

    # --------------------------------------------------------------- the lease

    def reclaim_expired(self, *, now: dt.datetime) -> int:
        """Rows left in ``sending`` past the lease (a worker died mid-send) go back to
        pending, or fail once their attempts are used up: one conditional UPDATE that
        re-checks the state, so a row a worker has just finished is left alone."""
        limit = settings.OUTBOX_MAX_ATTEMPTS
        used_up = Q(attempts__gte=limit)
        gave_up = f"Gave up: the sending worker was lost {limit} times"
        lost = "Lease expired while sending (worker lost?); reclaimed. It may have been sent once already."
        return self.model.objects.filter(
            state=SENDING, claimed_at__lt=now - dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS)
        ).update(
            state=Case(When(used_up, then=Value(FAILED)), default=Value(PENDING)),
            last_error=Case(When(used_up, then=Value(gave_up)), default=Value(lost)),
            next_attempt_at=None,
            updated_at=now,
            **self._unqueued(),
        )

    def _unqueued(self) -> dict[str, None]:
        return {self.queued_field: None} if self.queued_field else {}
