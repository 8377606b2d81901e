"""System tests: real Celery workers on Redis, a fake Slack on 127.0.0.1 counting what
arrives, PostgreSQL shared between this process and the workers.

Each test has its own Celery queue (this process publishes to it, its workers consume
only it), so a worker never takes another test's or another run's messages, and its
clock starts once its workers answer a ping."""

from __future__ import annotations

import datetime as dt
import threading

import pytest
from celery import Celery
from django.db import close_old_connections, connections

from reminders import services
from reminders.models import Delivery
from reminders.tasks import delivery_send_task
from tests.support.pg import require_postgres
from tests.support.reminder_workers import (
    ThrowawayRedis,
    due_deliveries,
    queue_name,
    wait_for,
)
from tests.support.reminders_helpers import channel, code_freeze_of, future_release, hour_from_now, redis_url_or_skip

pytestmark = [
    pytest.mark.slow,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]
State = Delivery.State


@pytest.fixture
def webhook(kinds, fake_slack):
    release = future_release(freeze_at=hour_from_now(20))
    return code_freeze_of(release), channel("slack_webhook", "hook", url=fake_slack.webhook_url())


def _all_sent(ids) -> bool:
    return Delivery.objects.filter(pk__in=ids, state=State.SENT).count() == len(ids)


def _sweep_in_threads(n: int, enqueue=None) -> None:
    """``n`` sweeps at the same moment, as if several beats were running."""
    barrier = threading.Barrier(n)
    errors = []

    def run():
        try:
            barrier.wait()
            services.deliveries_sweep(enqueue=enqueue)
        except Exception as exc:  # noqa: BLE001 (reported by the assert below)
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def test_duplicate_beats_and_redelivered_tasks_still_send_each_reminder_once(broker, webhook, fake_slack, workers):
    milestone, hook = webhook
    ids = due_deliveries(milestone=milestone, channel=hook, count=60)
    worker = workers(broker=broker, name="a", concurrency=2)
    _sweep_in_threads(3)  # three beats firing at once
    for delivery_id in ids:  # and every message delivered a second time
        delivery_send_task.delay(delivery_id)
    assert wait_for(lambda: _all_sent(ids), timeout=60), worker.output()
    # Let the duplicate messages drain too (queue empty, nothing running or reserved,
    # twice in a row), then count what Slack got.
    assert wait_for(lambda: worker.idle() and worker.idle(), timeout=60), worker.output()
    close_old_connections()
    assert fake_slack.received == dict.fromkeys(ids, 1)
    assert set(Delivery.objects.filter(pk__in=ids).values_list("attempts", flat=True)) == {1}


def test_a_worker_killed_with_sigkill_mid_send_loses_nothing(broker, webhook, fake_slack, workers, settings):
    """Kill -9 while Slack holds both of its requests open. The rows it had claimed stay
    in ``sending`` until the lease expires, then the sweep queues them again. Duplicates:
    exactly one per send in flight at the kill (Slack received it, the worker died
    before recording it), so exactly the worker's concurrency."""
    settings.OUTBOX_LEASE_SECONDS = 6
    settings.OUTBOX_REQUEUE_SECONDS = 3
    env = {"OUTBOX_LEASE_SECONDS": "6", "OUTBOX_REQUEUE_SECONDS": "3"}
    milestone, hook = webhook
    ids = due_deliveries(milestone=milestone, channel=hook, count=20)
    first = workers(broker=broker, name="doomed", concurrency=2, env=env)
    fake_slack.hold()  # both pool processes end up waiting for Slack's answer
    services.deliveries_sweep()
    assert wait_for(lambda: fake_slack.held == 2, timeout=60), first.output()
    first.kill()
    fake_slack.release()
    in_flight = Delivery.objects.filter(pk__in=ids, state=State.SENDING).count()
    assert in_flight == 2
    assert fake_slack.stats()["messages"] == 2
    workers(broker=broker, name="survivor", concurrency=2, env=env)
    assert wait_for(lambda: _all_sent(ids), timeout=90, interval=1.0, tick=services.deliveries_sweep)
    stats = fake_slack.stats()
    assert set(fake_slack.received) == set(ids), "lost none"
    assert stats["duplicates"] == in_flight, stats
    reclaimed = Delivery.objects.filter(pk__in=ids, attempts=2)
    assert reclaimed.count() == in_flight


