"""Feed HTTP behaviour: conditional GET, HEAD, headers, 404s, caching that is never
stale (locmem and the real Redis), the query budget, and personal token feeds."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils.http import http_date

from exceptions.models import Decision, ExceptionRequest, ExceptionRequestRevision
from exceptions.services import exception_request_approve, exception_request_withdraw
from feeds import views as feeds
from feeds.cache import feed_version_bump
from feeds.services import feed_token_create, feed_token_revoke, feed_token_rotate
from releasecal import tz
from releasecal.models import Enhancement, EnhancementOwner, Milestone, Release, Tracking
from releasecal.services import milestone_save
from tests.support.redis_cache import prefix_keys, redis_cache_at, redis_url


def get(path: str, **headers):
    return Client().get(path, headers=headers)


# -------------------------------------------------------------------------- HTTP


def test_a_feed_has_calendar_headers(release):
    response = get("/calendar/1.31.ics")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    assert response["Cache-Control"] == "public, no-cache"
    assert response["Content-Disposition"] == 'inline; filename="releasecal-1.31.ics"'
    assert response["ETag"].startswith('"')
    assert not response["ETag"].startswith('W/"')
    assert int(response["Content-Length"]) == len(response.content)
    assert response["Last-Modified"] == http_date(
        int(release.milestones.order_by("-updated_at")[0].updated_at.timestamp())
    )


def test_the_etag_is_a_hash_of_the_bytes(release):
    import hashlib

    response = get("/calendar/1.31.ics")
    assert response["ETag"] == '"' + hashlib.sha256(response.content).hexdigest()[:40] + '"'


def test_it_answers_304_to_if_none_match(release):
    etag = get("/calendar/1.31.ics")["ETag"]
    response = get("/calendar/1.31.ics", if_none_match=etag)
    assert response.status_code == 304
    assert response.content == b""
    assert response["ETag"] == etag
    assert response["Cache-Control"] == "public, no-cache"


def test_it_answers_304_to_if_modified_since(release):
    last_modified = get("/calendar/1.31.ics")["Last-Modified"]
    assert get("/calendar/1.31.ics", if_modified_since=last_modified).status_code == 304
    earlier = http_date(int(tz.utc_now().timestamp()) - 10 * 86400)
    assert get("/calendar/1.31.ics", if_modified_since=earlier).status_code == 200


def test_a_stale_etag_gets_the_full_feed(release):
    response = get("/calendar/1.31.ics", if_none_match='"not-the-current-one"')
    assert response.status_code == 200
    assert response.content.startswith(b"BEGIN:VCALENDAR")


def test_head_gives_the_headers_without_the_body(release):
    full = get("/calendar/1.31.ics")
    head = Client().head("/calendar/1.31.ics")
    assert head.status_code == 200
    assert head.content == b""
    assert head["ETag"] == full["ETag"]
    assert head["Content-Length"] == str(len(full.content))


def test_writes_are_not_allowed(release):
    assert Client().post("/calendar/1.31.ics").status_code == 405


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/calendar/1.99.ics", "No release '1.99'"),
        ("/calendar/1.99/sig/node.ics", "No release '1.99'"),
        ("/calendar/1.31/sig/nosuchsig.ics", "No KEP belongs to SIG 'nosuchsig'"),
        ("/calendar/kep/424242.ics", "No KEP 424242"),
        ("/calendar/kep/99999999999999999999999.ics", "No KEP 99999999999999999999999"),
        ("/calendar/" + "x" * 200 + ".ics", "No release"),
    ],
)
def test_unknown_subjects_are_a_404_with_a_clear_message(release, kep, path, message):
    response = get(path)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/plain")
    assert message in response.content.decode()


def test_all_feed_lists_every_release(release, kinds):
    from tests.support.feeds_data import aoe_release

    aoe_release(kinds)
    text = get("/calendar/all.ics?since=2020").content.decode()
    assert "SUMMARY:[1.31] Code Freeze\r\n" in text
    assert "SUMMARY:[1.35] Code Freeze (end of Thursday 6 November 2025 AoE)\r\n" in text


# ----------------------------------------------------------------- never stale


def _assert_every_change_shows_in_the_next_response(release, kep, pending_request, release_team_member, code_freeze):
    paths = [
        "/calendar/1.31.ics",
        "/calendar/1.31/sig/node.ics",
        "/calendar/kep/2400.ics",
        "/calendar/all.ics?since=2020",
    ]
    seen = {path: get(path)["ETag"] for path in paths}
    for path in paths:  # warm: same ETag, 304
        assert get(path, if_none_match=seen[path]).status_code == 304

    # A milestone edit (as the admin does it, through milestone_save) changes every feed.
    code_freeze.at = code_freeze.at + dt.timedelta(hours=1)
    milestone_save(milestone=code_freeze)
    for path in paths:
        response = get(path, if_none_match=seen[path])
        assert response.status_code == 200, path
        assert response["ETag"] != seen[path]
        assert b"DTSTART;TZID=America/Los_Angeles:20240723T200000" in response.content
        seen[path] = response["ETag"]

    # A decision changes the KEP and SIG feeds at once.
    exception_request_approve(request=pending_request, actor=release_team_member)
    for path in ("/calendar/1.31/sig/node.ics", "/calendar/kep/2400.ics"):
        response = get(path, if_none_match=seen[path])
        assert response.status_code == 200, path
        assert b"extended for KEP-2400" in response.content

    # A kind that stops allowing exceptions changes the rule every feed states.
    from releasecal.models import MilestoneKind

    MilestoneKind.objects.filter(slug="code-freeze").update(allows_exceptions=False)
    text = get("/calendar/1.31.ics").content.decode().replace("\r\n ", "")
    assert "This freeze cannot be extended by an exception." in text

    # A KEP title change shows in the KEP feed.
    Enhancement.objects.filter(pk=kep.pk).update(title="Swap, renamed", updated_at=tz.utc_now())
    assert b"Swap, renamed" in get("/calendar/kep/2400.ics").content


def test_a_change_shows_in_the_very_next_response(release, kep, pending_request, release_team_member, code_freeze):
    _assert_every_change_shows_in_the_next_response(release, kep, pending_request, release_team_member, code_freeze)


@pytest.fixture
def redis_cache():
    """The real Redis under a key prefix of this test's own (deleted afterwards)."""
    with redis_cache_at(redis_url()) as cache:
        yield cache


