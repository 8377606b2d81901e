"""/metrics: who may scrape it, and what each figure counts (config/metrics.py).

The multiprocess mode under gunicorn (every scrape sums both workers) is tested with
production gunicorn in tests/config/test_production_shape.py."""

from __future__ import annotations

import datetime as dt
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import override_settings
from prometheus_client.parser import text_string_to_metric_families

from github.models import Board, BoardWrite
from intake.models import IntakeProblem, MailboxState
from notices.models import NoticeDelivery, ScheduleNotice
from releasecal import tz
from reminders.liveness import sweep_completed
from reminders.models import Channel, Delivery

TOKEN = "a-metrics-token-of-the-tests"
POD_IP_HOST = "10.244.3.17:8000"
pytestmark = pytest.mark.django_db


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST=POD_IP_HOST, **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    return {
        (found.name, tuple(sorted(found.labels.items()))): found.value
        for family in text_string_to_metric_families(response.content.decode())
        for found in family.samples
    }


def value(samples, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


# ------------------------------------------------------------------ who may scrape


def test_metrics_are_refused_while_neither_a_token_nor_addresses_are_set(client):
    with override_settings(METRICS_TOKEN="", METRICS_ALLOW_IPS=[]):
        response = client.get("/metrics")
    assert response.status_code == 403
    assert b"set METRICS_TOKEN or METRICS_ALLOW_IPS" in response.content


@override_settings(METRICS_TOKEN=TOKEN, METRICS_ALLOW_IPS=[])
@pytest.mark.parametrize(
    "authorization", [None, "Bearer", "Bearer wrong", f"Token {TOKEN}", f"Bearer {TOKEN}x", f"Basic {TOKEN}"]
)
def test_a_scrape_without_the_token_is_401(client, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}
    response = client.get("/metrics", HTTP_HOST=POD_IP_HOST, **headers)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert b"releasecal_" not in response.content


@override_settings(METRICS_TOKEN=TOKEN)
def test_a_scrape_with_the_token_gets_the_figures_for_the_pods_ip_as_host(client):
    samples = scrape(client)
    assert value(samples, "releasecal_database_up") == 1
    assert client.post("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 405


@override_settings(METRICS_TOKEN="", METRICS_ALLOW_IPS=["10.8.0.0/16", "192.0.2.7"])
def test_an_allowed_address_scrapes_without_a_token_and_a_forwarded_header_counts_for_nothing(client):
    assert client.get("/metrics", REMOTE_ADDR="10.8.3.4").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.0.2.7").status_code == 200
    refused = client.get("/metrics", REMOTE_ADDR="10.9.0.1", HTTP_X_FORWARDED_FOR="10.8.3.4")
    assert refused.status_code == 403
    assert b"METRICS_ALLOW_IPS" in refused.content


# ------------------------------------------------------------------ what is counted


@override_settings(METRICS_TOKEN=TOKEN)
def test_request_latency_is_counted_per_view(client, release):
    before = scrape(client)
    for _ in range(3):
        assert client.get("/api/v1/releases/").status_code == 200
    assert client.get("/no/such/page/").status_code == 404
    after = scrape(client)
    name = "releasecal_http_request_duration_seconds_count"

    def delta(**labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta(view="v1:release-list", method="GET", status="2xx") == 3
    assert delta(view="unmatched", method="GET", status="4xx") == 1
    assert value(after, "releasecal_http_request_duration_seconds_bucket", view="v1:release-list", method="GET",
                 status="2xx", le="+Inf") >= 3  # fmt: skip
    # The probes and the scrape themselves are not counted.
    assert not [key for key in after if key[0] == name and "metrics" in str(key)]


@override_settings(METRICS_TOKEN=TOKEN)
def test_feed_cache_hits_misses_and_304s_are_counted(client, release):
    before = scrape(client)
    first = client.get("/calendar/1.31.ics")  # built and stored
    second = client.get("/calendar/1.31.ics")  # from the cache
    revalidated = client.get("/calendar/1.31.ics", HTTP_IF_NONE_MATCH=first["ETag"])  # from the cache, 304
    assert (first.status_code, second.status_code, revalidated.status_code) == (200, 200, 304)
    assert client.get("/calendar/9.99.ics").status_code == 404
    after = scrape(client)

    def delta(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("releasecal_feed_cache_lookups_total", result="miss") == 2  # the first 200 and the 404
    assert delta("releasecal_feed_cache_lookups_total", result="hit") == 2
    assert delta("releasecal_feed_responses_total", status="200") == 2
    assert delta("releasecal_feed_responses_total", status="304") == 1
    assert delta("releasecal_feed_responses_total", status="404") == 1


@override_settings(METRICS_TOKEN=TOKEN)
def test_each_outbox_shows_its_pending_failed_and_oldest_due_age(client, code_freeze):
    now = tz.utc_now()
    channel = Channel.objects.create(name="metrics", kind="email", config={"to": "team@example.com"})

    def delivery(offset: str, due_minutes_ago: float, state: str = "pending"):
        return Delivery.objects.create(
            milestone=code_freeze, channel=channel, offset=offset, recipient="", state=state,
            due_at=now - dt.timedelta(minutes=due_minutes_ago), deadline_at=code_freeze.at, deadline_zone="UTC",
        )  # fmt: skip

    delivery("3d", 30)  # pending, due 30 minutes ago: the oldest
    delivery("1d", 2)
    delivery("2h", -60)  # pending, due in an hour: pending but not late
    delivery("1h", 90, state="failed")
    delivery("0", 100, state="sent")
    notice = ScheduleNotice.objects.create(key="m:1:1", kind="moved", release=code_freeze.release, title="moved")
    NoticeDelivery.objects.create(notice=notice, recipient="channel:C1", state="failed")
    NoticeDelivery.objects.create(notice=notice, recipient="channel:C2", state="sending")

    samples = scrape(client)
    assert value(samples, "releasecal_outbox_pending", outbox="reminders") == 3
    assert value(samples, "releasecal_outbox_failed", outbox="reminders") == 1
    assert value(samples, "releasecal_outbox_sending", outbox="reminders") == 0
    age = value(samples, "releasecal_outbox_oldest_pending_age_seconds", outbox="reminders")
    assert 30 * 60 <= age < 30 * 60 + 120, age
    assert value(samples, "releasecal_outbox_pending", outbox="notices") == 0
    assert value(samples, "releasecal_outbox_failed", outbox="notices") == 1
    assert value(samples, "releasecal_outbox_sending", outbox="notices") == 1
    assert value(samples, "releasecal_outbox_oldest_pending_age_seconds", outbox="notices") == 0


@override_settings(METRICS_TOKEN=TOKEN)
def test_the_board_writes_are_an_outbox_and_each_boards_sync_lag_is_shown(client, pending_request):
    release = pending_request.milestone.release
    board = Board.objects.create(release=release, owner="kubernetes", number=241, mode=Board.Mode.READ_WRITE)
    samples = scrape(client)
    assert value(samples, "releasecal_github_board_sync_lag_seconds", release=release.slug) == -1
    assert value(samples, "releasecal_github_board_reachable", release=release.slug) == -1

    BoardWrite.objects.create(board=board, request=pending_request, event="submitted", state="failed")
    BoardWrite.objects.create(board=board, request=pending_request, event="decided", state="pending")
    Board.objects.filter(pk=board.pk).update(last_synced_at=tz.utc_now() - dt.timedelta(seconds=90), reachable=False)
    samples = scrape(client)
    assert value(samples, "releasecal_outbox_failed", outbox="board") == 1
    assert value(samples, "releasecal_outbox_pending", outbox="board") == 1
    assert 90 <= value(samples, "releasecal_github_board_sync_lag_seconds", release=release.slug) < 150
    assert value(samples, "releasecal_github_board_reachable", release=release.slug) == 0

    Board.objects.filter(pk=board.pk).update(mode=Board.Mode.OFF)
    off = scrape(client)
    assert ("releasecal_github_board_sync_lag_seconds", (("release", release.slug),)) not in off


@override_settings(METRICS_TOKEN=TOKEN, OUTBOX_SWEEP_SECONDS=60.0)
def test_the_sweeps_last_completion_and_lag(client):
    never = scrape(client)
    assert value(never, "releasecal_sweep_last_completed_timestamp_seconds") == 0
    assert value(never, "releasecal_sweep_lag_seconds") == -1
    at = tz.utc_now() - dt.timedelta(seconds=90)
    sweep_completed(at=at)
    samples = scrape(client)
    assert value(samples, "releasecal_sweep_last_completed_timestamp_seconds") == pytest.approx(at.timestamp())
    assert 90 <= value(samples, "releasecal_sweep_lag_seconds") < 150
    assert value(samples, "releasecal_sweep_interval_seconds") == 60


@override_settings(METRICS_TOKEN=TOKEN)
def test_intake_problems_and_failed_polls(client):
    now = tz.utc_now()
    box = MailboxState.objects.create(mailbox="me@imap.example.org:993/INBOX", failures=3, last_success_at=now)
    for resolved in (None, None, now):
        IntakeProblem.objects.create(mailbox=box, reason="no KEP named", created_at=now, resolved_at=resolved)
    samples = scrape(client)
    assert value(samples, "releasecal_intake_problems_open") == 2
    assert value(samples, "releasecal_intake_poll_failures") == 3
    assert value(samples, "releasecal_intake_last_success_timestamp_seconds") == pytest.approx(now.timestamp())


@override_settings(METRICS_TOKEN=TOKEN)
def test_a_scrape_while_the_database_is_down_says_so_and_is_no_500(client):
    with mock.patch("reminders.liveness.last_sweep_at", side_effect=OperationalError("connection refused")):
        samples = scrape(client)
    assert value(samples, "releasecal_database_up") == 0
    assert not [key for key in samples if key[0].startswith("releasecal_outbox")]


@override_settings(METRICS_TOKEN=TOKEN)
def test_the_slack_ledger_is_an_outbox(client, pending_request):
    from slack_integration.models import SlackWork

    SlackWork.objects.create(request=pending_request, kind="dm", event="approved", key="dm:approved", state="failed")
    SlackWork.objects.create(request=pending_request, kind="update", key="update:1", state="pending")
    samples = scrape(client)
    assert value(samples, "releasecal_outbox_failed", outbox="slack") == 1
    assert value(samples, "releasecal_outbox_pending", outbox="slack") == 1
