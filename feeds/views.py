"""The iCal feed views: parse the URL, resolve the scope, serve bytes with HTTP caching.

A feed is served from the cache under a key holding the feed version (feeds/cache.py):
one indexed query for the version, one cache read, then ETag/Last-Modified/304. The
version changes in the same transaction as any write to a table a feed shows, so a
cached feed is never stale. Feeds go through the whole middleware stack like any view.
"""

from __future__ import annotations

import dataclasses
import hashlib

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.http import require_safe

from feeds.cache import FeedEntry, cache_get, cache_set, feed_key, feed_version
from feeds.metrics import CACHE_LOOKUPS, RESPONSES
from feeds.options import SINCE_ONLY_ALL, BadFeedOption, parse_alarms, parse_since
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
from releasecal import tz
from releasecal.errors import NotFound

CONTENT_TYPE = "text/calendar; charset=utf-8"
# Clients and proxies may keep a copy but must revalidate it every time (a cheap 304 on
# the strong ETag): a moved freeze is never served stale from a cache between us and them.
PUBLIC_CACHE_CONTROL = "public, no-cache"
PRIVATE_CACHE_CONTROL = "private, no-cache"
MAX_KEP_NUMBER = 2**31 - 1  # Enhancement.number is a PositiveIntegerField


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


def _entry(scope: FeedScope) -> FeedEntry:
    version = feed_version()
    if version is None:  # no version row (a database flushed before migrate): uncached
        CACHE_LOOKUPS.labels("uncached").inc()
        return _build(scope)
    key = feed_key(version, scope.cache_key)
    entry = cache_get(key)
    if entry is None:
        entry = _build(scope)
        if entry.missing:  # 404s are not cached: any URL would make a key
            return entry
        cache_set(key, entry)
    return entry


def _not_found(message: str) -> HttpResponse:
    # django.request logs "Not Found: <path>"; for a personal feed the path is the
    # secret, and config.logging.RedactSecretsFilter writes it as /calendar/u/[redacted].
    RESPONSES.labels("404").inc()
    return HttpResponseNotFound(message + "\n", content_type="text/plain; charset=utf-8")


def _bad_option(message: str) -> HttpResponse:
    RESPONSES.labels("400").inc()
    return HttpResponseBadRequest(message + "\n", content_type="text/plain; charset=utf-8")


def _with_alarms(request: HttpRequest, scope: FeedScope) -> FeedScope:
    """The scope with its ``?alarm=`` (BadFeedOption when malformed)."""
    return dataclasses.replace(scope, alarms=parse_alarms(request.GET.getlist("alarm")))


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
    try:
        if "since" in request.GET and scope.kind != "all":
            raise BadFeedOption(SINCE_ONLY_ALL)
        scope = _with_alarms(request, scope)
    except BadFeedOption as exc:
        return _bad_option(exc.message)
    entry = _entry(scope)
    if entry.missing:
        return _not_found(entry.missing)
    headers = _headers(scope, entry)
    not_modified = get_conditional_response(request, etag=entry.etag, last_modified=entry.last_modified)
    if not_modified is not None:
        for name, value in headers.items():
            not_modified.headers[name] = value
        RESPONSES.labels(str(not_modified.status_code)).inc()  # 304 (or 412 for If-Match)
        return not_modified
    response = HttpResponse(b"" if request.method == "HEAD" else entry.body, content_type=CONTENT_TYPE)
    for name, value in headers.items():
        response.headers[name] = value
    response.headers["Content-Length"] = str(len(entry.body))
    response.headers["Content-Disposition"] = f'inline; filename="{scope.filename}"'
    RESPONSES.labels("200").inc()
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
    try:
        since = parse_since(request.GET.get("since"), today=tz.utc_now().date())
    except BadFeedOption as exc:
        return _bad_option(exc.message)
    return _serve(request, feed_scope_all(since=since))


@require_safe
def personal_feed(request: HttpRequest, token: str) -> HttpResponse:
    try:
        row = feed_token_resolve(token=token)
    except NotFound as exc:
        return _not_found(exc.message)
    feed_token_touch(row)
    return _serve(request, feed_scope_user(user=row.user))
