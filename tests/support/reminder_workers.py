"""Real Celery workers for the reminder system tests and the bench.

A worker is a subprocess (``celery -A config worker``) in its own session, so it can
be killed with SIGKILL as a whole (main process and pool children), the way a machine
or container dies. It talks to the same database as the caller.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import redis
from celery import Celery
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
    """The queue this process publishes tasks to (a test's own, inside ``own_queue()``)."""
    from config.celery import app

    return app.conf.task_default_queue


@contextlib.contextmanager
def own_queue(prefix: str = "test") -> Iterator[str]:
    """A Celery queue no other test or run uses: this process publishes to it for the
    duration (Celery's ``task_default_queue``), and a ``Worker(queue=...)`` consumes it."""
    from config.celery import app

    name = f"releasecal-{prefix}-{uuid.uuid4().hex[:12]}"
    saved = app.conf.task_default_queue
    app.conf.task_default_queue = name
    try:
        yield name
    finally:
        app.conf.task_default_queue = saved


def queue_keys(client: redis.Redis, queue: str) -> list[bytes]:
    """The broker keys of one queue: its lists (kombu adds a suffix per priority) and its
    exchange's bindings (the exchange is named after the queue). kombu's ``unacked``,
    ``unacked_index`` and ``unacked_mutex`` are shared by every consumer of the
    database, so they are never ours to delete."""
    keys = list(client.scan_iter(match=f"{queue}*", count=1000))
    for binding in (f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}"):
        keys += list(client.scan_iter(match=binding, count=1000))
    return keys


def purge_broker(url: str, queue: str) -> None:
    """Delete one queue (ours) from this broker database, and nothing else."""
    client = redis.Redis.from_url(url)
    try:
        keys = queue_keys(client, queue)
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def queue_length(url: str, queue: str) -> int:
    client = redis.Redis.from_url(url)
    try:
        return sum(client.llen(key) for key in queue_keys(client, queue) if client.type(key) == b"list")
    finally:
        client.close()


def queued_tasks(url: str, queue: str) -> list[tuple[str, list]]:
    """(task name, args) of every message waiting in one queue, oldest first (Celery's
    message protocol 2: the name in the headers, the body a JSON [args, kwargs, embed])."""
    client = redis.Redis.from_url(url)
    try:
        raw = client.lrange(queue, 0, -1)
    finally:
        client.close()
    found = []
    for message in reversed(raw):  # kombu LPUSHes and consumers BRPOP
        envelope = json.loads(message)
        body = json.loads(base64.b64decode(envelope["body"]))
        found.append((envelope["headers"]["task"], body[0]))
    return found


class Worker:
    def __init__(
        self,
        *,
        broker: str,
        name: str,
        concurrency: int = 2,
        env: dict | None = None,
        log_dir: Path,
        queue: str | None = None,
        include: tuple[str, ...] = (),
    ):
        self.broker = broker
        self.queue = queue or queue_name()
        # A node name per pytest-xdist worker too: remote control (ping, inspect) goes by
        # name through the broker database's one pidbox, which both workers' tests share.
        xdist_worker = os.environ.get("PYTEST_XDIST_WORKER")
        name = f"{name}-{xdist_worker}" if xdist_worker else name
        self.hostname = f"{name}@{socket.gethostname()}"  # what --hostname NAME@%h expands to
        # Remote control (ping, inspect) through an app of its own on this broker: the
        # project's app publishes broadcasts through its own broker's producer pool.
        self.control_app = Celery(f"control-{name}", broker=broker, set_as_current=False)
        self.log_path = log_dir / f"worker-{name}.log"
        full_env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": broker,
            "CELERY_QUEUE": self.queue,
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

    def ping(self) -> bool:
        """Whether the worker answers a remote-control ping (it does once it consumes)."""
        with self.control_app.connection_for_write(self.broker) as conn:
            return bool(self.control_app.control.ping(destination=[self.hostname], timeout=1.0, connection=conn))

    def wait_ready(self, timeout: float = 120) -> Worker:
        """Block until the worker answers a ping, so a test's clock starts with a worker
        consuming its queue (starting one takes seconds alone, far more on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while not self.ping():
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.hostname} exited {self.proc.returncode}:\n{self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.hostname} not ready after {timeout:.0f}s:\n{self.output()}")
        return self

    def idle(self) -> bool:
        """No task running or reserved in this worker and nothing left in its queue."""
        if queue_length(self.broker, self.queue):
            return False
        with self.control_app.connection_for_write(self.broker) as conn:
            inspect = self.control_app.control.inspect(destination=[self.hostname], timeout=1.0, connection=conn)
            active, reserved = inspect.active(), inspect.reserved()
        if not active or not reserved:  # no answer (yet)
            return False
        return not active.get(self.hostname) and not reserved.get(self.hostname)

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
    """A redis-server of our own (no persistence), so it can be restarted freely.

    redis-server cannot listen on port 0 and report it, so a free port is picked and, if
    another process took it before redis-server bound it (redis-server then exits), the
    first start tries other ports; a restart keeps its port (the workers' broker URL)."""

    def __init__(self, log_dir: Path):
        self.port = free_port()
        self.log_dir = log_dir
        self.proc: subprocess.Popen | None = None
        self.started_once = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> ThrowawayRedis:
        for _attempt in range(1 if self.started_once else 5):
            if self._start_on(self.port):
                self.started_once = True
                return self
            if not self.started_once:
                self.port = free_port()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def _start_on(self, port: int) -> bool:
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=self.log_dir,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                # Ours, not another server that holds the port (ours then exits).
                info = redis.Redis(port=port, socket_connect_timeout=0.2).info("server")
                if info["process_id"] == self.proc.pid:
                    return True
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        self.stop()
        return False

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
