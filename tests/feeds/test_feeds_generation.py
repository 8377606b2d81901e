"""The feed generation: every write path to a table a feed reads shows in the very next
response, on the real Redis cache with the per-process LRU on; a Redis flush, a Redis
that goes back in time or an unreachable Redis never serves a stale feed."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import User
from django.core.cache import caches
from django.db import connection, transaction
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from exceptions.models import Decision, ExceptionRequest
from feeds import cache as feed_generation
from feeds import views as feeds
from feeds.cache import feed_generation_current, writes_feed_data
from feeds.services import feed_token_create
from releasecal import tz
from releasecal.models import AuditLog, Enhancement, EnhancementOwner, Milestone, MilestoneKind, Release, Tracking
from tests.feeds.test_feeds import redis_url

RELEASE_FEED = "/calendar/1.31.ics"
KEP_FEED = "/calendar/kep/2400.ics"


def get(path: str, **headers):
    return Client().get(path, headers=headers)


@pytest.fixture(autouse=True)
def _fresh_local_cache():
    feeds.local_cache.clear()
    yield
    feeds.local_cache.clear()


@pytest.fixture
def redis_cache():
    """The real Redis, with the per-process LRU left on (it must never go stale either)."""
    redis_caches = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_url(),
            "KEY_PREFIX": "releasecal-test-feedgen",
        }
    }
    with override_settings(CACHES=redis_caches, FEEDS_LOCAL_CACHE_SIZE=32):
        caches["default"].clear()
        yield caches["default"]
        caches["default"].clear()


def warm(path: str) -> str:
    """Serve the feed twice (the second from the cache, no query) and return its ETag."""
    etag = get(path)["ETag"]
    with CaptureQueriesContext(connection) as queries:
        assert get(path, if_none_match=etag).status_code == 304
    assert len(queries) == 0, "a warm feed runs no query"
    return etag


def changed(path: str, etag: str) -> bytes:
    response = get(path, if_none_match=etag)
    assert response.status_code == 200, "the change did not show in the next response"
    assert response["ETag"] != etag
    return response.content.decode().replace("\r\n ", "").encode()


# ------------------------------------------------------------------ write paths


def test_a_queryset_update_shows_in_the_next_response(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)
    Milestone.objects.filter(pk=code_freeze.pk).update(description="Renamed in place.")
    assert b"Renamed in place." in changed(RELEASE_FEED, etag)


def test_an_update_that_leaves_updated_at_alone_shows_in_the_next_response(redis_cache, release, code_freeze):
    # The old fingerprint could not see this one: same count, same updated_at.
    etag = warm(RELEASE_FEED)
    Milestone.objects.filter(pk=code_freeze.pk).update(description="Moved to the docs channel.")
    assert b"Moved to the docs channel." in changed(RELEASE_FEED, etag)


def test_bulk_create_shows_in_the_next_response(redis_cache, release, kinds):
    etag = warm(RELEASE_FEED)
    Milestone.objects.bulk_create(
        [
            Milestone(
                release=release, kind=kinds["docs-freeze"], title="Bulk checkpoint", zone="America/Los_Angeles",
                at=tz.parse_wall_time("2024-07-01 10:00", "America/Los_Angeles"),
            )
        ]
    )  # fmt: skip
    assert b"Bulk checkpoint" in changed(RELEASE_FEED, etag)


def test_bulk_update_shows_in_the_next_response(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)
    code_freeze.title = "Code Freeze (bulk)"
    Milestone.objects.bulk_update([code_freeze], ["title"])
    assert b"Code Freeze (bulk)" in changed(RELEASE_FEED, etag)


def test_a_queryset_delete_shows_in_the_next_response(redis_cache, release):
    etag = warm(RELEASE_FEED)
    Milestone.objects.filter(release=release, kind__slug="rc").delete()
    assert b"rc.0 released" not in changed(RELEASE_FEED, etag)


def test_raw_sql_through_django_shows_in_the_next_response(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {Milestone._meta.db_table} SET description = %s WHERE id = %s",  # noqa: S608
            ["Changed by raw SQL.", code_freeze.pk],
        )
    assert b"Changed by raw SQL." in changed(RELEASE_FEED, etag)


def test_a_kind_update_shows_in_the_next_response(redis_cache, release):
    etag = warm(RELEASE_FEED)
    MilestoneKind.objects.filter(slug="code-freeze").update(allows_exceptions=False)
    assert b"This freeze cannot be extended by an exception." in changed(RELEASE_FEED, etag)


def test_a_kep_update_shows_in_the_kep_feed(redis_cache, kep):
    etag = warm(KEP_FEED)
    Enhancement.objects.filter(pk=kep.pk).update(title="Swap, renamed in place")
    assert b"Swap, renamed in place" in changed(KEP_FEED, etag)


def test_a_decision_changed_in_place_shows_in_the_next_response(redis_cache, kep, pending_request, release_team_member):
    from exceptions.services import exception_request_approve

    exception_request_approve(request=pending_request, actor=release_team_member)
    etag = warm(KEP_FEED)
    decision = Decision.objects.get(request=pending_request)
    Decision.objects.filter(pk=decision.pk).update(granted_until=decision.granted_until + dt.timedelta(days=3))
    changed(KEP_FEED, etag)


def test_a_request_state_update_shows_in_the_next_response(redis_cache, kep, pending_request):
    etag = warm(KEP_FEED)
    ExceptionRequest.objects.filter(pk=pending_request.pk).update(state="withdrawn")
    text = changed(KEP_FEED, etag)
    assert b"STATUS:CANCELLED" in text


def test_tracking_bulk_create_adds_the_release_to_the_kep_feed(redis_cache, release, kinds):
    other = Release.objects.create(
        slug="1.32", name="Kubernetes v1.32", zone="UTC", start_date=dt.date(2024, 9, 9),
        ga_date=dt.date(2024, 12, 11), status=Release.Status.ACTIVE,
    )  # fmt: skip
    Milestone.objects.create(
        release=other, kind=kinds["ga"], title="v1.32 released", zone="UTC", on_date=dt.date(2024, 12, 11)
    )
    kep = Enhancement.objects.create(number=4800, title="Lone KEP", owning_sig="node")
    Tracking.objects.create(release=release, enhancement=kep, stage="alpha")
    etag = warm("/calendar/kep/4800.ics")
    Tracking.objects.bulk_create([Tracking(release=other, enhancement=kep, stage="beta")])
    assert b"v1.32 released" in changed("/calendar/kep/4800.ics", etag)


def test_owner_and_lead_changes_show_in_the_personal_feed(redis_cache, release, kep):
    user = User.objects.create_user("owner-gen")
    path = f"/calendar/u/{feed_token_create(user=user).token}.ics"
    etag = get(path)["ETag"]
    assert get(path, if_none_match=etag).status_code == 304
    # As releasecal/demo.py links owners to accounts: a QuerySet.update.
    EnhancementOwner.objects.filter(enhancement=kep).update(user=user)
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"KEP-2400" in response.content or b"[1.31]" in response.content
    etag = response["ETag"]
    EnhancementOwner.objects.filter(enhancement=kep).update(user=None)
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"[1.31]" not in response.content
    etag = response["ETag"]
    release.leads.add(user)  # m2m through table
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"[1.31]" in response.content


def test_a_username_change_shows_in_the_personal_feed(redis_cache, release):
    user = User.objects.create_user("before-rename")
    path = f"/calendar/u/{feed_token_create(user=user).token}.ics"
    assert b"before-rename" in get(path).content
    User.objects.filter(pk=user.pk).update(username="after-rename")
    assert b"after-rename" in get(path).content


def test_writes_elsewhere_leave_the_generation_alone(redis_cache, release):
    before = feed_generation_current()
    AuditLog.objects.create(at=tz.utc_now(), action="test.noop", object_type="test", object_id="1")
    assert feed_generation_current() == before


# ------------------------------------------------------- transactions, Redis state


@pytest.mark.django_db(transaction=True)
def test_a_write_in_a_transaction_bumps_inside_it_and_again_at_commit(redis_cache, release, code_freeze):
    start = feed_generation_current()
    with transaction.atomic():
        Milestone.objects.filter(pk=code_freeze.pk).update(title="In a transaction")
        inside = feed_generation_current()
        Milestone.objects.filter(pk=code_freeze.pk).update(title="Still in it")
        assert feed_generation_current() not in (start, inside)
        before_commit = feed_generation_current()
    after_commit = feed_generation_current()
    # A reader that saw `before_commit` read the rows as they were before the commit:
    # the commit moves every later reader to a new key.
    assert after_commit not in (start, inside, before_commit)
    assert b"Still in it" in get(RELEASE_FEED).content


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_is_not_served(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)

    def write_then_fail() -> None:
        with transaction.atomic():
            Milestone.objects.filter(pk=code_freeze.pk).update(title="Never committed")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        write_then_fail()
    response = get(RELEASE_FEED, if_none_match=etag)
    assert response.status_code == 304  # same bytes (rebuilt under a new key)


def test_a_redis_flush_never_serves_stale(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)  # the LRU of this process holds the feed too
    redis_cache.clear()  # FLUSHDB: the generation is gone
    Milestone.objects.filter(pk=code_freeze.pk).update(title="Changed after the flush")
    assert b"Changed after the flush" in changed(RELEASE_FEED, etag)
    etag = warm(RELEASE_FEED)
    redis_cache.clear()  # and a flush with no write: rebuilt, same bytes
    assert get(RELEASE_FEED, if_none_match=etag).status_code == 304


def test_a_generation_that_goes_back_in_time_starts_afresh(redis_cache, release, code_freeze):
    old = feed_generation_current()
    Milestone.objects.filter(pk=code_freeze.pk).update(title="After the snapshot")
    etag = warm(RELEASE_FEED)
    # Redis restored from an older snapshot: the generation is back to `old`, the key
    # the old feed was stored under.
    redis_cache.set(feed_generation.CACHE_KEY, int(old), timeout=None)
    assert feed_generation_current() not in (old, str(int(old) + 1))
    assert get(RELEASE_FEED, if_none_match=etag).status_code == 304  # same data, same bytes
    Milestone.objects.filter(pk=code_freeze.pk).update(title="Later still")
    assert b"Later still" in changed(RELEASE_FEED, etag)


def test_an_unreachable_cache_serves_fresh_uncached_feeds(release, code_freeze):
    closed = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    with override_settings(CACHES=closed):
        assert get(RELEASE_FEED).status_code == 200
        Milestone.objects.filter(pk=code_freeze.pk).update(title="While Redis is down")
        assert b"While Redis is down" in get(RELEASE_FEED).content
    feed_generation._pending.clear()  # the failed bumps were queued for that cache


def test_the_locmem_cache_uses_a_generation_shared_by_every_process(release, code_freeze, tmp_path, settings):
    store = feed_generation._file_store("postgresql", "db", "5432", "somewhere")
    assert store.path.parent == settings.VAR_DIR or str(store.path).startswith(str(settings.VAR_DIR))
    sqlite = feed_generation._FileStore(tmp_path / "x.sqlite3.feeds-generation")
    first = sqlite.read()
    assert sqlite.read() == first
    sqlite.bump()
    assert sqlite.read() != first


# ------------------------------------------------------------------ statement test


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ('INSERT INTO "releasecal_milestone" ("title") VALUES (%s)', True),
        ('UPDATE "exceptions_decision" SET "granted_until" = %s', True),
        ('DELETE FROM "releasecal_release_leads" WHERE 1', True),
        ('  update "releasecal_enhancementowner" set user_id = 1', True),
        ('TRUNCATE "releasecal_tracking", "auth_user"', True),
        ('SELECT * FROM "releasecal_milestone" FOR UPDATE', False),
        ('INSERT INTO "releasecal_auditlog" ("action") VALUES (%s)', False),
        ('UPDATE "releasecal_feedtoken" SET "last_used_at" = %s', False),
    ],
)
def test_it_recognises_writes_to_feed_tables(sql, writes):
    assert writes_feed_data(sql) is writes
