"""/relcal latency at 20 concurrent signed requests, beside the probes, on gunicorn with
production settings (issue 14: p99 under 300 ms; Slack gives up after 3 s; issue 27:
p99 at most 1.5x the p99 of /readyz, the database-and-cache check).

    .venv/bin/python bench/slash_bench.py [--requests 400] [--rounds 3] [--concurrency 20]

1. Makes a fresh, empty database (a sibling of DATABASE_URL's on the same PostgreSQL
   server, dropped afterwards; a throwaway SQLite file when DATABASE_URL is not
   PostgreSQL), migrates it with config.settings.production and loads the demo
   (``seed_demo``: four releases, KEPs, exception requests in every state).
2. Starts gunicorn as the web container does (docker/gunicorn.conf.py, production
   settings, WEB_CONCURRENCY workers), bound to a free port on 127.0.0.1.
3. In alternating rounds, ``--concurrency`` client threads send ``--requests`` requests
   each round to
   - POST /slack/commands: ``/relcal`` signed like Slack signs it (v0 HMAC, fresh
     timestamp), cycling through next, next code-freeze, kep <n>, release <slug>,
     exceptions pending, help;
   - GET /readyz: the baseline of the floor (the database, the migration table and a
     Redis ping: what any request that reads the database and the cache pays);
   - GET /healthz: the process alone (no dependency asked), for scale;
   every answer's status is checked (200), and the slash answers must be JSON
   carrying ``blocks``. Prints p50/p90/p99/max of each, per subcommand too, and the
   ratio of the p99s beside the floor. Only 127.0.0.1 is contacted.
4. Then the same requests one at a time (``--serial`` each): the work per request
   without queueing, to tell a slow answer from a busy machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from slack_integration.signature import compute_signature  # noqa: E402

SIGNING_SECRET = "bench-signing-secret-" + secrets.token_hex(8)
USER_ID, TEAM_ID, CHANNEL_ID = "UBENCH0001", "TBENCH0001", "CBENCH0001"


def production_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTEST"))}
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        SECRET_KEY=secrets.token_urlsafe(60),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        SLACK_SIGNING_SECRET=SIGNING_SECRET,
        # The bench is the proxy in front: gunicorn believes its X-Forwarded-Proto.
        FORWARDED_ALLOW_IPS="127.0.0.1",
        PATH=f"{ROOT / '.venv' / 'bin'}:{os.environ.get('PATH', '')}",
    )
    env.update(extra)
    return env


class Database:
    """A fresh database for the run, dropped at the end."""

    def __init__(self, tmp: Path):
        base = os.environ.get("DATABASE_URL", "")
        self.admin = None
        if base.startswith("postgres"):
            self.name = f"releasecal_slashbench_{uuid.uuid4().hex[:8]}"
            self.admin = base.rsplit("/", 1)[0] + "/postgres"
            self.url = base.rsplit("/", 1)[0] + "/" + self.name
        else:
            self.url = f"sqlite:///{tmp / 'bench.sqlite3'}"

    def __enter__(self) -> Database:
        if self.admin:
            import psycopg

            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def __exit__(self, *exc) -> None:
        if self.admin:
            import psycopg

            with psycopg.connect(self.admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    if result.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def demo_names(env: dict[str, str]) -> tuple[str, int]:
    """A release slug and a tracked KEP number from the seeded demo."""
    code = (
        "import django; django.setup(); "
        "from releasecal.models import Release, Tracking; "
        "t = Tracking.objects.select_related('release', 'enhancement').exclude(release__status='released')"
        ".order_by('enhancement__number').first(); "
        "print(t.release.slug, t.enhancement.number)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    slug, number = out.stdout.split()
    return slug, int(number)


def start_gunicorn(env: dict[str, str], log_path: Path) -> tuple[subprocess.Popen, int]:
    log = log_path.open("w")
    web = subprocess.Popen(
        ["gunicorn", "--config", "docker/gunicorn.conf.py", "config.wsgi:application"],
        cwd=ROOT,
        env={**env, "GUNICORN_BIND": "127.0.0.1:0"},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        match = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", log_path.read_text(errors="replace"))
        if match:
            port = int(match.group(1))
            while time.monotonic() < deadline:
                try:
                    if request(port, "GET", "/healthz")[0] == 200:
                        return web, port
                except OSError:
                    pass
                time.sleep(0.2)
        if web.poll() is not None:
            break
        time.sleep(0.2)
    web.terminate()
    raise SystemExit(f"gunicorn did not start:\n{log_path.read_text(errors='replace')[-3000:]}")


def request(port: int, method: str, path: str, body: bytes = b"", headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        # Production settings redirect plain HTTP: the proxy in front says it was HTTPS.
        conn.request(method, path, body=body or None, headers={"X-Forwarded-Proto": "https", **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def slash(port: int, text: str) -> tuple[int, bytes]:
    body = urlencode(
        {
            "command": "/relcal",
            "text": text,
            "user_id": USER_ID,
            "user_name": "bench",
            "team_id": TEAM_ID,
            "channel_id": CHANNEL_ID,
            "trigger_id": f"{time.time_ns()}.bench",
            "response_url": "https://hooks.slack.invalid/commands/bench",
        }
    ).encode()
    timestamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": compute_signature(signing_secret=SIGNING_SECRET, timestamp=timestamp, body=body),
    }
    return request(port, "POST", "/slack/commands", body, headers)


def run_round(port: int, total: int, concurrency: int, job) -> list[tuple[str, float]]:
    """``total`` calls of ``job(i) -> label`` from ``concurrency`` threads; (label, seconds) each."""
    counter = iter(range(total))
    lock = threading.Lock()
    timings: list[tuple[str, float]] = []
    errors: list[str] = []

    def worker():
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                return
            start = time.perf_counter()
            try:
                label = job(i)
            except Exception as exc:  # noqa: BLE001 (counted and reported)
                with lock:
                    errors.append(f"{exc.__class__.__name__}: {exc}")
                continue
            elapsed = time.perf_counter() - start
            with lock:
                timings.append((label, elapsed))

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise SystemExit(f"{len(errors)} request(s) failed, e.g. {errors[0]}")
    return timings


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))
    return ordered[index]


def line(name: str, values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"{name:<34} n={len(ms):>5}  p50 {percentile(ms, 50):7.1f} ms  p90 {percentile(ms, 90):7.1f} ms  "
        f"p99 {percentile(ms, 99):7.1f} ms  max {max(ms):7.1f} ms  mean {statistics.fmean(ms):6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per endpoint per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--serial", type=int, default=60, help="requests per endpoint one at a time")
    parser.add_argument("--workers", default=os.environ.get("WEB_CONCURRENCY", "3"), help="gunicorn workers")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, Database(Path(tmp)) as database:
        env = production_env(DATABASE_URL=database.url, WEB_CONCURRENCY=str(options.workers))
        env.setdefault("STATIC_ROOT", str(Path(tmp) / "static"))
        print(f"database: {database.url.rsplit('/', 1)[-1]}; migrating and loading the demo ...", flush=True)
        manage(env, "migrate", "--noinput")
        manage(env, "seed_demo")
        manage(env, "collectstatic", "--noinput", "--verbosity", "0")
        slug, kep = demo_names(env)
        load_before = os.getloadavg()[0]
        texts = ["next", "next code-freeze", f"kep {kep}", f"release {slug}", "exceptions pending", "help"]
        web, port = start_gunicorn(env, Path(tmp) / "gunicorn.log")
        try:
            for text in texts:  # each answers, and as Slack expects (JSON with blocks)
                status, body = slash(port, text)
                answer = json.loads(body) if status == 200 else {}
                if status != 200 or not answer.get("blocks"):
                    raise SystemExit(f"/relcal {text}: {status} {body[:300]!r}")

            def slash_job(i: int) -> str:
                text = texts[i % len(texts)]
                status, body = slash(port, text)
                if status != 200 or b'"blocks"' not in body:
                    raise RuntimeError(f"/relcal {text}: {status} {body[:200]!r}")
                return text.split()[0] if not text.startswith("next") else text

            def probe_job(path: str):
                def job(i: int) -> str:
                    status, body = request(port, "GET", path)
                    if status != 200:
                        raise RuntimeError(f"{path}: {status} {body[:200]!r}")
                    return path

                return job

            probes = {"/readyz": probe_job("/readyz"), "/healthz": probe_job("/healthz")}
            run_round(port, 2 * options.concurrency, options.concurrency, slash_job)  # warm every worker
            for job in probes.values():
                run_round(port, 2 * options.concurrency, options.concurrency, job)
            slash_times: list[tuple[str, float]] = []
            probe_times: dict[str, list[float]] = {path: [] for path in probes}
            for _ in range(options.rounds):  # alternating, so that a busy moment hits all alike
                slash_times += run_round(port, options.requests, options.concurrency, slash_job)
                for path, job in probes.items():
                    probe_times[path] += [t for _, t in run_round(port, options.requests, options.concurrency, job)]
            serial_slash = run_round(port, options.serial, 1, slash_job)
            serial_probes = {path: run_round(port, options.serial, 1, job) for path, job in probes.items()}
        finally:
            web.terminate()
            web.wait(timeout=60)

    load = os.getloadavg()[0]
    print(
        f"\nload average {load_before:.1f} before, {load:.1f} after (the same {os.cpu_count()} CPUs serve gunicorn, "
        "PostgreSQL, Redis, this client and anything else running)"
    )
    print(
        f"{options.concurrency} concurrent clients, gunicorn {options.workers} workers x "
        f"{os.environ.get('GUNICORN_THREADS', '2')} threads, production settings, "
        f"{options.rounds} alternating rounds of {options.requests} requests per endpoint, {os.cpu_count()} CPUs"
    )
    slash_all = [t for _, t in slash_times]
    print(line("POST /slack/commands (/relcal, all)", slash_all))
    print(line("GET /readyz (database and cache)", probe_times["/readyz"]))
    print(line("GET /healthz (process only)", probe_times["/healthz"]))
    for label in sorted({label for label, _ in slash_times}):
        print(line(f"  /relcal {label}", [t for name, t in slash_times if name == label]))
    print(f"one at a time ({options.serial} requests each): the work per request, without queueing")
    print(line("  POST /slack/commands (/relcal)", [t for _, t in serial_slash]))
    for path, timings in serial_probes.items():
        print(line(f"  GET {path}", [t for _, t in timings]))
    p99 = percentile(slash_all, 99)
    ratio = p99 / percentile(probe_times["/readyz"], 99)
    verdict = "meets" if ratio <= 1.5 else "DOES NOT meet"
    print(f"p99 /relcal / p99 /readyz = {ratio:.2f}x (floor: at most 1.50x): {verdict} the floor")
    print(f"p99 /relcal / p99 /healthz = {p99 / percentile(probe_times['/healthz'], 99):.2f}x (for scale)")
    print(f"/relcal p99 {p99 * 1000:.0f} ms is {'under' if p99 * 1000 < 300 else 'NOT under'} 300 ms")


if __name__ == "__main__":
    main()