def test_with_redis_a_change_shows_in_the_very_next_response(
    redis_cache, release, kep, pending_request, release_team_member, code_freeze
):
    _assert_every_change_shows_in_the_next_response(release, kep, pending_request, release_team_member, code_freeze)


def test_with_redis_a_warm_feed_is_served_from_the_cache(redis_cache, release, monkeypatch):
    first = get("/calendar/1.31.ics")
    assert len(prefix_keys(redis_url(), redis_cache.key_prefix)) == 3  # its head and its two bodies (identity, gzip)

    def must_not_render(scope):
        raise AssertionError("rendered although the data did not change")

    monkeypatch.setattr(feeds, "feed_build", must_not_render)
    second = get("/calendar/1.31.ics")
    assert second.content == first.content


def test_withdrawal_shows_in_the_next_response_with_redis(redis_cache, release, kep, pending_request, requester):
    etag = get("/calendar/kep/2400.ics")["ETag"]
    exception_request_withdraw(request=pending_request, actor=requester)
    response = get("/calendar/kep/2400.ics", if_none_match=etag)
    assert response.status_code == 200
    assert b"STATUS:CANCELLED" in response.content


# ---------------------------------------------------------------- query budget


def populate(
    release: Release, kinds, *, milestones: int, requests: int, first: int = 7000, owner: User | None = None
) -> None:
    """Bulk rows (this is about query counts, not the workflow): ``milestones`` extra
    timed milestones and ``requests`` KEPs with one approved and one pending request."""
    now = tz.utc_now()
    base = tz.parse_wall_time("2024-06-01 10:00", "America/Los_Angeles")
    Milestone.objects.bulk_create(
        Milestone(
            release=release,
            kind=kinds["code-freeze"],
            title=f"Checkpoint {i}",
            zone="America/Los_Angeles",
            at=base + dt.timedelta(days=i % 200, hours=i % 7),
        )
        for i in range(milestones)
    )
    freeze = release.milestones.get(kind__slug="code-freeze", title="Code Freeze")
    enhancements_freeze = release.milestones.get(kind__slug="enhancements-freeze")
    new_keps = Enhancement.objects.bulk_create(
        Enhancement(number=first + i, title=f"Feature {i}", owning_sig="node") for i in range(requests)
    )
    Tracking.objects.bulk_create(Tracking(release=release, enhancement=k, stage="alpha") for k in new_keps)
    if owner is not None:
        EnhancementOwner.objects.bulk_create(EnhancementOwner(enhancement=k, user=owner) for k in new_keps)
    rows = []
    for k in new_keps:
        rows.append(ExceptionRequest(release=release, enhancement=k, milestone=freeze, days=2, submitted_at=now))
        rows.append(
            ExceptionRequest(
                release=release, enhancement=k, milestone=enhancements_freeze, days=1, submitted_at=now,
                state="approved",
            )
        )  # fmt: skip
    created = ExceptionRequest.objects.bulk_create(rows)
    ExceptionRequestRevision.objects.bulk_create(
        ExceptionRequestRevision(request=r, number=1, created_at=now, days=r.days) for r in created
    )
    Decision.objects.bulk_create(
        Decision(
            request=r,
            outcome="approved",
            decided_at=now,
            granted_zone="Europe/Berlin",
            granted_until=r.milestone.deadline + dt.timedelta(days=2),
            freeze_at=r.milestone.deadline,
        )
        for r in created
        if r.state == "approved"
    )


