"""Reminder delivery, side by side in one run (issue 14's figures):

(a) ledger overhead: 10,000 due deliveries (one sweep queues them, the workers claim, send
    and record each) against 10,000 bare Celery tasks making the same HTTP post to the same
    fake Slack without the ledger, and 10,000 no-op tasks; same broker, same two worker
    processes, digests and the rate limit off (they would measure Slack's limit, not ours).
(b) lateness: 1,000 reminders due at the same instant across 20 Slack channels, the fake
    Slack enforcing one message per channel per second (429 + Retry-After beyond it) and
    our shared per-channel limit on: p50/p99/max of (received by Slack - due), messages
    and 429s; with digests on, and off beside it. Beat's minute sweep is simulated (the
    first at the due instant, as beat's sweep of that minute, then every --sweep-every s).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rc_reminders \\
    CELERY_BROKER_URL=redis://127.0.0.1:6379/4 .venv/bin/python bench/reminders_bench.py

It works in its own database (``<name>_bench``, created and migrated here, dropped at the
end), its own Celery queue and its own cache key prefix on the broker's Redis database
(the rate limit's keys; deleted at the end). Duplicates and lost must be 0, and no
reminder later than the grace period.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import math
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
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
    parser = argparse.ArgumentParser(description="Reminder delivery: ledger overhead and lateness under Slack's limit.")
    parser.add_argument("--count", type=int, default=10_000, help="deliveries for (a)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (each --concurrency 1)")
    parser.add_argument("--burst", type=int, default=1_000, help="reminders for (b)")
    parser.add_argument("--channels", type=int, default=20, help="Slack channels for (b)")
    parser.add_argument("--sweep-every", type=float, default=60.0, help="seconds between simulated beats in (b)")
    parser.add_argument("--skip-overhead", action="store_true", help="only (b)")
    parser.add_argument("--skip-lateness", action="store_true", help="only (a)")
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
    # The cache (the shared rate limit) on the broker's Redis database, under a prefix of
    # this run's own: the workers inherit both.
    cache_prefix = f"bench-reminders-{uuid.uuid4().hex[:10]}"
    os.environ["REDIS_URL"] = broker
    os.environ["CACHE_KEY_PREFIX"] = cache_prefix
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.setdefault("LOG_LEVEL", "WARNING")

    import django

    django.setup()
    import tempfile

    import redis
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    import reminders.tasks  # noqa: F401  (registers reminders.send, which the sweep queues by name)
    from bench.noop import noop_task, post_task
    from releasecal import tz
    from releasecal.models import Release
    from releasecal.services import milestone_create, milestone_kinds_ensure
    from reminders import services
    from reminders.messages import message_for_delivery, render_slack
    from reminders.models import Channel, Delivery, ReminderRule
    from tests.support.fake_slack import FakeSlack
    from tests.support.reminder_workers import Worker, due_deliveries, own_queue, purge_broker

    call_command("migrate", verbosity=0)
    queues = contextlib.ExitStack()
    queue = queues.enter_context(own_queue("bench"))  # only this run's queue is purged
    client = redis.Redis.from_url(broker)
    fakes: list[FakeSlack] = []
    log_dir = Path(tempfile.mkdtemp(prefix="reminders-bench-"))
    workers: list[Worker] = []

    def start_workers(tag: str, env: dict) -> None:
        for worker in workers:
            worker.stop()
        workers.clear()
        for n in range(args.workers):
            workers.append(
                Worker(
                    broker=broker,
                    name=f"bench-{tag}{n}",
                    concurrency=1,
                    log_dir=log_dir,
                    env={"CONN_MAX_AGE": "60", **env},
                    include=("bench.noop",),
                )
            )
        for worker in workers:
            worker.wait_ready()
        # Warm up: every worker connected and importing before a clock starts.
        for _ in range(args.workers * 4):
            noop_task.delay(0)
        _drain(client, timeout=60)

    def fake_slack(**kwargs) -> FakeSlack:
        fake = FakeSlack(**kwargs).start()
        fake.keep_payloads = False
        fakes.append(fake)
        return fake

    ok = True
    try:
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
        purge_broker(broker, queue)
        ctx = SimpleNamespace(
            settings=settings, services=services, Delivery=Delivery, Channel=Channel, ReminderRule=ReminderRule,
            tz=tz, milestone=milestone, broker=broker, client=client, connections=connections,
            start_workers=start_workers, fake_slack=fake_slack, due_deliveries=due_deliveries,
            noop_task=noop_task, post_task=post_task, render_slack=render_slack,
            message_for_delivery=message_for_delivery,
        )  # fmt: skip
        _print_load("before")
        if not args.skip_overhead:
            ok &= _overhead(args, ctx)
        if not args.skip_lateness:
            ok &= _lateness(args, ctx)
        _print_load("after")
        return 0 if ok else 1
    finally:
        for worker in workers:
            worker.stop()
        for fake in fakes:
            fake.stop()
        purge_broker(broker, queue)
        keys = list(client.scan_iter(match=f"{cache_prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
        queues.close()
        connections.close_all()
        if not args.keep_db:
            _drop_database(base_url, db_name)


def _print_load(when: str) -> None:
    """The machine's load average (1, 5, 15 min) and CPUs: a figure means little on a busy machine."""
    one, five, fifteen = os.getloadavg()
    print(f"load average {when:6}  {one:.2f} {five:.2f} {fifteen:.2f}  ({os.cpu_count()} CPUs)", flush=True)


