"""The feed *generation*: a value that changes on every write to a table any feed is
built from, so a cached feed is keyed by it and never served stale.

Where the writes are seen: a database execute wrapper, installed on every connection
Django opens (``connection_created``, wired in ``ReleasecalConfig.ready``), looks at
each statement. A write (INSERT, UPDATE, DELETE, TRUNCATE, ...) that names one of the
watched tables bumps the generation right after it runs, and, inside a transaction,
once more when the transaction commits (``on_commit``). Because it sits under the ORM,
it also sees ``QuerySet.update()``, ``bulk_create``/``bulk_update``, queryset deletes,
raw SQL through Django's cursor and data migrations, none of which send model signals.

Why two bumps: a reader reads the generation *before* it reads the database. A reader
that saw the in-transaction bump can only have read the committed (old) rows, and the
commit bump moves every later reader to a new generation; a reader that saw the commit
bump reads the committed (new) rows. The in-transaction bump is what a connection that
reads its own uncommitted writes (tests, a shell session) needs.

Where the generation lives (``_store()``):

- a shared cache (Redis in production): key ``feeds:generation``, an integer started
  at ``time.time_ns()`` and incremented. After a flush it is started again from the
  clock, so it never repeats a value a process may still hold entries for; a process
  that sees it go backwards (a restored snapshot) starts it again from the clock too;
- a process-local cache (locmem, dummy): a file beside the SQLite database (or in
  VAR_DIR, keyed by the database) holding a random value, rewritten atomically on
  every bump, which every process using that database reads;
- an in-memory SQLite database (tests): a value in the process, like the database.

Not seen: writes that bypass Django's connection (``psql`` by hand, another program).
After such a write run ``python manage.py feeds_bump``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import uuid
from functools import lru_cache
from pathlib import Path

from django.conf import settings
from django.core.cache import caches
from django.core.cache.backends.dummy import DummyCache
from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from django.db import connections

logger = logging.getLogger(__name__)

CACHE_KEY = "feeds:generation"
MIN_GENERATION = 10**15  # started from time_ns(): anything smaller was not set by us
_WRITE_WORDS = ("INSERT", "UPDATE", "DELETE", "REPLACE", "TRUNCATE", "WITH", "MERGE", "ALTER", "DROP")


@lru_cache(maxsize=1)
def watched_tables() -> tuple[str, ...]:
    """Every table a feed is built from (feed_selectors.feed_build and ical)."""
    from exceptions.models import Decision, ExceptionRequest, ExceptionRequestRevision, SignOff
    from releasecal.models import Enhancement, EnhancementOwner, Milestone, MilestoneKind, Release, Tracking

    models = [
        Release,
        Release.leads.through,
        Milestone,
        MilestoneKind,
        Enhancement,
        EnhancementOwner,
        Tracking,
        ExceptionRequest,
        ExceptionRequestRevision,
        SignOff,
        Decision,
    ]
    return tuple(sorted({model._meta.db_table.lower() for model in models}))


def writes_feed_data(sql: str) -> bool:
    """Whether a statement may change a watched table (false positives only cost a
    rebuild: a write naming a watched table in a subquery bumps too)."""
    if not sql.lstrip()[:8].upper().startswith(_WRITE_WORDS):
        return False
    lowered = sql.lower()
    return any(table in lowered for table in watched_tables())


# ------------------------------------------------------------------------ stores


_local = threading.local()  # .held: this thread's _Held


class _Held:
    """A Redis connection kept by one thread of one process for the generation GET,
    and the request (WSGI environ) a GET already sent is for, if any."""

    def __init__(self, cache) -> None:
        backend = cache._cache  # Django's RedisCacheClient: its pool (URL, db, auth)
        self.cache = cache
        self.pid = os.getpid()
        self.connection = backend._get_connection_pool(False).make_connection()
        self.command = self.connection.pack_command("GET", cache.make_and_validate_key(CACHE_KEY))
        self.pending: dict | None = None  # environ of the request whose GET is in flight
        self.in_flight = False

    def send(self, environ: dict) -> None:
        self.drain()  # a reply nobody read would be older than this request
        self.connection.send_packed_command(self.command)
        self.in_flight, self.pending = True, environ

    def drain(self) -> None:
        if self.in_flight:
            self.in_flight, self.pending = False, None
            self.connection.read_response()

    def reply_for(self, environ: dict | None):
        """The value for this request: the prefetched reply if it was sent for this
        very request (so after it arrived), else a fresh round trip."""
        if self.in_flight and environ is not None and self.pending is environ:
            self.in_flight, self.pending = False, None
            return self.connection.read_response()
        self.drain()
        self.connection.send_packed_command(self.command)
        return self.connection.read_response()


class _CacheStore:
    """The generation in the shared cache: one GET per read."""

    max_seen: dict[tuple, int] = {}  # per cache (servers, key): the highest value seen
    lock = threading.Lock()

    def __init__(self, cache) -> None:
        self.cache = cache

    def identity(self) -> tuple:
        return (*getattr(self.cache, "_servers", ()), self.cache.make_key(CACHE_KEY))

    def seen(self) -> int:
        return _CacheStore.max_seen.get(self.identity(), 0)

    def read(self, environ: dict | None = None) -> str:
        value = self.get(environ)
        if not isinstance(value, int) or value < MIN_GENERATION or value < self.seen():
            # Flushed, never set, or older than one this process saw: start afresh.
            self.bump(restart=True)
            value = self.get()
        with _CacheStore.lock:
            if value > self.seen():
                _CacheStore.max_seen[self.identity()] = value
        return str(value)

    def _held(self) -> _Held:
        held = getattr(_local, "held", None)
        if held is None or held.cache is not self.cache or held.pid != os.getpid():
            if held is not None and held.pid == os.getpid():
                held.connection.disconnect()
            held = _local.held = _Held(self.cache)
        return held

    def get(self, environ: dict | None = None) -> int | None:
        """The stored value. On Django's Redis backend: a GET, packed once, on a
        connection this process (thread) keeps. ``cache.get`` builds a redis-py client
        and goes through the pool and retry layers on every call: ~80 µs of Python
        on top of a ~40 µs round trip, on the path every warm request takes. When
        ``prefetch`` already sent the GET for this very request (``environ``), only
        its reply is read: the round trip overlapped Django's request set-up."""
        if not isinstance(self.cache, RedisCache):
            value = self.cache.get(CACHE_KEY)
            return value if isinstance(value, int) else None
        held = self._held()
        try:
            raw = held.reply_for(environ)
        except Exception:
            held.connection.disconnect()
            _local.held = None
            raise
        try:
            return None if raw is None else int(raw)  # Django stores an int as its digits
        except (TypeError, ValueError):
            return None

    def prefetch(self, environ: dict) -> None:
        if isinstance(self.cache, RedisCache):
            held = self._held()
            try:
                held.send(environ)
            except Exception:
                held.connection.disconnect()
                _local.held = None
                raise

    def bump(self, *, restart: bool = False) -> None:
        fresh = max(time.time_ns(), self.seen() + 1)
        if restart:
            value = self.get()
            if not isinstance(value, int) or value < MIN_GENERATION or value < self.seen():
                self.cache.set(CACHE_KEY, fresh, timeout=None)
                return
        try:
            value = self.cache.incr(CACHE_KEY)
        except ValueError:  # absent (flushed): start from the clock
            if self.cache.add(CACHE_KEY, fresh, timeout=None):
                return
            value = self.cache.incr(CACHE_KEY)
        if value < MIN_GENERATION:  # created by a flush racing the increment
            self.cache.set(CACHE_KEY, fresh, timeout=None)


