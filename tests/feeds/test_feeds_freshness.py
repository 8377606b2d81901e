"""The feed version: every write path to a table a feed shows changes it in the writing
transaction and shows in the very next response (real PostgreSQL + Redis); a rollback
leaves it alone; a warm feed is one query and one cache read; every covered table
carries the trigger, tables added later included."""

from __future__ import annotations

import datetime as dt

import pytest
import redis
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.sql import emit_post_migrate_signal
from django.db import connection, transaction
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from exceptions.models import Decision, ExceptionRequest
from exceptions.services import exception_request_approve, exception_request_withdraw
from feeds import triggers
from feeds.cache import feed_version
from feeds.models import FeedToken
from feeds.services import feed_token_create
from releasecal import tz
from releasecal.models import AuditLog, Enhancement, EnhancementOwner, Milestone, MilestoneKind, Release, Tracking
from releasecal.services import milestone_save
from tests.support.redis_cache import delete_prefix, prefix_keys, redis_cache_at, redis_url

RELEASE_FEED = "/calendar/1.31.ics"
KEP_FEED = "/calendar/kep/2400.ics"


def get(path: str, **headers):
    return Client().get(path, headers=headers)


@pytest.fixture
def redis_cache():
    """The real Redis under a key prefix of this test's own (deleted afterwards)."""
    with redis_cache_at(redis_url()) as cache:
        yield cache


def warm(path: str) -> str:
    """Serve the feed twice (the second from the cache: one query, the version) and
    return its ETag."""
    etag = get(path)["ETag"]
    with CaptureQueriesContext(connection) as queries:
        assert get(path, if_none_match=etag).status_code == 304
    assert len(queries) == 1, "a warm public feed runs one query: the version"
    assert "feeds_feedversion" in queries[0]["sql"]
    return etag


def changed(path: str, etag: str) -> bytes:
    response = get(path, if_none_match=etag)
    assert response.status_code == 200, "the change did not show in the next response"
    assert response["ETag"] != etag
    return response.content.decode().replace("\r\n ", "").encode()


# ------------------------------------------------------------------ write paths


def test_a_service_write_shows_in_the_next_response(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)
    code_freeze.title = "Code Freeze (moved)"
    milestone_save(milestone=code_freeze)
    assert b"Code Freeze (moved)" in changed(RELEASE_FEED, etag)


def test_an_approval_and_a_withdrawal_show_in_the_next_response(
    redis_cache, kep, pending_request, release_team_member, requester
):
    etag = warm(KEP_FEED)
    exception_request_approve(request=pending_request, actor=release_team_member)
    assert b"extended for KEP-2400" in changed(KEP_FEED, etag)


def test_a_withdrawal_shows_in_the_next_response(redis_cache, kep, pending_request, requester):
    etag = warm(KEP_FEED)
    exception_request_withdraw(request=pending_request, actor=requester)
    assert b"STATUS:CANCELLED" in changed(KEP_FEED, etag)


def test_an_admin_edit_shows_in_the_next_response(redis_cache, client, release, code_freeze, release_team_member):
    release_team_member.is_staff = release_team_member.is_superuser = True
    release_team_member.save()
    etag = warm(RELEASE_FEED)
    client.force_login(release_team_member)
    response = client.post(
        f"/admin/releasecal/milestone/{code_freeze.pk}/change/",
        {
            "release": release.pk, "kind": code_freeze.kind.pk, "title": "Code Freeze (admin)",
            "at": "2024-07-23 19:00", "ends_at": "2024-08-07 19:00", "zone": "America/Los_Angeles",
            "description": code_freeze.description, "link": code_freeze.link,
        },
    )  # fmt: skip
    assert response.status_code == 302, response.content.decode()[:2000]
    assert b"Code Freeze (admin)" in changed(RELEASE_FEED, etag)


