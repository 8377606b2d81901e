"""Reminder throughput: 10,000 due deliveries through Redis, two Celery worker processes,
a fake Slack on 127.0.0.1; against 10,000 no-op tasks on the same broker, same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rc_reminders \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/4 .venv/bin/python bench/reminders_bench.py

It works in its own database (``<name>_bench``, created and migrated here, dropped at the
end) and only empties the Celery queue keys of the broker database it is given. Prints
the time of each phase, their ratio, duplicates (must be 0) and lost (must be 0), and
the minute sweep's own time: the sweep that marks all rows queued (and queues them),
one with nothing to do (median of 20), and one that reclaims every row from a lost
worker and marks it queued again (without queuing).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _bench_database(url: str) -> tuple[str, str]:
    parsed = urlparse(url)
    name = parsed.path.lstrip("/") + "_bench"
    return name, urlunparse(parsed._replace(path="/" + name))


def _recreate_database(url: str, name: str) -> None:
    import psycopg

    admin = urlunparse(urlparse(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def _drop_database(url: str, name: str) -> None:
    import psycopg

    admin = urlunparse(urlparse(url)._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> int:
    parser = argparse.ArgumentParser(description="Reminder delivery throughput vs no-op Celery tasks.")
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2, help="worker processes (each --concurrency 1)")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()

    base_url = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL", "")
    if not base_url.startswith("postgres") or not broker.startswith("redis"):
        print("Needs DATABASE_URL=postgres://... and CELERY_BROKER_URL (or REDIS_URL)=redis://.../<db>.")
        return 2
    db_name, db_url = _bench_database(base_url)
    _recreate_database(base_url, db_name)
    os.environ["DATABASE_URL"] = db_url
    os.environ["CELERY_BROKER_URL"] = broker
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import django

    django.setup()
    import tempfile

    import redis
    from django.core.management import call_command
    from django.db import connections

    import reminders.tasks  # noqa: F401  (registers reminders.send, which the sweep queues by name)
    from bench.noop import noop_task
    from releasecal import tz
    from releasecal.services import milestone_create, milestone_kinds_ensure
    from reminders import services
    from reminders.models import Channel, Delivery
    from tests.support.fake_slack import FakeSlack
    from tests.support.reminder_workers import Worker, due_deliveries, own_queue, purge_broker

    call_command("migrate", verbosity=0)
    queues = contextlib.ExitStack()
    queue = queues.enter_context(own_queue("bench"))  # only this run's queue is purged
    client = redis.Redis.from_url(broker)
    fake = FakeSlack().start()
    fake.keep_payloads = False
    log_dir = Path(tempfile.mkdtemp(prefix="reminders-bench-"))
    workers: list[Worker] = []
    try:
        from releasecal.models import Release

        kinds = milestone_kinds_ensure()
        release = Release.objects.create(
            slug="bench", name="Bench", zone="America/Los_Angeles", start_date="2030-01-01"
        )
        milestone = milestone_create(
            release=release,
            kind=kinds["code-freeze"],
            title="Code Freeze",
            at=tz.parse_wall_time("2030-03-01 19:00", "UTC"),
        )
        channel = Channel.objects.create(name="bench", kind="slack_webhook", config={"url": fake.webhook_url()})
        purge_broker(broker, queue)
        print(f"creating {args.count} due deliveries ...", flush=True)
        ids = due_deliveries(milestone=milestone, channel=channel, count=args.count)
        connections.close_all()

        for n in range(args.workers):
            workers.append(
                Worker(
                    broker=broker,
                    name=f"bench{n}",
                    concurrency=1,
                    log_dir=log_dir,
                    env={"CONN_MAX_AGE": "60"},
                    include=("bench.noop",),
                )
            )
        # Warm up: both workers connected and importing before the clock starts.
        for _ in range(args.workers * 4):
            noop_task.delay(0)
        _drain(client, timeout=60)

        # Phase 1: no-op tasks, same broker, same workers.
        started = time.perf_counter()
        for n in range(args.count):
            noop_task.delay(n)
        _drain(client, timeout=600)
        noop_seconds = time.perf_counter() - started

        # Phase 2: the real thing. One sweep (what beat runs each minute) queues them all.
        started = time.perf_counter()
        result = services.deliveries_sweep()
        sweep_seconds = time.perf_counter() - started
        queued = len(result.queued)
        deadline = time.monotonic() + 900
        mine = Delivery.objects.filter(milestone=milestone)
        while mine.filter(state=Delivery.State.SENT).count() < len(ids):
            if time.monotonic() > deadline:
                break
            time.sleep(0.25)
        send_seconds = time.perf_counter() - started
        _drain(client, timeout=60)
        time.sleep(1)

        stats = fake.stats()
        received = set(fake.received)
        lost = len(set(ids) - received)
        sent_rows = mine.filter(state=Delivery.State.SENT).count()
        idle = []
        for _ in range(20):
            begun = time.perf_counter()
            services.deliveries_sweep()
            idle.append(time.perf_counter() - begun)
        # Every row as if its worker died mid-send: the sweep reclaims and re-marks them all.
        mine.update(state=Delivery.State.SENDING, claimed_at=tz.utc_now() - dt.timedelta(hours=1), attempts=1)
        begun = time.perf_counter()
        reclaim = services.deliveries_sweep(enqueue=lambda delivery_id: None)
        reclaim_seconds = time.perf_counter() - begun

        print()
        print(f"deliveries           {len(ids)} (queued by one sweep: {queued})")
        where = f"{urlparse(broker).scheme} db {urlparse(broker).path.lstrip('/') or 0}"
        print(f"worker processes     {args.workers} x concurrency 1, broker {where}")
        print(f"no-op tasks          {noop_seconds:8.2f} s  ({args.count / noop_seconds:7.0f}/s)")
        print(f"reminder deliveries  {send_seconds:8.2f} s  ({len(ids) / send_seconds:7.0f}/s)")
        print(f"ratio                {send_seconds / noop_seconds:8.2f} x the no-op baseline")
        print(f"received by Slack    {stats['messages']} messages, {stats['distinct']} distinct")
        print(f"duplicates           {stats['duplicates']}  (must be 0)")
        print(f"lost                 {lost}  (must be 0; ledger rows sent: {sent_rows})")
        print(f"sweep, {queued} due      {sweep_seconds * 1000:8.1f} ms (mark queued + queue the tasks)")
        print(f"sweep, nothing due   {statistics.median(idle) * 1000:8.1f} ms (median of {len(idle)})")
        print(
            f"sweep, {reclaim.reclaimed} reclaimed {reclaim_seconds * 1000:8.1f} ms "
            f"(back to pending and marked queued again: {len(reclaim.queued)})"
        )
        return 0 if stats["duplicates"] == 0 and lost == 0 else 1
    finally:
        for worker in workers:
            worker.stop()
        fake.stop()
        purge_broker(broker, queue)
        queues.close()
        connections.close_all()
        if not args.keep_db:
            _drop_database(base_url, db_name)


def _drain(client, *, timeout: float) -> None:
    from tests.support.reminder_workers import queue_name

    """Wait until the queue is empty and nothing is unacknowledged (acks_late: a task is
    acknowledged only after it ran)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.llen(queue_name()) == 0 and client.hlen("unacked") == 0:
            return
        time.sleep(0.05)
    raise SystemExit("the queue did not drain in time")


if __name__ == "__main__":
    raise SystemExit(main())
