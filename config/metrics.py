"""``/metrics``: the Prometheus text format, from prometheus-client.

Two kinds of figures (docs/operations.md says what each means and what to alert on):

- counted in the web processes as requests are served: the latency of every request by
  view (``RequestLatencyMiddleware``), the feed cache's hits and misses and the feeds'
  answers by status, 304 included (``feeds/metrics.py``). Under gunicorn these are kept
  in prometheus-client's multiprocess mode (files in ``PROMETHEUS_MULTIPROC_DIR``, which
  docker/gunicorn.conf.py sets up), so a scrape answered by any worker sums them all;
- read from the database at each scrape (``DatabaseCollector``): each outbox's pending,
  sending and failed rows and the age of its oldest due pending row, the minute sweep's
  last completion and lag, the intake mailbox's open problems and failed polls, and
  each GitHub board's sync lag and whether GitHub answered for it.

Access: ``Authorization: Bearer <METRICS_TOKEN>``, or a connecting address in
``METRICS_ALLOW_IPS`` (the peer's address as gunicorn saw it; X-Forwarded-For is never
read). With neither set, every scrape is refused. Answered by
``config.middleware.ProbeMiddleware`` for any Host (Prometheus scrapes pods by IP).
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.apps import apps
from django.conf import settings
from django.db.models import Count, Min
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from config import env

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outbox:
    """A ledger of messages the metrics watch: its table, and the column from which a
    pending row is due (its age is counted from there)."""

    name: str
    model: str  # "app_label.ModelName"
    due_field: str


# Every ledger of messages (outbox/): adding one is adding its line here.
OUTBOXES: tuple[Outbox, ...] = (
    Outbox("reminders", "reminders.Delivery", due_field="due_at"),
    Outbox("notices", "notices.NoticeDelivery", due_field="created_at"),
    Outbox("board", "github_board.BoardWrite", due_field="created_at"),
    Outbox("slack", "slack_integration.SlackWork", due_field="created_at"),
)

REQUEST_SECONDS = Histogram(
    "releasecal_http_request_duration_seconds",
    "Time to answer a request, by view (its URL name), method and status class.",
    ["view", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


def _view_label(request: HttpRequest) -> str:
    match = request.resolver_match
    if match is not None:
        return match.view_name or match.route or "unnamed"
    if request.path_info.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return "static"  # WhiteNoise answers before any URL is resolved
    return "unmatched"  # a 404 no pattern matched, or refused before routing


class RequestLatencyMiddleware:
    """Times every request but the probes and the scrape (answered before it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        method = request.method if request.method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE") else "other"
        REQUEST_SECONDS.labels(_view_label(request), method, f"{response.status_code // 100}xx").observe(
            time.perf_counter() - started
        )
        return response


# --------------------------------------------------------------- read at each scrape


class DatabaseCollector(Collector):
    """Figures read from the database when Prometheus scrapes: a handful of indexed
    aggregate queries. When the database does not answer, ``releasecal_database_up`` is 0
    and the rest is left out (a scrape never fails for it)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        up = GaugeMetricFamily("releasecal_database_up", "1 when the scrape could read the database.")
        try:
            families = list(self._families())
        except Exception as exc:  # noqa: BLE001 - the database is down: say so, never a 500
            logger.warning("metrics: the database could not be read: %s", type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _families(self) -> Iterator[GaugeMetricFamily]:
        from releasecal import tz

        now = tz.utc_now()
        yield from _outbox_families(now)
        yield from _sweep_families(now)
        yield from _intake_families()
        yield from _board_families(now)


def _outbox_families(now) -> Iterator[GaugeMetricFamily]:
    label = ["outbox"]
    rows = {
        state: GaugeMetricFamily(f"releasecal_outbox_{state}", f"Rows of the outbox in state {state}.", labels=label)
        for state in ("pending", "sending", "failed")
    }
    oldest = GaugeMetricFamily(
        "releasecal_outbox_oldest_pending_age_seconds",
        "Seconds since the oldest pending row of the outbox fell due (0: none due).",
        labels=label,
    )
    for outbox in OUTBOXES:
        model = apps.get_model(outbox.model)
        counts = dict(
            model.objects.filter(state__in=list(rows))
            .order_by()
            .values_list("state")
            .annotate(n=Count("pk"))
            .values_list("state", "n")
        )
        for state, family in rows.items():
            family.add_metric([outbox.name], counts.get(state, 0))
        due = model.objects.filter(state="pending", **{f"{outbox.due_field}__lte": now}).aggregate(
            first=Min(outbox.due_field)
        )["first"]
        oldest.add_metric([outbox.name], max(0.0, (now - due).total_seconds()) if due else 0.0)
    yield from rows.values()
    yield oldest


def _sweep_families(now) -> Iterator[GaugeMetricFamily]:
    from reminders.liveness import last_sweep_at

    last = last_sweep_at()
    completed = GaugeMetricFamily(
        "releasecal_sweep_last_completed_timestamp_seconds",
        "When the minute sweep (beat's reminders.sweep) last completed, in Unix seconds (0: never).",
    )
    completed.add_metric([], last.timestamp() if last else 0)
    lag = GaugeMetricFamily(
        "releasecal_sweep_lag_seconds",
        "Seconds since the minute sweep last completed (-1: never); above OUTBOX_SWEEP_SECONDS it is late.",
    )
    lag.add_metric([], (now - last).total_seconds() if last else -1)
    interval = GaugeMetricFamily("releasecal_sweep_interval_seconds", "OUTBOX_SWEEP_SECONDS: beat's sweep period.")
    interval.add_metric([], settings.OUTBOX_SWEEP_SECONDS)
    return iter((completed, lag, interval))


def _intake_families() -> Iterator[GaugeMetricFamily]:
    from intake.models import IntakeProblem, MailboxState

    open_problems = GaugeMetricFamily(
        "releasecal_intake_problems_open", "Intake messages that could not be filed and are not resolved."
    )
    open_problems.add_metric([], IntakeProblem.objects.filter(resolved_at__isnull=True).count())
    failures = GaugeMetricFamily(
        "releasecal_intake_poll_failures", "Polls of the intake mailbox failed in a row (0 when off or working)."
    )
    last_success = GaugeMetricFamily(
        "releasecal_intake_last_success_timestamp_seconds",
        "When the intake mailbox was last read, in Unix seconds (0: never or off).",
    )
    states = list(MailboxState.objects.values_list("failures", "last_success_at"))
    failures.add_metric([], max((n for n, _ in states), default=0))
    latest = max((at for _, at in states if at), default=None)
    last_success.add_metric([], latest.timestamp() if latest else 0)
    return iter((open_problems, failures, last_success))


def _board_families(now) -> Iterator[GaugeMetricFamily]:
    from github.models import Board

    lag = GaugeMetricFamily(
        "releasecal_github_board_sync_lag_seconds",
        "Seconds since the release's GitHub board was last read whole (-1: never), for boards not off.",
        labels=["release"],
    )
    reachable = GaugeMetricFamily(
        "releasecal_github_board_reachable",
        "1 when GitHub answered for the release's board at the last check, 0 when not, -1 not yet checked.",
        labels=["release"],
    )
    boards = Board.objects.exclude(mode=Board.Mode.OFF).values_list("release__slug", "last_synced_at", "reachable")
    for release, synced_at, answered in boards:
        lag.add_metric([release], (now - synced_at).total_seconds() if synced_at else -1)
        reachable.add_metric([release], -1 if answered is None else int(answered))
    return iter((lag, reachable))


# ---------------------------------------------------------------- the endpoint


def _peer_allowed(request: HttpRequest) -> bool:
    if not settings.METRICS_ALLOW_IPS:
        return False
    try:
        peer = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(peer in ipaddress.ip_network(item, strict=False) for item in settings.METRICS_ALLOW_IPS)


def _token_shown(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _refused(status: int, message: str, **headers: str) -> HttpResponse:
    response = HttpResponse(message + "\n", status=status, content_type="text/plain; charset=utf-8")
    for name, value in headers.items():
        response.headers[name] = value
    return response


def exposition() -> bytes:
    """Every figure, in the Prometheus text format."""
    database = CollectorRegistry(auto_describe=True)
    database.register(DatabaseCollector())
    if env.read("PROMETHEUS_MULTIPROC_DIR"):  # under gunicorn: every worker's files
        counted = CollectorRegistry()
        multiprocess.MultiProcessCollector(counted)
    else:
        counted = REGISTRY
    return generate_latest(counted) + generate_latest(database)


def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_TOKEN and not settings.METRICS_ALLOW_IPS:
        return _refused(403, "Metrics are off: set METRICS_TOKEN or METRICS_ALLOW_IPS (docs/operations.md).")
    if not (_token_shown(request) or _peer_allowed(request)):
        if settings.METRICS_TOKEN:
            return _refused(401, "Show the metrics token: Authorization: Bearer <METRICS_TOKEN>.",
                            **{"WWW-Authenticate": 'Bearer realm="metrics"'})  # fmt: skip
        return _refused(403, "This address may not read the metrics (METRICS_ALLOW_IPS).")
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
