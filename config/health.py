"""The probes: ``/healthz`` (liveness) and ``/readyz`` (readiness), and ``check_services``.

- ``/healthz``: the process answers. No dependency is asked: a liveness probe that
  failed when PostgreSQL did would restart every web pod at once and fix nothing.
- ``/readyz``: this process can serve: the database answers, every migration of this
  code is applied (a pod of a new image waits for the migrate Job), and the cache
  answers, unless ``READYZ_CACHE_OPTIONAL`` says a down cache leaves it ready (feeds then
  come from the database and throttles fail open). 200 or 503, naming each check.

Both are answered by ``config.middleware.ProbeMiddleware`` before the host check: a
kubelet sends the pod's IP as Host, which ALLOWED_HOSTS refuses. No secrets or
connection strings in the answers.
"""

from __future__ import annotations

import logging
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse

logger = logging.getLogger(__name__)


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


# The ledger of applied migrations as it was when the last full check found nothing
# unapplied, per process: (row count, highest id) of django_migrations. Loading the
# migration graph from disk costs ~25 ms, most of a probe; the code of a process never
# changes, so its plan only changes when that table does. Any change (a migration
# applied or rolled back, another database behind the same name) changes the pair:
# migrate inserts rows (a higher id), a rollback deletes them (a lower count).
_migrated_at: tuple[int, int | None] | None = None


def _migration_ledger() -> tuple[int, int | None]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*), MAX(id) FROM django_migrations")
        count, highest = cursor.fetchone()
    return count, highest


def _check_migrations() -> str:
    """What ``migrate --check`` asks: is any migration of this code unapplied? Answered
    by one small query while the ledger is as it was at the last full check."""
    global _migrated_at
    if _migrated_at is not None:
        try:
            if _migration_ledger() == _migrated_at:
                return "ok"
        except Exception:
            _migrated_at = None  # a miss: the next probe checks in full
            raise
    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        _migrated_at = None
        raise MigrationsUnapplied(len(plan))
    _migrated_at = _migration_ledger()
    return "ok"


class MigrationsUnapplied(Exception):
    def __init__(self, count: int):
        self.count = count
        super().__init__(f"{count} unapplied")


# One client (and its connection pool) per Redis URL, per process: a probe reuses a
# connection instead of opening and closing one each time.
_redis_clients: dict[str, Any] = {}


def _redis_client(url: str):
    client = _redis_clients.get(url)
    if client is None:
        import redis

        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        _redis_clients[url] = client
    return client


def _check_redis() -> str:
    if not settings.REDIS_URL:
        return "not configured"
    _redis_client(settings.REDIS_URL).ping()
    # The cache must also work end to end (it is what feeds and throttles use).
    caches["default"].set("healthz", "1", 10)
    return "ok"


def run_reports() -> dict[str, str]:
    """One line from each app whose AppConfig has ``status_report_name`` and
    ``status_report()``: worth seeing next to health, never deciding it (the intake
    mailbox with a wrong password is not an unhealthy service)."""
    lines = {}
    for app_config in apps.get_app_configs():
        name = getattr(app_config, "status_report_name", "")
        if not name:
            continue
        try:
            lines[name] = app_config.status_report()
        except Exception as exc:  # noqa: BLE001 - a report that fails is shown, never fatal
            lines[name] = f"could not be read ({type(exc).__name__})"
    return lines


def _run(checks, optional: frozenset[str] = frozenset()) -> tuple[bool, dict[str, str]]:
    results: dict[str, str] = {}
    healthy = True
    for name, check in checks:
        try:
            results[name] = check()
        except MigrationsUnapplied as exc:
            healthy = False
            results[name] = f"{exc.count} unapplied (run the migrate job)"
        except Exception as exc:  # noqa: BLE001 - any failure means not ready
            logger.warning("%s check failed: %s", name, type(exc).__name__)
            if name in optional:
                results[name] = "unavailable (optional)"
            else:
                healthy = False
                results[name] = "unavailable"
    return healthy, results


def run_checks() -> tuple[bool, dict[str, str]]:
    """check_services: the database and Redis answer (the worker's and beat's health)."""
    return _run((("database", _check_database), ("redis", _check_redis)))


def readiness_checks() -> tuple[bool, dict[str, str]]:
    """/readyz: the database, the migrations, the cache (optional when declared so)."""
    optional = frozenset({"redis"}) if settings.READYZ_CACHE_OPTIONAL else frozenset()
    return _run((("database", _check_database), ("migrations", _check_migrations), ("redis", _check_redis)), optional)


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness: the process answers; nothing else is asked."""
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    ready, checks = readiness_checks()
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)
