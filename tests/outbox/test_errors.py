"""What every transport shares (``outbox.errors``): the backoff, and how long a server
said to wait, read from the headers Slack and GitHub send."""

from __future__ import annotations

import email.utils

import pytest

from outbox.errors import TransportError, backoff_delay, retry_after

NOW = 1_750_000_000.0


def test_backoff_grows_exponentially_with_jitter_and_stays_under_the_cap():
    for attempt in range(10):
        delay = backoff_delay(attempt, base=1, cap=30)
        ceiling = min(30, 2**attempt)
        assert ceiling / 2 <= delay <= ceiling
    assert backoff_delay(0, base=1, cap=30, retry_after=7) == 7


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "30"}, 30.0),  # Slack's 429, GitHub's secondary limit
        ({"retry-after": " 1.5 "}, 1.5),
        ({"Retry-After": "-4"}, 0.0),
        ({"Retry-After": email.utils.formatdate(NOW + 120, usegmt=True)}, 120.0),  # an HTTP-date
        ({"Retry-After": email.utils.formatdate(NOW - 120, usegmt=True)}, 0.0),
        # GitHub's primary limit: a 403 or 429 with the quota spent, reset at an epoch second.
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 42)}, 42.0),
        ({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) - 5)}, 0.0),
        # Retry-After wins over the reset time when both are sent.
        ({"Retry-After": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(NOW) + 900)}, 60.0),
        # Nothing usable: the quota is not spent, a header is garbled, or absent.
        ({"x-ratelimit-remaining": "12", "x-ratelimit-reset": str(int(NOW) + 900)}, None),
        ({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "soon"}, None),
        ({"x-ratelimit-remaining": "0"}, None),
        ({"Retry-After": "tomorrow"}, None),
        ({}, None),
    ],
)
def test_how_long_the_server_said_to_wait(headers, expected):
    assert retry_after(headers, now=NOW) == expected


def test_a_channel_error_is_permanent_and_a_rate_limit_is_not():
    assert TransportError("Slack: invalid_auth", disable_channel=True).permanent
    limited = TransportError("Rate limited by Slack (429)", retry_after=3, rate_limited=True)
    assert (limited.permanent, limited.rate_limited, limited.retry_after, str(limited)) == (
        False, True, 3, "Rate limited by Slack (429)",
    )  # fmt: skip
