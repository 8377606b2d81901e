"""What makes a conditional feed request cheap (issue 27), pinned so a regression fails
here and not only in bench/feeds_bench.py: a 304 (and a HEAD) reads the version (one
indexed query) and the feed's small head entry, never its body; an unconditional 200
reads the body alone; a body always travels with its own ETag. Real PostgreSQL + Redis."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection
from django.db.models import QuerySet
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from feeds import views
from feeds.cache import FeedBody, FeedHead, Representation, body_key, feed_key, feed_version, head_key
from feeds.services import feed_token_create
from releasecal.models import EnhancementOwner, Milestone
from tests.support.redis_cache import redis_cache_at, redis_url
from tests.support.refusing_cache import BodyRefusingRedisCache

RELEASE_FEED = "/calendar/1.31.ics"
PUBLIC_FEEDS = [RELEASE_FEED, "/calendar/1.31/sig/node.ics", "/calendar/kep/2400.ics", "/calendar/all.ics?since=2020"]


def get(path: str, **headers):
    return Client().get(path, headers=headers)


@pytest.fixture
def redis_cache():
    with redis_cache_at(redis_url()) as cache:
        yield cache


@pytest.fixture
def no_build(monkeypatch):
    def must_not_build(scope):
        raise AssertionError(f"built {scope.key} although it is cached")

    monkeypatch.setattr(views, "feed_build", must_not_build)


@pytest.fixture
def personal_feed(kep) -> str:
    owner = User.objects.create_user("cheap-owner")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=owner)
    return f"/calendar/u/{feed_token_create(user=owner).token}.ics"


@pytest.mark.parametrize("accept_encoding", [None, "gzip"])
def test_a_304_and_a_head_never_read_the_body(
    redis_cache, release, kep, pending_request, personal_feed, monkeypatch, accept_encoding
):
    """For each encoding (issue 29's gzip has its own ETag, in the same small head)."""
    feeds = [*PUBLIC_FEEDS, personal_feed]
    encoding = {"accept_encoding": accept_encoding} if accept_encoding else {}
    first = {path: get(path, **encoding) for path in feeds}  # built and cached under the real Redis
    assert all(response.status_code == 200 for response in first.values())
    assert all(response.get("Content-Encoding") == accept_encoding for response in first.values())
    refusing = {
        "default": {
            "BACKEND": "tests.support.refusing_cache.BodyRefusingRedisCache",
            "LOCATION": redis_url(),
            "KEY_PREFIX": redis_cache.key_prefix,
        }
    }
    BodyRefusingRedisCache.refused = []
    monkeypatch.setattr(views, "feed_build", lambda scope: pytest.fail(f"built {scope.key}"))
    with override_settings(CACHES=refusing):
        for path, response in first.items():
            for headers in ({"if_none_match": response["ETag"]}, {"if_modified_since": response["Last-Modified"]}):
                with CaptureQueriesContext(connection) as queries:
                    answer = get(path, **headers, **encoding)
                assert answer.status_code == 304, (path, headers)
                assert answer["ETag"] == response["ETag"]
                assert answer["Last-Modified"] == response["Last-Modified"]
                assert answer["Cache-Control"] == response["Cache-Control"]
                assert answer["Vary"] == "Accept-Encoding"
                tables = [q["sql"].split(" FROM ")[1].split()[0] for q in queries]
                # The version; the personal feed looks its token up first.
                assert tables[-1:] == ['"feeds_feedversion"']
                assert len(tables) == (2 if path == personal_feed else 1)
            head = Client().head(path, headers=encoding)
            assert head.status_code == 200
            assert head.content == b""
            assert head["Content-Length"] == str(len(response.content))
            assert head["ETag"] == response["ETag"]
            assert head.get("Content-Encoding") == accept_encoding
    assert BodyRefusingRedisCache.refused == []


def test_the_refusing_cache_does_refuse_a_body_read(redis_cache, release):
    # The test above proves something only if a body read through this backend fails.
    get(RELEASE_FEED)
    refusing = {
        "default": {
            "BACKEND": "tests.support.refusing_cache.BodyRefusingRedisCache",
            "LOCATION": redis_url(),
            "KEY_PREFIX": redis_cache.key_prefix,
        }
    }
    BodyRefusingRedisCache.refused = []
    with override_settings(CACHES=refusing), pytest.raises(BaseException, match="a feed body was read"):
        get(RELEASE_FEED)
    assert len(BodyRefusingRedisCache.refused) == 1


def test_a_200_reads_the_body_alone_and_a_304_the_head_alone(redis_cache, release, kep, monkeypatch):
    reads = []
    real_get = redis_cache.get
    monkeypatch.setattr(redis_cache, "get", lambda key, *a, **k: reads.append(key) or real_get(key, *a, **k))
    for path in PUBLIC_FEEDS:
        etag = get(path)["ETag"]
        for headers, expected, part in (({}, 200, ":body:identity"), ({"if_none_match": etag}, 304, ":head")):
            reads.clear()
            assert get(path, **headers).status_code == expected
            assert len(reads) == 1, (path, reads)
            assert reads[0].endswith(part), (path, reads)


def test_a_body_of_another_build_goes_with_its_own_etag(redis_cache, release, no_build):
    """Two builds of one version may interleave their writes (head of one, body of the
    other): each answer pairs bytes with their own ETag, and a client holding either
    ETag gets its 304."""
    stem = feed_key(feed_version(), "release:1.31")
    head = FeedHead(last_modified=1_700_000_000, representations={"identity": Representation('"build-a"', 7)})
    cache.set(head_key(stem), head.to_cache())
    cache.set(body_key(stem), FeedBody(etag='"build-b"', last_modified=1_700_000_001, body=b"bytes-b").to_cache())
    response = get(RELEASE_FEED)
    assert (response.status_code, response.content, response["ETag"]) == (200, b"bytes-b", '"build-b"')
    assert get(RELEASE_FEED, if_none_match='"build-a"').status_code == 304  # the head alone
    assert get(RELEASE_FEED, if_none_match='"build-b"').status_code == 304  # checked again on the body
    stale = get(RELEASE_FEED, if_none_match='"build-c"')
    assert (stale.status_code, stale.content) == (200, b"bytes-b")


def test_a_lost_head_or_body_is_rebuilt_alike(redis_cache, release, code_freeze):
    first = get(RELEASE_FEED)
    stem = feed_key(feed_version(), "release:1.31")
    cache.delete(head_key(stem))
    assert get(RELEASE_FEED, if_none_match=first["ETag"]).status_code == 304  # the body's own ETag
    cache.delete(body_key(stem))
    again = get(RELEASE_FEED)
    assert (again.content, again["ETag"]) == (first.content, first["ETag"])
    Milestone.objects.filter(pk=code_freeze.pk).update(title="After the loss")
    assert b"After the loss" in get(RELEASE_FEED, if_none_match=first["ETag"]).content


@pytest.mark.parametrize("junk", ["text", {"last_modified": "x"}, b"no newline", b'"etag" notanumber\nbody', 17])
def test_a_foreign_value_under_a_feed_key_is_rebuilt_not_served(redis_cache, release, junk):
    first = get(RELEASE_FEED)
    stem = feed_key(feed_version(), "release:1.31")
    cache.set(head_key(stem), junk)
    cache.set(body_key(stem), junk)
    conditional = get(RELEASE_FEED, if_none_match=first["ETag"])
    assert conditional.status_code == 304
    again = get(RELEASE_FEED)
    assert (again.status_code, again.content, again["ETag"]) == (200, first.content, first["ETag"])


def test_a_cached_answer_builds_no_queryset(redis_cache, release, kep, pending_request, monkeypatch):
    """A 304 or a warm 200 runs the version query alone, written out: building the
    scope's QuerySets (the SIG feed's four) cost more CPU than the rest of its 304, so a
    scope makes them only when the feed is built or its subject is checked."""
    etags = {path: get(path)["ETag"] for path in PUBLIC_FEEDS}
    made = []
    real_init = QuerySet.__init__

    def recording_init(self, *args, **kwargs):
        made.append(type(self).__name__)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(QuerySet, "__init__", recording_init)
    for path, etag in etags.items():
        for headers, expected in (({"if_none_match": etag}, 304), ({}, 200)):
            made.clear()
            assert get(path, **headers).status_code == expected
            assert made == [], (path, expected)
    made.clear()
    get("/calendar/no-such-release.ics")  # the spy sees the QuerySets a build makes
    assert made


def test_a_feed_skips_the_session_csp_auth_and_messages_middleware(release, personal_feed, monkeypatch):
    """config.middleware.FeedMiddleware answers /calendar/ before them (issue 27: most of
    a 304's CPU); the security headers, the request id and the latency label remain."""
    from allauth.account.middleware import AccountMiddleware
    from csp.middleware import CSPMiddleware
    from django.contrib.auth.middleware import AuthenticationMiddleware
    from django.contrib.messages.middleware import MessageMiddleware
    from django.contrib.sessions.middleware import SessionMiddleware
    from django.middleware.csrf import CsrfViewMiddleware

    from config import metrics

    skipped = [SessionMiddleware, CSPMiddleware, CsrfViewMiddleware, AuthenticationMiddleware, MessageMiddleware]
    for middleware in skipped:
        for hook in ("process_request", "process_view", "process_response"):
            if hasattr(middleware, hook):
                monkeypatch.setattr(middleware, hook, lambda *a, _m=middleware, **k: pytest.fail(f"{_m} ran"))
    monkeypatch.setattr(AccountMiddleware, "__call__", lambda *a, **k: pytest.fail("allauth ran"))
    labels, real_label = [], metrics._view_label

    def label(request):
        labels.append(real_label(request))
        return labels[-1]

    monkeypatch.setattr(metrics, "_view_label", label)
    with override_settings(SECURE_CONTENT_TYPE_NOSNIFF=True, SECURE_REFERRER_POLICY="same-origin"):
        for path in (RELEASE_FEED, personal_feed):
            response = get(path)
            assert response.status_code == 200
            assert response["ETag"]
            assert response["X-Content-Type-Options"] == "nosniff"
            assert response["Referrer-Policy"] == ("no-referrer" if path == personal_feed else "same-origin")
            assert response["X-Request-ID"]
            assert get(path, if_none_match=response["ETag"]).status_code == 304
        assert Client().post(RELEASE_FEED).status_code == 405
    assert labels[:4] == ["feeds:release", "feeds:release", "feeds:personal", "feeds:personal"]
    monkeypatch.undo()  # Django's 400 and 404 pages ask for a CSRF token
    assert get("/calendar/nothing/here").status_code == 404
    with override_settings(ALLOWED_HOSTS=["testserver"]):
        assert Client(HTTP_HOST="evil.example").get(RELEASE_FEED).status_code == 400
