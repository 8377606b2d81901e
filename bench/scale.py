"""Scale on one machine, as a stand-in for a cluster: 2 web processes (gunicorn, each
with its workers, on one address through SO_REUSEPORT), 2 Celery workers and 1 beat on
one PostgreSQL and Redis, under load, with one web and one worker killed (SIGKILL to
the whole process group, as a node losing a pod) mid-run.

    DATABASE_URL=postgres://... REDIS_URL=redis://... .venv/bin/python bench/scale.py \
        [--seconds 120] [--clients 6] [--reminders 40]

Drives pages, feeds, the API and signed Slack commands (bench/soak.py's mix, plus a
release page; no filings or decisions yet) and reminders falling due through the run, sent by the workers to a fake
Slack on loopback (tests/support/fake_slack.py). Reports requests per kind, 5xx answers
(must be 0), connection errors (only those of the killed web within 2 s of its kill are
expected), and deliveries: due, sent, received, lost (due but never received, or not
`sent` in the ledger) and duplicated (received twice). Exit 1 on any 5xx, unexpected
error, lost or duplicate. Runs on a new database (dropped after), a queue and cache
prefix of its own; only 127.0.0.1 is contacted. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import json
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.soak import SIGNING_SECRET, free_port, signed_slack_request  # noqa: E402
from tests.support.fake_slack import FakeSlack  # noqa: E402
from tests.support.processes import forget_queue, fresh_database  # noqa: E402

CHANNEL = "C0SCALEBENCH"
VENV_BIN = Path(sys.executable).parent

SETUP = """
import datetime as dt, json, os
from releasecal.models import MilestoneKind, Release
from releasecal.services import milestone_create
from reminders.models import Channel, Delivery, ReminderRule

channel = Channel.objects.create(name="scale bench", kind="slack_bot", config={"channel": os.environ["B_CHANNEL"]})
kind = MilestoneKind.objects.create(slug="scale-checkpoint", name="Scale checkpoint")
rule = ReminderRule.objects.create(name="scale: in a minute", applies_to="milestones", offsets="1m", channel=channel)
rule.kinds.set([kind])
release = Release.objects.order_by("-slug").first()
ids = []
for n, due in enumerate(json.loads(os.environ["B_DUE"])):
    due = dt.datetime.fromisoformat(due)
    milestone = milestone_create(
        release=release, kind=kind, title=f"Scale checkpoint {n}", at=due + dt.timedelta(minutes=1)
    )
    ids.append(Delivery.objects.get(milestone=milestone, offset="1m").pk)