def _overhead(args, ctx: SimpleNamespace) -> bool:
    """(a): the ledger against the same post without it, and against no-op tasks."""
    settings, services, Delivery, Channel = ctx.settings, ctx.services, ctx.Delivery, ctx.Channel
    settings.REMINDERS_DIGESTS = False
    settings.OUTBOX_SLACK_CHANNEL_RATE = 0
    ctx.start_workers("a", {"REMINDERS_DIGESTS": "0", "OUTBOX_SLACK_CHANNEL_RATE": "0"})
    fake = ctx.fake_slack()
    bare = ctx.fake_slack()
    channel = Channel.objects.create(name="bench", kind="slack_webhook", config={"url": fake.webhook_url()})
    print(f"(a) creating {args.count} due deliveries ...", flush=True)
    ids = ctx.due_deliveries(milestone=ctx.milestone, channel=channel, count=args.count)
    mine = Delivery.objects.filter(channel=channel)
    # The bare task posts what the ledger's task posts: a reminder rendered the same way.
    sample = Delivery.objects.select_related("milestone__release", "milestone__kind").get(pk=ids[0])
    payload = ctx.render_slack(ctx.message_for_delivery(sample))
    ctx.connections.close_all()
    client, noop_task, post_task = ctx.client, ctx.noop_task, ctx.post_task

    started = time.perf_counter()
    for n in range(args.count):
        noop_task.delay(n)
    _drain(client, timeout=600)
    noop_seconds = time.perf_counter() - started

    started = time.perf_counter()
    url = bare.webhook_url()
    for _ in range(args.count):
        post_task.delay(url, payload)
    _drain(client, timeout=900)
    post_seconds = time.perf_counter() - started

    started = time.perf_counter()
    result = services.deliveries_sweep()
    sweep_seconds = time.perf_counter() - started
    deadline = time.monotonic() + 1800
    while mine.filter(state=Delivery.State.SENT).count() < len(ids) and time.monotonic() < deadline:
        time.sleep(0.25)
    send_seconds = time.perf_counter() - started
    _drain(client, timeout=60)

    stats = fake.stats()
    lost = len(set(ids) - set(fake.received))
    sent_rows = mine.filter(state=Delivery.State.SENT).count()
    idle = []
    for _ in range(20):
        begun = time.perf_counter()
        services.deliveries_sweep()
        idle.append(time.perf_counter() - begun)
    # Every row as if its worker died mid-send: the sweep reclaims and re-marks them all.
    mine.update(state=Delivery.State.SENDING, claimed_at=ctx.tz.utc_now() - dt.timedelta(hours=1), attempts=1)
    begun = time.perf_counter()
    reclaim = services.deliveries_sweep(enqueue=lambda delivery_id: None)
    reclaim_seconds = time.perf_counter() - begun

    print()
    print("(a) ledger overhead: digests and rate limit off")
    where = f"{urlparse(ctx.broker).scheme} db {urlparse(ctx.broker).path.lstrip('/') or 0}"
    print(f"deliveries           {len(ids)} (queued by one sweep: {len(result.queued)})")
    print(f"worker processes     {args.workers} x concurrency 1, broker {where}")
    print(f"no-op tasks          {noop_seconds:8.2f} s  ({args.count / noop_seconds:7.0f}/s)")
    print(f"bare post tasks      {post_seconds:8.2f} s  ({args.count / post_seconds:7.0f}/s)  same post, no ledger")
    print(f"ledger deliveries    {send_seconds:8.2f} s  ({len(ids) / send_seconds:7.0f}/s)")
    print(f"ratio                {send_seconds / post_seconds:8.2f} x the bare post (floor <= 2, issue 27)")
    print(f"                     {send_seconds / noop_seconds:8.2f} x the no-op")
    print(f"received by Slack    {stats['messages']} messages, {stats['distinct']} distinct")
    print(f"duplicates           {stats['duplicates']}  (must be 0)")
    print(f"lost                 {lost}  (must be 0; ledger rows sent: {sent_rows})")
    print(f"sweep, {len(result.queued)} due      {sweep_seconds * 1000:8.1f} ms (mark queued + queue the tasks)")
    print(f"sweep, nothing due   {statistics.median(idle) * 1000:8.1f} ms (median of {len(idle)})")
    print(
        f"sweep, {reclaim.reclaimed} reclaimed {reclaim_seconds * 1000:8.1f} ms "
        f"(back to pending and marked queued again: {len(reclaim.queued)})",
        flush=True,
    )
    return stats["duplicates"] == 0 and lost == 0