def count_queries(path: str) -> tuple[int, int, bytes]:
    """(queries cold, queries warm, body). Cold: a new version, as after any write."""
    feed_version_bump()
    with CaptureQueriesContext(connection) as cold:
        response = get(path)
    assert response.status_code == 200
    with CaptureQueriesContext(connection) as warm:
        assert get(path).status_code == 200
    return len(cold), len(warm), response.content


@pytest.mark.parametrize(
    "path",
    ["/calendar/1.31.ics", "/calendar/1.31/sig/node.ics", "/calendar/kep/7000.ics", "/calendar/all.ics?since=2020"],
)
def test_a_feed_runs_the_same_queries_for_5_and_for_500_events(release, kinds, path):
    populate(release, kinds, milestones=1, requests=1)
    small_cold, small_warm, small = count_queries(path)
    populate(release, kinds, milestones=300, requests=100, first=8000)
    large_cold, large_warm, large = count_queries(path)
    if "7000" in path or "sig" in path:
        assert small.count(b"BEGIN:VEVENT") <= 10
    assert large.count(b"BEGIN:VEVENT") >= 300
    assert (large_cold, large_warm) == (small_cold, small_warm)
    assert large_warm == 1, "a warm public feed costs one query (the version) and a cache read"


def test_a_personal_feed_runs_the_same_queries_for_5_and_for_500_events(release, kinds):
    user = User.objects.create_user("owner")
    issued = feed_token_create(user=user)
    path = f"/calendar/u/{issued.token}.ics"
    populate(release, kinds, milestones=1, requests=1, owner=user)
    get(path)  # first use writes last_used_at once
    small = count_queries(path)
    populate(release, kinds, milestones=300, requests=150, first=8000, owner=user)
    get(path)  # as for the small one: the events' first publication (feeds/published.py) is written once
    large = count_queries(path)
    assert large[2].count(b"BEGIN:VEVENT") >= 500
    assert large[:2] == small[:2]
    assert large[1] == 2, "a warm personal feed: the token and the version, then a cache read"


# --------------------------------------------------------------- personal feeds


@pytest.fixture
def owner(kep) -> User:
    user = User.objects.create_user("kannon92", "kannon92@example.com", "pw")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=user)
    return user


def test_a_personal_feed_has_my_keps_and_the_releases_i_lead(owner, release, kinds, pending_request):
    from tests.support.feeds_data import aoe_release

    other = aoe_release(kinds)
    other.leads.add(owner)
    issued = feed_token_create(user=owner, label="laptop")
    response = get(f"/calendar/u/{issued.token}.ics")
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-cache"
    assert response["Content-Disposition"] == 'inline; filename="releasecal-my-feed.ics"'
    assert issued.token not in response["Content-Disposition"]
    text = response.content.decode()
    assert f"UID:releasecal-extension-{pending_request.pk}@releasecal.local" in text
    assert "SUMMARY:[1.31] Code Freeze\r\n" in text
    assert "SUMMARY:[1.35] Code Freeze (end of Thursday 6 November 2025 AoE)\r\n" in text


