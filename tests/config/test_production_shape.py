"""The production shape: settings that pass `check --deploy`, a compose file valid against
the Compose specification, and the image's start commands run as real processes."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

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
    result = run([sys.executable, "manage.py", "check"], {**production_env(), "REMINDERS_SWEEP_SECONDS": value})
    assert result.returncode != 0
    assert f"REMINDERS_SWEEP_SECONDS must be 1 to 120, not {value}" in result.stderr


def test_the_sweep_interval_sets_both_sweeps_of_beat():
    code = (
        "from django.conf import settings as s; "
        "print(sorted((k, v['schedule'], v['options']['expires']) "
        "for k, v in s.CELERY_BEAT_SCHEDULE.items() if k.endswith('-sweep')))"
    )
    env = {**production_env(), "REMINDERS_SWEEP_SECONDS": "20"}
    result = run([sys.executable, "manage.py", "shell", "-c", code], env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[('notices-sweep', 20.0, 15.0), ('reminders-sweep', 20.0, 15.0)]"


def test_production_settings_are_hardened():
    code = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_HSTS_SECONDS >= 31536000, s.SECURE_PROXY_SSL_HEADER, "
        "'whitenoise.middleware.WhiteNoiseMiddleware' in s.MIDDLEWARE)"
    )
    result = run([sys.executable, "-c", f"import django; django.setup(); {code}"], production_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False True True True True ('HTTP_X_FORWARDED_PROTO', 'https') True"


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
    assert "/healthz" in text
    assert "collectstatic --noinput" in text
    assert "slim" in text


# --------------------------------------------------------------------------- processes


@pytest.fixture
def production_database(tmp_path):
    """A fresh, empty database for the migrate job: PostgreSQL when DATABASE_URL is one."""
    with fresh_database("releasecal_shape", sqlite_path=tmp_path / "shape.sqlite3") as url:
        yield url


@pytest.mark.slow
def test_migrate_then_gunicorn_serves_health_and_stops_gracefully(production_database, tmp_path):
    redis_url = os.environ.get("REDIS_URL", "")
    env = production_env(
        DATABASE_URL=production_database,
        STATIC_ROOT=str(tmp_path / "static"),
        GUNICORN_BIND="127.0.0.1:0",  # gunicorn binds a free port itself; read back from its log
        WEB_CONCURRENCY="2",
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
        wait_for(lambda: http_status(f"http://127.0.0.1:{port}/healthz") == 200, 60, "gunicorn /healthz")
        # Compose's web health check, run as it is written (it reads the port from GUNICORN_BIND).
        healthcheck = load_compose()["services"]["web"]["healthcheck"]["test"]
        assert healthcheck[0] == "CMD"
        assert run(healthcheck[1:], {**env, "GUNICORN_BIND": f"127.0.0.1:{port}"}).returncode == 0
        # Behind the proxy: plain HTTP elsewhere redirects to HTTPS, with HSTS once secure.
        assert http_status_no_redirect(f"http://127.0.0.1:{port}/admin/login/") == 301
        # Through the proxy (X-Forwarded-Proto: https): pages carry HSTS, and static
        # files come from WhiteNoise in the same process, compressed and cached.
        page = urllib.request.urlopen(via_proxy(f"http://127.0.0.1:{port}/admin/login/"), timeout=5)
        assert page.status == 200
        assert "max-age=31536000" in page.headers["Strict-Transport-Security"]
        static = urllib.request.urlopen(via_proxy(f"http://127.0.0.1:{port}/static/admin/css/base.css"), timeout=5)
        assert static.status == 200
        assert "max-age" in static.headers["Cache-Control"]
    finally:
        web.send_signal(signal.SIGTERM)
        code = web.wait(timeout=40)
        log.close()
    output = (tmp_path / "gunicorn.log").read_text()
    assert code == 0, output
    assert "Shutting down: Master" in output


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
