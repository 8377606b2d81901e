"""Cached feeds, keyed by the feed version (pretix's NamespacedCache idea, with the
version kept in the database).

``FeedVersion`` is one row whose value database triggers change inside every
transaction that writes a table a feed shows (feeds/triggers.py). A feed is cached
under a key made of that version, the feed's scope (which feed, with its arguments:
all.ics's date cutoff included) and what else the bytes depend on (the iCal format
version, SITE_HOST, SITE_URL). A write makes every old key unreachable in the same
commit, so a feed is never served stale, whatever the cache went through (flushed,
restarted from its append-only file, down during the write): a cache restored with old
entries holds them under old versions nobody asks for.

Each feed at a version is two entries, so that the request a busy deployment answers
most, the conditional one, never reads the large one:

- the *head* (``FeedHead``, a few dozen bytes): Last-Modified and, per content
  encoding, the strong ETag and length of the body. A conditional request reads only
  this and compares; a 304 costs one indexed query (the version) and one small read.
- one *body* per encoding (``identity`` and ``gzip``, both made when the feed is built,
  so a version is compressed once, not per request; feeds/encoding.py): the bytes as
  sent, after one line naming their own ETag and Last-Modified. The body says which
  ETag it is, so a response never pairs bytes with another build's ETag, even if
  two builds of one version interleave their writes or the cache evicted one entry of
  the pair. An unconditional request reads only the body.

Values go through Django's public cache API (its serializer stores ``bytes`` as
themselves behind a few bytes of pickle framing; the head is a dict of str and int).
When the cache is unreachable, feeds are built from the database and served uncached
(logged); when the version row is missing (a flushed database before ``migrate``),
likewise.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import connections, router

from feeds import ical
from feeds.encoding import IDENTITY
from feeds.metrics import CACHE_LOOKUPS
from feeds.models import FeedVersion
from feeds.triggers import VERSION_TABLE, new_version

logger = logging.getLogger(__name__)

TIMEOUT = 24 * 60 * 60  # a key's content never changes; expiry only frees memory


@dataclass(frozen=True)
class Representation:
    """One encoding of a feed's body: its strong ETag (quoted) and length in bytes."""

    etag: str
    length: int


@dataclass(frozen=True)
class FeedHead:
    """What answers a conditional request, without the body."""

    last_modified: int  # POSIX seconds, for Last-Modified / If-Modified-Since
    representations: dict[str, Representation]  # by content encoding

    def to_cache(self) -> dict:
        return {
            "last_modified": self.last_modified,
            "representations": {name: [r.etag, r.length] for name, r in self.representations.items()},
        }

    @classmethod
    def from_cache(cls, value: object) -> FeedHead | None:
        """The head stored by ``to_cache``, or None for anything else (a foreign value)."""
        try:
            return cls(
                last_modified=int(value["last_modified"]),
                representations={
                    str(name): Representation(etag=str(etag), length=int(length))
                    for name, (etag, length) in value["representations"].items()
                },
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            return None


@dataclass(frozen=True)
class FeedBody:
    """One encoding of a feed's bytes, with the ETag and Last-Modified they were built with."""

    etag: str
    last_modified: int
    body: bytes

    def to_cache(self) -> bytes:
        return f"{self.etag} {self.last_modified}\n".encode() + self.body

    @classmethod
    def from_cache(cls, value: object) -> FeedBody | None:
        if not isinstance(value, bytes):
            return None
        first, newline, body = value.partition(b"\n")
        etag, _, last_modified = first.decode("ascii", "replace").partition(" ")
        if not newline or not etag.startswith('"') or not last_modified.isdigit():
            return None
        return cls(etag=etag, last_modified=int(last_modified), body=body)


def strong_etag(body: bytes) -> str:
    return '"' + hashlib.sha256(body).hexdigest()[:40] + '"'


# Written out: the ORM built and compiled this query on every feed request, ten times
# the cost of running it (611 vs 53 µs of CPU, measured on PostgreSQL).
VERSION_SQL = f'SELECT "version" FROM "{VERSION_TABLE}" WHERE "id" = 1'  # noqa: S608 (constants)


def feed_version() -> str | None:
    """The current version (one query on the primary key), None if the row is missing."""
    with connections[router.db_for_read(FeedVersion)].cursor() as cursor:
        cursor.execute(VERSION_SQL)
        row = cursor.fetchone()
    return row[0] if row is not None else None


def feed_version_bump() -> str:
    """A new version by hand, for writes made with triggers disabled (``manage.py
    feeds_bump``): every cached feed becomes unreachable."""
    version = new_version()
    FeedVersion.objects.update_or_create(pk=1, defaults={"version": version})
    return version


def feed_key(version: str, scope_key: str) -> str:
    """The stem of the cache keys of one feed at one version. Scope keys can be long or
    hold any character (a SIG name, a username hash): they are hashed with the rest."""
    depends = f"{ical.FORMAT_VERSION}|{settings.SITE_HOST}|{settings.SITE_URL}|{scope_key}"
    return f"feed:{version}:{hashlib.sha256(depends.encode()).hexdigest()[:32]}"


def head_key(stem: str) -> str:
    return f"{stem}:head"


def body_key(stem: str, encoding: str = IDENTITY) -> str:
    return f"{stem}:body:{encoding}"


def _get(key: str):
    try:
        return cache.get(key)
    except Exception:  # the cache is down: build from the database
        logger.warning("feed cache unavailable; serving feeds uncached", exc_info=True)
        CACHE_LOOKUPS.labels("unavailable").inc()
        return None


def head_get(stem: str) -> FeedHead | None:
    return FeedHead.from_cache(_get(head_key(stem)))


def body_get(stem: str, encoding: str = IDENTITY) -> FeedBody | None:
    return FeedBody.from_cache(_get(body_key(stem, encoding)))


def feed_store(stem: str, head: FeedHead, bodies: dict[str, FeedBody]) -> None:
    """Store a build: its head and each encoding's body, in one round trip."""
    values = {head_key(stem): head.to_cache()}
    values.update({body_key(stem, encoding): body.to_cache() for encoding, body in bodies.items()})
    try:
        cache.set_many(values, TIMEOUT)
    except Exception:
        logger.warning("feed cache unavailable; feed not cached", exc_info=True)
