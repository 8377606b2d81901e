"""A worker keeps its database connection from task to task, as the web does between
requests (CONN_MAX_AGE): Celery's Django fix-up alone would open a new one per task,
which cost a reminder delivery more than its three statements (issue 27)."""

from __future__ import annotations

import pytest
from celery import signals
from django.db import connection

from config.celery import app
from reminders.tasks import delivery_send_task


def _task_ends() -> None:
    """What a worker does around a task (not run eagerly) besides running it."""
    task = delivery_send_task
    signals.task_prerun.send(sender=task, task_id="t", task=task)
    signals.task_postrun.send(sender=task, task_id="t", task=task)


@pytest.fixture
def kept_connection():
    connection.close()
    connection.settings_dict["CONN_MAX_AGE"] = 60
    connection.ensure_connection()
    yield connection
    connection.settings_dict["CONN_MAX_AGE"] = 0
    connection.close()


def test_the_fix_up_does_not_close_connections_after_every_task():
    assert app.conf.get("CELERY_DB_REUSE_MAX")


@pytest.mark.django_db(transaction=True)
def test_a_task_keeps_a_usable_connection(kept_connection):
    raw = kept_connection.connection
    _task_ends()
    assert kept_connection.connection is raw


@pytest.mark.django_db(transaction=True)
def test_a_task_closes_a_connection_left_broken(kept_connection):
    kept_connection.errors_occurred = True
    kept_connection.connection.close()  # the server went away
    _task_ends()
    assert kept_connection.connection is None


@pytest.mark.django_db(transaction=True)
def test_a_task_closes_a_connection_past_its_age(kept_connection):
    kept_connection.close_at = 0
    _task_ends()
    assert kept_connection.connection is None
