"""Throttling: a clear 429 in the error shape, counted in the shared cache (Redis)."""

from __future__ import annotations

import os

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

# DRF's keys for anonymous requests from the test client: the user throttle counts
# anonymous requests by address too.
COUNTERS = ["throttle_anon_127.0.0.1", "throttle_user_127.0.0.1"]


@pytest.fixture
def tight_limits(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "3/min", "user": "5/min"},
    }
    # Only this test's counter: the cache may be a Redis shared with other tests.
    cache.delete_many(COUNTERS)
    yield settings
    cache.delete_many(COUNTERS)


def test_the_fourth_anonymous_read_in_a_minute_is_a_429(tight_limits, db):
    client = APIClient()
    assert [client.get("/api/v1/releases/").status_code for _ in range(3)] == [200, 200, 200]
    throttled = client.get("/api/v1/releases/")
    assert throttled.status_code == 429
    assert throttled.json()["message"].startswith("Request was throttled.")
    assert throttled.json()["extra"]["retry_after_seconds"] > 0
    assert int(throttled["Retry-After"]) > 0


@pytest.mark.redis
def test_the_counters_live_in_redis_where_every_worker_sees_them(tight_limits, db):
    url = os.environ.get("REDIS_URL")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("REDIS_URL is required in CI")
        pytest.skip("needs Redis: set REDIS_URL=redis://127.0.0.1:6379/<n>")
    import redis

    client = APIClient()
    client.get("/api/v1/releases/")
    # A separate connection, as another gunicorn worker would have, sees the counter.
    keys = [key.decode() for key in redis.Redis.from_url(url).scan_iter("*throttle_anon_*")]
    assert keys, "no throttle counter in Redis"
