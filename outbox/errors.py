"""What a transport tells the outbox when a message did not go: one error class, and the
two readings every transport shares (how long to back off, how long the server said to
wait).

A transport (the Slack client, email, a GitHub client) raises :class:`TransportError`
and says what kind of failure it was; the ledger's machinery (``outbox.ledger``) decides
what that does to the row. A transport never decides whether a row is retried.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from collections.abc import Mapping


class TransportError(Exception):
    """A message could not be delivered.

    ``permanent``: retrying cannot fix it (the row fails at once).
    ``disable_channel``: the channel's configuration is wrong, not this message (a
    ledger with channels marks the channel failing; implies ``permanent``).
    ``rate_limited``: the server refused for a rate limit (Slack's 429, GitHub's 429 or
    rate-limit 403): not a failed attempt (the 429 rule, ``outbox.ledger.Ledger.record_failure``).
    ``status``: what the server answered (GitHub's secondary limit is a 403, its GraphQL
    limit a 200 with RATE_LIMITED), shown in the row's error; None: 429.
    ``retry_after``: seconds the server said to wait (``Retry-After``, or GitHub's
    ``x-ratelimit-reset``), honoured by the row's next attempt and the target's turn.
    """

    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        disable_channel: bool = False,
        retry_after: float | None = None,
        rate_limited: bool = False,
        status: int | str | None = None,
    ):
        super().__init__(message)
        self.message = message
        self.permanent = permanent or disable_channel
        self.disable_channel = disable_channel
        self.retry_after = retry_after
        self.rate_limited = rate_limited
        self.status = status

    def __str__(self) -> str:
        return self.message


def backoff_delay(attempt: int, *, base: float, cap: float, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter, never less than the server's Retry-After.

    ``attempt`` counts from 0: with ``ceiling = min(cap, base * 2**attempt)`` the delay
    is drawn from [ceiling/2, ceiling] ("equal jitter": it still grows exponentially,
    and retries from many workers spread out instead of arriving together).
    """
    ceiling = min(cap, base * (2**attempt))
    delay = random.uniform(ceiling / 2, ceiling)  # noqa: S311 (jitter, not cryptography)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def retry_after(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds the server asked us to wait, from an answer's headers; None when it said
    nothing usable. ``now``: the epoch seconds the answer arrived.

    ``Retry-After`` as delay-seconds (Slack, GitHub) or an HTTP-date (RFC 9110); else,
    when the quota is spent (``x-ratelimit-remaining: 0``), GitHub's
    ``x-ratelimit-reset`` (the epoch second the quota comes back). Never negative.
    """
    lowered = {str(name).lower(): str(value).strip() for name, value in headers.items()}
    value = lowered.get("retry-after", "")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            when = None
        if when is not None:
            if when.tzinfo is None:  # an HTTP-date is GMT
                when = when.replace(tzinfo=dt.UTC)
            return max(0.0, when.timestamp() - now)
    if lowered.get("x-ratelimit-remaining") == "0":
        try:
            return max(0.0, float(lowered["x-ratelimit-reset"]) - now)
        except (KeyError, ValueError):
            return None
    return None
