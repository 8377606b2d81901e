"""Throttles for the API (rates from settings; counters in Django's cache)."""

from __future__ import annotations

from rest_framework.settings import api_settings
from rest_framework.throttling import AnonRateThrottle, UserRateThrottle


class _RatesFromSettings:
    """DRF freezes THROTTLE_RATES at import; read them per request so settings (and
    test overrides) apply. The counters use Django's default cache: Redis in
    production, shared by every worker."""

    @property
    def THROTTLE_RATES(self):
        return api_settings.DEFAULT_THROTTLE_RATES


class AnonThrottle(_RatesFromSettings, AnonRateThrottle):
    pass


class UserThrottle(_RatesFromSettings, UserRateThrottle):
    pass
