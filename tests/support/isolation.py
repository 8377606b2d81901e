"""Proof that the suite leaves other consumers of Redis alone.

Before the first test, sentinels are planted where nothing in the suite may reach: a key
in another Redis database, a key under another prefix in the suite's own database (what
a ``FLUSHDB`` or a ``cache.clear()`` would take), and a Celery message in a queue that
is not the run's. After the last test every one must still be there (tests/conftest.py
fails the session otherwise). Locally the suite may share Redis with other people's
runs; the keys expire after a day, so a crashed session leaves nothing for long.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import redis

from tests.support.reminder_workers import purge_broker, queue_length

SENTINEL_TTL = 24 * 3600


def other_database_url(url: str) -> str:
    """The same server, the next database number (wrapping at Redis's default 16)."""
    parts = urlsplit(url)
    current = int(parts.path.strip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{(current + 1) % 16}"))


@dataclass
class Sentinels:
    url: str  # the suite's Redis database (REDIS_URL: the cache)
    other_url: str  # another database on the same server
    broker: str  # the suite's broker (CELERY_BROKER_URL, else REDIS_URL)
    key: str
    value: str
    queue: str  # a Celery queue no worker of the suite consumes


def plant(url: str, *, tag: str = "session") -> Sentinels:
    from config.celery import app

    token = uuid.uuid4().hex[:12]
    sentinels = Sentinels(
        url=url,
        other_url=other_database_url(url),
        broker=app.conf.broker_url,
        key=f"releasecal-isolation-sentinel:{tag}:{token}",
        value=token,
        queue=f"releasecal-isolation-sentinel-{tag}-{token}",
    )
    for target in (sentinels.url, sentinels.other_url):
        client = redis.Redis.from_url(target)
        try:
            client.set(sentinels.key, sentinels.value, ex=SENTINEL_TTL)
        finally:
            client.close()
    # Published as the suite's code publishes (declaring the queue and its binding).
    app.send_task("releasecal.isolation-sentinel", args=[token], queue=sentinels.queue)
    return sentinels


def missing(sentinels: Sentinels) -> list[str]:
    """What is gone: an empty list when every sentinel survived."""
    gone = []
    places = (("another prefix in the suite's database", sentinels.url), ("another database", sentinels.other_url))
    for what, target in places:
        client = redis.Redis.from_url(target)
        try:
            if client.get(sentinels.key) != sentinels.value.encode():
                gone.append(f"key {sentinels.key} in {what} ({target})")
        finally:
            client.close()
    if queue_length(sentinels.broker, sentinels.queue) != 1:
        gone.append(f"the message in queue {sentinels.queue} ({sentinels.broker})")
    return gone


def remove(sentinels: Sentinels) -> None:
    for target in (sentinels.url, sentinels.other_url):
        client = redis.Redis.from_url(target)
        try:
            client.delete(sentinels.key)
        finally:
            client.close()
    purge_broker(sentinels.broker, sentinels.queue)
