"""Real processes for the system tests: a throwaway database, the production settings'
environment, subprocesses with log files (and their tails for failure messages), and a
recording fake Slack.

Used by tests/test_production_shape.py and tests/test_e2e_system.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
COMPOSE = ROOT / "docker" / "compose.yml"


def production_env(**extra: str) -> dict[str, str]:
    """The environment of a production process: production settings and a random key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        DJANGO_SETTINGS_MODULE="releasecal.settings_production",
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


# ------------------------------------------------------------------------ fake Slack


@dataclass
class SlackCall:
    at: float  # time.time() on receipt
    path: str
    authorization: str
    body: bytes
    data: dict
    reply: dict = field(default_factory=dict)  # what the fake answered (Web API calls)

    @property
    def method(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def text(self) -> str:
        """The fallback text and every block's text, for searching."""
        return json.dumps({"text": self.data.get("text", ""), "blocks": self.data.get("blocks", [])})


class RecordingSlack:
    """A threaded HTTP server on 127.0.0.1 standing in for Slack. It records every
    request (path, Authorization, raw body) and answers the Web API (``/api/<method>``)
    with ``{"ok": true, "ts": ...}`` and incoming webhooks (``/webhook/<name>``) with
    ``ok``, as Slack does."""

    def __init__(self) -> None:
        self.calls: list[SlackCall] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    data = json.loads(raw or b"{}")
                else:
                    data = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
                for key in ("blocks", "attachments"):
                    if isinstance(data.get(key), str):
                        data[key] = json.loads(data[key])
                call = SlackCall(time.time(), self.path, self.headers.get("Authorization", ""), raw, data)
                if self.path.startswith("/api/"):
                    call.reply = {"ok": True, "channel": data.get("channel"), "ts": data.get("ts") or f"{call.at:.6f}"}
                    status, body, content_type = 200, json.dumps(call.reply), "application/json"
                elif self.path.startswith("/webhook/"):
                    status, body, content_type = 200, "ok", "text/plain"
                else:
                    status, body, content_type = 404, "no_service", "text/plain"
                with fake.lock:
                    fake.calls.append(call)
                encoded = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(encoded)))
                self.end_headers()
                self.wfile.write(encoded)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.api_url = f"{self.base}/api/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def webhook_url(self, name: str) -> str:
        return f"{self.base}/webhook/{name}"

    def start(self) -> RecordingSlack:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def matching(self, predicate: Callable[[SlackCall], bool]) -> list[SlackCall]:
        with self.lock:
            return [call for call in self.calls if predicate(call)]

    def summary(self) -> str:
        with self.lock:
            lines = [f"{call.method}: {call.data.get('text', '')[:160]}" for call in self.calls]
        return "----- fake Slack received:\n" + ("\n".join(lines) or "(nothing)")