def test_redis_restarted_during_a_burst_still_delivers_every_reminder(webhook, fake_slack, workers, tmp_path, settings):
    """Our own redis-server (never the shared one), stopped mid-burst and started again
    empty: every queued and unacknowledged message is gone, and the ledger re-queues.

    kombu 5.7's Redis transport sometimes ends the worker when Redis vanishes while it
    holds unacknowledged messages ("Unrecoverable error: AttributeError ... hostname",
    raised while restoring them). In production the supervisor restarts it (compose:
    ``restart: unless-stopped``); here the test does, and a send that child processes
    were killed in the middle of may then go out twice (bounded below)."""
    require_postgres()
    redis_url_or_skip("REDIS_URL")  # the machine's Redis is not touched; we only need redis-server
    settings.OUTBOX_REQUEUE_SECONDS = 3
    settings.OUTBOX_LEASE_SECONDS = 8
    own = ThrowawayRedis(tmp_path).start()
    try:
        milestone, hook = webhook
        ids = due_deliveries(milestone=milestone, channel=hook, count=120)
        fake_slack.delay = 0.03
        env = {"OUTBOX_REQUEUE_SECONDS": "3", "OUTBOX_LEASE_SECONDS": "8"}
        started = [workers(broker=own.url, name="burst0", concurrency=2, env=env)]
        # Celery lets CELERY_BROKER_URL in the environment override an app's broker, so
        # the producer names its connection explicitly. It must not become the current
        # app: shared tasks (the sweep task below) would then publish through it.
        producer = Celery("producer", set_as_current=False)

        def sweep() -> None:
            # Fail fast while Redis is down (the default is to keep reconnecting).
            options = {"max_retries": 1, "interval_start": 0, "interval_step": 0.1, "interval_max": 0.2}
            with producer.connection_for_write(own.url, connect_timeout=1, transport_options=options) as conn:
                services.deliveries_sweep(
                    enqueue=lambda pk: producer.send_task(
                        "reminders.send", args=[pk], connection=conn, retry=False, queue=queue_name()
                    )
                )

        def supervise_and_sweep() -> None:
            if started[-1].proc.poll() is not None:  # what restart: unless-stopped does
                started.append(workers(broker=own.url, name=f"burst{len(started)}", concurrency=2, env=env))
            sweep()

        sweep()
        assert wait_for(lambda: fake_slack.stats()["messages"] >= 15, timeout=60), started[-1].output()
        own.stop()  # everything queued and unacknowledged in Redis is gone (stop() waits for the exit)
        sweep()  # a beat while Redis is down: nothing can be queued, nothing is lost
        own.start()
        assert wait_for(lambda: _all_sent(ids), timeout=90, interval=1.0, tick=supervise_and_sweep), (
            fake_slack.stats(),
            len(started),
            started[-1].output(),
        )
        assert set(fake_slack.received) == set(ids), "every reminder delivered"
        restarts = len(started) - 1
        assert fake_slack.stats()["duplicates"] <= 2 * restarts  # at most the sends in flight when it died
    finally:
        own.stop()


def test_the_sweep_task_runs_in_the_worker(broker, webhook, fake_slack, workers):
    milestone, hook = webhook
    ids = due_deliveries(milestone=milestone, channel=hook, count=5)
    workers(broker=broker, name="beat", concurrency=1)  # answering a ping: the clock starts now
    from reminders.tasks import deliveries_sweep_task

    deliveries_sweep_task.delay()  # what beat sends every minute
    assert wait_for(lambda: _all_sent(ids), timeout=60)
    assert fake_slack.received == dict.fromkeys(ids, 1)
    assert Delivery.objects.filter(pk__in=ids, sent_at__lte=dt.datetime.now(dt.UTC)).count() == 5
