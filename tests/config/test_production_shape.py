"""The production shape: settings that pass `check --deploy`, a compose file valid against
the Compose specification, and the image's start commands run as real processes."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.processes import (
    COMPOSE,
    ROOT,
    VENV_BIN,
    compose_command,
    fresh_database,
    gunicorn_port,
    http_status,
    load_compose,
    production_env,
    run,
    wait_for,
)

DOCKERFILE = ROOT / "docker" / "Dockerfile"


# --------------------------------------------------------------------------- settings


def test_check_deploy_passes_with_production_settings():
    result = run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], production_env())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.parametrize("key", ["", "short", "dev-only-not-secret-releasecal-embedded-default"])
def test_production_refuses_a_missing_or_weak_secret_key(key):
    env = production_env()
    if key:
        env["SECRET_KEY"] = key
    else:
        env.pop("SECRET_KEY")
    result = run([sys.executable, "manage.py", "check"], env)
    assert result.returncode != 0
    assert "Set SECRET_KEY to a random value" in result.stderr


@pytest.mark.parametrize("value", ["0", "121", "-5"])
def test_a_sweep_interval_out_of_range_is_refused_at_start(value):
    result = run([sys.executable, "manage.py", "check"], {**production_env(), "OUTBOX_SWEEP_SECONDS": value})
    assert result.returncode != 0
    assert f"OUTBOX_SWEEP_SECONDS must be 1 to 120, not {value}" in result.stderr


def test_the_sweep_interval_sets_every_sweep_of_beat():
    code = (
        "from django.conf import settings as s; "
        "print(sorted((k, v['schedule'], v['options']['expires']) "
        "for k, v in s.CELERY_BEAT_SCHEDULE.items() if k.endswith('-sweep')))"
    )
    env = {**production_env(), "OUTBOX_SWEEP_SECONDS": "20"}
    result = run([sys.executable, "manage.py", "shell", "-c", code], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "[('github-board-sweep', 20.0, 15.0), ('github-issue-comments-sweep', 20.0, 15.0), "
        "('notices-sweep', 20.0, 15.0), ('reminders-sweep', 20.0, 15.0), ('slack-sweep', 20.0, 15.0)]"
    )


def test_production_settings_are_hardened():
    code = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_HSTS_SECONDS >= 31536000, s.SECURE_PROXY_SSL_HEADER, "
        "'whitenoise.middleware.WhiteNoiseMiddleware' in s.MIDDLEWARE)"
    )
    result = run([sys.executable, "-c", f"import django; django.setup(); {code}"], production_env())
    assert result.returncode == 0, result.stderr
    # No SECURE_PROXY_SSL_HEADER: gunicorn decides what came over HTTPS (FORWARDED_ALLOW_IPS).
    assert result.stdout.strip() == "False True True True True None True"


# --------------------------------------------------------------------------- compose


def test_compose_file_is_valid_against_the_compose_specification():
    result = run(
        [str(VENV_BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(COMPOSE)], {**os.environ}
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_has_every_service_with_healthcheck_and_restart_policy():
    services = load_compose()["services"]
    assert set(services) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    for name, service in services.items():
        assert "restart" in service, name
        if name != "migrate":
            assert service["healthcheck"]["test"], name
    assert services["migrate"]["restart"] == "no"
    assert services["beat"]["deploy"]["replicas"] == 1


def test_compose_reuses_one_service_definition():
    text = COMPOSE.read_text()
    assert "x-app: &app" in text
    assert text.count("<<: *app") == 4  # migrate, web, worker, beat
    services = load_compose()["services"]
    images = {services[name]["image"] for name in ("migrate", "web", "worker", "beat")}
    assert len(images) == 1


def test_compose_publishes_the_web_port_on_loopback_unless_told_otherwise():
    (ports,) = load_compose()["services"]["web"]["ports"]
    assert ports == "${WEB_BIND:-127.0.0.1}:${WEB_PORT:-8000}:8000"
    for name, service in load_compose()["services"].items():
        if name != "web":
            assert "ports" not in service, name


def test_dockerfile_is_multi_stage_non_root_with_healthcheck_and_collectstatic():
    text = DOCKERFILE.read_text()
    assert text.count("\nFROM ") >= 2
    assert "AS build" in text
    assert "AS runtime" in text
    assert "\nUSER app" in text
    assert "HEALTHCHECK" in text
    assert "/readyz" in text
    assert "collectstatic --noinput" in text
    assert "slim" in text


# --------------------------------------------------------------------------- processes


@pytest.fixture
def production_database(tmp_path):
    """A fresh, empty database for the migrate job: PostgreSQL when DATABASE_URL is one."""
    with fresh_database("releasecal_shape", sqlite_path=tmp_path / "shape.sqlite3") as url:
        yield url


POD_IP_HOST = "10.244.3.17:8000"  # what a kubelet's probe and Prometheus' scrape send as Host
METRICS_TOKEN = "metrics-token-for-the-production-shape-test"


@pytest.mark.slow
def test_migrate_then_gunicorn_serves_probes_metrics_and_json_logs(production_database, tmp_path):
    """Production gunicorn (2 workers) behind a proxy at 127.0.0.1 (FORWARDED_ALLOW_IPS):
    the probes answer plain HTTP for the pod's IP, a spoofed X-Forwarded-Proto from
    another peer is not believed, /metrics sums both workers, every log line is JSON."""
    redis_url = os.environ.get("REDIS_URL", "")
    env = production_env(
        DATABASE_URL=production_database,
        STATIC_ROOT=str(tmp_path / "static"),
        RELEASECAL_VAR_DIR=str(tmp_path / "var"),
        GUNICORN_BIND="127.0.0.1:0",  # gunicorn binds a free port itself; read back from its log
        WEB_CONCURRENCY="2",
        FORWARDED_ALLOW_IPS="127.0.0.1",  # the proxy; a client at 127.0.0.2 reaches gunicorn directly
        LOG_FORMAT="json",
        METRICS_TOKEN=METRICS_TOKEN,
        **({"REDIS_URL": redis_url} if redis_url else {}),
    )
    migrate = run(compose_command("migrate"), env, timeout=300)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    collect = run([sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"], env)
    assert collect.returncode == 0, collect.stderr

    log = (tmp_path / "gunicorn.log").open("w")
    web = subprocess.Popen(compose_command("web"), cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        port = wait_for(lambda: gunicorn_port(tmp_path / "gunicorn.log"), 60, "gunicorn listening")
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: http_status(f"{base}/healthz") == 200, 60, "gunicorn /healthz")
        # Compose's web health check, run as it is written (it reads the port from GUNICORN_BIND).
        healthcheck = load_compose()["services"]["web"]["healthcheck"]["test"]
        assert healthcheck[0] == "CMD"
        assert run(healthcheck[1:], {**env, "GUNICORN_BIND": f"127.0.0.1:{port}"}).returncode == 0
        # The kubelet's probes: plain HTTP, the pod's IP as Host, never redirected.
        for path in ("/healthz", "/readyz"):
            assert raw_get(port, path, {"Host": POD_IP_HOST})[0] == 200, path
        assert raw_get(port, "/admin/login/", {"Host": POD_IP_HOST, "X-Forwarded-Proto": "https"})[0] == 400
        # Behind the proxy: plain HTTP redirects to HTTPS, with HSTS once secure.
        assert http_status_no_redirect(f"{base}/admin/login/") == 301
        # A client reaching gunicorn directly (not the proxy) cannot pass for HTTPS.
        status, headers, _ = raw_get(port, "/admin/login/", PROXY_HEADERS, source="127.0.0.2")
        assert status == 301, "a spoofed X-Forwarded-Proto from a peer that is not the proxy was believed"
        assert headers["Location"].startswith("https://")
        assert "Strict-Transport-Security" not in headers
        # Through the proxy (X-Forwarded-Proto: https): pages carry HSTS, and static
        # files come from WhiteNoise in the same process, compressed and cached.
        logins = 12
        for number in range(logins):
            given = {**PROXY_HEADERS, "X-Request-ID": f"shape-{number:04d}"}
            status, headers, _ = raw_get(port, "/login/", given)
            assert status == 200, headers
            assert "max-age=31536000" in headers["Strict-Transport-Security"]
            assert headers["X-Request-ID"] == f"shape-{number:04d}"
        static = urllib.request.urlopen(via_proxy(f"{base}/static/admin/css/base.css"), timeout=5)
        assert static.status == 200
        assert "max-age" in static.headers["Cache-Control"]
        assert raw_get(port, "/calendar/u/zzzSECRETzzz.ics", PROXY_HEADERS)[0] == 404

        # /metrics: refused without the token; with it, every scrape (whichever of the
        # two workers answers it) counts every request of both.
        assert raw_get(port, "/metrics", {"Host": POD_IP_HOST})[0] == 401
        assert raw_get(port, "/metrics", {"Host": POD_IP_HOST, "Authorization": "Bearer wrong"})[0] == 401
        seen = set()
        for _ in range(6):
            status, headers, body = raw_get(
                port, "/metrics", {"Host": POD_IP_HOST, "Authorization": f"Bearer {METRICS_TOKEN}"}
            )
            assert status == 200
            assert headers["Content-Type"].startswith("text/plain; version=")
            seen.add(sample(body, "releasecal_http_request_duration_seconds_count", view="people:login", status="2xx"))
            assert sample(body, "releasecal_database_up") == 1
        assert seen == {logins}, seen
    finally:
        web.send_signal(signal.SIGTERM)
        code = web.wait(timeout=40)
        log.close()
    output = (tmp_path / "gunicorn.log").read_text()
    assert code == 0, output
    lines = [json.loads(line) for line in output.splitlines() if line.strip()]  # every line is JSON
    assert all({"ts", "level", "logger", "message"} <= line.keys() for line in lines)
    assert any(line["logger"] == "gunicorn.error" and "Shutting down: Master" in line["message"] for line in lines)
    access = [line for line in lines if line["logger"] == "gunicorn.access"]
    first = next(line for line in access if line.get("request_id") == "shape-0000")
    assert (first["method"], first["path"], first["status"]) == ("GET", "/login/", 200)
    assert first["remote_addr"] == "127.0.0.1"
    assert isinstance(first["duration_ms"], float)
    assert all(len(line["request_id"]) == 32 for line in access if line["path"] == "/healthz")  # one made for each
    assert "zzzSECRETzzz" not in output
    assert any(line["path"] == "/calendar/u/[redacted]" for line in access)


PROXY_HEADERS = {"Host": "releasecal.example.org", "X-Forwarded-Proto": "https"}


def raw_get(port: int, path: str, headers: dict[str, str], *, source: str = "127.0.0.1"):
    """GET from a chosen loopback address (127.0.0.2 is not the trusted proxy): status,
    headers, body; redirects are not followed."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def sample(body: bytes, name: str, **labels: str) -> float | None:
    """One sample's value from a Prometheus text exposition (None when absent)."""
    for family in text_string_to_metric_families(body.decode()):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return found.value
    return None


def test_healthcheck_fails_when_nothing_answers_on_the_bound_port():
    # A port held bound but not listening: connections are refused, and no other process
    # can start listening there while the check runs.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        env = {**os.environ, "GUNICORN_BIND": f"127.0.0.1:{closed.getsockname()[1]}"}
        result = run([sys.executable, "docker/healthcheck.py"], env, timeout=30)
    assert result.returncode == 1
    assert "healthcheck:" in result.stderr


def via_proxy(url: str) -> urllib.request.Request:
    return urllib.request.Request(url, headers={"X-Forwarded-Proto": "https", "Host": "releasecal.example.org"})


def http_status_no_redirect(url: str) -> int | None:
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url, timeout=3) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code


def test_start_commands_are_argument_lists():
    for name in ("migrate", "web", "worker", "beat"):
        command = load_compose()["services"][name]["command"]
        assert isinstance(command, list), name
        assert shlex.join(command)
