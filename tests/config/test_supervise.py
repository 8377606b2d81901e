"""config/supervise.sh (how `make run` runs its Celery worker): a command that dies is
started again within seconds; TERM stops the supervisor and its command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.paths import ROOT

CHILD = "import os, sys, time; open(sys.argv[1], 'a').write(f'{os.getpid()}\\n'); time.sleep(300)"


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _wait(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_command_is_started_again_and_term_stops_both(tmp_path):
    pids = tmp_path / "pids"
    supervisor = subprocess.Popen(
        ["sh", str(ROOT / "config" / "supervise.sh"), sys.executable, "-c", CHILD, str(pids)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert _wait(lambda: len(_pids(pids)) == 1, timeout=20)
        first = _pids(pids)[0]
        os.kill(first, signal.SIGKILL)  # what kombu's unrecoverable error amounts to: the worker is gone
        started = time.monotonic()
        assert _wait(lambda: len(_pids(pids)) == 2, timeout=20)
        assert time.monotonic() - started < 10  # back within seconds
        second = _pids(pids)[1]
        assert second != first
        assert _alive(second)
        supervisor.send_signal(signal.SIGTERM)
        supervisor.wait(timeout=20)
        assert _wait(lambda: not _alive(second), timeout=10)
        assert "exited with status 137; starting it again" in supervisor.stderr.read()
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
        for pid in _pids(pids):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