print(json.dumps({"deliveries": ids}))
"""

STATES = """
import json, os
from reminders.models import Delivery
ids = json.loads(os.environ["B_IDS"])
rows = Delivery.objects.filter(pk__in=ids).values_list("pk", "state", "attempts")
print(json.dumps({pk: [state, attempts] for pk, state, attempts in rows}))
"""


def manage(env: dict[str, str], *args: str, extra: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env={**env, **(extra or {})}, capture_output=True, text=True
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args[:2])} failed:\n{result.stderr[-2000:]}")
    return result.stdout


class Group:
    """A process started in a session of its own, so that it and its children (gunicorn's
    and Celery's workers) are killed together."""

    def __init__(self, name: str, command: list[str], env: dict[str, str], log_dir: Path):
        self.name = name
        self.log = log_dir / f"{name}.log"
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill(signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.kill()
                self.process.wait()
        self.kill()  # any child left behind


def wait_for(predicate, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--clients", type=int, default=6)
    parser.add_argument("--reminders", type=int, default=40)
    args = parser.parse_args()
    database_url, redis_url = os.environ.get("DATABASE_URL", ""), os.environ.get("REDIS_URL", "")
    if not database_url.startswith("postgres") or not redis_url.startswith("redis"):
        print("needs DATABASE_URL=postgres://... and REDIS_URL=redis://... (one PostgreSQL and Redis)", file=sys.stderr)
        return 2

    tmp = Path(tempfile.mkdtemp(prefix="releasecal-scale-"))
    queue = f"releasecal-scale-{uuid.uuid4().hex[:10]}"
    port = free_port()
    slack = FakeSlack().start()
    groups: list[Group] = []
    try:
        with fresh_database("releasecal_scale", sqlite_path=tmp / "unused.sqlite3") as database:
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))},
                "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '')}",
                "DJANGO_SETTINGS_MODULE": "config.settings.production",
                "SECRET_KEY": secrets.token_urlsafe(60),
                "ALLOWED_HOSTS": "127.0.0.1",
                "SECURE_SSL_REDIRECT": "0",
                "DATABASE_URL": database,
                "CONN_MAX_AGE": "0",
                "REDIS_URL": redis_url,
                "CELERY_BROKER_URL": redis_url,
                "CELERY_QUEUE": queue,
                "CACHE_KEY_PREFIX": queue,
                "SLACK_API_URL": slack.api_url,
                "SLACK_BOT_TOKEN": "xoxb-scale-bench-not-a-real-token",
                "SLACK_SIGNING_SECRET": SIGNING_SECRET,
                "STATIC_ROOT": str(tmp / "static"),
                "GUNICORN_BIND": f"127.0.0.1:{port}",
                "WEB_CONCURRENCY": "2",
                "LOG_LEVEL": "WARNING",
                "API_THROTTLE_ANON": "1000000/min",
                "API_THROTTLE_USER": "1000000/min",
                # One message per delivery (countable), no per-channel pacing, and a killed
                # worker's claimed send taken up again within seconds, not minutes.
                "REMINDERS_DIGESTS": "0",
                "REMINDERS_SLACK_CHANNEL_RATE": "0",
                "REMINDERS_SWEEP_SECONDS": "5",
                "REMINDERS_LEASE_SECONDS": "20",
                "REMINDERS_REQUEUE_SECONDS": "15",
            }
            started = time.monotonic()
            manage(env, "migrate", "--noinput", "-v0", extra={"RELEASECAL_VAR_DIR": str(tmp / "setup")})
            manage(env, "seed_demo", extra={"RELEASECAL_VAR_DIR": str(tmp / "setup")})
            manage(env, "collectstatic", "--noinput", "-v0", extra={"RELEASECAL_VAR_DIR": str(tmp / "setup")})
            print(f"set-up (migrate, seed_demo, collectstatic): {time.monotonic() - started:.0f} s")
            listed = manage(
                env, "shell", "-v0", "-c",
                "from releasecal.models import Release, Enhancement;"
                "print(' '.join(Release.objects.values_list('slug', flat=True)));"
                "print(' '.join(str(n) for n in Enhancement.objects.values_list('number', flat=True)))",
                extra={"RELEASECAL_VAR_DIR": str(tmp / "setup")},
            ).splitlines()  # fmt: skip
            releases, keps = listed[0].split(), listed[1].split()

            # Reminders falling due from 30 s after the start to 80% of the run: some
            # before the kills, some after, some while the killed worker held them.
            load_starts = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30)
            span = max(args.seconds * 0.8 - 30, 10)
            due = [
                (load_starts + dt.timedelta(seconds=span * i / max(args.reminders - 1, 1))).replace(microsecond=0)
                for i in range(args.reminders)
            ]
            deliveries = json.loads(
                manage(
                    env, "shell", "-v0", "-c", SETUP,
                    extra={"RELEASECAL_VAR_DIR": str(tmp / "setup"), "B_CHANNEL": CHANNEL,
                           "B_DUE": json.dumps([d.isoformat() for d in due])},
                ).strip().splitlines()[-1]
            )["deliveries"]  # fmt: skip

            def role_env(role: str) -> dict[str, str]:
                # The workers and beat log at INFO: "ready." says a worker consumes.
                level = "WARNING" if role.startswith("web") else "INFO"
                return {**env, "RELEASECAL_VAR_DIR": str(tmp / role), "LOG_LEVEL": level}

            gunicorn = [str(VENV_BIN / "gunicorn"), "--config", "docker/gunicorn.conf.py", "config.wsgi:application"]
            for name in ("web-1", "web-2"):
                groups.append(Group(name, gunicorn, {**role_env(name), "GUNICORN_CMD_ARGS": "--reuse-port"}, tmp))
            for name in ("worker-1", "worker-2"):
                command = ["celery", "--app", "config", "worker", "--loglevel", "INFO", "--concurrency", "2",
                           "--hostname", f"{name}@%h"]  # fmt: skip
                groups.append(Group(name, command, role_env(name), tmp))
            beat_command = ["celery", "--app", "config", "beat", "--loglevel", "INFO",
                            "--schedule", str(tmp / "celerybeat-schedule")]  # fmt: skip
            groups.append(Group("beat", beat_command, role_env("beat"), tmp))
            by_name = {group.name: group for group in groups}
            for name in ("web-1", "web-2"):
                wait_for(lambda g=by_name[name]: "Listening at" in g.output(), 60, f"{name} to listen")
            for name in ("worker-1", "worker-2"):
                wait_for(lambda g=by_name[name]: " ready." in g.output(), 90, f"{name} to be ready")
            base = f"http://127.0.0.1:{port}"
            wait_for(lambda: _status(f"{base}/readyz") == 200, 60, "/readyz")

            requests = {
                "page": lambda: urllib.request.Request(f"{base}/releases/{random.choice(releases)}/"),
                "feed": lambda: urllib.request.Request(f"{base}/calendar/{random.choice(releases)}.ics"),
                "feed-kep": lambda: urllib.request.Request(f"{base}/calendar/kep/{random.choice(keps)}.ics"),
                "api-next": lambda: urllib.request.Request(
                    f"{base}/api/v1/deadlines/next/?release={random.choice(releases)}&tz=Asia/Tokyo"
                ),
                "api-exceptions": lambda: urllib.request.Request(f"{base}/api/v1/exceptions/?limit=50"),
                "slack": lambda: signed_slack_request(
                    base, random.choice(["next", "help", f"kep {random.choice(keps)}"])
                ),
            }
            counts: collections.Counter = collections.Counter()
            server_errors: list[str] = []
            connection_errors: list[tuple[float, str, str]] = []
            lock = threading.Lock()
            t0 = time.monotonic()
            stop_at = t0 + args.seconds
            kills: dict[str, float] = {}

            def client(seed: int) -> None:
                rng = random.Random(seed)
                names = list(requests)
                while time.monotonic() < stop_at:
                    name = rng.choice(names)
                    try:
                        with urllib.request.urlopen(requests[name](), timeout=30) as response:
                            response.read()
                            status = response.status
                    except urllib.error.HTTPError as err:
                        status = err.code
                    except OSError as err:
                        with lock:
                            connection_errors.append((time.monotonic(), name, type(err).__name__))
                        continue
                    with lock:
                        counts[name] += 1
                        if status >= 500:
                            server_errors.append(f"{name} {status}")

            threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
            for thread in threads:
                thread.start()
            # The kills: one web (its master and workers) at 40% of the run, one worker at 50%.
            for name, at in (("web-1", 0.4), ("worker-1", 0.5)):
                time.sleep(max(0.0, t0 + args.seconds * at - time.monotonic()))
                by_name[name].kill()
                kills[name] = time.monotonic()
                print(f"SIGKILL {name} at {kills[name] - t0:.1f} s")
            for thread in threads:
                thread.join()
            elapsed = time.monotonic() - t0

            # Every delivery falls due by 80% of the run; give the survivors time to take up
            # what the killed worker held (its lease, REMINDERS_LEASE_SECONDS).
            def states() -> dict[str, list]:
                extra = {"RELEASECAL_VAR_DIR": str(tmp / "setup"), "B_IDS": json.dumps(deliveries)}
                out = manage(env, "shell", "-v0", "-c", STATES, extra=extra)
                return json.loads(out.strip().splitlines()[-1])

            deadline = time.monotonic() + 120
            ledger = states()
            while any(state != "sent" for state, _ in ledger.values()) and time.monotonic() < deadline:
                time.sleep(2)
                ledger = states()
            time.sleep(3)  # a duplicate, were there one, would arrive now

            received = collections.Counter()
            for call in slack.matching(lambda call: call.data.get("channel") == CHANNEL):
                for found in re.findall(r"releasecal delivery #(\d+)", call.text):
                    received[int(found)] += 1
    finally:
        for group in groups:
            group.stop()
        slack.stop()
        forget_queue(redis_url, queue)

    killed_web = kills.get("web-1", -1)
    expected = [e for e in connection_errors if killed_web <= e[0] <= killed_web + 2]
    unexpected = [e for e in connection_errors if e not in expected]
    lost = [pk for pk in deliveries if received[pk] == 0 or ledger.get(str(pk), [""])[0] != "sent"]
    duplicated = [pk for pk in deliveries if received[pk] > 1]
    total = sum(counts.values())
    print(f"scale: {elapsed:.0f} s, {args.clients} clients; 2 web x 2 gunicorn workers (one address, reuse_port), "
          "2 workers x 2, 1 beat; PostgreSQL and Redis")  # fmt: skip
    for name in requests:
        print(f"  {name:16} {counts[name]:7d} answers")
    print(f"requests answered: {total} ({total / elapsed:.1f}/s); 5xx: {len(server_errors)}")
    print(f"connection errors: {len(expected)} at the web's kill (expected), {len(unexpected)} otherwise")
    sent = sum(1 for state, _ in ledger.values() if state == "sent")
    retried = sum(1 for _, attempts in ledger.values() if attempts > 1)
    arrived = sum(1 for pk in deliveries if received[pk])
    print(f"deliveries: {len(deliveries)} due, {sent} sent in the ledger, {arrived} received; "
          f"lost {len(lost)}, duplicated {len(duplicated)}; {retried} took more than one attempt")  # fmt: skip
    for what, found in (("5xx", server_errors), ("unexpected connection errors", unexpected),
                        ("lost", lost), ("duplicated", duplicated)):  # fmt: skip
        if found:
            print(f"{what}: {found[:20]}")
    print(f"logs: {tmp}")
    return 1 if server_errors or unexpected or lost or duplicated else 0


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return None


if __name__ == "__main__":
    sys.exit(main())
