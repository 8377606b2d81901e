"""The iCal feed views: parse the URL, resolve the scope, serve bytes with HTTP caching.

A feed is served from the cache under keys holding the feed version (feeds/cache.py).
The version changes in the same transaction as any write to a table a feed shows, so a
cached feed is never stale. What each request reads:

- conditional (If-None-Match, If-Modified-Since, ...): one indexed query for the
  version and the feed's small head entry; when the client's copy is current, a 304
  without the body ever leaving the cache;
- unconditional (or a conditional one whose copy is old): the version and the body
  entry, bytes that carry their own ETag (the head is not read);
- neither cached: the feed is built, both entries stored in one round trip.

Feeds go through the whole middleware stack like any view.
"""

from __future__ import annotations

import dataclasses

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.http import require_safe

from feeds.cache import (
    IDENTITY,
    FeedBody,
    FeedHead,
    Representation,
    body_get,
    feed_key,
    feed_store,
    feed_version,
    head_get,
    strong_etag,
)
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
CONDITIONAL_HEADERS = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MODIFIED_SINCE", "HTTP_IF_MATCH", "HTTP_IF_UNMODIFIED_SINCE")


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


def _with_headers(response: HttpResponse, scope: FeedScope, etag: str, last_modified: int) -> HttpResponse:
    response.headers["ETag"] = etag
    response.headers["Last-Modified"] = http_date(last_modified)
    response.headers["Cache-Control"] = PRIVATE_CACHE_CONTROL if scope.private else PUBLIC_CACHE_CONTROL
    if scope.private:
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Robots-Tag"] = "noindex"
    RESPONSES.labels(str(response.status_code)).inc()  # 200, 304 (or 412 for If-Match)
    return response


def _conditional(request: HttpRequest, scope: FeedScope, etag: str, last_modified: int) -> HttpResponse | None:
    """The 304 (or 412) when the request's conditions say so, else None."""
    answer = get_conditional_response(request, etag=etag, last_modified=last_modified)
    return None if answer is None else _with_headers(answer, scope, etag, last_modified)


def _ok(request: HttpRequest, scope: FeedScope, etag: str, last_modified: int, length: int, body: bytes = b""):
    response = HttpResponse(body, content_type=CONTENT_TYPE)
    response.headers["Content-Length"] = str(length)
    response.headers["Content-Disposition"] = f'inline; filename="{scope.filename}"'
    return _with_headers(response, scope, etag, last_modified)


def _from_head(request: HttpRequest, scope: FeedScope, stem: str) -> HttpResponse | None:
    """Answer from the head entry alone (a 304, a 412 or a HEAD), or None when the body
    is needed. Issue 29's gzip picks its representation here from Accept-Encoding."""
    head = head_get(stem)
    representation = head.representations.get(IDENTITY) if head is not None else None
    if representation is None:
        return None
    answer = _conditional(request, scope, representation.etag, head.last_modified)
    if answer is None and request.method == "HEAD":
        answer = _ok(request, scope, representation.etag, head.last_modified, representation.length)
    if answer is not None:
        CACHE_LOOKUPS.labels("hit").inc()
    return answer


def _build(scope: FeedScope) -> FeedBody:
    built = feed_build(scope)
    return FeedBody(etag=strong_etag(built.body), last_modified=int(built.last_modified.timestamp()), body=built.body)


def _store(stem: str, body: FeedBody) -> None:
    head = FeedHead(
        last_modified=body.last_modified,
        representations={IDENTITY: Representation(etag=body.etag, length=len(body.body))},
    )
    feed_store(stem, head, {IDENTITY: body})


def _serve(request: HttpRequest, scope: FeedScope) -> HttpResponse:
    try:
        if "since" in request.GET and scope.kind != "all":
            raise BadFeedOption(SINCE_ONLY_ALL)
        scope = _with_alarms(request, scope)
    except BadFeedOption as exc:
        return _bad_option(exc.message)
    version = feed_version()
    stem = feed_key(version, scope.cache_key) if version is not None else None
    if stem is not None and (request.method == "HEAD" or any(h in request.META for h in CONDITIONAL_HEADERS)):
        answer = _from_head(request, scope, stem)
        if answer is not None:
            return answer
    body = body_get(stem) if stem is not None else None
    if body is None:
        missing = feed_missing_subject(scope)
        if missing:  # 404s are not cached: any URL would make a key
            CACHE_LOOKUPS.labels("miss" if stem is not None else "uncached").inc()
            return _not_found(missing)
        body = _build(scope)
        if stem is None:  # no version row (a database flushed before migrate): uncached
            CACHE_LOOKUPS.labels("uncached").inc()
        else:
            CACHE_LOOKUPS.labels("miss").inc()
            _store(stem, body)
    else:
        CACHE_LOOKUPS.labels("hit").inc()
    # The body names its own ETag: compared again, as it may be of a newer build than
    # the head the client's copy was checked against.
    answer = _conditional(request, scope, body.etag, body.last_modified)
    if answer is not None:
        return answer
    content = b"" if request.method == "HEAD" else body.body
    return _ok(request, scope, body.etag, body.last_modified, len(body.body), content)


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
