"""Feeds in gzip for clients that ask (issue 29, item 5): Accept-Encoding read per RFC
9110, the gzip bytes made once per feed version and cached, a strong ETag per encoding,
``Vary: Accept-Encoding``; pages (forms, CSRF tokens) never compressed (BREACH); wrong
methods on a feed a 405 with Allow, never CSRF's 403. The 304 path for both encodings
reading no body is pinned in tests/feeds/test_feed_conditional.py."""

from __future__ import annotations

import gzip

import pytest
from django.conf import settings
from django.test import Client

from feeds import views
from feeds.encoding import choose_encoding, encoded_etag, gzip_bytes, parse_accept_encoding
from releasecal.models import Milestone
from tests.support.redis_cache import redis_cache_at, redis_url

RELEASE_FEED = "/calendar/1.31.ics"


@pytest.fixture
def redis_cache():
    with redis_cache_at(redis_url()) as cache:
        yield cache


def get(path: str = RELEASE_FEED, **headers):
    return Client().get(path, headers=headers)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, "identity"),  # no header: send no coding
        ("", "identity"),  # an empty header: only identity is acceptable
        ("gzip", "gzip"),
        ("GZIP", "gzip"),  # codings are case-insensitive
        ("x-gzip", "gzip"),  # RFC 9110 §8.4.1.3
        ("gzip, deflate, br", "gzip"),
        ("br", "identity"),  # not gzip: identity stays acceptable
        ("deflate;q=1, gzip;q=0.5", "gzip"),  # deflate is not available; identity unnamed
        ("gzip;q=0.001", "gzip"),  # identity acceptable by default, below any named coding
        ("gzip;q=0", "identity"),
        ("gzip; q=0.000", "identity"),
        ("gzip;Q=0.5, identity;q=0.4", "gzip"),
        ("gzip;q=0.4, identity;q=0.5", "identity"),
        ("gzip;q=0.5, identity;q=0.5", "gzip"),  # a tie: the smaller one
        ("*", "gzip"),
        ("*;q=0", "identity"),  # neither acceptable: sent without a coding anyway
        ("*;q=0, gzip", "gzip"),
        ("identity;q=0", "identity"),  # gzip not named, no *: not acceptable either
        ("identity;q=0, gzip;q=0.1", "gzip"),
        ("identity;q=0, *", "gzip"),
        ("*;q=0.5, identity", "identity"),
        ("*;q=0.5, identity;q=0.1", "gzip"),
        ("gzip;q=0, *", "identity"),  # the specific entry wins over *
        ("gzip;q=2", "identity"),  # not a qvalue: the element is ignored
        ("gzip;q=0.5000", "identity"),  # four decimals: not a qvalue
        ("gzip;q=", "identity"),
        ("gzip;level=9", "identity"),  # a parameter other than q: malformed
        ("gzip;q=0.5;q=1", "identity"),
        ("gz ip", "identity"),
        (",, gzip ,", "gzip"),  # empty list elements are allowed
        ("gzip;q=0, gzip;q=0.8", "gzip"),  # named twice: the highest weight
    ],
)
def test_accept_encoding_is_read_per_rfc_9110(header, expected):
    assert choose_encoding(header) == expected


def test_the_parser_gives_each_weight():
    assert parse_accept_encoding("gzip;q=0.8, X-GZIP;q=0.9, identity ; q=0 , *;q=0.25, br;q=x") == {
        "gzip": 0.9,
        "identity": 0.0,
        "*": 0.25,
    }


def test_the_gzip_etag_is_the_identity_one_with_a_suffix_and_the_bytes_are_stable():
    assert encoded_etag('"0123abcd"', "gzip") == '"0123abcd-gzip"'
    assert encoded_etag('"0123abcd"', "identity") == '"0123abcd"'
    assert gzip_bytes(b"BEGIN:VCALENDAR\r\n") == gzip_bytes(b"BEGIN:VCALENDAR\r\n")
    assert gzip_bytes(b"x")[4:8] == b"\0\0\0\0"  # no timestamp in the header


