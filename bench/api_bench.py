"""API speed next to DRF's own floor, side by side on one gunicorn.

    .venv/bin/python bench/api_bench.py [--seconds 5] [--rounds 3] [--clients 4] [--workers 2]

1. Builds, in a throwaway SQLite file (or --database-url, an EMPTY database), a release
   with its milestones, 300 KEPs each with an exception request (half approved, with a
   decision; two revisions and a sign-off each), through bulk inserts.
2. Starts gunicorn on 127.0.0.1 with the real settings plus one extra route: a DRF
   APIView returning a constant small Response (the floor any DRF endpoint pays:
   routing, DRF request/response, content negotiation, authentication, throttling
   against the same cache).
3. In alternating rounds of fixed duration, measures requests/second of
   - GET /api/v1/deadlines/next/?kep=<n>&tz=Europe/Berlin   (effective deadlines)
   - GET /api/v1/exceptions/?limit=300                      (300 rows, every field)
   - GET /bench/minimal/                                   (the DRF floor)
   and prints each endpoint's ratio to the minimal view beside the floor issue 27 sets
   (deadlines/next/ >= 0.3x, exceptions/ with 300 rows >= 0.05x) and the load average
   before and after (the machine may be shared: the ratio is the figure). Only
   127.0.0.1 is contacted.

The client is N processes with raw sockets, one request per connection (gunicorn's sync
workers close after each response); every response's status is checked.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RELEASE = "9.50"
KEP = 50_000
ROWS = 300
MINIMAL = "minimal DRF APIView"
FLOORS = {"deadlines/next/ (one KEP, ?tz=)": 0.3, f"exceptions/ ({ROWS} rows)": 0.05}  # issue 27


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# The real settings (config.settings.base: the settings module is checked against the
# declared ones), with the bench's URLs: the project's plus the minimal view.
WSGI_MODULE = """
from django.conf import settings
from django.core.wsgi import get_wsgi_application

from config import env

env.use_settings_module()
settings.ROOT_URLCONF = "api_bench_urls"
application = get_wsgi_application()
"""

URLS_MODULE = """
from django.urls import include, path
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView


class MinimalApi(APIView):
    permission_classes = [AllowAny]

    def get(self, request):
        return Response({"ok": True})


urlpatterns = [path("bench/minimal/", MinimalApi.as_view()), path("", include("config.urls"))]
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def environment(workdir: Path, database_url: str | None) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.base",
        "API_THROTTLE_ANON": "100000000/min",
        "API_THROTTLE_USER": "100000000/min",
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "RELEASECAL_VAR_DIR": str(workdir),
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT)]),
    }
    env.pop("DATABASE_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    return env


SEED = f"""
import datetime as dt
from django.contrib.auth.models import User
from exceptions.models import Decision, ExceptionRequest, ExceptionRequestRevision, SignOff
from releasecal import tz
from releasecal.models import Enhancement, EnhancementOwner, MilestoneKind, Release, Tracking
from releasecal.services import milestone_create

now = tz.utc_now()
release = Release.objects.create(slug="{RELEASE}", name="Bench", zone="America/Los_Angeles",
                                 start_date=now.date(), status="active")
kinds = {{k.slug: k for k in MilestoneKind.objects.all()}}
freeze = milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze",
                          at=now + dt.timedelta(days=10))
for i, slug in enumerate(["test-freeze", "docs-freeze", "rc", "ga"]):
    milestone_create(release=release, kind=kinds[slug], title=slug, at=now + dt.timedelta(days=20 + i))
user = User.objects.create_user("bench")
keps = Enhancement.objects.bulk_create(
    Enhancement(number={KEP} + i, title=f"KEP {{i}}", owning_sig="node", participating_sigs=["node"])
    for i in range({ROWS})
)
EnhancementOwner.objects.bulk_create(EnhancementOwner(enhancement=k, github=f"gh{{k.number}}") for k in keps)
Tracking.objects.bulk_create(Tracking(release=release, enhancement=k, stage="beta") for k in keps)
at = freeze.deadline - dt.timedelta(hours=1)
requests = ExceptionRequest.objects.bulk_create(
    ExceptionRequest(release=release, enhancement=k, milestone=freeze, requester=user, days=2, submitted_at=at,
                     state="approved" if i % 2 else "pending")
    for i, k in enumerate(keps)
)
ExceptionRequestRevision.objects.bulk_create(
    ExceptionRequestRevision(request=r, number=n, created_at=at, days=2, reason="bench" * 20)
    for r in requests for n in (1, 2)
)
SignOff.objects.bulk_create(SignOff(request=r, author_label="sig lead", at=at) for r in requests)
Decision.objects.bulk_create(
    Decision(request=r, outcome="approved", decided_by=user, decided_at=at, granted_until=freeze.deadline
             + dt.timedelta(days=2), granted_zone="America/Los_Angeles", freeze_at=freeze.deadline)
    for r in requests if r.state == "approved"
)
print(ExceptionRequest.objects.count(), "requests")
"""


def check_database(url: str) -> None:
    """A clear sentence, not a traceback, when --database-url names a PostgreSQL
    database that cannot be used: missing, unreachable, or already holding the bench's rows."""
    if not url.startswith(("postgres://", "postgresql://")):
        return
    import psycopg

    name = url.rsplit("/", 1)[-1].split("?", 1)[0]
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            table = conn.execute("SELECT to_regclass('releasecal_release')").fetchone()[0]
            seeded = table and conn.execute("SELECT 1 FROM releasecal_release WHERE slug = %s", [RELEASE]).fetchone()
    except psycopg.OperationalError as exc:
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        if "does not exist" in reason:
            raise SystemExit(
                f"The database {name!r} does not exist. Create an empty one first (createdb {name}), "
                "or leave out --database-url to use a throwaway SQLite file."
            ) from None
        raise SystemExit(f"Cannot connect to the database {name!r}: {reason}") from None
    if seeded:
        raise SystemExit(
            f"The database {name!r} already holds the bench's release {RELEASE}: give an EMPTY database "
            f"(dropdb {name} && createdb {name})."
        )


def prepare(env: dict[str, str]) -> None:
    manage = [sys.executable, str(ROOT / "manage.py")]
    for step, args in (("migrate", ["migrate", "--noinput", "-v0"]), ("seed", ["shell", "-c", SEED])):
        if subprocess.run([*manage, *args], env=env, cwd=ROOT).returncode != 0:
            raise SystemExit(f"The bench's {step} step failed (its output is above).")


def _client(port: int, path: str, seconds: float, results) -> None:
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
    done = errors = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(request)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        head = b"".join(chunks[:1])[:12]
        if head.endswith(b"200"):
            done += 1
        else:
            errors += 1
    results.put((done, errors))


def measure(port: int, path: str, seconds: float, clients: int) -> float:
    results = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=_client, args=(port, path, seconds, results)) for _ in range(clients)]
    start = time.perf_counter()
    for proc in procs:
        proc.start()
    totals = [results.get() for _ in procs]
    for proc in procs:
        proc.join()
    elapsed = time.perf_counter() - start
    done, errors = sum(t[0] for t in totals), sum(t[1] for t in totals)
    if errors:
        raise SystemExit(f"{path}: {errors} responses were not 200")
    return done / elapsed


