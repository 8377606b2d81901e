"""The iCal feed views: parse the URL, resolve the scope, serve bytes with HTTP caching.

A feed is served from the cache under keys holding the feed version (feeds/cache.py).
The version changes in the same transaction as any write to a table a feed shows, so a
cached feed is never stale. What each request reads:

- conditional (If-None-Match, If-Modified-Since, ...): one indexed query for the
  version and the feed's small head entry; when the client's copy is current, a 304
  without the body ever leaving the cache;
- unconditional (or a conditional one whose copy is old): the version and the body
  entry, bytes that carry their own ETag (the head is not read);
- neither cached: the feed is built and compressed, head and bodies stored in one
  round trip.

Each answer is in the encoding ``Accept-Encoding`` selects (feeds/encoding.py: gzip or
identity), with that encoding's own strong ETag, and ``Vary: Accept-Encoding``.

Feeds are routed by config.middleware.FeedMiddleware, after the security headers and
before the session, CSP, CSRF, auth and messages middleware, which a feed does not need.
"""

from __future__ import annotations

import dataclasses

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotFound
from django.utils.cache import get_conditional_response
from django.utils.http import http_date
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from feeds.cache import (
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
from feeds.encoding import GZIP, IDENTITY, choose_encoding, encoded_etag, gzip_bytes
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


def feed_view(view):
    """GET and HEAD only: any other method is a 405 with ``Allow: GET, HEAD``. Exempt
    from CSRF, which would answer a POST with a 403 before the method is looked at: a
    feed changes nothing and reads no session, so there is nothing to forge."""
    return csrf_exempt(require_safe(view))


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


def _with_headers(
    response: HttpResponse, scope: FeedScope, etag: str, last_modified: int, encoding: str
) -> HttpResponse:
    response.headers["ETag"] = etag
    response.headers["Last-Modified"] = http_date(last_modified)
    response.headers["Cache-Control"] = PRIVATE_CACHE_CONTROL if scope.private else PUBLIC_CACHE_CONTROL
    # Every answer (304s too) depends on Accept-Encoding: a cache between us and the
    # client must keep the gzip and the identity copy apart.
    response.headers["Vary"] = "Accept-Encoding"
    if encoding != IDENTITY and response.status_code == 200:
        response.headers["Content-Encoding"] = encoding
    if scope.private:
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Robots-Tag"] = "noindex"
    RESPONSES.labels(str(response.status_code)).inc()  # 200, 304 (or 412 for If-Match)
    return response


def _conditional(
    request: HttpRequest, scope: FeedScope, etag: str, last_modified: int, encoding: str
) -> HttpResponse | None:
    """The 304 (or 412) when the request's conditions say so, else None. ``etag`` is the
    one of the encoding chosen: an If-None-Match holding the other encoding's ETag does
    not match (that copy is not the representation this request selects)."""
    answer = get_conditional_response(request, etag=etag, last_modified=last_modified)
    return None if answer is None else _with_headers(answer, scope, etag, last_modified, encoding)


def _ok(
    request: HttpRequest,
    scope: FeedScope,
    etag: str,
    last_modified: int,
    length: int,
    encoding: str,
    body: bytes = b"",
):
    response = HttpResponse(body, content_type=CONTENT_TYPE)
    response.headers["Content-Length"] = str(length)
    response.headers["Content-Disposition"] = f'inline; filename="{scope.filename}"'
    return _with_headers(response, scope, etag, last_modified, encoding)


def _from_head(request: HttpRequest, scope: FeedScope, stem: str, encoding: str) -> HttpResponse | None:
    """Answer from the head entry alone (a 304, a 412 or a HEAD) for the chosen encoding,
    or None when the body is needed."""
    head = head_get(stem)
    representation = head.representations.get(encoding) if head is not None else None
    if representation is None:
        return None
    answer = _conditional(request, scope, representation.etag, head.last_modified, encoding)
    if answer is None and request.method == "HEAD":
        answer = _ok(request, scope, representation.etag, head.last_modified, representation.length, encoding)
    if answer is not None:
        CACHE_LOOKUPS.labels("hit").inc()
    return answer


def _build(scope: FeedScope) -> dict[str, FeedBody]:
    """Every encoding of the feed, made once per version: the gzip bytes are compressed
    here, not per request."""
    built = feed_build(scope)
    etag, last_modified = strong_etag(built.body), int(built.last_modified.timestamp())
    return {
        IDENTITY: FeedBody(etag=etag, last_modified=last_modified, body=built.body),
        GZIP: FeedBody(etag=encoded_etag(etag, GZIP), last_modified=last_modified, body=gzip_bytes(built.body)),
    }


def _store(stem: str, bodies: dict[str, FeedBody]) -> None:
    head = FeedHead(
        last_modified=bodies[IDENTITY].last_modified,
        representations={name: Representation(etag=b.etag, length=len(b.body)) for name, b in bodies.items()},
    )
    feed_store(stem, head, bodies)


def _serve(request: HttpRequest, scope: FeedScope) -> HttpResponse:
    try:
        if "since" in request.GET and scope.kind != "all":
            raise BadFeedOption(SINCE_ONLY_ALL)
        scope = _with_alarms(request, scope)
    except BadFeedOption as exc:
        return _bad_option(exc.message)
    encoding = choose_encoding(request.headers.get("Accept-Encoding"))
    version = feed_version()
    stem = feed_key(version, scope.cache_key) if version is not None else None
    if stem is not None and (request.method == "HEAD" or any(h in request.META for h in CONDITIONAL_HEADERS)):
        answer = _from_head(request, scope, stem, encoding)
        if answer is not None:
            return answer
    body = body_get(stem, encoding) if stem is not None else None
    if body is None:
        missing = feed_missing_subject(scope)
        if missing:  # 404s are not cached: any URL would make a key
            CACHE_LOOKUPS.labels("miss" if stem is not None else "uncached").inc()
            return _not_found(missing)
        bodies = _build(scope)
        body = bodies[encoding]
        if stem is None:  # no version row (a database flushed before migrate): uncached
            CACHE_LOOKUPS.labels("uncached").inc()
        else:
            CACHE_LOOKUPS.labels("miss").inc()
            _store(stem, bodies)
    else:
        CACHE_LOOKUPS.labels("hit").inc()
    # The body names its own ETag: compared again, as it may be of a newer build than
    # the head the client's copy was checked against.
    answer = _conditional(request, scope, body.etag, body.last_modified, encoding)
    if answer is not None:
        return answer
    content = b"" if request.method == "HEAD" else body.body
    return _ok(request, scope, body.etag, body.last_modified, len(body.body), encoding, content)


@feed_view
def release_feed(request: HttpRequest, release: str) -> HttpResponse:
    return _serve(request, feed_scope_release(slug=release))


@feed_view
def sig_feed(request: HttpRequest, release: str, sig: str) -> HttpResponse:
    return _serve(request, feed_scope_sig(slug=release, sig=sig))


@feed_view
def kep_feed(request: HttpRequest, number: int) -> HttpResponse:
    if number > MAX_KEP_NUMBER:  # beyond the column's range: no such KEP, and no SQL error
        return _not_found(f"No KEP {number}.")
    return _serve(request, feed_scope_kep(number=number))


@feed_view
def all_feed(request: HttpRequest) -> HttpResponse:
    try:
        since = parse_since(request.GET.get("since"), today=tz.utc_now().date())
    except BadFeedOption as exc:
        return _bad_option(exc.message)
    return _serve(request, feed_scope_all(since=since))


@feed_view
def personal_feed(request: HttpRequest, token: str) -> HttpResponse:
    try:
        row = feed_token_resolve(token=token)
    except NotFound as exc:
        return _not_found(exc.message)
    feed_token_touch(row)
    return _serve(request, feed_scope_user(user=row.user))