def test_a_feed_is_sent_gzipped_to_a_client_that_asks(redis_cache, release, code_freeze):
    plain = get()
    packed = get(accept_encoding="gzip, deflate")
    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain
    assert packed["Content-Encoding"] == "gzip"
    assert plain["Vary"] == packed["Vary"] == "Accept-Encoding"
    assert gzip.decompress(packed.content) == plain.content
    assert packed["Content-Length"] == str(len(packed.content))
    assert len(packed.content) < len(plain.content)
    assert packed["ETag"] == plain["ETag"][:-1] + '-gzip"'
    assert not packed["ETag"].startswith("W/")
    assert packed["Last-Modified"] == plain["Last-Modified"]
    head = Client().head(RELEASE_FEED, headers={"accept_encoding": "gzip"})
    assert (head.status_code, head.content, head["Content-Encoding"]) == (200, b"", "gzip")
    assert (head["Content-Length"], head["ETag"]) == (packed["Content-Length"], packed["ETag"])


def test_the_gzip_bytes_are_made_once_per_version(redis_cache, release, code_freeze, monkeypatch):
    made = []
    monkeypatch.setattr(views, "gzip_bytes", lambda body: made.append(len(body)) or gzip_bytes(body))
    first = [get(accept_encoding="gzip") for _ in range(3)]
    get()  # identity from the same build
    assert len(made) == 1
    assert len({r.content for r in first}) == 1
    Milestone.objects.filter(pk=code_freeze.pk).update(title="Moved")  # a new version
    after = get(accept_encoding="gzip")
    assert len(made) == 2
    assert b"Moved" in gzip.decompress(after.content)
    assert after["ETag"] != first[0]["ETag"]


def test_if_none_match_is_compared_with_the_etag_of_the_encoding_asked_for(redis_cache, release, code_freeze):
    identity, packed = get()["ETag"], get(accept_encoding="gzip")["ETag"]
    # Each copy is current for its own encoding...
    mine = get(accept_encoding="gzip", if_none_match=packed)
    assert (mine.status_code, mine["ETag"], mine["Vary"]) == (304, packed, "Accept-Encoding")
    assert "Content-Encoding" not in mine
    assert get(if_none_match=identity).status_code == 304
    # ...not for the other one: a client that switched encodings gets the bytes it can read.
    switched = get(accept_encoding="gzip", if_none_match=identity)
    assert (switched.status_code, switched["Content-Encoding"], switched["ETag"]) == (200, "gzip", packed)
    back = get(if_none_match=packed)
    assert (back.status_code, back["ETag"]) == (200, identity)
    assert "Content-Encoding" not in back
    # A cache holding both copies sends both ETags: the one that is selected is answered.
    both = f"{identity}, {packed}"
    assert get(accept_encoding="gzip", if_none_match=both)["ETag"] == packed
    assert get(if_none_match=both)["ETag"] == identity
    assert get(accept_encoding="gzip", if_none_match=both).status_code == 304


def test_if_none_match_for_gzip_is_answered_from_an_old_head_by_building(redis_cache, release, code_freeze):
    """A head written before gzip existed (identity only) is not a reason to fail: the
    gzip request builds the feed and stores both encodings."""
    from feeds.cache import FeedHead, Representation, feed_key, feed_version, head_key

    plain = get()
    stem = feed_key(feed_version(), "release:1.31")
    old = FeedHead(last_modified=0, representations={"identity": Representation(plain["ETag"], len(plain.content))})
    redis_cache.set(head_key(stem), old.to_cache())
    redis_cache.delete(f"{stem}:body:gzip")
    answer = get(accept_encoding="gzip", if_none_match=plain["ETag"])
    assert (answer.status_code, answer["Content-Encoding"]) == (200, "gzip")
    assert gzip.decompress(answer.content) == plain.content


def test_a_wrong_method_on_a_feed_is_a_405_not_a_csrf_403(release, kep):
    client = Client(enforce_csrf_checks=True)
    for path in (RELEASE_FEED, "/calendar/all.ics", "/calendar/kep/2400.ics", "/calendar/1.31/sig/node.ics"):
        for method in ("post", "put", "patch", "delete", "options"):
            response = getattr(client, method)(path)
            assert (response.status_code, response["Allow"]) == (405, "GET, HEAD"), (method, path)


def test_pages_with_forms_are_never_compressed(release, kep):
    """BREACH: a page holding a CSRF token beside text a request can choose must not be
    compressed. Only feeds are, by their own view; no middleware compresses."""
    assert not any("GZip" in name for name in settings.MIDDLEWARE)
    for path in ("/login/", "/releases/1.31/", "/kep/2400/"):
        response = get(path, accept_encoding="gzip")
        assert response.status_code == 200, path
        assert "Content-Encoding" not in response, path
        assert b"<form" in response.content, path