def wait_for(port: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("gunicorn exited; see its output above")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("gunicorn did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--database-url", help="an EMPTY database to use instead of a throwaway SQLite file")
    args = parser.parse_args()
    if args.database_url:
        check_database(args.database_url)
    load_before = load_average()

    with tempfile.TemporaryDirectory(prefix="api-bench-") as tmp:
        workdir = Path(tmp)
        (workdir / "api_bench_wsgi.py").write_text(WSGI_MODULE)
        (workdir / "api_bench_urls.py").write_text(URLS_MODULE)
        env = environment(workdir, args.database_url)
        prepare(env)
        port = free_port()
        gunicorn = Path(sys.executable).with_name("gunicorn")
        server = subprocess.Popen(
            [str(gunicorn), "api_bench_wsgi:application", "-b", f"127.0.0.1:{port}", "-w", str(args.workers),
             "--log-level", "warning"],
            env=env, cwd=ROOT,
        )  # fmt: skip
        try:
            wait_for(port, server)
            endpoints = {
                MINIMAL: "/bench/minimal/",
                "deadlines/next/ (one KEP, ?tz=)": f"/api/v1/deadlines/next/?kep={KEP + 1}&tz=Europe/Berlin",
                f"exceptions/ ({ROWS} rows)": f"/api/v1/exceptions/?limit={ROWS}",
            }
            for path in endpoints.values():  # warm up every worker
                measure(port, path, 0.5, args.clients)
            rates: dict[str, list[float]] = {name: [] for name in endpoints}
            for _ in range(args.rounds):
                for name, path in endpoints.items():
                    rates[name].append(measure(port, path, args.seconds, args.clients))
        finally:
            server.terminate()
            server.wait(timeout=10)

    minimal = statistics.median(rates[MINIMAL])
    db = "given database" if args.database_url else "SQLite"
    print(f"\ngunicorn -w {args.workers}, {args.clients} clients, {args.rounds} x {args.seconds:g}s rounds, {db}")
    print(f"load average (1, 5, 15 min): {load_before} before, {load_average()} after")
    print(f"{'endpoint':<36} {'req/s (median)':>15} {'rounds':>24} {'ratio':>8}  floor")
    for name, values in rates.items():
        median = statistics.median(values)
        rounds = ", ".join(f"{v:.0f}" for v in values)
        ratio = median / minimal
        verdict = "" if name == MINIMAL else f"{'meets' if ratio >= FLOORS[name] else 'BELOW'} {FLOORS[name]}x"
        print(f"{name:<36} {median:>15.1f} {rounds:>24} {ratio:>7.3f}x  {verdict}")


if __name__ == "__main__":
    main()
