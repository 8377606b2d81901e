"""The rate-limit turn: Slack's posting limit, shared by every worker (and every
ledger) through Django's cache. ``outbox.ledger.Ledger.wait_for_turn`` takes a turn
for a ledger's rows; a ledger names its rows' target (``conversation_key``, or its own
key such as a webhook's hash).

Slack accepts about one message per second per channel and answers 429 beyond it. Each
post to a Slack target (a channel id, a DM's user id, a webhook URL) takes a slot: a
one-second window of wall-clock time with room for ``OUTBOX_SLACK_CHANNEL_RATE``
messages. A slot is taken with ``cache.add`` + ``cache.incr`` (public cache API: atomic
on Redis, so every worker process shares one count per window and target). The sweep
reserves each Slack post's second when it queues it, with a countdown to that second:
the task posts in it without reserving again, and the sends of one channel go out one
per second. (A send queued without a second, or woken after it with the current one
taken, reserves the first later second with room and is queued again.)

After a 429 the windows of its ``Retry-After`` are marked full, so no worker posts to
that target before Slack said it may. A cache that does not answer lets the post through
(fail open): Slack's own 429 and the ledger then still hold the line.
"""

from __future__ import annotations

import logging
import math
import time

from django.conf import settings
from django.core.cache import cache

log = logging.getLogger(__name__)

PREFIX = "outbox:slack-rate"


def conversation_key(conversation: str) -> str:
    """The key of a post by the bot to a Slack conversation (a channel id, or a user id
    for a DM): every ledger posting to one conversation shares its limit."""
    return f"chan:{conversation}"


def _window_key(key: str, window: int) -> str:
    return f"{PREFIX}:{key}:{window}"


def _take(name: str, rate: int, timeout: int) -> bool:
    """One message more in this window, if it has room."""
    if rate == 1:
        return cache.add(name, 1, timeout)  # one round trip: the window is free or it is not
    cache.add(name, 0, timeout)
    try:
        return cache.incr(name) <= rate
    except ValueError:  # expired between add and incr: its window is over
        return False


def reserve(key: str, *, now: float | None = None) -> float | None:
    """Reserve one message to ``key`` in the first one-second window, from the current
    one on, that has room; return its start (epoch seconds). None when no window within
    ``OUTBOX_SLACK_MAX_WAIT_SECONDS`` has room (the caller leaves the wait to the
    ledger). With the limit off (rate 0), or the cache down, the current second.

    A hint (the window after the last one reserved; the windows before it are full while
    it lives) lets a burst of sends to one channel start where the previous reservation
    ended instead of probing every full second; the count in each window decides."""
    now = time.time() if now is None else now
    rate = settings.OUTBOX_SLACK_CHANNEL_RATE
    first = math.floor(now)
    if rate <= 0:
        return float(first)
    horizon = settings.OUTBOX_SLACK_MAX_WAIT_SECONDS
    hint_name = f"{PREFIX}:{key}:next"
    try:
        hint = cache.get(hint_name)
        start = hint if isinstance(hint, int) and hint > first else first
        for window in range(start, first + horizon + 1):
            # Whole seconds: the key outlives its window, then goes.
            if _take(_window_key(key, window), rate, window - first + 2):
                cache.set(hint_name, window + 1 if rate == 1 else window, window - first + 2)
                return float(window)
    except Exception:  # the cache is down: fail open (Slack's 429 and the ledger still hold)
        log.warning("rate limit cache unavailable; posting to %s unthrottled", key, exc_info=True)
        return float(first)
    return None


def take_now(key: str, *, now: float | None = None) -> bool:
    """Take the current second for one message to ``key`` if it has room (a send that
    missed the second it reserved, rather than queue up behind every reservation)."""
    now = time.time() if now is None else now
    rate = settings.OUTBOX_SLACK_CHANNEL_RATE
    if rate <= 0:
        return True
    try:
        return _take(_window_key(key, math.floor(now)), rate, 2)
    except Exception:
        log.warning("rate limit cache unavailable; posting to %s unthrottled", key, exc_info=True)
        return True


def turn(key: str, *, slot: float | None = None, now: float | None = None) -> float | None:
    """The second a post to ``key`` goes in (epoch seconds): at or before ``now``, post
    now; later, wait for it; None when no second within OUTBOX_SLACK_MAX_WAIT_SECONDS
    has room (the caller leaves the row to a later sweep).

    ``slot`` is a second reserved earlier for this post: kept while it has not passed
    (woken early, wait on for it). A post woken after its second takes the current one if
    it has room, rather than queue behind every reservation made since; otherwise it
    reserves again."""
    now = time.time() if now is None else now
    if slot is not None:
        if now < slot + 1:
            return slot
        if take_now(key, now=now):
            return float(math.floor(now))
    return reserve(key, now=now)


def hold(key: str, seconds: float, *, now: float | None = None) -> None:
    """Slack answered 429 with ``Retry-After: seconds``: mark the windows until then full."""
    now = time.time() if now is None else now
    rate = settings.OUTBOX_SLACK_CHANNEL_RATE
    if rate <= 0 or seconds <= 0:
        return
    first = math.floor(now)
    last = math.ceil(now + min(seconds, settings.OUTBOX_SLACK_MAX_WAIT_SECONDS))
    try:
        for window in range(first, last):
            cache.set(_window_key(key, window), rate, window - first + 2)
    except Exception:
        log.warning("rate limit cache unavailable; cannot hold %s", key, exc_info=True)
