"""``make run``'s process tree (standard library only): ``python config/run.py --port 8000``.

Starts, beside each other, in this process's group:

- the demo mailbox (``manage.py intake_demo_mailbox``: a local dovecot holding one
  exception request, when Debian's dovecot is installed), its ``INTAKE_IMAP_*`` settings
  passed to the worker;
- the demo's GitHub board (``manage.py github_demo_board --write``: the test suite's fake
  GitHub on a free port, the current release's board read-write on it), its
  ``GITHUB_API_URL`` and ``GITHUB_TOKEN`` passed to the worker and the server; not when
  GitHub credentials are set (the real board);
- a Celery worker with its beat, started again a second after it exits (kombu's Redis
  transport can end the worker when the broker connection drops, issue 13 item 13);
- Django's development server on 127.0.0.1:PORT.

It stops on INT (Ctrl-C), TERM (a supervisor, or a TERM to the process group) and HUP (a
closed terminal), in under 3 s: the server and the worker get TERM, and whatever is
still running after ``STOP_GRACE`` seconds is killed with its children. The worker is
not given its warm shutdown (more than 80 s when a task or beat's wait is under way):
in this development run a task cut short is delivered again, since tasks are
acknowledged late (``CELERY_TASK_ACKS_LATE``). The worker runs in a process group of
its own (a worker that dies leaves its pool and beat behind: they are killed with the
group before it starts again); dovecot runs in this process's group, so a TERM or a KILL
to the group reaches it too, and it is stopped by its pid besides.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STOP_GRACE = 1.5  # seconds the server and the worker get after TERM before they are killed
RESTART_AFTER = 1.0


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, ...), None when gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()  # the command name may hold spaces and parentheses


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _processes() -> list[tuple[int, list[str]]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z":
                found.append((int(entry.name), fields))
    return found


def descendants(pid: int) -> list[int]:
    """``pid`` and every live process under it (runserver's reloaded server, dovecot's
    login and auth processes)."""
    children: dict[int, list[int]] = {}
    for child, fields in _processes():
        children.setdefault(int(fields[1]), []).append(child)
    tree, todo = [], [pid]
    while todo:
        current = todo.pop(0)
        tree.append(current)
        todo.extend(children.get(current, []))
    return tree


def group_members(pgid: int) -> list[int]:
    """The live processes of a process group (the worker's: its pool and embedded beat,
    which outlive a killed worker)."""
    return [pid for pid, fields in _processes() if int(fields[2]) == pgid]


def stop_all(*, trees: list[int], groups: list[int]) -> None:
    """TERM every process of these trees and groups; KILL what is left after STOP_GRACE seconds."""

    def left() -> list[int]:
        pids = [pid for pid in tree_pids if alive(pid)]
        return pids + [pid for pgid in groups for pid in group_members(pgid)]

    tree_pids = [pid for root in trees for pid in descendants(root)]
    for pid in left():
        _send(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left():
        _send(pid, signal.SIGKILL)


def _send(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


class Stop(Exception):
    pass


def _raise_stop(signum, frame):
    raise Stop(signum)


def start_mailbox(python: str, directory: Path) -> dict[str, str]:
    """The demo mailbox's settings (empty without dovecot, or when it did not start)."""
    done = subprocess.run(  # noqa: S603 - our own interpreter and manage.py
        [python, "manage.py", "intake_demo_mailbox", "--dir", str(directory)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return {}
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


BOARD_READY = 30.0  # seconds the demo board may take to print its settings
BOARD_SETTINGS = ("GITHUB_API_URL", "GITHUB_TOKEN")


def start_board(python: str, env: dict[str, str]) -> tuple[subprocess.Popen | None, dict[str, str]]:
    """The demo's GitHub board (``manage.py github_demo_board --write``: the test suite's
    fake GitHub on a free port, the current release's board read-write on it) and the
    settings that point the worker and the server at it. Not started when GitHub
    credentials are set (the real board, README "The release board on GitHub"), nor when
    the fake cannot run (its requirements missing): then (None, {})."""
    if env.get("GITHUB_TOKEN") or env.get("GITHUB_APP_ID"):
        return None, {}
    board = subprocess.Popen(  # noqa: S603 - our own interpreter and manage.py
        [python, "manage.py", "github_demo_board", "--port", "0", "--write"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    found: dict[str, str] = {}
    deadline = time.monotonic() + BOARD_READY
    with selectors.DefaultSelector() as waiting:
        waiting.register(board.stdout, selectors.EVENT_READ)
        while len(found) < 5 and time.monotonic() < deadline:
            if not waiting.select(timeout=max(deadline - time.monotonic(), 0)):
                break
            line = board.stdout.readline()
            if not line:  # it stopped (its message is on stderr)
                break
            key, _, value = line.strip().partition("=")
            found[key] = value
    if not all(found.get(key) for key in BOARD_SETTINGS):
        stop_all(trees=[board.pid], groups=[])
        board.wait()
        print("run: no demo GitHub board (see the line above); the rest runs without it", file=sys.stderr, flush=True)
        return None, {}
    return board, {key: found[key] for key in BOARD_SETTINGS}


def mailbox_pid(directory: Path) -> int | None:
    try:
        return int((directory / "run" / "master.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    celery = str(Path(args.python).parent / "celery")
    worker_cmd = [celery, "-A", "config", "worker", "--beat", "--concurrency", "2", "--loglevel", "INFO"]
    server_cmd = [args.python, "manage.py", "runserver", f"127.0.0.1:{args.port}"]

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _raise_stop)
    mailbox = Path(tempfile.mkdtemp(prefix="releasecal-dovecot-", dir="/tmp"))
    server: subprocess.Popen | None = None
    worker: subprocess.Popen | None = None
    board: subprocess.Popen | None = None
    try:
        env = {**os.environ, **start_mailbox(args.python, mailbox)}
        board, board_settings = start_board(args.python, env)
        env.update(board_settings)

        def start_worker() -> subprocess.Popen:
            # A group of its own: a worker that dies leaves its pool and beat behind, and
            # they are found (and killed) by the group.
            return subprocess.Popen(worker_cmd, cwd=ROOT, env=env, process_group=0)  # noqa: S603

        worker = start_worker()
        server = subprocess.Popen(server_cmd, cwd=ROOT, env=env)  # noqa: S603
        while True:
            if server.poll() is not None:
                return server.returncode
            if worker.poll() is not None:
                stop_all(trees=[], groups=[worker.pid])
                print(
                    f"run: the worker exited with status {worker.returncode}; starting it again in 1 s",
                    file=sys.stderr,
                    flush=True,
                )
                time.sleep(RESTART_AFTER)
                worker = start_worker()
            time.sleep(0.2)
    except Stop:
        return 0
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_IGN)
        dovecot = mailbox_pid(mailbox)
        stop_all(
            trees=[pid for pid in (server and server.pid, dovecot, board and board.pid) if pid],
            groups=[worker.pid] if worker else [],
        )
        for proc in (server, worker, board):
            if proc is not None:
                proc.wait()
        shutil.rmtree(mailbox, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
