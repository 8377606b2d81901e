"""/healthz: is this process able to serve? Checks the database and Redis.

200 with {"status": "ok", "checks": {...}} when both answer, 503 naming the failing
one otherwise. No secrets or connection strings in the answer.
"""

from __future__ import annotations

import logging

from django.apps import apps
from django.conf import settings
from django.core.cache import caches
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)


def _check_database() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return "ok"


def _check_redis() -> str:
    if not settings.REDIS_URL:
        return "not configured"
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
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


def run_checks() -> tuple[bool, dict[str, str]]:
    checks: dict[str, str] = {}
    healthy = True
    for name, check in (("database", _check_database), ("redis", _check_redis)):
        try:
            checks[name] = check()
        except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
            healthy = False
            checks[name] = "unavailable"
            logger.warning("healthz: %s check failed: %s", name, type(exc).__name__)
    return healthy, checks


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    healthy, checks = run_checks()
    return JsonResponse(
        {"status": "ok" if healthy else "unavailable", "checks": checks}, status=200 if healthy else 503
    )
