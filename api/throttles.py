"""Throttles for the API (rates from settings; counters in Django's cache).

Who is counted: DRF's ``get_ident`` with ``NUM_PROXIES`` (settings, from the
environment): 0 (the default) counts the connecting address and ignores
``X-Forwarded-For``, which any client can write; behind N proxies of our own it is
the address the outermost of them saw, the N-th from the right in the header.

When the cache is down (Redis refused, frozen past its socket timeout), throttling
fails open: the request is served and a warning says so. A throttle is a guard against
abuse, not a reason to answer 500 to every API call during a Redis outage.
"""

from __future__ import annotations

import logging

from redis.exceptions import RedisError
from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, ScopedRateThrottle, UserRateThrottle

logger = logging.getLogger(__name__)


class _FromSettingsFailingOpen:
    """DRF freezes THROTTLE_RATES at import; read them per request so settings (and
    test overrides) apply. The counters use Django's default cache: Redis in
    production, shared by every worker."""

    @property
    def THROTTLE_RATES(self):
        return api_settings.DEFAULT_THROTTLE_RATES

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except (RedisError, OSError) as exc:
            logger.warning(
                "throttle %s: cache unavailable (%s), request allowed without counting",
                type(self).__name__,
                type(exc).__name__,
            )
            return True


class AnonThrottle(_FromSettingsFailingOpen, AnonRateThrottle):
    pass


class UserThrottle(_FromSettingsFailingOpen, UserRateThrottle):
    pass


class ScopedThrottle(_FromSettingsFailingOpen, ScopedRateThrottle):
    """For views that cost more than a read (``throttle_scope = "parse"``): counted per
    user, or per client address for anonymous calls, on top of the default throttles."""
