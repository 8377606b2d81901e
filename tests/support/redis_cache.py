"""Redis for the feed tests: the shared server of REDIS_URL under a key prefix of the
test's own (deleted key by key afterwards: never FLUSHDB, the database is shared), and a
throwaway ``redis-server --appendonly yes`` in a temp dir that a test may kill -9 and
restart from its append-only file."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from django.core.cache import caches
from django.test import override_settings

from tests.support.processes import free_port, unavailable, wait_for


def redis_url() -> str:
    url = os.environ.get("REDIS_URL", "")
    if not url:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must set REDIS_URL: the feed cache is tested against the real Redis")
        pytest.skip("needs Redis: set REDIS_URL=redis://127.0.0.1:6379/<n>")
    return url


def prefix_keys(url: str, prefix: str) -> list[bytes]:
    client = redis.Redis.from_url(url)
    try:
        return list(client.scan_iter(match=f"{prefix}:*", count=1000))
    finally:
        client.close()


def delete_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@contextlib.contextmanager
def redis_cache_at(url: str, prefix: str | None = None) -> Iterator:
    """Django's default cache on Redis at ``url``, under a prefix of this test's own;
    its keys are deleted afterwards (and nothing else)."""
    prefix = prefix or f"test-feeds-{uuid.uuid4().hex[:12]}"
    backend = "django.core.cache.backends.redis.RedisCache"
    config = {"default": {"BACKEND": backend, "LOCATION": url, "KEY_PREFIX": prefix}}
    with override_settings(CACHES=config):
        try:
            yield caches["default"]
        finally:
            with contextlib.suppress(redis.RedisError):
                delete_prefix(url, prefix)


class ThrowawayRedis:
    """A redis-server of the test's own: append-only file (fsync always) in ``directory``,
    on a port picked free and retried on collision, readiness by PING (not a sleep)."""

    def __init__(self, directory: Path) -> None:
        self.binary = shutil.which("redis-server")
        if not self.binary:
            unavailable("redis-server is not installed (make installs it with apt)")
        self.directory = directory
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _log_tail(self) -> str:
        log = self.directory / f"redis-{self.starts}.log"
        return log.read_text()[-2000:] if log.exists() else ""

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            return True  # exited: reported by start()
        client = redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=1)
        try:
            return bool(client.ping())  # LOADING (replaying the AOF) raises: not ready yet
        except redis.RedisError:
            return False
        finally:
            client.close()

    def start(self, *, same_port: bool = False) -> None:
        for _attempt in range(5):
            if not (same_port and self.port):
                self.port = free_port()
            self.starts += 1
            self.proc = subprocess.Popen(
                [
                    self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
                    "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                    "--logfile", str(self.directory / f"redis-{self.starts}.log"),
                ],
                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
            wait_for(self._ready, 30, "redis-server to answer PING", self._log_tail)
            if self.proc.poll() is None:
                return
            if "Address already in use" not in self._log_tail():
                raise AssertionError(f"redis-server exited:\n{self._log_tail()}")
            same_port = False  # taken meanwhile: another port
        raise AssertionError("redis-server found no free port in 5 attempts")

    def kill(self) -> None:
        """kill -9: no shutdown, no final save; what survives is the append-only file."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill()
