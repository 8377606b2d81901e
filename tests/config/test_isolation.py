"""The isolation check itself (tests/support/isolation.py): it notices a flushed
database, a cleared cache and a purged queue, and the session's sentinels are in place
while the suite runs (their survival is asserted after the last test, in conftest)."""

from __future__ import annotations

import os

import pytest
import redis
from django.core.cache import caches

from tests.support import isolation
from tests.support.reminder_workers import purge_broker

pytestmark = pytest.mark.redis


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url.startswith("redis"):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI must set REDIS_URL")
        pytest.skip("needs Redis: set REDIS_URL=redis://127.0.0.1:6379/<n>")
    return url


def test_another_database_is_the_next_number():
    assert isolation.other_database_url("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/1"
    assert isolation.other_database_url("redis://127.0.0.1:6379/11") == "redis://127.0.0.1:6379/12"
    assert isolation.other_database_url("redis://127.0.0.1:6379/15") == "redis://127.0.0.1:6379/0"
    assert isolation.other_database_url("redis://127.0.0.1:6379") == "redis://127.0.0.1:6379/1"


def test_the_session_sentinels_are_planted(redis_url, redis_sentinels):
    assert redis_sentinels is not None
    assert isolation.missing(redis_sentinels) == []


def test_fresh_sentinels_survive_this_test_s_own_cache_writes(redis_url):
    sentinels = isolation.plant(redis_url, tag="selfcheck")
    try:
        caches["default"].set("releasecal-isolation-own-key", 1, timeout=60)
        caches["default"].delete("releasecal-isolation-own-key")
        assert isolation.missing(sentinels) == []
    finally:
        isolation.remove(sentinels)


def test_a_deleted_key_in_the_other_database_is_noticed(redis_url):
    sentinels = isolation.plant(redis_url, tag="selfcheck")
    try:
        client = redis.Redis.from_url(sentinels.other_url)
        client.delete(sentinels.key)
        client.close()
        assert isolation.missing(sentinels) == [f"key {sentinels.key} in another database ({sentinels.other_url})"]
    finally:
        isolation.remove(sentinels)


def test_a_deleted_key_under_another_prefix_is_noticed(redis_url):
    sentinels = isolation.plant(redis_url, tag="selfcheck")
    try:
        client = redis.Redis.from_url(sentinels.url)
        client.delete(sentinels.key)
        client.close()
        gone = isolation.missing(sentinels)
        assert gone == [f"key {sentinels.key} in another prefix in the suite's database ({sentinels.url})"]
    finally:
        isolation.remove(sentinels)


def test_a_purged_queue_is_noticed(redis_url):
    sentinels = isolation.plant(redis_url, tag="selfcheck")
    try:
        purge_broker(sentinels.broker, sentinels.queue)
        assert isolation.missing(sentinels) == [f"the message in queue {sentinels.queue} ({sentinels.broker})"]
    finally:
        isolation.remove(sentinels)


def test_an_xdist_worker_takes_a_cache_prefix_and_queue_of_its_own():
    """Under pytest-xdist (make test: -n 2) each worker has its own test database, whose
    ids and versions repeat the other's: tests/settings.py gives the worker's cache keys
    and Celery queue its name too, in the settings and in what its child processes inherit."""
    import subprocess
    import sys

    from tests.support.paths import ROOT

    script = (
        "import os, django; django.setup(); from django.conf import settings; "
        "print(settings.CACHES['default']['KEY_PREFIX'], settings.CELERY_TASK_DEFAULT_QUEUE, "
        "os.environ['CACHE_KEY_PREFIX'], os.environ['CELERY_QUEUE'])"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "CACHE_KEY_PREFIX": "run-7",
        "CELERY_QUEUE": "queue-7",
    }
    env.pop("RELEASECAL_TEST_XDIST_NAMED", None)  # set when this test itself runs in a worker
    as_worker = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env={**env, "PYTEST_XDIST_WORKER": "gw1"},
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert as_worker.stdout.split() == ["run-7-gw1", "queue-7-gw1", "run-7-gw1", "queue-7-gw1"]
    # A process that worker starts (a Celery worker on a test's own queue) keeps what it is given.
    child = {**env, "PYTEST_XDIST_WORKER": "gw1", "RELEASECAL_TEST_XDIST_NAMED": "gw1", "CELERY_QUEUE": "own-queue"}
    as_child = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=child, capture_output=True, text=True, timeout=60, check=True
    )
    assert as_child.stdout.split() == ["run-7", "own-queue", "run-7", "own-queue"]
    env.pop("PYTEST_XDIST_WORKER", None)
    alone = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    assert alone.stdout.split() == ["run-7", "queue-7", "run-7", "queue-7"]
