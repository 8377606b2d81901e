"""The board's figures (issue 25), in one run against the test suite's fake GitHub:

(a) a full reconcile of a 150-item board with the handbook's 16 fields: GraphQL requests
    (pagination at 100), seconds, writes queued; the writes sent; then the same reconcile
    again (must queue and send nothing);
(b) webhook received -> releasecal's record changed, on a real Celery worker: a person
    sets Exception Status on the board, the signed ``projects_v2_item`` delivery goes to
    the webhook view, the worker pulls the board, the conflict row appears: p50/p99/max;
(c) 100 decisions in one minute on a read-write board, written by two real workers
    under the fake's secondary limit (80 content-creating requests a minute) with beat's
    minute sweep simulated every 5 s: writes sent, lost (an item without "Approved"),
    duplicates (an item set to "Approved" twice), the fake's refusals.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/rc_github \\
    REDIS_URL=redis://127.0.0.1:6379/5 .venv/bin/python bench/github_bench.py

Its own database (``<name>_bench``, dropped at the end), its own Celery queue and cache
key prefix. Prints the load average beside every timing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SECRET = "bench-webhook-secret"  # noqa: S105 (the fake hook's, this run only)


def _database(url: str, *, drop_only: bool = False) -> str:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/") + "_bench"
    admin = urlunparse(parsed._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"')
    return urlunparse(parsed._replace(path="/" + name))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description="The GitHub board's figures against the fake GitHub.")
    parser.add_argument("--items", type=int, default=150)
    parser.add_argument("--requests", type=int, default=40, help="exception requests among the items in (a)")
    parser.add_argument("--webhooks", type=int, default=30, help="samples in (b)")
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0, help="the decisions of (c) spread over this")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args()

    base_url = os.environ.get("DATABASE_URL", "")
    broker = os.environ.get("CELERY_BROKER_URL") or os.environ.get("REDIS_URL", "")
    if not base_url.startswith("postgres") or not broker.startswith("redis"):
        print("Needs DATABASE_URL=postgres://... and REDIS_URL (or CELERY_BROKER_URL)=redis://.../<db>.")
        return 2
    os.environ["DATABASE_URL"] = _database(base_url)
    os.environ["CELERY_BROKER_URL"] = os.environ["REDIS_URL"] = broker
    os.environ["CACHE_KEY_PREFIX"] = f"bench-github-{uuid.uuid4().hex[:10]}"
    os.environ["GITHUB_WEBHOOK_SECRET"] = SECRET
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("SECRET_KEY", "bench-" + uuid.uuid4().hex)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from tests.support.fake_github import FakeGitHub
    from tests.support.reminder_workers import Worker, own_queue, purge_broker

    call_command("migrate", verbosity=0)
    stack = contextlib.ExitStack()
    queue = stack.enter_context(own_queue("bench-github"))
    github = stack.enter_context(FakeGitHub())
    log_dir = Path(tempfile.mkdtemp(prefix="github-bench-"))
    workers: list[Worker] = []
    try:
        world = _world(args, github)
        ok = _reconcile(args, github, world)

        token = world["token"]
        env = {"GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": token, "CONN_MAX_AGE": "60"}
        for n in range(2):
            workers.append(Worker(broker=broker, name=f"bench-github{n}", concurrency=1, log_dir=log_dir, env=env))
        for worker in workers:
            worker.wait_ready()
        ok &= _webhooks(args, github, world)
        ok &= _decisions(args, github, world)
        return 0 if ok else 1
    finally:
        for worker in workers:
            worker.stop()
        purge_broker(broker, queue)
        stack.close()
        connections.close_all()
        if not args.keep_db:
            _database(base_url, drop_only=True)


def _world(args, github) -> dict:
    """A release with a code freeze, ``--items`` KEPs on a handbook board, ``--requests``
    of them with a pending exception request; settings on the fake."""
    from django.conf import settings

    from exceptions.services import RequestFields, exception_request_submit
    from github.models import Board
    from releasecal import tz
    from releasecal.models import Release
    from releasecal.services import enhancement_upsert, milestone_create, milestone_kinds_ensure, tracking_set
    from tests.support.fake_github import k8s_board, model

    kinds = milestone_kinds_ensure()
    at = tz.utc_now().replace(microsecond=0) - dt.timedelta(days=3)
    start = (at - dt.timedelta(days=60)).date()
    release = Release.objects.create(slug="1.31", name="v1.31", zone="UTC", start_date=start)
    freeze = milestone_create(release=release, kind=kinds["code-freeze"], title="Code Freeze", at=at)
    project = k8s_board(github, number=241, release="1.31")
    repo = github.repository("kubernetes/enhancements")
    requests, items = [], {}
    for n in range(args.items):
        number = 1000 + n
        kep = enhancement_upsert(number=number, title=f"KEP {number}", owning_sig="node")
        tracking_set(release=release, enhancement=kep, stage="beta")
        items[number] = project.add_issue(repo.issue(number, f"KEP {number}"), {"Status": "Tracked For Code Freeze"})
        if n < max(args.requests, args.decisions):
            requests.append(
                exception_request_submit(
                    enhancement=kep,
                    milestone=freeze,
                    requester_name=f"Author {number}",
                    fields=RequestFields(days=2, stage="beta", sig="node"),
                    submitted_at=freeze.deadline + dt.timedelta(hours=1),
                )
            )
    token = github.token("releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write"})
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = github.api_url, token
    board = Board.objects.create(release=release, owner="kubernetes", number=241, mode=Board.Mode.READ_WRITE)
    fields = [f for f in project.fields if f.data_type not in model.BUILT_IN]  # the handbook's, and Stage's kin
    print(f"board: {len(project.items)} items, {len(fields)} custom fields, {len(requests)} pending requests")
    return {"board": board, "project": project, "items": items, "requests": requests, "token": token}


def _reconcile(args, github, world) -> bool:
    from github.models import BoardWrite
    from github.reconcile import board_reconcile
    from github.writes import board_write_send

    board = world["board"]
    before = len(github.mutations())
    started = time.perf_counter()
    first = board_reconcile(board_id=board.pk)
    took = time.perf_counter() - started
    print(
        f"(a) full reconcile: {first.report.items_read} items, {first.report.requests} GraphQL requests, "
        f"{took:.2f} s, {len(first.writes_queued)} writes queued ({load()})"
    )
    started = time.perf_counter()
    sent = [
        board_write_send(write_id=pk) for pk in BoardWrite.objects.filter(state="pending").values_list("pk", flat=True)
    ]
    took = time.perf_counter() - started
    mutations = len(github.mutations()) - before
    print(f"    writes: {sent.count('sent')} sent of {len(sent)}, {mutations} mutation fields, {took:.2f} s ({load()})")
    before = len(github.mutations())
    started = time.perf_counter()
    again = board_reconcile(board_id=board.pk)
    took = time.perf_counter() - started
    queued_again = BoardWrite.objects.filter(state="pending").count()
    print(
        f"    the same reconcile again: {again.report.requests} GraphQL requests, {took:.2f} s, "
        f"{len(again.writes_queued)} writes queued, {len(github.mutations()) - before} mutations, "
        f"{len(again.conflicts_opened)} conflicts ({load()})"
    )
    return not again.changed and queued_again == 0 and sent.count("sent") == len(first.writes_queued)


def _webhooks(args, github, world) -> bool:
    from django.test import RequestFactory

    from github.models import BoardConflict
    from github.webhooks import webhook
    from tests.support.reminder_workers import wait_for

    factory = RequestFactory()
    items = world["items"]
    requests = world["requests"][: args.webhooks]
    latencies = []
    for index, request in enumerate(requests):
        item = items[request.enhancement.number]
        value = "Rejected" if index % 2 == 0 else "Approved"
        github.human_edit(item, "Exception Status", value)
        delivery = github.payloads.projects_v2_item("edited", item, field_name="Exception Status")
        headers = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in delivery.headers(SECRET).items()}
        started = time.perf_counter()
        answer = webhook(
            factory.post("/github/webhook", data=delivery.body, content_type="application/json", **headers)
        )
        if answer.status_code != 202:
            print(f"(b) the webhook answered {answer.status_code}: {answer.content!r}")
            return False
        seen = wait_for(
            lambda r=request: BoardConflict.objects.filter(request=r, resolved_at__isnull=True).exists(),
            timeout=60,
            interval=0.01,
        )
        if not seen:
            print(f"(b) no conflict for request #{request.pk} within 60 s")
            return False
        latencies.append(time.perf_counter() - started)
    ms = [value * 1000 for value in latencies]
    print(
        f"(b) webhook received -> conflict recorded, {len(ms)} samples on a real worker: p50 {pct(ms, 0.5):.0f} ms, "
        f"p99 {pct(ms, 0.99):.0f} ms, max {max(ms):.0f} ms, mean {statistics.mean(ms):.0f} ms ({load()})"
    )
    # Set them back (the conflicts close by themselves at the next reconcile).
    for request in requests:
        github.human_edit(items[request.enhancement.number], "Exception Status", "In Review")
    return True


def _decisions(args, github, world) -> bool:
    from django.contrib.auth import get_user_model

    from exceptions.services import exception_request_approve
    from github.models import BoardConflict, BoardWrite
    from github.reconcile import board_reconcile
    from github.writes import board_writes_sweep
    from tests.support.reminder_workers import wait_for

    board, items = world["board"], world["items"]
    board_reconcile(board_id=board.pk)  # the bench's conflicts of (b) close
    assert not BoardConflict.objects.filter(resolved_at__isnull=True).exists()
    lead = get_user_model().objects.create_user("bench-lead", "lead@example.org", "pw")
    board.release.team.add(lead)  # deciding is per release
    requests = world["requests"][: args.decisions]
    written_before = BoardWrite.objects.count()
    refusals_before = github.limits.secondary_refusals
    started = time.perf_counter()
    last_sweep = started
    for index, request in enumerate(requests):
        target = started + index * args.seconds / len(requests)
        while time.perf_counter() < target:
            time.sleep(min(0.05, max(0.0, target - time.perf_counter())))
        exception_request_approve(request=request, actor=lead)
        if time.perf_counter() - last_sweep >= 5:
            board_writes_sweep()
            last_sweep = time.perf_counter()
    decided = time.perf_counter() - started

    def settled() -> bool:
        board_writes_sweep(now=None)
        return not BoardWrite.objects.exclude(state="sent").exists()

    done = wait_for(settled, timeout=300, interval=2.0)
    took = time.perf_counter() - started
    writes = BoardWrite.objects.count() - written_before
    sent = BoardWrite.objects.filter(state="sent", event="decided").count()
    approved_sets: dict[str, int] = {}
    for change in github.changes("field", via="graphql"):
        if change.name == "Exception Status" and change.after == "Approved":
            approved_sets[change.target.node_id] = approved_sets.get(change.target.node_id, 0) + 1
    lost = [r.pk for r in requests if items[r.enhancement.number].value("Exception Status") != "Approved"]
    duplicates = sum(count - 1 for count in approved_sets.values() if count > 1)
    refusals = github.limits.secondary_refusals - refusals_before
    print(
        f"(c) {len(requests)} decisions in {decided:.1f} s: {writes} board writes, {sent} sent "
        f"({'all settled' if done else 'NOT all settled'}) in {took:.1f} s; lost {len(lost)}, duplicates "
        f"{duplicates}; the fake's secondary limit ({github.limits.content_per_minute}/min) refused {refusals} "
        f"request(s), each waited out by the ledger ({load()})"
    )
    return done and not lost and not duplicates and sent == len(requests)


if __name__ == "__main__":
    raise SystemExit(main())