def _lateness(args, ctx: SimpleNamespace) -> bool:
    """(b): a burst due at one minute across many channels, under Slack's limit."""
    ok = True
    for digests in (True, False):
        ok &= _burst(args, ctx, digests=digests)
    return ok


def _burst(args, ctx: SimpleNamespace, *, digests: bool) -> bool:
    settings, services, Delivery, Channel = ctx.settings, ctx.services, ctx.Delivery, ctx.Channel
    fake = ctx.fake_slack(rate_limit=1)
    settings.REMINDERS_DIGESTS = digests
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    tag = "on" if digests else "off"
    worker_env = {
        "REMINDERS_DIGESTS": "1" if digests else "0",
        "OUTBOX_SLACK_CHANNEL_RATE": "1",
        "SLACK_API_URL": fake.api_url,
    }
    ctx.start_workers(f"b{tag}", worker_env)
    per_channel = args.burst // args.channels
    due = ctx.tz.utc_now()  # all due now: beat's sweep of this minute runs at once
    rows = []
    for c in range(args.channels):
        channel = Channel.objects.create(
            name=f"burst-{tag}-{c}", kind="slack_bot", config={"channel": f"C{tag.upper()}{c:02d}", "token": "xoxb-b"}
        )
        rule = ctx.ReminderRule.objects.create(name=f"burst {tag} {c}", offsets="1m", channel=channel)
        for n in range(1, per_channel + 1):
            rows.append(
                Delivery(
                    rule=rule,
                    milestone=ctx.milestone,
                    channel=channel,
                    offset=f"{n}m",
                    recipient="",
                    deadline_at=due + dt.timedelta(minutes=n),
                    deadline_zone="America/Los_Angeles",
                    due_at=due,
                )
            )
    Delivery.objects.bulk_create(rows, batch_size=2000)
    mine = Delivery.objects.filter(channel__name__startswith=f"burst-{tag}-")
    ids = list(mine.values_list("pk", flat=True))
    ctx.connections.close_all()
    print(
        f"\n(b) {len(ids)} reminders due at {due:%H:%M} UTC on {args.channels} channels, digests {tag} ...", flush=True
    )
    started = time.monotonic()
    last_sweep = None
    sweeps = 0
    deadline = started + 40 * 60
    while mine.filter(state=Delivery.State.SENT).count() < len(ids) and time.monotonic() < deadline:
        if last_sweep is None or time.monotonic() - last_sweep >= args.sweep_every:
            last_sweep = time.monotonic()
            services.deliveries_sweep()
            sweeps += 1
        time.sleep(0.25)
    _drain(ctx.client, timeout=120)
    stats = fake.stats()
    lost = len(set(ids) - set(fake.received))
    due_ts = due.timestamp()
    late = sorted(fake.first_received_at[i] - due_ts for i in ids if i in fake.first_received_at)
    grace = settings.REMINDERS_GRACE_MINUTES * 60
    missed = mine.filter(state=Delivery.State.MISSED).count()
    print(f"(b) lateness, digests {tag}: fake Slack 1 msg/channel/s, shared limit on")
    print(f"reminders            {len(ids)} on {args.channels} channels ({per_channel} each)")
    print(
        f"messages             {stats['requests']}  (digests)"
        if digests
        else f"messages             {stats['requests']}"
    )
    print(f"429s                 {stats['rate_limited']}")
    print(f"sweeps               {sweeps} (every {args.sweep_every:g} s, the first at the due instant)")
    if late:
        print(
            f"sent - due           p50 {_pct(late, 50):7.2f} s  p99 {_pct(late, 99):7.2f} s  max {late[-1]:7.2f} s"
            "  (received by the fake Slack)"
        )
    print(f"later than grace     {sum(1 for x in late if x > grace)}  (grace {grace // 60} min; missed rows {missed})")
    print(f"duplicates           {stats['duplicates']}  (must be 0)")
    print(f"lost                 {lost}  (must be 0)", flush=True)
    return stats["duplicates"] == 0 and lost == 0 and missed == 0 and all(x <= grace for x in late)


def _pct(sorted_values: list[float], p: float) -> float:
    index = min(len(sorted_values) - 1, max(0, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def _drain(client, *, timeout: float) -> None:
    """Wait until this run's queue is empty and none of its messages is unacknowledged
    (acks_late: a task is acknowledged only after it ran). kombu's ``unacked`` hash is
    shared by every consumer of the database: only entries routed to our queue count."""
    from tests.support.reminder_workers import queue_name

    queue = queue_name()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.llen(queue) == 0 and not any(json.loads(raw)[2] == queue for raw in client.hvals("unacked") if raw):
            return
        time.sleep(0.05)
    raise SystemExit("the queue did not drain in time")


if __name__ == "__main__":
    raise SystemExit(main())
