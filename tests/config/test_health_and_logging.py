"""/healthz answers for the database and Redis; logs never carry secrets."""

from __future__ import annotations

import io
import json
import logging
import os
from unittest import mock

import pytest
from django.db import OperationalError
from django.test import override_settings

from config.logging import JsonFormatter, RedactSecretsFilter, redact

REDIS_URL = os.environ.get("REDIS_URL", "")
DEAD_REDIS = "redis://127.0.0.1:1/0"


@pytest.mark.django_db
def test_healthz_is_ok_when_database_and_redis_answer(client):
    if not REDIS_URL and os.environ.get("CI") == "true":
        pytest.fail("CI must set REDIS_URL")
    with override_settings(REDIS_URL=REDIS_URL):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["database"] == "ok"
    assert response.json()["checks"]["redis"] == ("ok" if REDIS_URL else "not configured")
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]


@pytest.mark.django_db
def test_healthz_is_503_when_redis_is_down(client):
    with override_settings(REDIS_URL=DEAD_REDIS):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "checks": {"database": "ok", "redis": "unavailable"}}
    assert "127.0.0.1:1" not in response.content.decode()


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_is_down(client):
    with mock.patch("config.health.connection.cursor", side_effect=OperationalError("connection refused")):
        response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "unavailable"


def test_healthz_refuses_post(client):
    assert client.post("/healthz").status_code == 405


@pytest.mark.parametrize(
    ("raw", "leaked"),
    [
        ("Not Found: /calendar/u/s3cr3t-token-value.ics", "s3cr3t-token-value"),
        ('"GET /calendar/u/AbC_dEf-123.ics HTTP/1.1" 404', "AbC_dEf-123"),
        ("Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"),
        ("posting with xoxb-1234-5678-abcdefghijkl", "xoxb-1234-5678-abcdefghijkl"),
        # Issue 13 item 9: percent-encoded paths, as the access log writes the request line.
        ('"GET /calendar/%75/Tok3n-AbC.ics HTTP/1.1" 404', "Tok3n-AbC"),
        ('"GET /calendar/%2575/Tok3n-AbC.ics HTTP/1.1" 404', "Tok3n-AbC"),
        ('"GET /calendar/%252575/Tok3n-AbC.ics HTTP/1.1" 404', "Tok3n-AbC"),
        ('"GET /%63alendar/u/Tok3n-AbC.ics HTTP/1.1" 200', "Tok3n-AbC"),
        ('"GET /calendar%2Fu%2FTok3n-AbC.ics HTTP/1.1" 404', "Tok3n-AbC"),
        ('"GET /calendar/U/Tok3n-AbC.ics HTTP/1.1" 404', "Tok3n-AbC"),
        ('"GET //calendar//u//Tok3n-AbC.ics HTTP/1.1" 404', "Tok3n-AbC"),
        ("Not Found: /calendar/%75/Tok3n-AbC.ics", "Tok3n-AbC"),
        ('"GET /?next=%2Fcalendar%2Fu%2FTok3n-AbC.ics HTTP/1.1" 302', "Tok3n-AbC"),
    ],
)
def test_redact_removes_tokens(raw, leaked):
    assert leaked not in redact(raw)
    assert "redacted" in redact(raw)


@override_settings(SECRET_KEY="a-very-secret-key-that-must-never-appear-in-a-log-line-000")
def test_secret_key_never_reaches_a_log_line():
    record = logging.LogRecord("x", logging.ERROR, __file__, 1, "settings: %s", (
        "a-very-secret-key-that-must-never-appear-in-a-log-line-000",
    ), None)  # fmt: skip
    assert RedactSecretsFilter().filter(record)
    line = JsonFormatter().format(record)
    assert "a-very-secret-key" not in line
    assert json.loads(line)["message"] == "settings: [redacted]"


def test_django_404_logging_of_a_personal_feed_is_redacted(client, caplog, db):
    handler = logging.getLogger("django").handlers[0]
    assert any(isinstance(f, RedactSecretsFilter) for f in handler.filters)
    record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "Not Found: %s",
                               ("/calendar/u/zzzSECRETzzz.ics",), None)  # fmt: skip
    handler.filters[0].filter(record)
    assert "zzzSECRETzzz" not in record.getMessage()


def test_a_personal_feed_404_is_logged_without_its_token(client, db):
    """django.request logs the 404 through the console handler; the token never shows."""
    handler = logging.getLogger("django").handlers[0]
    written = io.StringIO()
    previous = handler.setStream(written)
    try:
        response = client.get("/calendar/u/zzzSECRETzzz.ics")
    finally:
        handler.setStream(previous)
    assert response.status_code == 404
    assert "Not Found: /calendar/u/[redacted]" in written.getvalue()
    assert "zzzSECRETzzz" not in written.getvalue()


def test_a_404_of_a_doubly_encoded_feed_path_logs_no_token(client, db):
    # Issue 13 item 9: /calendar/%2575/<token>.ics reaches django.request's "Not Found"
    # decoded once, as /calendar/%75/<token>.ics.
    handler = logging.getLogger("django").handlers[0]
    written = io.StringIO()
    previous = handler.setStream(written)
    try:
        response = client.get("/calendar/%2575/zzzSECRETzzz.ics")
    finally:
        handler.setStream(previous)
    assert response.status_code == 404
    assert "Not Found: /calendar/u/[redacted]" in written.getvalue()
    assert "zzzSECRETzzz" not in written.getvalue()


def test_a_plain_path_is_left_alone():
    line = '"GET /calendar/1.31.ics?x=%20y HTTP/1.1" 200'
    assert redact(line) == line
