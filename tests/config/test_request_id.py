"""The request id (config/request_id.py): from the proxy's X-Request-ID (or made here)
into the response, every log line of the request, and the Celery tasks it queues."""

from __future__ import annotations

import io
import json
import logging

import pytest

from config import request_id
from config.logging import JsonFormatter
from tests.support.processes import wait_for
from tests.support.reminders_helpers import redis_url_or_skip
from tests.support.slack import SIGNING_SECRET, signed_headers


def test_a_request_gets_an_id_in_its_response(client, db):
    made = client.get("/healthz")["X-Request-ID"]
    assert len(made) == 32
    assert client.get("/healthz")["X-Request-ID"] != made
    assert client.get("/api/v1/releases/", HTTP_X_REQUEST_ID="abc123-proxy.id")["X-Request-ID"] == "abc123-proxy.id"


@pytest.mark.parametrize("hostile", ["short", "has space in it", 'quote"d-value-0000', "x" * 129, "new\nline-000000"])
def test_an_id_that_is_not_a_plain_token_is_replaced(client, db, hostile):
    given = client.get("/healthz", HTTP_X_REQUEST_ID=hostile)["X-Request-ID"]
    assert given != hostile
    assert len(given) == 32


def test_every_log_line_of_a_request_carries_its_id(client, db):
    handler = logging.getLogger("django").handlers[0]
    written = io.StringIO()
    previous = handler.setStream(written)
    saved = handler.formatter
    handler.setFormatter(JsonFormatter())
    try:
        response = client.get("/calendar/9.99.ics", HTTP_X_REQUEST_ID="req-404-0001")
    finally:
        handler.setStream(previous)
        handler.setFormatter(saved)
    assert response.status_code == 404
    (line,) = [json.loads(line) for line in written.getvalue().splitlines() if "Not Found" in line]
    assert line["request_id"] == "req-404-0001"
    assert request_id.current() == ""  # nothing left bound after the request


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
@pytest.mark.timeout(240)
@pytest.mark.django_db(transaction=True)
def test_a_task_a_request_queued_runs_and_logs_under_the_requests_id(client, fake_slack, celery_queue, workers):
    """A real worker (JSON logs): the Slack event's request queues the Home tab's
    publish; the worker's lines about that task carry the request's id."""
    broker = redis_url_or_skip("CELERY_BROKER_URL")
    worker = workers(
        broker=broker,
        name="requestid",
        concurrency=1,
        env={
            "LOG_LEVEL": "INFO",
            "LOG_FORMAT": "json",
            "SLACK_API_URL": fake_slack.api_url,
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        },
    )
    body = json.dumps(
        {"type": "event_callback", "event": {"type": "app_home_opened", "user": "U0REQID", "tab": "home"}}
    ).encode()
    response = client.post(
        "/slack/events",
        data=body,
        content_type="application/json",
        HTTP_X_REQUEST_ID="req-home-tab-0001",
        **signed_headers(body),
    )
    assert response.status_code == 200
    assert response["X-Request-ID"] == "req-home-tab-0001"
    wait_for(lambda: fake_slack.matching(lambda call: call.method == "views.publish"), 90, "the Home tab's publish")

    def finished() -> list[dict]:
        lines = [json.loads(line) for line in worker.log_path.read_text().splitlines() if line.startswith("{")]
        return [line for line in lines if "slack_publish_home" in line["message"] and "succeeded" in line["message"]]

    (done,) = wait_for(finished, 60, "the worker's line of the finished task", worker.output)
    assert done["request_id"] == "req-home-tab-0001", done
    assert done["logger"] == "celery.app.trace"
