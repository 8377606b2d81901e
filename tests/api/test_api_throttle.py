"""Throttling: a clear 429 in the error shape, counted in the shared cache (Redis)."""

from __future__ import annotations

import os

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.support.paths import EXCEPTION_EMAILS

REQUEST_EMAIL = (EXCEPTION_EMAILS / "example-code-freeze.txt").read_text()

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


def _anon_reads(client: APIClient, count: int, **headers) -> list[int]:
    return [client.get("/api/v1/releases/", **headers).status_code for _ in range(count)]


def test_a_new_x_forwarded_for_per_request_does_not_escape_the_limit(tight_limits, db):
    # NUM_PROXIES=0 (the default): the header is the client's own words, not counted.
    client = APIClient()
    codes = [client.get("/api/v1/releases/", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code for n in range(4)]
    assert codes == [200, 200, 200, 429]


def test_behind_one_proxy_the_address_it_saw_is_counted(tight_limits, db):
    tight_limits.REST_FRAMEWORK = {**tight_limits.REST_FRAMEWORK, "NUM_PROXIES": 1}
    cache.delete_many([f"throttle_{scope}_203.0.113.{n}" for scope in ("anon", "user") for n in (7, 8)])
    client = APIClient()
    # The client writes anything on the left; our proxy appends the address it saw.
    spoofed = [f"10.0.0.{n}, 203.0.113.7" for n in range(4)]
    assert [client.get("/api/v1/releases/", HTTP_X_FORWARDED_FOR=h).status_code for h in spoofed] == [
        200,
        200,
        200,
        429,
    ]
    # Another client behind the same proxy has its own counter.
    assert client.get("/api/v1/releases/", HTTP_X_FORWARDED_FOR="203.0.113.8").status_code == 200
    cache.delete_many([f"throttle_{scope}_203.0.113.{n}" for scope in ("anon", "user") for n in (7, 8)])


def test_the_anonymous_parse_endpoint_has_its_own_tighter_limit(settings, db):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "100/min", "user": "100/min", "parse": "2/min"},
    }
    cache.delete_many([*COUNTERS, "throttle_parse_127.0.0.1"])
    client = APIClient()
    codes = [
        client.post("/api/v1/exceptions/parse/", {"text": REQUEST_EMAIL}, format="json").status_code for _ in range(3)
    ]
    assert codes == [200, 200, 429]
    # Reads are not counted against parse/.
    assert client.get("/api/v1/releases/").status_code == 200
    cache.delete_many([*COUNTERS, "throttle_parse_127.0.0.1"])


def _unreachable_redis_cache(settings, location: str) -> None:
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": location,
            "OPTIONS": {"socket_connect_timeout": 0.3, "socket_timeout": 0.3},
        }
    }


def test_with_redis_refusing_connections_the_api_answers_and_says_so(settings, db, caplog):
    import socket

    # A port held bound and not listening while the requests run: connections to it are
    # refused, and no other process can start listening there meanwhile.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        _unreachable_redis_cache(settings, f"redis://127.0.0.1:{probe.getsockname()[1]}/0")
        client = APIClient()
        with caplog.at_level("WARNING", logger="api.throttles"):
            assert client.get("/api/v1/releases/").status_code == 200
            assert client.post("/api/v1/exceptions/parse/", {"text": REQUEST_EMAIL}, format="json").status_code == 200
    assert any("cache unavailable" in r.getMessage() and "request allowed" in r.getMessage() for r in caplog.records)


def test_a_frozen_redis_costs_a_request_its_socket_timeout_not_a_stall(settings, db, caplog):
    import socket
    import time

    # Accepts connections (the kernel completes them into the backlog) and never answers.
    frozen = socket.socket()
    frozen.bind(("127.0.0.1", 0))
    frozen.listen(16)
    try:
        _unreachable_redis_cache(settings, f"redis://127.0.0.1:{frozen.getsockname()[1]}/0")
        client = APIClient()
        started = time.monotonic()
        with caplog.at_level("WARNING", logger="api.throttles"):
            response = client.get("/api/v1/releases/")
        elapsed = time.monotonic() - started
    finally:
        frozen.close()
    assert response.status_code == 200
    # Two throttles, each gives up after one 0.3 s read timeout: two timeouts logged, no
    # retry. Without the timeout the request would hang for good; the bound only has to
    # tell seconds from forever, with room for a loaded machine.
    timeouts = [r for r in caplog.records if "TimeoutError" in r.getMessage()]
    assert len(timeouts) == 2, [r.getMessage() for r in caplog.records]
    assert elapsed < 15, elapsed
