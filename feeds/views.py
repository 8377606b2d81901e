"""The iCal feed views: parse the URL, resolve the scope, serve bytes with HTTP caching.

Caching never serves a stale feed: the cache key holds the feed *generation*
(``feed_generation``), which every write to a table a feed is built from changes, in
the transaction and again at commit. A warm request reads the generation (one Redis
GET; no database query) and finds the bytes under ``feed:<scope>:<generation>``. A
key's content never changes, which makes two levels safe: a small per-process LRU (no
second round trip on a hit) in front of Django's cache (Redis in production, shared by
every web replica).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse, HttpResponseNotFound
from django.urls import Resolver404, resolve
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.http import require_safe

from feeds import ical
from feeds.cache import feed_generation_current
from feeds.selectors import (
    FeedScope,
    feed_build,
    feed_missing_subject,
    feed_scope_all,
    feed_scope_kep,
    feed_scope_release,
    feed_scope_sig,
    feed_scope_user,
    feed_token_resolve,
    feed_token_touch,
)
from releasecal.errors import NotFound

CONTENT_TYPE = "text/calendar; charset=utf-8"
CACHE_TIMEOUT = 24 * 60 * 60  # a key's content never changes; expiry only frees memory
# Clients and proxies may keep a copy but must revalidate it every time (a cheap 304 on
# the strong ETag): a moved freeze is never served stale from a cache between us and them.
PUBLIC_CACHE_CONTROL = "public, no-cache"
PRIVATE_CACHE_CONTROL = "private, no-cache"
MAX_KEP_NUMBER = 2**31 - 1  # Enhancement.number is a PositiveIntegerField


@dataclass(frozen=True)
class FeedEntry:
    body: bytes
    etag: str
    last_modified: int  # POSIX seconds, for Last-Modified / If-Modified-Since
    missing: str = ""  # a 404 message when a subject checked at build time is absent


class _LocalCache:
    """A bounded, thread-safe LRU of FeedEntry by content-addressed key."""

    def __init__(self) -> None:
        self._data: OrderedDict[str, FeedEntry] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def size() -> int:
        return int(getattr(settings, "FEEDS_LOCAL_CACHE_SIZE", 32))

    def get(self, key: str) -> FeedEntry | None:
        with self._lock:
            entry = self._data.get(key)
            if entry is not None:
                self._data.move_to_end(key)
            return entry

    def put(self, key: str, entry: FeedEntry) -> None:
        size = self.size()
        if size <= 0:
            return
        with self._lock:
            self._data[key] = entry
            self._data.move_to_end(key)
            while len(self._data) > size:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


local_cache = _LocalCache()


def _build(scope: FeedScope) -> FeedEntry:
    missing = feed_missing_subject(scope)
    if missing:
        return FeedEntry(body=b"", etag="", last_modified=0, missing=missing)
    built = feed_build(scope)
    return FeedEntry(
        body=built.body,
        etag='"' + hashlib.sha256(built.body).hexdigest()[:40] + '"',
        last_modified=int(built.last_modified.timestamp()),
    )


@lru_cache(maxsize=8)
def _salt(format_version: str, host: str, site_url: str) -> str:
    """What the bytes depend on besides the data: part of every key."""
    return hashlib.sha256(f"{format_version}|{host}|{site_url}".encode()).hexdigest()[:12]


@lru_cache(maxsize=4096)
def _scope_part(scope_key: str) -> str:
    """The scope in a cache key: as is when short and plain, else its hash (memcached-safe)."""
    if len(scope_key) <= 120 and scope_key.isascii() and scope_key.isprintable() and " " not in scope_key:
        return scope_key
    return "sha256-" + hashlib.sha256(scope_key.encode()).hexdigest()[:32]


def _entry(scope: FeedScope, environ: dict) -> FeedEntry:
    generation = feed_generation_current(environ)
    if generation is None:  # the cache is unreachable: build from the database, uncached
        return _build(scope)
    salt = _salt(ical.FORMAT_VERSION, settings.SITE_HOST, settings.SITE_URL)
    key = f"releasecal:feed:{_scope_part(scope.key)}:{salt}:{generation}"
    entry = local_cache.get(key)
    if entry is not None:
        return entry
    entry = cache.get(key)
    if not isinstance(entry, FeedEntry):
        entry = _build(scope)
        if entry.missing:  # 404s are not cached: any URL would make a key
            return entry
        cache.set(key, entry, CACHE_TIMEOUT)
    local_cache.put(key, entry)
    return entry


def _not_found(message: str, *, quiet: bool = False) -> HttpResponse:
    response = HttpResponseNotFound(message + "\n", content_type="text/plain; charset=utf-8")
    if quiet:
        # django.request would log "Not Found: <path>", and the path is the secret.
        response._has_been_logged = True
    return response


def _headers(scope: FeedScope, entry: FeedEntry) -> dict[str, str]:
    headers = {
        "ETag": entry.etag,
        "Last-Modified": http_date(entry.last_modified),
        "Cache-Control": PRIVATE_CACHE_CONTROL if scope.private else PUBLIC_CACHE_CONTROL,
    }
    if scope.private:
        headers["Referrer-Policy"] = "no-referrer"
        headers["X-Robots-Tag"] = "noindex"
    return headers


def _serve(request: HttpRequest, scope: FeedScope) -> HttpResponse:
    entry = _entry(scope, request.environ)
    if entry.missing:
        return _not_found(entry.missing)
    headers = _headers(scope, entry)
    not_modified = get_conditional_response(request, etag=entry.etag, last_modified=entry.last_modified)
    if not_modified is not None:
        for name, value in headers.items():
            not_modified.headers[name] = value
        return not_modified
    response = HttpResponse(b"" if request.method == "HEAD" else entry.body, content_type=CONTENT_TYPE)
    for name, value in headers.items():
        response.headers[name] = value
    response.headers["Content-Length"] = str(len(entry.body))
    response.headers["Content-Disposition"] = f'inline; filename="{scope.filename}"'
    return response


@require_safe
def release_feed(request: HttpRequest, release: str) -> HttpResponse:
    return _serve(request, feed_scope_release(slug=release))


@require_safe
def sig_feed(request: HttpRequest, release: str, sig: str) -> HttpResponse:
    return _serve(request, feed_scope_sig(slug=release, sig=sig))


@require_safe
def kep_feed(request: HttpRequest, number: int) -> HttpResponse:
    if number > MAX_KEP_NUMBER:  # beyond the column's range: no such KEP, and no SQL error
        return _not_found(f"No KEP {number}.")
    return _serve(request, feed_scope_kep(number=number))


@require_safe
def all_feed(request: HttpRequest) -> HttpResponse:
    return _serve(request, feed_scope_all())


@require_safe
def personal_feed(request: HttpRequest, token: str) -> HttpResponse:
    try:
        row = feed_token_resolve(token=token)
    except NotFound as exc:
        return _not_found(exc.message, quiet=True)
    feed_token_touch(row)
    response = _serve(request, feed_scope_user(user=row.user))
    response._has_been_logged = True  # never log this path, whatever the status
    return response


FEED_VIEWS = frozenset({release_feed, sig_feed, kep_feed, all_feed, personal_feed})


class FeedFastPathMiddleware:
    """Serve /calendar/ feeds right after WhiteNoise, the way it serves static files.

    Feeds use no session, CSRF token, user or message, so the middleware below this
    one only costs time on every calendar poll. Host validation still applies (the
    ``get_host`` call) and SecurityMiddleware, above, still adds its headers; any
    other path, or a /calendar/ path no feed matches, goes down the normal stack.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        path = request.path_info
        if path.startswith("/calendar/"):
            match = _resolved.get(path)
            if match is None:
                match = _resolve_feed(path)
            if match:
                request.get_host()  # DisallowedHost -> 400, as CommonMiddleware would
                return match[0](request, *match[1], **match[2])
        return self.get_response(request)


# URL resolution of public feed paths, memoised (resolving costs as much as serving a
# warm feed). Personal paths are not kept: they hold a token.
_resolved: dict[str, tuple | bool] = {}
_RESOLVED_MAX = 2048


def _resolve_feed(path: str) -> tuple | bool:
    try:
        found = resolve(path)
    except Resolver404:
        found = None
    match = (found.func, found.args, found.kwargs) if found is not None and found.func in FEED_VIEWS else False
    if not path.startswith("/calendar/u/") and len(_resolved) < _RESOLVED_MAX:
        _resolved[path] = match
    return match


@receiver(setting_changed)
def _forget_resolved(*, setting, **kwargs) -> None:
    if setting == "ROOT_URLCONF":
        _resolved.clear()
