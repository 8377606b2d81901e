"""``make run``'s process tree (config/run.py, what the Makefile's ``run`` starts after
``make demo``) on a free port: the development server, the Celery worker with its beat,
and the demo mailbox's dovecot. A TERM or an INT (Ctrl-C) to its process group stops all
of it in under 3 s and leaves no process of the group behind, dovecot included; a worker
that dies is started again; static files are served without a log line each."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.imap_server import dovecot_or_skip
from tests.support.paths import ROOT
from tests.support.processes import forget_queue, free_port, fresh_database, http_status, wait_for

pytestmark = pytest.mark.slow


def _stat(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _group(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry.name))
    return members


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


@pytest.fixture(scope="module")
def run_env(tmp_path_factory):
    dovecot_or_skip()
    tmp = tmp_path_factory.mktemp("make-run")
    queue = f"make-run-{uuid.uuid4().hex[:8]}"
    with fresh_database("releasecal_make_run", tmp / "db.sqlite3") as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
        env.update(
            DJANGO_SETTINGS_MODULE="config.settings.base",
            DEBUG="1",
            DATABASE_URL=url,
            RELEASECAL_VAR_DIR=str(tmp / "var"),
            CELERY_QUEUE=queue,
            CACHE_KEY_PREFIX=queue,
            PYTHONUNBUFFERED="1",
        )
        migrate = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert migrate.returncode == 0, migrate.stderr
        yield env
    if env.get("REDIS_URL"):
        forget_queue(env["REDIS_URL"], queue)


class Run:
    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.log = log
        self.proc = subprocess.Popen(
            [sys.executable, "config/run.py", "--port", str(self.port)],
            cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
            start_new_session=True,  # a process group of its own, as `make run` has in a terminal
        )  # fmt: skip

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def tail(self) -> str:
        return self.output()[-4000:]

    def workers(self) -> list[int]:
        """The Celery worker's main process (a child of run.py whose group is its own)."""
        return [pid for pid in _children(self.proc.pid) if (_stat(pid) or ["", "", "0"])[2] == str(pid)]

    def dovecot(self) -> list[int]:
        return [pid for pid in _group(self.proc.pid) if _comm(pid) == "dovecot"]

    def wait_ready(self) -> None:
        base = f"http://127.0.0.1:{self.port}"
        wait_for(lambda: http_status(f"{base}/admin/login/") == 200, 120, "the server", self.tail)
        wait_for(lambda: "ready." in self.output(), 120, "the worker", self.tail)
        wait_for(self.dovecot, 30, "dovecot in make run's process group", self.tail)

    def stop(self, signum: int) -> float:
        """Signal the whole process group; seconds until no process of it is left."""
        started = time.monotonic()
        os.killpg(self.proc.pid, signum)
        self.proc.wait(timeout=30)
        wait_for(lambda: not _group(self.proc.pid), 30, "the process group to empty", self.tail)
        return time.monotonic() - started

    def kill_everything(self) -> None:
        for pid in _group(self.proc.pid) + [p for w in self.workers() for p in _group(w)]:
            os.kill(pid, signal.SIGKILL)


def _stops_everything_in_under_3_seconds(run: Run, signum: int) -> None:
    """Signal the group: it is all gone in under 3 s, dovecot and the worker's pool and
    beat included, and run.py exits 0."""
    dovecot = run.dovecot()
    worker = run.workers()
    assert len(worker) == 1, run.tail()
    worker_group = _group(worker[0])
    assert len(worker_group) >= 2, worker_group  # the worker and its pool and beat

    seconds = run.stop(signum)

    assert seconds < 3, f"stopped in {seconds:.1f} s\n{run.tail()}"
    assert run.proc.returncode == 0
    assert not [pid for pid in dovecot if _alive(pid)], "dovecot left running"
    assert not [pid for pid in worker_group if _alive(pid)], "worker processes left running"


# TERM is sent at the end of the dead-worker test below (a tree started once serves
# both: each start costs some 40 s of CPU in a loaded run).
def test_ctrl_c_to_the_group_stops_everything_in_under_3_seconds(run_env, tmp_path):
    run = Run(run_env, tmp_path / "run.log")
    try:
        run.wait_ready()
        _stops_everything_in_under_3_seconds(run, signal.SIGINT)
    finally:
        run.kill_everything()


def test_a_dead_worker_is_started_again_and_static_files_are_not_logged_then_term_stops_all(run_env, tmp_path):
    run = Run(run_env, tmp_path / "run.log")
    try:
        run.wait_ready()
        base = f"http://127.0.0.1:{run.port}"
        assert http_status(f"{base}/static/admin/css/base.css") == 200
        assert http_status(f"{base}/admin/login/?after-static") == 200
        wait_for(lambda: "GET /admin/login/?after-static" in run.output(), 30, "the request line", run.tail)
        assert "/static/" not in run.output()

        (first,) = run.workers()
        left_behind = [pid for pid in _group(first) if pid != first]
        os.kill(first, signal.SIGKILL)  # what kombu's unrecoverable error amounts to
        wait_for(lambda: "the worker exited with status -9; starting it again" in run.output(), 30, "the restart")
        wait_for(lambda: run.workers() and run.workers() != [first], 30, "a new worker", run.tail)
        wait_for(lambda: run.output().count("ready.") >= 2, 120, "the new worker ready", run.tail)
        assert not [pid for pid in left_behind if _alive(pid)], "the dead worker's pool or beat left running"

        # The restarted worker's group goes with the rest on TERM.
        _stops_everything_in_under_3_seconds(run, signal.SIGTERM)
    finally:
        run.kill_everything()
