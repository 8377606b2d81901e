"""The Celery app. Broker and settings come from Django settings (CELERY_ namespace).

Logging: the worker and beat write the same lines as Django (the ``LOGGING`` setting:
JSON under ``LOG_FORMAT=json``, secrets redacted) instead of Celery's own format; every
task runs under the request id of what queued it (config/request_id.py).
"""

import logging.config

from celery import Celery, signals
from django.db import close_old_connections

from config import env, request_id

env.use_settings_module()

app = Celery("releasecal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.setup_logging.connect
def _django_logging(**kwargs) -> None:
    # Connected, so Celery leaves the root logger alone: Django's configuration applies.
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@signals.before_task_publish.connect
def _carry_request_id(headers=None, **kwargs) -> None:
    """A task queued while a request (or another task) runs carries its id."""
    current = request_id.current()
    if current and headers is not None:
        headers.setdefault(request_id.HEADER, current)


_bound: dict[str, object] = {}


@signals.task_prerun.connect
def _bind_request_id(task_id=None, task=None, **kwargs) -> None:
    _bound[task_id] = request_id.bind(task.request.get(request_id.HEADER))


@signals.task_postrun.connect
def _unbind_request_id(task_id=None, **kwargs) -> None:
    token = _bound.pop(task_id, None)
    if token is not None:
        request_id.reset(token)


@signals.task_prerun.connect
@signals.task_postrun.connect
def _close_old_connections(task=None, **kwargs) -> None:
    """A task begins and ends as a request does: a connection past CONN_MAX_AGE or left
    unusable by an error is closed, the others are kept (CELERY_DB_REUSE_MAX). Not for a
    task run eagerly, inside its caller's transaction (as Celery's fix-up skips it)."""
    if task is not None and not getattr(task.request, "is_eager", False):
        close_old_connections()
