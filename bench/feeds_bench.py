"""Feed speed: cold render, then warm feed vs a static file of the same bytes, side by side.

    .venv/bin/python bench/feeds_bench.py [--seconds 5] [--rounds 3] [--clients 4] [--workers 2]

1. Builds, in a throwaway SQLite file (or DATABASE_URL when set), a release with 40
   milestones and 300 KEPs of one SIG, each with an approved exception (extension
   events), through the real services.
2. Reports the cold render time of the SIG feed (340 events): the version query, subject
   check, the render queries and serialisation, under a new feed version each time (as
   after any write), median of 5.
3. Writes the feed's exact bytes to a temporary STATIC_ROOT, starts gunicorn (the
   production settings: WhiteNoise serves that file) on 127.0.0.1, and measures, in
   alternating rounds of fixed duration, requests/second of
   - GET of the feed (warm) against GET of the static .ics, and
   - conditional GET answered 304 (If-None-Match) for both,
   printing each figure beside its floor (issue 27: warm 200 >= 0.5x static, 304 >= 0.6x
   a static 304, cold SIG feed < 200 ms) and the load average before and after (the
   machine may be shared: the ratios, not the absolute rates, are the figures). Only
   127.0.0.1 is contacted.

A warm feed request is: the full middleware stack, one indexed query for the feed
version, then one cache read: the small head entry for a conditional request (a 304
never reads the body), the body bytes for an unconditional one (feeds/cache.py).

The client is N processes with raw sockets, one request per connection (gunicorn's
sync workers close after each response), every response checked (status, length).
Cache: Redis when REDIS_URL is set (under a key prefix of this run, whose keys are
deleted at the end), else the local-memory cache. The figures issue 10 asks for are on
PostgreSQL + Redis: set DATABASE_URL=postgres://... and REDIS_URL=redis://.../<n>.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIG = "node"
RELEASE = "9.40"
FLOORS = {"200": 0.5, "304": 0.6}  # issue 27: warm feed vs the static file, per answer
COLD_CEILING_MS = 200.0  # issue 27: the cold 340-event SIG feed


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def environment(workdir: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "DEBUG": "0",
        "ALLOWED_HOSTS": "127.0.0.1",
        "SECURE_SSL_REDIRECT": "0",
        "STATIC_ROOT": str(workdir / "static"),
        "RELEASECAL_VAR_DIR": str(workdir),
        "LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(ROOT),
        "CACHE_KEY_PREFIX": f"feeds-bench-{secrets.token_hex(4)}",
    }
    if not os.environ.get("DATABASE_URL"):
        env["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    return env


def forget_cache_keys(env: dict[str, str]) -> None:
    """Delete this run's keys from Redis (never FLUSHDB: the database may be shared)."""
    if not env.get("REDIS_URL"):
        return
    import redis

    client = redis.Redis.from_url(env["REDIS_URL"])
    try:
        keys = list(client.scan_iter(match=f"{env['CACHE_KEY_PREFIX']}:*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def throwaway_postgres(url: str) -> tuple[str, object]:
    """A fresh database beside DATABASE_URL's (dropped at the end), so runs never mix."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(url)
    name = f"feeds_bench_{secrets.token_hex(4)}"
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return urlunsplit(parts._replace(path=f"/{name}")), drop


# ------------------------------------------------------------------ data + cold


def build_data() -> None:
    import datetime as dt

    from django.contrib.auth.models import Group, User

    from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
    from releasecal import tz
    from releasecal.models import Release
    from releasecal.services import enhancement_upsert, milestone_create, milestone_kinds_ensure, tracking_set

    kinds = milestone_kinds_ensure()
    release = Release.objects.create(
        slug=RELEASE, name="Bench release", zone="America/Los_Angeles", start_date=dt.date(2024, 1, 8),
        ga_date=dt.date(2024, 12, 10), status=Release.Status.ACTIVE,
    )  # fmt: skip
    la = "America/Los_Angeles"
    freeze = milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze",
        at=tz.parse_wall_time("2024-10-01 19:00", la), ends_at=tz.parse_wall_time("2024-11-20 19:00", la),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["rc"], title="rc.0", at=tz.parse_wall_time("2024-11-25 10:00", la)
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["ga"], title="GA", on_date=dt.date(2024, 12, 10))
    for i in range(37):  # 40 milestones in all, across both DST changes, some all-day
        day = dt.date(2024, 1, 15) + dt.timedelta(days=7 * i)
        if i % 4 == 0:
            milestone_create(release=release, kind=kinds["docs-freeze"], title=f"Checkpoint {i}", on_date=day)
        else:
            milestone_create(
                release=release, kind=kinds["test-freeze"], title=f"Checkpoint {i}",
                at=tz.parse_wall_time(f"{day.isoformat()} 17:00", la),
            )  # fmt: skip
    requester = User.objects.create_user("bench-requester")
    decider = User.objects.create_user("bench-lead")
    decider.groups.add(Group.objects.get(name="Release Team"))
    release.leads.add(decider)  # deciding needs membership of this release's team
    for n in range(300):
        kep = enhancement_upsert(number=10000 + n, title=f"Bench feature {n}", owning_sig=SIG)
        tracking_set(release=release, enhancement=kep, stage="beta")
        request = exception_request_submit(
            enhancement=kep, milestone=freeze, requester=requester,
            fields=RequestFields(days=1 + n % 5, stage="beta", sig=SIG),
            submitted_at=freeze.deadline + dt.timedelta(hours=1),
        )  # fmt: skip
        exception_request_approve(request=request, actor=decider)


def cold_render_ms(path: str, runs: int = 5) -> tuple[float, bytes, str]:
    from django.test import Client

    from feeds.cache import feed_version_bump

    client = Client(SERVER_NAME="127.0.0.1")
    timings = []
    body, etag = b"", ""
    for _ in range(runs):
        feed_version_bump()  # as after any write: the next request builds the feed
        started = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content[:200]
        body, etag = response.content, response["ETag"]
    return statistics.median(timings), body, etag


def in_process_us(feed_path: str, static_path: str, runs: int = 300) -> dict[str, tuple[float, float]]:
    """Median µs per request through Django's whole WSGI handler in this process (no
    sockets, no other worker): (feed, static) for 200 and for 304. What a request costs
    in CPU, apart from waiting for the database and Redis round trips to be scheduled."""
    from django.test import Client

    client = Client(SERVER_NAME="127.0.0.1")  # a new handler: WhiteNoise sees the static copy
    etags = {path: client.get(path)["ETag"] for path in (feed_path, static_path)}
    result = {}
    for label, conditional in (("200", False), ("304", True)):
        medians = []
        for path in (feed_path, static_path):
            headers = {"if_none_match": etags[path]} if conditional else {}
            timings = []
            for _ in range(runs):
                started = time.perf_counter()
                response = client.get(path, headers=headers)
                timings.append((time.perf_counter() - started) * 1e6)
                assert response.status_code == int(label), (path, response.status_code)
            medians.append(statistics.median(timings))
        result[label] = (medians[0], medians[1])
    return result


# ------------------------------------------------------------------------ load


def _one(port: int, request: bytes, expect_status: bytes, expect_length: int) -> bool:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            chunk = sock.recv(262144)
            if not chunk:
                break
            chunks.append(chunk)
    data = b"".join(chunks)
    head, _, body = data.partition(b"\r\n\r\n")
    return head.startswith(b"HTTP/1.1 " + expect_status) and len(body) == expect_length


def _client(args: tuple) -> tuple[int, int]:
    port, request, expect_status, expect_length, seconds = args
    done = errors = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if _one(port, request, expect_status, expect_length):
            done += 1
        else:
            errors += 1
    return done, errors


def request_bytes(path: str, if_none_match: str = "") -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", "User-Agent: feeds-bench"]
    if if_none_match:
        lines.append(f"If-None-Match: {if_none_match}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def measure(pool, port: int, request: bytes, status: bytes, length: int, seconds: float, clients: int) -> float:
    started = time.perf_counter()
    results = pool.map(_client, [(port, request, status, length, seconds)] * clients)
    elapsed = time.perf_counter() - started
    done = sum(r[0] for r in results)
    errors = sum(r[1] for r in results)
    if errors:
        raise SystemExit(f"{errors} bad responses for {request.splitlines()[0].decode()}")
    return done / elapsed


def etag_of(port: int, path: str) -> str:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request_bytes(path))
        data = b""
        while chunk := sock.recv(262144):
            data += chunk
    for line in data.split(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"etag:"):
            return line.split(b":", 1)[1].strip().decode()
    raise SystemExit(f"no ETag on {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each measurement round")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per pair")
    parser.add_argument("--clients", type=int, default=4, help="client processes")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    args = parser.parse_args()
    load_before = load_average()

    with tempfile.TemporaryDirectory(prefix="feeds-bench-") as tmp:
        workdir = Path(tmp)
        (workdir / "static").mkdir()
        env = environment(workdir)
        drop_database = None
        if env["DATABASE_URL"].startswith(("postgres://", "postgresql://")):
            env["DATABASE_URL"], drop_database = throwaway_postgres(env["DATABASE_URL"])
        os.environ.update(env)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        build_data()
        print(f"data: 40 milestones, 300 approved extensions built in {time.perf_counter() - started:.1f}s")
        feed_path = f"/calendar/{RELEASE}/sig/{SIG}.ics"
        cold_ms, body, _ = cold_render_ms(feed_path)
        verdict = "meets" if cold_ms < COLD_CEILING_MS else "ABOVE"
        print(f"cold render of {feed_path}: {cold_ms:.1f} ms (median of 5; {body.count(b'BEGIN:VEVENT')} events,")
        print(f"  {len(body)} bytes; {verdict} the ceiling of {COLD_CEILING_MS:g} ms)")
        static_name = "feed-copy.ics"
        (workdir / "static" / static_name).write_bytes(body)
        in_process = in_process_us(feed_path, f"/static/{static_name}")
        from django.db import connections

        connections.close_all()

        port = free_port()
        command = [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application"]
        command += ["--bind", f"127.0.0.1:{port}", "--workers", str(args.workers), "--worker-class", "sync"]
        command += ["--log-level", "warning"]
        gunicorn = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
        )
        try:
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.1)
            static_path = f"/static/{static_name}"
            for _ in range(args.workers * 4):  # warm every worker's caches
                etag_of(port, feed_path)
            feed_etag, static_etag = etag_of(port, feed_path), etag_of(port, static_path)
            ctx = multiprocessing.get_context("fork")
            with ctx.Pool(args.clients) as pool:
                full = {"feed": [], "static": []}
                cond = {"feed": [], "static": []}
                for _ in range(args.rounds):
                    full["feed"].append(
                        measure(pool, port, request_bytes(feed_path), b"200", len(body), args.seconds, args.clients)
                    )
                    full["static"].append(
                        measure(pool, port, request_bytes(static_path), b"200", len(body), args.seconds, args.clients)
                    )
                    cond["feed"].append(
                        measure(pool, port, request_bytes(feed_path, feed_etag), b"304", 0, args.seconds, args.clients)
                    )
                    cond["static"].append(
                        measure(
                            pool, port, request_bytes(static_path, static_etag), b"304", 0, args.seconds, args.clients
                        )
                    )
        finally:
            gunicorn.send_signal(signal.SIGTERM)
            gunicorn.wait(timeout=30)
            connections.close_all()
            forget_cache_keys(env)
            if drop_database is not None:
                drop_database()

    def report(label: str, pair: dict[str, list[float]]) -> None:
        feed, static = statistics.median(pair["feed"]), statistics.median(pair["static"])
        ratio, floor = feed / static, FLOORS[label.strip().split()[0]]
        verdict = "meets" if ratio >= floor else "BELOW"
        print(f"{label}: feed {feed:8.0f} req/s   static {static:8.0f} req/s   ratio {ratio:.2f}x ({verdict} {floor}x)")

    print(
        f"gunicorn sync x{args.workers}, {args.clients} client processes, {args.rounds} alternating rounds "
        f"of {args.seconds:g}s, cache: {'Redis' if os.environ.get('REDIS_URL') else 'local memory'}, "
        f"db: {'SQLite' if env['DATABASE_URL'].startswith('sqlite') else 'PostgreSQL (throwaway database)'}"
    )
    print(f"load average (1, 5, 15 min): {load_before} before, {load_average()} after")
    report("200 warm", full)
    report("304     ", cond)
    for label, (feed, static) in in_process.items():
        print(
            f"in-process {label} (whole WSGI handler, median of 300): feed {feed:6.0f} µs   static {static:6.0f} µs"
            f"   ratio {static / feed:.2f}x (floor {FLOORS[label]}x)"
        )


if __name__ == "__main__":
    main()