class _FileStore:
    """The generation in a small file shared by every process using the database."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self, environ: dict | None = None) -> str:
        try:
            return self.path.read_text()
        except FileNotFoundError:
            self.bump()
            return self.path.read_text()

    def bump(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        temporary.write_text(uuid.uuid4().hex)
        os.replace(temporary, self.path)  # atomic: readers see the old or the new value


class _MemoryStore:
    """For an in-memory database, which only this process can see anyway."""

    value = uuid.uuid4().hex

    def read(self, environ: dict | None = None) -> str:
        return _MemoryStore.value

    def bump(self) -> None:
        _MemoryStore.value = uuid.uuid4().hex


@lru_cache(maxsize=16)
def _file_store(vendor: str, host: str, port: str, name: str) -> _FileStore:
    if vendor == "sqlite":
        return _FileStore(Path(f"{name}.feeds-generation"))
    digest = hashlib.sha256(f"{vendor}|{host}|{port}|{name}".encode()).hexdigest()[:16]
    return _FileStore(Path(settings.VAR_DIR) / f"feeds-generation-{digest}")


def _store():
    cache = caches["default"]
    if not isinstance(cache, LocMemCache | DummyCache):
        return _CacheStore(cache)
    connection = connections["default"]
    if connection.vendor == "sqlite" and connection.is_in_memory_db():
        return _MemoryStore()
    database = connection.settings_dict
    return _file_store(
        connection.vendor, str(database.get("HOST") or ""), str(database.get("PORT") or ""), str(database["NAME"])
    )


# ----------------------------------------------------------------------- public

_pending = threading.Event()  # a bump failed (cache down): retried before the next read


def feed_generation_current(environ: dict | None = None) -> str | None:
    """The current generation, or None when the store cannot be read (then the
    caller must build the feed from the database and not cache it). ``environ``: the
    request being served, whose prefetched GET may be read."""
    try:
        if _pending.is_set():
            feed_generation_bump()
            _pending.clear()
        return _store().read(environ)
    except Exception:  # the cache is down: serve fresh, uncached
        logger.warning("feed generation unavailable; serving feeds uncached", exc_info=True)
        return None


def feed_generation_bump() -> None:
    """Change the generation: every cached feed becomes unreachable."""
    _store().bump()


def on_request_started(sender, environ=None, **kwargs) -> None:
    """Send the generation GET as soon as a /calendar/ request arrives (WSGI): its
    reply travels while Django builds the request and runs the middleware."""
    if environ is None or not environ.get("PATH_INFO", "").startswith("/calendar/"):
        return
    store = _store()
    if isinstance(store, _CacheStore):
        try:
            store.prefetch(environ)
        except Exception:
            logger.warning("feed generation prefetch failed", exc_info=True)


def on_request_finished(sender, **kwargs) -> None:
    """Read a prefetched reply no view asked for (a 404, an error), so it never stays
    queued on the connection."""
    held = getattr(_local, "held", None)
    if held is not None and held.in_flight:
        try:
            held.drain()
        except Exception:
            logger.warning("feed generation prefetch reply lost; reconnecting", exc_info=True)
            held.connection.disconnect()
            _local.held = None


def _bump_after_commit() -> None:
    try:
        feed_generation_bump()
    except Exception:
        _pending.set()
        logger.exception("feed generation bump after commit failed; retried on the next feed request")


def _execute(execute, sql, params, many, context):
    result = execute(sql, params, many, context)
    if isinstance(sql, str) and writes_feed_data(sql):
        connection = context["connection"]
        try:
            feed_generation_bump()
        except Exception:
            _pending.set()
            logger.exception("feed generation bump failed; retried on the next feed request")
        if connection.in_atomic_block and not any(
            func is _bump_after_commit for _, func, _ in connection.run_on_commit
        ):
            connection.on_commit(_bump_after_commit)
    return result


def install(connection) -> None:
    """Watch the writes of one database connection (idempotent)."""
    if _execute not in connection.execute_wrappers:
        connection.execute_wrappers.append(_execute)


def on_connection_created(sender, connection, **kwargs) -> None:
    install(connection)


def connect() -> None:
    """Called from ReleasecalConfig.ready: watch every connection, present and future."""
    from django.core.signals import request_finished, request_started
    from django.db.backends.signals import connection_created

    connection_created.connect(on_connection_created, dispatch_uid="feeds.cache")
    request_started.connect(on_request_started, dispatch_uid="feeds.cache.prefetch")
    request_finished.connect(on_request_finished, dispatch_uid="feeds.cache.drain")
    for connection in connections.all(initialized_only=True):
        install(connection)