def test_the_token_is_stored_only_as_its_sha256(owner):
    import hashlib

    issued = feed_token_create(user=owner)
    assert len(issued.token) >= 43
    issued.row.refresh_from_db()
    assert issued.row.token_hash == hashlib.sha256(issued.token.encode()).hexdigest()
    assert issued.token not in str(issued.row.__dict__)


def test_a_wrong_token_is_a_404(owner, release):
    feed_token_create(user=owner)
    response = get("/calendar/u/not-a-real-token-at-all-0123456789abcdefghijk.ics")
    assert response.status_code == 404
    assert response.content == b"No feed at this address.\n"


def test_a_rotated_token_is_a_404_and_its_replacement_works(owner, release):
    old = feed_token_create(user=owner)
    assert get(f"/calendar/u/{old.token}.ics").status_code == 200
    new = feed_token_rotate(feed_token=old.row)
    assert get(f"/calendar/u/{old.token}.ics").status_code == 404
    assert get(f"/calendar/u/{new.token}.ics").status_code == 200
    old.row.refresh_from_db()
    assert old.row.replaced_by_id == new.row.pk


def test_a_revoked_token_and_an_inactive_user_are_a_404(owner, release):
    revoked = feed_token_create(user=owner)
    feed_token_revoke(feed_token=revoked.row)
    assert get(f"/calendar/u/{revoked.token}.ics").status_code == 404
    live = feed_token_create(user=owner)
    User.objects.filter(pk=owner.pk).update(is_active=False)
    assert get(f"/calendar/u/{live.token}.ics").status_code == 404


def test_wrong_and_revoked_tokens_take_the_same_path(owner, monkeypatch):
    """No early exit on format or state: every token is hashed, looked up by hash and
    compared in constant time, so response time cannot tell them apart."""
    import hmac

    from feeds import selectors as feed_selectors

    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(feed_selectors.hmac, "compare_digest", lambda a, b: calls.append(1) or real(a, b))
    revoked = feed_token_create(user=owner)
    feed_token_revoke(feed_token=revoked.row)
    for token in ("x", "short", revoked.token, "A" * 43):
        assert get(f"/calendar/u/{token}.ics").status_code == 404
    assert len(calls) == 4


def test_tokens_never_reach_the_request_log(owner, release, caplog):
    issued = feed_token_create(user=owner)
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            records.append(self.format(record))

    # Like every handler of settings.LOGGING: with the project's redacting filter (the
    # personal feed's 404 is logged like any other since _has_been_logged went).
    from config.logging import RedactSecretsFilter

    handler = Collect()
    handler.addFilter(RedactSecretsFilter())
    for name in ("django.request", "django.server", "django"):
        logging.getLogger(name).addHandler(handler)
    try:
        feed_token_revoke(feed_token=issued.row)
        assert get(f"/calendar/u/{issued.token}.ics").status_code == 404
        assert get("/calendar/u/guessing-a-token-value-here.ics").status_code == 404
        assert get("/calendar/9.99.ics").status_code == 404  # public 404s are still logged
    finally:
        for name in ("django.request", "django.server", "django"):
            logging.getLogger(name).removeHandler(handler)
    logged = "\n".join(records + [r.getMessage() for r in caplog.records])
    assert "/calendar/9.99.ics" in logged
    assert issued.token not in logged
    assert "guessing-a-token" not in logged


def test_last_used_is_recorded_at_most_hourly(owner, release):
    issued = feed_token_create(user=owner)
    get(f"/calendar/u/{issued.token}.ics")
    issued.row.refresh_from_db()
    first = issued.row.last_used_at
    assert first is not None
    with CaptureQueriesContext(connection) as queries:
        get(f"/calendar/u/{issued.token}.ics")
    assert not [q for q in queries if q["sql"].startswith("UPDATE")]
