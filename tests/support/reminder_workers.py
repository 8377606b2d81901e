"""Real Celery workers for the reminder system tests and the bench.

A worker is a subprocess (``celery -A config worker``) in its own session, so it can
be killed with SIGKILL as a whole (main process and pool children), the way a machine
or container dies. It talks to the same database as the caller.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import redis
from django.conf import settings
from django.db import connection

from releasecal import tz
from releasecal.models import Milestone
from reminders.models import Channel, Delivery
from tests.support.paths import ROOT as BASE_DIR


def database_url() -> str:
    """The URL of the database this process uses right now (pytest's test_<name>)."""
    s = connection.settings_dict
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    return f"postgres://{auth}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def queue_name() -> str:
    return getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "celery")


def purge_broker(url: str) -> None:
    """Empty our Celery queue's keys on this broker database (and nothing else)."""
    client = redis.Redis.from_url(url)
    try:
        client.delete(queue_name(), "unacked", "unacked_index", "unacked_mutex")
    finally:
        client.close()


class Worker:
    def __init__(
        self,
        *,
        broker: str,
        name: str,
        concurrency: int = 2,
        env: dict | None = None,
        log_dir: Path,
        include: tuple[str, ...] = (),
    ):
        self.log_path = log_dir / f"worker-{name}.log"
        full_env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": broker,
            "CONN_MAX_AGE": "0",
            "LOG_LEVEL": "WARNING",
            **(env or {}),
        }
        self.log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "config", "worker",
                "--loglevel", full_env["LOG_LEVEL"], "--concurrency", str(concurrency), "--pool", "prefork",
                "--hostname", f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
                *(["--include", ",".join(include)] if include else []),
            ],
            cwd=BASE_DIR,
            env=full_env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and its pool children)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()

    def output(self) -> str:
        return self.log_path.read_text()[-4000:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThrowawayRedis:
    """A redis-server of our own (no persistence), so it can be restarted freely."""

    def __init__(self, log_dir: Path):
        self.port = free_port()
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> ThrowawayRedis:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.log_dir,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=0.2).ping()
                return self
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def due_deliveries(*, milestone: Milestone, channel: Channel, count: int, start: int = 1) -> list[int]:
    """``count`` deliveries due a minute ago (offsets 1m, 2m, ...), straight into the ledger."""
    now = tz.utc_now()
    rows = [
        Delivery(
            milestone=milestone,
            channel=channel,
            offset=f"{n}m",
            recipient="",
            deadline_at=now + dt.timedelta(minutes=n),
            deadline_zone=milestone.zone,
            due_at=now - dt.timedelta(minutes=1),
        )
        for n in range(start, start + count)
    ]
    Delivery.objects.bulk_create(rows, batch_size=2000)
    return list(Delivery.objects.filter(milestone=milestone, channel=channel).values_list("pk", flat=True))


def wait_for(predicate, *, timeout: float, interval: float = 0.2, tick=None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if tick is not None:
            tick()
        time.sleep(interval)
    return predicate()
