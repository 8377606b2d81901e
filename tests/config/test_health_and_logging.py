"""The probes (/healthz: the process answers; /readyz: database, migrations, Redis), for
any Host; logs never carry secrets."""

from __future__ import annotations

import io
import json
import logging
import os
from unittest import mock

import pytest
from django.conf import settings
from django.db import OperationalError
from django.test import override_settings

from config import health
from config.logging import JsonFormatter, RedactSecretsFilter, redact

REDIS_URL = os.environ.get("REDIS_URL", "")
DEAD_REDIS = "redis://127.0.0.1:1/0"


POD_IP_HOST = "10.244.3.17:8000"  # what a kubelet's httpGet probe sends as Host


def _cache_expected() -> str:
    if not REDIS_URL and os.environ.get("CI") == "true":
        pytest.fail("CI must set REDIS_URL")
    return "ok" if REDIS_URL else "not configured"


# ------------------------------------------------------------------ /healthz: liveness


def test_healthz_answers_without_asking_the_database_or_redis(client):
    with (
        override_settings(REDIS_URL=DEAD_REDIS),
        mock.patch("config.health.connection.cursor", side_effect=OperationalError("connection refused")),
    ):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"] or "max-age=0" in response["Cache-Control"]


def test_healthz_and_readyz_answer_a_kubelet_that_sends_the_pod_ip_as_host(client, db):
    assert POD_IP_HOST.split(":")[0] not in settings.ALLOWED_HOSTS
    with override_settings(REDIS_URL=REDIS_URL):
        for path in ("/healthz", "/readyz"):
            response = client.get(path, HTTP_HOST=POD_IP_HOST)
            assert response.status_code == 200, (path, response.content)
    # Only the probes: the site itself still refuses the host.
    for path in ("/", "/api/v1/releases/", "/calendar/all.ics", "/healthz/", "/readyz.json", "/admin/login/"):
        assert client.get(path, HTTP_HOST=POD_IP_HOST).status_code == 400, path


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_the_probes_refuse_post(client, path):
    response = client.post(path)
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD"


def test_head_of_healthz_has_no_body(client):
    response = client.head("/healthz")
    assert response.status_code == 200
    assert response.content == b""


# ---------------------------------------------------------------- /readyz: readiness


@pytest.mark.django_db
def test_readyz_is_ok_when_the_database_is_migrated_and_redis_answers(client):
    expected = _cache_expected()
    with override_settings(REDIS_URL=REDIS_URL):
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "migrations": "ok", "redis": expected},
    }


@pytest.mark.django_db
def test_readyz_is_503_while_a_migration_is_unapplied(client):
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    recorder = MigrationRecorder(connection)
    latest = max(name for app, name in recorder.applied_migrations() if app == "reminders")
    recorder.record_unapplied("reminders", latest)  # rolled back with the test
    with override_settings(REDIS_URL=REDIS_URL):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["migrations"] == "1 unapplied (run the migrate job)"
    assert response.json()["checks"]["database"] == "ok"


