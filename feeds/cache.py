"""Cached feeds, keyed by the feed version (pretix's NamespacedCache idea, with the
version kept in the database).

``FeedVersion`` is one row whose value database triggers change inside every
transaction that writes a table a feed shows (feeds/triggers.py). A feed is cached
under a key made of that version, the feed's scope (which feed, with its arguments) and
what else the bytes depend on (the iCal format version, SITE_HOST, SITE_URL). A warm
feed costs one indexed query (the version) and one cache read; a write makes every old
key unreachable in the same commit, so a feed is never served stale, whatever the cache
went through (flushed, restarted from its append-only file, down during the write):
a cache restored with old entries holds them under old versions nobody asks for.

Only Django's public cache API is used. When the cache is unreachable, feeds are built
from the database and served uncached (logged); when the version row is missing (a
flushed database before ``migrate``), likewise.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from feeds import ical
from feeds.metrics import CACHE_LOOKUPS
from feeds.models import FeedVersion
from feeds.triggers import new_version

logger = logging.getLogger(__name__)

TIMEOUT = 24 * 60 * 60  # a key's content never changes; expiry only frees memory


@dataclass(frozen=True)
class FeedEntry:
    body: bytes
    etag: str
    last_modified: int  # POSIX seconds, for Last-Modified / If-Modified-Since
    missing: str = ""  # a 404 message when a subject checked at build time is absent


def feed_version() -> str | None:
    """The current version (one query on the primary key), None if the row is missing."""
    return FeedVersion.objects.filter(pk=1).values_list("version", flat=True).first()


def feed_version_bump() -> str:
    """A new version by hand, for writes made with triggers disabled (``manage.py
    feeds_bump``): every cached feed becomes unreachable."""
    version = new_version()
    FeedVersion.objects.update_or_create(pk=1, defaults={"version": version})
    return version


def feed_key(version: str, scope_key: str) -> str:
    """The cache key of one feed at one version. Scope keys can be long or hold any
    character (a SIG name, a username hash): they are hashed with the rest."""
    depends = f"{ical.FORMAT_VERSION}|{settings.SITE_HOST}|{settings.SITE_URL}|{scope_key}"
    return f"feed:{version}:{hashlib.sha256(depends.encode()).hexdigest()[:32]}"


def cache_get(key: str) -> FeedEntry | None:
    try:
        entry = cache.get(key)
    except Exception:  # the cache is down: build from the database
        logger.warning("feed cache unavailable; serving feeds uncached", exc_info=True)
        CACHE_LOOKUPS.labels("unavailable").inc()
        return None
    found = entry if isinstance(entry, FeedEntry) else None
    CACHE_LOOKUPS.labels("hit" if found else "miss").inc()
    return found


def cache_set(key: str, entry: FeedEntry) -> None:
    try:
        cache.set(key, entry, TIMEOUT)
    except Exception:
        logger.warning("feed cache unavailable; feed not cached", exc_info=True)
