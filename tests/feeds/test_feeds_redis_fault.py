"""Issue 13 item 7: Redis killed (SIGKILL) during a write and restarted from its
append-only file, which brings the old cached feeds back: the next read of every feed
is fresh, feeds are fresh while Redis is down, and API reads are answered throughout.

A throwaway ``redis-server --appendonly yes`` of this test's own (a temp dir, a port
picked free and retried on collision, readiness by PING); real PostgreSQL commits
(transactional test)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext

from exceptions.services import exception_request_approve
from feeds.services import feed_token_create
from releasecal.models import EnhancementOwner
from releasecal.services import milestone_save
from tests.support.redis_cache import ThrowawayRedis, prefix_keys, redis_cache_at

PREFIX = "fault-test"
MOVED = b"DTSTART;TZID=America/Los_Angeles:20240723T200000"  # code freeze, one hour later
EXTENDED = b"extended for KEP-2400"
API_READS = ["/api/v1/releases/", "/api/v1/releases/1.31/milestones/", "/api/v1/exceptions/", "/api/v1/deadlines/next/"]


def get(path: str, **headers):
    return Client().get(path, headers=headers)


def assert_api_reads_answer() -> None:
    client = Client(raise_request_exception=False)
    for path in API_READS:
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code, response.content[:300])


@pytest.mark.django_db(transaction=True)
def test_redis_killed_during_a_write_and_restarted_from_its_aof_serves_every_feed_fresh(
    tmp_path, release, kep, pending_request, release_team_member, code_freeze
):
    owner = User.objects.create_user("fault-owner")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=owner)
    personal = f"/calendar/u/{feed_token_create(user=owner).token}.ics"
    public = [
        "/calendar/1.31.ics",
        "/calendar/1.31/sig/node.ics",
        "/calendar/kep/2400.ics",
        "/calendar/all.ics?since=2020",
    ]
    feeds = [*public, personal]
    get(personal)  # its first use records last_used_at; later polls write nothing

    server = ThrowawayRedis(tmp_path)
    server.start()
    try:
        with redis_cache_at(server.url, prefix=PREFIX):
            # Warm every feed: the second request is a 304 from the cache (the version
            # query only, plus the token look-up for the personal feed).
            warm = {}
            for path in feeds:
                first = get(path)
                assert first.status_code == 200
                assert MOVED not in first.content
                with CaptureQueriesContext(connection) as queries:
                    assert get(path, if_none_match=first["ETag"]).status_code == 304
                assert len(queries) == (2 if path == personal else 1), [q["sql"] for q in queries]
                warm[path] = first["ETag"]
            cached_before = set(prefix_keys(server.url, PREFIX))
            # a head and a body per encoding each (identity and gzip, made together)
            assert len(cached_before) == 3 * len(feeds)
            assert_api_reads_answer()

            # kill -9 in the middle of a write; the transaction goes on and commits.
            with transaction.atomic():
                code_freeze.at = code_freeze.at + dt.timedelta(hours=1)
                milestone_save(milestone=code_freeze)
                server.kill()
                exception_request_approve(request=pending_request, actor=release_team_member)

            # Redis down: every feed is fresh (built from the database), the API answers.
            for path in feeds:
                response = get(path, if_none_match=warm[path])
                assert response.status_code == 200, path
                assert MOVED in response.content, path
            assert_api_reads_answer()

        server.start(same_port=True)  # from its append-only file
        with redis_cache_at(server.url, prefix=PREFIX):
            # The old entries are back (what made feeds stale before) ...
            assert cached_before <= set(prefix_keys(server.url, PREFIX))
            # ... and the next read of every feed is fresh all the same.
            for path in feeds:
                response = get(path, if_none_match=warm[path])
                assert response.status_code == 200, path
                assert response["ETag"] != warm[path]
                assert MOVED in response.content, path
                if path != "/calendar/1.31.ics" and path != "/calendar/all.ics?since=2020":
                    assert EXTENDED in response.content, path
                # and cached again under the new version
                with CaptureQueriesContext(connection) as queries:
                    assert get(path, if_none_match=response["ETag"]).status_code == 304
                assert len(queries) == (2 if path == personal else 1)
            assert_api_reads_answer()
    finally:
        server.stop()
