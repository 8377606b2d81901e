"""Load and soak: gunicorn on loopback under a mix of feed polls, API reads and signed
Slack commands, for a bounded time.

    .venv/bin/python bench/soak.py [--seconds 180] [--clients 8] [--workers 2]

Uses DATABASE_URL / REDIS_URL when set (PostgreSQL and Redis, as in production),
otherwise a throwaway SQLite file and the local-memory cache. Seeds the demo data,
starts gunicorn with the production settings, and reports per kind of request:
count, errors (must be 0), p50 and p99 latency; and each gunicorn worker's resident
memory at the start and end of the run (growth in MiB). Only 127.0.0.1 is contacted.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIGNING_SECRET = secrets.token_hex(16)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def worker_pids(master: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(master)], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def signed_slack_request(base: str, text: str) -> urllib.request.Request:
    body = urllib.parse.urlencode(
        {"command": "/relcal", "text": text, "user_id": "U0SOAK", "team_id": "T0SOAK", "user_name": "soak"}
    ).encode()
    timestamp = str(int(time.time()))
    digest = hmac.new(SIGNING_SECRET.encode(), f"v0:{timestamp}:".encode() + body, hashlib.sha256).hexdigest()
    return urllib.request.Request(
        f"{base}/slack/commands",
        data=body,
        headers={
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": f"v0={digest}",
            "Content-Type": "application/x-www-form-urlencoded",
        },
        method="POST",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="releasecal-soak-"))
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(60),
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "STATIC_ROOT": str(tmp / "static"),
        "RELEASECAL_VAR_DIR": str(tmp),
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "WEB_CONCURRENCY": str(args.workers),
        "LOG_LEVEL": "WARNING",
        "API_THROTTLE_ANON": "1000000/min",
        "API_THROTTLE_USER": "1000000/min",
        # Measure real growth: no recycling of workers during the run.
        "GUNICORN_MAX_REQUESTS": "0",
    }
    env.setdefault("DATABASE_URL", f"sqlite:///{tmp / 'soak.sqlite3'}")
    python = sys.executable
    for command in (["migrate", "--noinput", "-v0"], ["seed_demo"], ["collectstatic", "--noinput", "-v0"]):
        subprocess.run([python, "manage.py", *command], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    slugs = subprocess.run(
        [python, "manage.py", "shell", "--verbosity", "0", "-c",
         "from releasecal.models import Release, Enhancement;"
         "print(' '.join(Release.objects.values_list('slug', flat=True)));"
         "print(' '.join(str(n) for n in Enhancement.objects.values_list('number', flat=True)))"],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    ).stdout.splitlines()  # fmt: skip
    releases, keps = slugs[0].split(), slugs[1].split()

    base = f"http://127.0.0.1:{port}"
    gunicorn = subprocess.Popen(
        [str(Path(python).parent / "gunicorn"), "--config", "docker/gunicorn.conf.py", "config.wsgi:application"],
        cwd=ROOT, env={**env, "GUNICORN_THREADS": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.2)
        else:
            print("gunicorn did not start", file=sys.stderr)
            return 1

        requests = {
            "feed": lambda: urllib.request.Request(f"{base}/calendar/{random.choice(releases)}.ics"),
            "feed-kep": lambda: urllib.request.Request(f"{base}/calendar/kep/{random.choice(keps)}.ics"),
            "api-next": lambda: urllib.request.Request(
                f"{base}/api/v1/deadlines/next/?release={random.choice(releases)}&tz=Asia/Tokyo"
            ),
            "api-exceptions": lambda: urllib.request.Request(f"{base}/api/v1/exceptions/?limit=50"),
            "slack": lambda: signed_slack_request(base, random.choice(["next", "help", f"kep {random.choice(keps)}"])),
        }
        # Warm up, then measure memory from a steady start.
        for name, make in requests.items():
            for _ in range(5):
                request = make()
                try:
                    urllib.request.urlopen(request, timeout=10).read()
                except urllib.error.HTTPError as err:
                    print(f"warm-up {name} {request.full_url}: {err.code} {err.read()[:300]!r}", file=sys.stderr)
                    return 1
        pids = worker_pids(gunicorn.pid)
        memory_start = {pid: rss_mib(pid) for pid in pids}

        latencies: dict[str, list[float]] = {name: [] for name in requests}
        errors: dict[str, list[str]] = {name: [] for name in requests}
        lock = threading.Lock()
        stop_at = time.monotonic() + args.seconds

        def client(seed: int) -> None:
            rng = random.Random(seed)
            names = list(requests)
            while time.monotonic() < stop_at:
                name = rng.choice(names)
                started = time.perf_counter()
                try:
                    with urllib.request.urlopen(requests[name](), timeout=15) as response:
                        response.read()
                        ok = response.status == 200
                        detail = str(response.status)
                except urllib.error.HTTPError as err:
                    ok, detail = False, str(err.code)
                except OSError as err:
                    ok, detail = False, type(err).__name__
                elapsed = time.perf_counter() - started
                with lock:
                    latencies[name].append(elapsed)
                    if not ok:
                        errors[name].append(detail)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        memory_end = {pid: rss_mib(pid) for pid in worker_pids(gunicorn.pid)}
    finally:
        gunicorn.send_signal(signal.SIGTERM)
        gunicorn.wait(timeout=30)

    total = sum(len(v) for v in latencies.values())
    total_errors = sum(len(v) for v in errors.values())
    database = env["DATABASE_URL"].split(":")[0]
    cache = "redis" if env.get("REDIS_URL") else "locmem"
    print(f"soak: {args.seconds:.0f} s, {args.clients} clients, {args.workers} gunicorn workers, {database}, {cache}")
    print(f"{'kind':16} {'requests':>9} {'errors':>7} {'p50 ms':>8} {'p99 ms':>8}")
    for name, values in latencies.items():
        values.sort()
        p50 = statistics.median(values) * 1000 if values else 0
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))] * 1000 if values else 0
        print(f"{name:16} {len(values):9d} {len(errors[name]):7d} {p50:8.1f} {p99:8.1f}")
    everything = sorted(v for values in latencies.values() for v in values)
    print(f"{'all':16} {total:9d} {total_errors:7d} {statistics.median(everything) * 1000:8.1f} "
          f"{everything[int(len(everything) * 0.99)] * 1000:8.1f}")  # fmt: skip
    print(f"throughput: {total / args.seconds:.1f} requests/s")
    for pid, start in memory_start.items():
        end = memory_end.get(pid)
        growth = f"{end - start:+.1f} MiB" if end is not None else "restarted (max_requests)"
        print(f"worker {pid}: {start:.1f} MiB -> {end if end is None else round(end, 1)} MiB ({growth})")
    if total_errors:
        for name, details in errors.items():
            if details:
                print(f"errors in {name}: {sorted(set(details))}")
    return 1 if total_errors else 0


if __name__ == "__main__":
    sys.exit(main())
