"""Real processes for the system tests: a throwaway database, the production settings'
environment, and subprocesses with log files (and their tails for failure messages). The
fake Slack is tests.support.fake_slack.FakeSlack.

Used by tests/test_production_shape.py, tests/test_e2e_system.py and tests/test_image.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT

VENV_BIN = Path(sys.executable).parent
COMPOSE = ROOT / "docker" / "compose.yml"


def production_env(**extra: str) -> dict[str, str]:
    """The environment of a production process: production settings and a random key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=secrets.token_urlsafe(60),
        ALLOWED_HOSTS="127.0.0.1,localhost,releasecal.example.org",
        PATH=f"{VENV_BIN}:{env.get('PATH', '')}",
    )
    env.update(extra)
    return env


def run(cmd: list[str], env: dict[str, str], timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def load_compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def compose_command(service: str, replacements: dict[str, str] | None = None) -> list[str]:
    """A service's start command exactly as docker/compose.yml writes it, with
    deployment-specific parts replaced (``{"${WORKER_CONCURRENCY:-4}": "2"}``)."""
    replacements = {"${WORKER_CONCURRENCY:-4}": "2", **(replacements or {})}
    command = load_compose()["services"][service]["command"]
    for old, new in replacements.items():
        command = [part.replace(old, new) for part in command]
    return command


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def gunicorn_port(log_path: Path) -> int | None:
    """The port gunicorn bound (started with GUNICORN_BIND=127.0.0.1:0, it logs
    "Listening at: http://127.0.0.1:<port>"), or None until it has."""
    match = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", log_path.read_text(errors="replace"))
    return int(match.group(1)) if match else None


def unavailable(reason: str) -> None:
    """Skip locally; under CI=true a missing service or browser is a failure."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run this test: {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def fresh_database(prefix: str, sqlite_path: Path) -> Iterator[str]:
    """A new, empty database, dropped afterwards: on the PostgreSQL server of
    DATABASE_URL when it is one (a sibling database named ``<prefix>_<random>``),
    otherwise a SQLite file at ``sqlite_path``."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        yield f"sqlite:///{sqlite_path}"
        return
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    base = url.rsplit("/", 1)[0]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def forget_queue(broker: str, queue: str) -> None:
    """Remove a test run's Celery queue and kombu's bindings for it from the broker."""
    import redis

    client = redis.Redis.from_url(broker)
    try:
        keys = list(client.scan_iter(match=f"*{queue}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def wait_for(predicate: Callable[[], object], timeout: float, what: str, details: Callable[[], str] = str) -> object:
    """Poll until ``predicate()`` is truthy (and return it); fail naming ``what``,
    with ``details()`` (e.g. the tails of the process logs) on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}\n{details()}")
        time.sleep(0.3)


def http_status(url: str, headers: dict[str, str] | None = None) -> int | None:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=3) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return None


# ------------------------------------------------------------------------ processes


class Process:
    """One subprocess in its own session, its output in a log file."""

    def __init__(self, name: str, cmd: list[str], *, env: dict[str, str], log_dir: Path) -> None:
        self.name = name
        self.cmd = cmd
        self.log_path = log_dir / f"{name}.log"
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def tail(self, lines: int = 25) -> str:
        text = "\n".join(self.output().splitlines()[-lines:])
        state = "running" if self.running else f"exited {self.proc.returncode}"
        return f"----- {self.name} ({state}), last {lines} lines of {self.log_path}:\n{text}"

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (graceful), then SIGKILL the whole process group if it lingers."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout)
        # Children (gunicorn workers, Celery pool processes) go with the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self._log.close()
        return self.proc.returncode


@dataclass
class Processes:
    """The processes of one system test; ``tails()`` for failure messages."""

    log_dir: Path
    started: list[Process] = field(default_factory=list)
    extra_details: list[Callable[[], str]] = field(default_factory=list)

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> Process:
        process = Process(name, cmd, env=env, log_dir=self.log_dir)
        self.started.append(process)
        return process

    def named(self, name: str) -> Process:
        return next(process for process in self.started if process.name == name)

    def tails(self, lines: int = 25) -> str:
        parts = [process.tail(lines) for process in self.started]
        parts += [detail() for detail in self.extra_details]
        return "\n".join(parts)

    def stop_all(self) -> dict[str, int | None]:
        codes = {}
        for process in reversed(self.started):
            codes[process.name] = process.stop()
        return codes