def test_a_model_save_shows_in_the_next_response(redis_cache, release):
    etag = warm(RELEASE_FEED)
    kind = MilestoneKind.objects.get(slug="code-freeze")
    kind.allows_exceptions = False
    kind.save()
    assert b"This freeze cannot be extended by an exception." in changed(RELEASE_FEED, etag)


def test_a_queryset_update_shows_in_the_next_response(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)
    Milestone.objects.filter(pk=code_freeze.pk).update(description="Renamed in place.")
    assert b"Renamed in place." in changed(RELEASE_FEED, etag)


def test_an_update_that_leaves_updated_at_alone_shows_in_the_next_response(redis_cache, release, code_freeze):
    # A fingerprint of counts and updated_at could not see this one.
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


def test_an_instance_delete_shows_in_the_next_response(redis_cache, release):
    etag = warm(RELEASE_FEED)
    release.milestones.get(kind__slug="rc").delete()
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
    exception_request_approve(request=pending_request, actor=release_team_member)
    etag = warm(KEP_FEED)
    decision = Decision.objects.get(request=pending_request)
    Decision.objects.filter(pk=decision.pk).update(granted_until=decision.granted_until + dt.timedelta(days=3))
    changed(KEP_FEED, etag)


def test_a_request_state_update_shows_in_the_next_response(redis_cache, kep, pending_request):
    etag = warm(KEP_FEED)
    ExceptionRequest.objects.filter(pk=pending_request.pk).update(state="withdrawn")
    assert b"STATUS:CANCELLED" in changed(KEP_FEED, etag)


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


def test_owner_and_m2m_lead_changes_show_in_the_personal_feed(redis_cache, release, kep):
    user = User.objects.create_user("owner-gen")
    path = f"/calendar/u/{feed_token_create(user=user).token}.ics"
    etag = get(path)["ETag"]
    assert get(path, if_none_match=etag).status_code == 304
    # As demo data links owners to accounts: a QuerySet.update.
    EnhancementOwner.objects.filter(enhancement=kep).update(user=user)
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"[1.31]" in response.content
    etag = response["ETag"]
    EnhancementOwner.objects.filter(enhancement=kep).update(user=None)
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"[1.31]" not in response.content
    etag = response["ETag"]
    release.leads.add(user)  # m2m through table: INSERT
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"[1.31]" in response.content
    etag = response["ETag"]
    release.leads.remove(user)  # m2m through table: DELETE
    response = get(path, if_none_match=etag)
    assert response.status_code == 200
    assert b"[1.31]" not in response.content


def test_a_username_change_shows_in_the_personal_feed(redis_cache, release):
    # auth_user carries no trigger: the username is part of the personal feed's key.
    user = User.objects.create_user("before-rename")
    path = f"/calendar/u/{feed_token_create(user=user).token}.ics"
    assert b"before-rename" in get(path).content
    User.objects.filter(pk=user.pk).update(username="after-rename")
    assert b"after-rename" in get(path).content


def test_writes_elsewhere_leave_the_version_alone(redis_cache, release):
    owner = User.objects.create_user("elsewhere")
    token = feed_token_create(user=owner)
    before = feed_version()
    AuditLog.objects.create(at=tz.utc_now(), action="test.noop", object_type="test", object_id="1")
    FeedToken.objects.filter(pk=token.row.pk).update(last_used_at=tz.utc_now())
    User.objects.filter(pk=owner.pk).update(last_login=tz.utc_now())
    assert feed_version() == before


# ------------------------------------------------------------------ transactions