@pytest.mark.django_db
def test_readyz_loads_the_migration_graph_once_while_the_ledger_is_unchanged(client):
    """The graph costs ~25 ms to load from disk: a probe after a full check asks one small
    query about django_migrations instead (and reuses its Redis connection)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with override_settings(REDIS_URL=REDIS_URL):
        assert client.get("/readyz").status_code == 200  # the full check, remembered
        with (
            mock.patch("config.health.MigrationExecutor", side_effect=AssertionError("graph loaded again")),
            mock.patch("redis.Redis.from_url", side_effect=AssertionError("new Redis client")),
            CaptureQueriesContext(connection) as queries,
        ):
            response = client.get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"]["migrations"] == "ok"
    assert len(queries) == 2  # SELECT 1, and the ledger's count and highest id


@pytest.mark.django_db
def test_readyz_notices_a_migration_rolled_back_after_it_said_ready(client):
    from django.db import connection
    from django.db.migrations.recorder import MigrationRecorder

    with override_settings(REDIS_URL=REDIS_URL):
        assert client.get("/readyz").status_code == 200
        recorder = MigrationRecorder(connection)
        latest = max(name for app, name in recorder.applied_migrations() if app == "reminders")
        recorder.record_unapplied("reminders", latest)  # rolled back with the test
        response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["checks"]["migrations"] == "1 unapplied (run the migrate job)"
        recorder.record_applied("reminders", latest)  # applied again: a new row, a higher id
        assert client.get("/readyz").status_code == 200


@pytest.mark.django_db
def test_readyz_checks_in_full_again_after_the_ledger_could_not_be_read(client):
    with override_settings(REDIS_URL=REDIS_URL):
        assert client.get("/readyz").status_code == 200
        with mock.patch("config.health._migration_ledger", side_effect=OperationalError("gone")):
            response = client.get("/readyz")
        assert response.status_code == 503
        assert response.json()["checks"]["migrations"] == "unavailable"
        with mock.patch.object(health, "MigrationExecutor", wraps=health.MigrationExecutor) as full:
            assert client.get("/readyz").status_code == 200
        assert full.called


@pytest.mark.django_db
def test_readyz_is_503_when_redis_is_down(client):
    with override_settings(REDIS_URL=DEAD_REDIS):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "ok", "migrations": "ok", "redis": "unavailable"},
    }
    assert "127.0.0.1:1" not in response.content.decode()


@pytest.mark.django_db
def test_readyz_stays_ready_without_redis_when_the_cache_is_declared_optional(client):
    with override_settings(REDIS_URL=DEAD_REDIS, READYZ_CACHE_OPTIONAL=True):
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"]["redis"] == "unavailable (optional)"


@pytest.mark.django_db
def test_readyz_is_503_when_the_database_is_down(client):
    with mock.patch("config.health.connection.cursor", side_effect=OperationalError("connection refused")):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "unavailable"


@pytest.mark.django_db
def test_check_services_still_asks_the_database_and_redis(capsys):
    from django.core.management import CommandError, call_command

    with override_settings(REDIS_URL=DEAD_REDIS), pytest.raises(CommandError, match="redis: unavailable"):
        call_command("check_services")
    expected = _cache_expected()
    with override_settings(REDIS_URL=REDIS_URL):
        call_command("check_services")
    assert f"healthy (database: ok, redis: {expected})" in capsys.readouterr().out


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
        # Issue 29 item 15: Slack link tokens (signed: base64 and colons), also in a ?next=.
        ('"GET /slack/link/eyJ1IjoiVTAifQ:1tXy2Z:Ab-c_D HTTP/1.1" 302', "eyJ1IjoiVTAifQ:1tXy2Z:Ab-c_D"),
        ('"POST /slack/link/eyJ1IjoiVTAifQ:1tXy2Z:Ab-c_D/ HTTP/1.1" 200', "eyJ1IjoiVTAifQ:1tXy2Z:Ab-c_D"),
        ('"GET /login/?next=/slack/link/eyJ1IjoiVTAifQ:1tXy2Z:Ab-c_D HTTP/1.1" 200', "eyJ1IjoiVTAifQ"),
        ('"GET /login/?next=%2Fslack%2Flink%2FeyJ1IjoiVTAifQ%3A1tXy2Z%3AAb-c_D HTTP/1.1" 200', "eyJ1IjoiVTAifQ"),
        ('"GET /slack/link/login?next=%252Fslack%252Flink%252FeyJ1IjoiVTAifQ HTTP/1.1" 302', "eyJ1IjoiVTAifQ"),
        ("Forbidden (CSRF token missing.): /slack/link/eyJ1IjoiVTAifQ:1tXy2Z:Ab-c_D", "eyJ1IjoiVTAifQ"),
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


@pytest.mark.parametrize(
    "line", ['"GET /slack/link/login?next=/me/ HTTP/1.1" 302', '"POST /slack/commands HTTP/1.1" 200']
)
def test_slack_paths_without_a_token_are_left_alone(line):
    assert redact(line) == line