@pytest.mark.django_db(transaction=True)
def test_the_version_changes_inside_the_writing_transaction(redis_cache, release, code_freeze):
    start = feed_version()
    with transaction.atomic():
        Milestone.objects.filter(pk=code_freeze.pk).update(title="In a transaction")
        inside = feed_version()
        assert inside != start  # the writer reads its own new version
    assert feed_version() == inside  # committed with the change
    assert b"In a transaction" in get(RELEASE_FEED).content


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_write_leaves_the_version_and_the_feed_alone(redis_cache, release, code_freeze):
    etag = warm(RELEASE_FEED)
    before = feed_version()

    def write_then_fail() -> None:
        with transaction.atomic():
            Milestone.objects.filter(pk=code_freeze.pk).update(title="Never committed")
            milestone_save(milestone=Milestone.objects.get(pk=code_freeze.pk))
            raise RuntimeError

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert feed_version() == before
    with CaptureQueriesContext(connection) as queries:
        assert get(RELEASE_FEED, if_none_match=etag).status_code == 304
    assert len(queries) == 1  # still the cached feed: nothing changed


def test_feeds_bump_changes_the_version_and_rebuilds(redis_cache, release, monkeypatch):
    from feeds import views

    first = get(RELEASE_FEED)
    before = feed_version()
    call_command("feeds_bump", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert feed_version() != before
    built = []
    real = views.feed_build
    monkeypatch.setattr(views, "feed_build", lambda scope: built.append(scope) or real(scope))
    again = get(RELEASE_FEED)
    assert built, "rebuilt under the new version"
    assert again.content == first.content
    assert again["ETag"] == first["ETag"]


def test_a_warm_feed_is_served_from_the_cache_without_building(redis_cache, release, monkeypatch):
    from feeds import views

    first = get(RELEASE_FEED)
    assert len(prefix_keys(redis_url(), redis_cache.key_prefix)) == 3  # its head and its two bodies (identity, gzip)

    def must_not_build(scope):
        raise AssertionError("built although the data did not change")

    monkeypatch.setattr(views, "feed_build", must_not_build)
    second = get(RELEASE_FEED)
    assert second.content == first.content


def test_an_unreachable_cache_serves_fresh_uncached_feeds(release, code_freeze):
    closed = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    with override_settings(CACHES=closed):
        assert get(RELEASE_FEED).status_code == 200
        Milestone.objects.filter(pk=code_freeze.pk).update(title="While Redis is down")
        assert b"While Redis is down" in get(RELEASE_FEED).content


def test_without_the_version_row_feeds_are_served_uncached(redis_cache, release, code_freeze):
    from feeds.models import FeedVersion

    FeedVersion.objects.all().delete()
    assert get(RELEASE_FEED).status_code == 200
    Milestone.objects.filter(pk=code_freeze.pk).update(title="No version row")
    assert b"No version row" in get(RELEASE_FEED).content
    assert prefix_keys(redis_url(), redis_cache.key_prefix) == []


# -------------------------------------------------------------- trigger coverage


def test_every_table_a_feed_shows_carries_the_trigger(db):
    from django.apps import apps

    covered = triggers.covered_tables(apps)
    for table in ("releasecal_milestone", "releasecal_release_leads", "exceptions_decision", "auth_user"):
        assert (table in covered) is (table != "auth_user")
    assert "releasecal_auditlog" not in covered
    assert "feeds_feedversion" not in covered
    assert set(covered) <= triggers.tables_with_trigger(connection)


def test_a_table_without_the_trigger_gets_it_back_after_migrate(db):
    # As after a new model's migration, or SQLite rebuilding a table to alter it.
    triggers.uninstall(connection, ["releasecal_milestone"])
    assert "releasecal_milestone" not in triggers.tables_with_trigger(connection)
    emit_post_migrate_signal(verbosity=0, interactive=False, db="default")
    assert "releasecal_milestone" in triggers.tables_with_trigger(connection)


def test_truncate_changes_the_version(db, release):
    if connection.vendor != "postgresql":
        pytest.skip("TRUNCATE is PostgreSQL's")
    before = feed_version()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE releasecal_enhancementowner")
    assert feed_version() != before


def test_a_warm_feed_is_one_query_and_one_cache_read(redis_cache, release, kep, monkeypatch):
    calls = []
    for name in ("get", "get_many", "set", "add", "delete", "incr", "touch"):
        real = getattr(redis_cache, name)
        monkeypatch.setattr(
            redis_cache, name, lambda *a, _real=real, _name=name, **k: calls.append(_name) or _real(*a, **k)
        )
    for path in (RELEASE_FEED, KEP_FEED, "/calendar/1.31/sig/node.ics", "/calendar/all.ics?since=2020"):
        etag = get(path)["ETag"]  # cold: a miss and a set
        for headers in ({}, {"if_none_match": etag}):
            calls.clear()
            with CaptureQueriesContext(connection) as queries:
                assert get(path, **headers).status_code == (304 if headers else 200)
            assert [q["sql"].split(" FROM ")[1].split()[0] for q in queries] == ['"feeds_feedversion"']
            assert calls == ["get"], (path, calls)


# ------------------------------------------- the cache losing or regaining entries


def test_a_cache_that_loses_every_entry_never_serves_stale(redis_cache, release, code_freeze):
    # What FLUSHDB did in the old test, limited to this test's keys (the database is shared).
    url = redis_url()
    etag = warm(RELEASE_FEED)
    delete_prefix(url, redis_cache.key_prefix)
    Milestone.objects.filter(pk=code_freeze.pk).update(title="Changed after the flush")
    assert b"Changed after the flush" in changed(RELEASE_FEED, etag)
    etag = warm(RELEASE_FEED)
    delete_prefix(url, redis_cache.key_prefix)  # and with no write: rebuilt, same bytes
    assert get(RELEASE_FEED, if_none_match=etag).status_code == 304


def test_a_cache_restored_from_an_older_snapshot_never_serves_stale(redis_cache, release, code_freeze):
    # Redis back in time: the entries of before the write reappear (as after a restart
    # from an old append-only file or RDB snapshot). The key they sit under is no longer asked for.
    client = redis.Redis.from_url(redis_url())
    etag = warm(RELEASE_FEED)
    snapshot = {key: client.dump(key) for key in prefix_keys(redis_url(), redis_cache.key_prefix)}
    Milestone.objects.filter(pk=code_freeze.pk).update(title="After the snapshot")
    fresh = changed(RELEASE_FEED, etag)
    assert b"After the snapshot" in fresh
    delete_prefix(redis_url(), redis_cache.key_prefix)
    for key, value in snapshot.items():
        client.restore(key, 0, value, replace=True)
    client.close()
    response = get(RELEASE_FEED, if_none_match=etag)
    assert response.status_code == 200
    assert b"After the snapshot" in response.content.replace(b"\r\n ", b"")


def test_with_the_local_memory_cache_a_write_shows_in_the_next_response(release, code_freeze):
    # Development settings: a cache per process, the version shared by all in the database.
    with override_settings(CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}):
        etag = warm(RELEASE_FEED)
        Milestone.objects.filter(pk=code_freeze.pk).update(title="Seen with locmem")
        assert b"Seen with locmem" in changed(RELEASE_FEED, etag)


def _models_of_covered_apps():
    from django.apps import apps

    for label in triggers.COVERED_APPS:
        yield from apps.get_app_config(label).get_models(include_auto_created=True)


@pytest.mark.parametrize("model", list(_models_of_covered_apps()), ids=lambda m: m._meta.db_table)
def test_a_statement_on_each_table_changes_the_version_unless_no_feed_shows_it(db, model):
    if connection.vendor != "postgresql":
        pytest.skip("statement-level triggers are PostgreSQL's (SQLite's fire per row)")
    before = feed_version()
    pk = model._meta.pk.column
    with connection.cursor() as cursor:
        cursor.execute(f'UPDATE "{model._meta.db_table}" SET "{pk}" = "{pk}" WHERE false')  # noqa: S608
    shown = model._meta.label not in triggers.NOT_SHOWN
    assert (feed_version() != before) is shown
