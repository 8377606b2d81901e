"""Every environment variable releasecal reads, declared once: type, default, range or
choices, a one-line description, whether a secret may come from a file.

Read through environs (its ``FileAwareEnv`` for secrets: ``SECRET_KEY_FILE=/run/secrets/key``
reads the key from that file, as Kubernetes mounts Secrets). Strict: ``DEBUG=ture``, a
number out of its range or an unknown choice stops the start with one line naming the
variable (``EnvironmentRefused``, a ``SystemExit``: a message, not a traceback). An empty
value is the same as an unset one. A renamed variable keeps its old name in
``deprecated``: the old name still reads, with a ``DeprecatedSettingWarning`` naming the
new one.

Pure Python, no Django: the Django settings (``config/settings/``), gunicorn's config (which
runs before Django), ``docker/healthcheck.py``, ``manage.py``, the Celery app and the
management commands all read through here; nothing else reads ``os.environ`` for
configuration. ``docs/settings.md`` and ``docker/.env.example`` are generated from
``VARIABLES`` (``manage.py settings_doc``); a test fails when they differ.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import environs
from marshmallow import ValidationError, validate

BASE_SETTINGS = "config.settings.base"
PRODUCTION_SETTINGS = "config.settings.production"
# The test suite's (the development ones, with GitHub sign-in pointed at the fake GitHub).
TEST_SETTINGS = "tests.settings"
# The embedded default's key: fine for `make run`, refused by the production settings.
DEV_SECRET_KEY = "dev-only-not-secret-releasecal-embedded-default"  # noqa: S105
SECRET_KEY_MIN_LENGTH = 50
EXAMPLE_SECRET_KEY = "change-me-to-a-random-string-of-at-least-50-characters-please-0000"  # noqa: S105
EXAMPLE_DATABASE_PASSWORD = "change-me"  # noqa: S105 (POSTGRES_PASSWORD in docker/.env.example)

# Prefixes only releasecal uses: a variable under one that is not declared is refused
# (a misspelt name). Not SLACK_, CELERY_ or GUNICORN_: other tools read names there too.
OWN_PREFIXES = ("REMINDERS_", "INTAKE_IMAP_", "OUTBOX_")

# Who reads a variable: the Python processes (Django, gunicorn's config, the health
# check, make run) read it through this module; compose reads its own in compose.yml.
PYTHON_READERS = ("Django", "gunicorn", "healthcheck", "make run")


class EnvironmentRefused(SystemExit):
    """The environment has a variable that cannot be used: one line per variable.

    A ``SystemExit``, so a refused start prints the lines and exits 1 wherever the
    settings are read (manage.py, gunicorn, Celery), without a traceback."""

    def __init__(self, problems: Iterable[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class DeprecatedSettingWarning(FutureWarning):
    """An old name of a renamed variable was read (shown by default: it is for operators)."""


@dataclass(frozen=True)
class Setting:
    name: str
    type: str  # bool, int, float, str, list, path
    default: Any
    help: str  # one line, for docs/settings.md and docker/.env.example
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    # Further checks of the parsed value (marshmallow validators: raise ValidationError
    # with what is wrong, e.g. "is not an http(s) URL").
    checks: tuple[Callable[[Any], Any], ...] = ()
    secret: bool = False  # also read from NAME_FILE; the value is never shown in a message
    deprecated: tuple[str, ...] = ()  # old names that still read, with a warning
    read_by: str = "Django"
    # docker/.env.example: None = not there (the image or compose sets it, or only
    # development needs it); "" = listed, commented out, with its default; else the value.
    example: str | None = None
    shown_default: str | None = None  # docs: the default in words, when it is derived
    group: str = ""  # the heading in docs/settings.md and docker/.env.example


_TYPE_WORDS = {
    "bool": "a boolean (1, 0, true, false, yes, no, on or off)",
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "list": "a comma-separated list",
    "path": "a path",
}


# --------------------------------------------------------------------------- checks


def _url(*schemes: str, what: str) -> Callable[[str], str]:
    """A URL whose scheme is one of ``schemes`` (the rest is the library's to read)."""

    def check(value: str) -> str:
        scheme, sep, _rest = value.partition("://")
        if not sep or scheme.lower() not in schemes:
            raise ValidationError(f"is not {what}")
        return value

    return check


def _database_url(value: str) -> str:
    import dj_database_url

    try:
        dj_database_url.parse(value)
    except Exception:  # noqa: BLE001 - any failure to read it is the same refusal
        raise ValidationError(
            "is not a database URL (postgres://user:password@host:5432/name or sqlite:///path)"
        ) from None
    return value


def _throttle_rate(value: str) -> str:
    # DRF reads "<number>/<s|m|h|d...>" and fails on anything else at the first request.
    if not re.fullmatch(r"[1-9][0-9]*/(s|sec|second|m|min|minute|h|hour|d|day)", value):
        raise ValidationError("is not a rate such as 600/min (per s, min, hour or day)")
    return value


def _addresses(value: str) -> str:
    """gunicorn's forwarded_allow_ips: addresses or networks, comma-separated, or *."""
    for item in (part.strip() for part in value.split(",")):
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValidationError(f"has {item!r}, which is not an IP address or network") from None
    return value


def _networks(value: str) -> str:
    """Addresses or networks, comma-separated (no *: that would be everyone)."""
    for item in (part.strip() for part in value.split(",")):
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ValidationError(f"has {item!r}, which is not an IP address or network") from None
    return value


def _host_port(value: str) -> str:
    # gunicorn binds HOST:PORT (several comma-separated) or unix:PATH.
    for item in (part.strip() for part in value.split(",")):
        if item.startswith("unix:"):
            continue
        _host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValidationError(f"has {item!r}, which is not HOST:PORT or unix:PATH")
    return value


def _origins(values: list[str]) -> list[str]:
    for item in values:
        if not re.match(r"https?://[^/]+$", item):
            raise ValidationError(f"has {item!r}, which is not an origin such as https://releasecal.example.org")
    return values


def _hostname(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?", value):
        raise ValidationError("is not a host name (no scheme, port or path)")
    return value


_email = validate.Email(error="is not an email address")
_http_url = _url("http", "https", what="an http(s) URL")
_email_url = _url(
    "console", "locmem", "smtp", "smtp+tls", "submission", "smtps", what="an email URL (smtp://, smtps://, console://)"
)
_redis_url = _url("redis", "rediss", "unix", what="a Redis URL (redis://host:6379/0)")
_broker_url = _url("redis", "rediss", "filesystem", "memory", what="a Celery broker URL (redis://host:6379/1)")


# --------------------------------------------------------------------------- the declaration


def _group(group: str, *settings: Setting) -> tuple[Setting, ...]:
    return tuple(replace(setting, group=group) for setting in settings)


S = Setting
VARIABLES: tuple[Setting, ...] = (
    *_group(
        "Site",
        S("DJANGO_SETTINGS_MODULE", "str", BASE_SETTINGS,
          "Which settings: the development default, the hardened production ones (the image sets them), or the tests'.",
          choices=(BASE_SETTINGS, PRODUCTION_SETTINGS, TEST_SETTINGS)),
        S("DEBUG", "bool", False, "Django's debug mode (the production settings turn it off whatever it says)."),
        S("SECRET_KEY", "str", DEV_SECRET_KEY,
          "Signs sessions, CSRF tokens and links: production refuses one under 50 characters or an example.",
          secret=True, example=EXAMPLE_SECRET_KEY, shown_default="a development key"),
        S("ALLOWED_HOSTS", "list", ["127.0.0.1", "localhost", "testserver"], "Host names this site answers to.",
          example="releasecal.example.org"),
        S("CSRF_TRUSTED_ORIGINS", "list", [],
          "Origins (https://host) allowed to post forms, as the browser sees the site.",
          checks=(_origins,), example="https://releasecal.example.org"),
        S("SITE_URL", "str", "http://127.0.0.1:8000",
          "The site's public address, for links in emails and Slack and the Slack app manifest.",
          checks=(_http_url,), example="https://releasecal.example.org"),
        S("SITE_HOST", "str", "releasecal.local",
          "Host part of every calendar UID: set once, never change (calendars would duplicate events).",
          checks=(_hostname,), example="releasecal.example.org"),
        S("RELEASECAL_VAR_DIR", "path", None,
          "Scratch directory: the SQLite file, the embedded broker, beat's schedule (the image: /tmp/releasecal).",
          shown_default="var/ in the checkout"),
        S("STATIC_ROOT", "path", None,
          "Where collectstatic puts the files WhiteNoise serves (the image: /app/staticfiles).",
          shown_default="staticfiles/ in the checkout"),
        S("LOG_FORMAT", "str", "plain", "Log lines on stdout: plain text, or one JSON object a line (the image: json).",
          choices=("plain", "json")),
        S("LOG_LEVEL", "str", "INFO", "Level of the root logger.",
          choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), example="INFO"),
    ),
    *_group(
        "Proxy and HTTPS",
        S("NUM_PROXIES", "int", 0,
          "Proxies of ours that append to X-Forwarded-For before gunicorn (0: no proxy, the header is ignored).",
          min=0, max=5, example=""),
        S("SECURE_SSL_REDIRECT", "bool", True,
          "Production: plain HTTP is redirected to HTTPS (never /healthz, /readyz or /metrics).", example=""),
        S("SECURE_HSTS_SECONDS", "int", 365 * 24 * 3600, "Production: Strict-Transport-Security max-age, in seconds.",
          min=0, max=2 * 365 * 24 * 3600),
        S("SECURE_HSTS_INCLUDE_SUBDOMAINS", "bool", True, "Production: HSTS covers subdomains too."),
        S("SECURE_HSTS_PRELOAD", "bool", True, "Production: HSTS asks browsers to preload the site."),
    ),
    *_group(
        "Database and cache",
        S("DATABASE_URL", "str", "",
          "The database, postgres://user:password@host:5432/name (compose builds it from POSTGRES_PASSWORD).",
          checks=(_database_url,), secret=True, shown_default="SQLite in RELEASECAL_VAR_DIR"),
        S("CONN_MAX_AGE", "int", 60, "Seconds a database connection is kept for reuse (0: one per request).",
          min=0, max=3600),
        S("REDIS_URL", "str", "",
          "Redis: Django's cache (feeds, throttles, Slack's turn) and the broker when CELERY_BROKER_URL is unset.",
          checks=(_redis_url,), secret=True, shown_default="none: a local-memory cache"),
        S("CACHE_KEY_PREFIX", "str", "releasecal",
          "Prefix of every cache key: one per deployment sharing a Redis database."),
        S("CACHE_CONNECT_TIMEOUT", "float", 0.5,
          "Seconds to connect to Redis before a request goes on without the cache.",
          min=0.01, max=30),
        S("CACHE_SOCKET_TIMEOUT", "float", 0.5,
          "Seconds a Redis command may take before a request goes on without it.",
          min=0.01, max=30),
        S("READYZ_CACHE_OPTIONAL", "bool", False,
          "/readyz stays 200 while Redis is down (feeds from the database, throttles open); off: 503.",
          example=""),
    ),
    *_group(
        "Metrics",
        S("METRICS_TOKEN", "str", "",
          "/metrics answers a scrape with Authorization: Bearer <this> (empty, and no METRICS_ALLOW_IPS: 403 to all).",
          secret=True, example=""),
        S("METRICS_ALLOW_IPS", "str", "",
          "Addresses or networks that may scrape /metrics without the token (the peer's address, never a header).",
          checks=(_networks,), example=""),
        S("PROMETHEUS_MULTIPROC_DIR", "path", None,
          "prometheus-client's multiprocess directory: gunicorn's workers' metrics, emptied at its start.",
          read_by="gunicorn", shown_default="RELEASECAL_VAR_DIR/prometheus under gunicorn"),
    ),
    *_group(
        "API",
        S("API_THROTTLE_ANON", "str", "600/min", "Requests an anonymous client may make to the API.",
          checks=(_throttle_rate,)),
        S("API_THROTTLE_USER", "str", "3000/min", "Requests a signed-in client may make to the API.",
          checks=(_throttle_rate,)),
        S("API_THROTTLE_PARSE", "str", "60/min",
          "Calls of the anonymous exceptions/parse/ (up to half a second of CPU each).",
          checks=(_throttle_rate,)),
    ),
    *_group(
        "Email",
        S("EMAIL_URL", "str", "console://",
          "Outgoing mail: smtp://user:password@host:587 (STARTTLS), smtps://... (TLS), console:// or locmem://.",
          checks=(_email_url,), secret=True, example="smtp://releasecal:password@smtp.example.org:587"),
        S("DEFAULT_FROM_EMAIL", "str", "releasecal <releasecal@localhost>", "The From: of every email.",
          example="releasecal <releasecal@example.org>"),
    ),
    *_group(
        "Slack",
        S("SLACK_SIGNING_SECRET", "str", "", "The Slack app's signing secret (empty: every Slack request is refused).",
          secret=True, example=""),
        S("SLACK_BOT_TOKEN", "str", "", "The Slack app's bot token, xoxb-...", secret=True, example=""),
        S("SLACK_API_URL", "str", "https://slack.com/api/", "Slack's Web API (a fake in the tests).",
          checks=(_http_url,)),
        S("SLACK_RELEASE_TEAM_CHANNEL", "str", "",
          "Channel id where exception requests are posted with Approve/Reject, and schedule notices.", example=""),
    ),
    *_group(
        "GitHub sign-in",
        S("GITHUB_OAUTH_CLIENT_ID", "str", "",
          "The GitHub OAuth app's client id (empty: sign-in with GitHub is off); docs/github.md.",
          example=""),
        S("GITHUB_OAUTH_CLIENT_SECRET", "str", "", "The GitHub OAuth app's client secret.", secret=True, example=""),
        S("GITHUB_URL", "str", "",
          "GitHub's web root for GitHub Enterprise (its API is GITHUB_URL/api/v3); read once at start.",
          checks=(_http_url,), shown_default="github.com"),
        S("GITHUB_OAUTH_TIMEOUT", "float", 10, "Seconds for each call to GitHub during a sign-in.", min=1, max=60),
    ),
    *_group(
        "GitHub board",
        S("GITHUB_API_URL", "str", "https://api.github.com",
          "GitHub's API root for the release board (GitHub Enterprise: https://HOST/api/v3; a fake in the tests).",
          checks=(_http_url,)),
        S("GITHUB_TOKEN", "str", "",
          "A fine-grained token with the organization's Projects permission (empty, and no App: the board is off).",
          secret=True, example=""),
        S("GITHUB_APP_ID", "int", 0, "A GitHub App's id, instead of a token (with its key and installation).",
          min=0, max=10**12, example=""),
        S("GITHUB_APP_PRIVATE_KEY", "str", "", "The GitHub App's private key (PEM).", secret=True, example=""),
        S("GITHUB_APP_INSTALLATION_ID", "int", 0, "The App's installation on the board's organization.",
          min=0, max=10**12, example=""),
        S("GITHUB_TIMEOUT", "float", 10, "Seconds for each call to GitHub's API for the board.", min=1, max=120),
        S("GITHUB_WEBHOOK_SECRET", "str", "",
          "The secret of the webhook to POST /github/webhook (empty: every delivery is refused, 401).",
          secret=True, example=""),
        S("GITHUB_RECONCILE_SECONDS", "int", 300,
          "Seconds between beat's reconciles of every board that is not off.", min=30, max=3600),
    ),
    *_group(
        "Celery",
        S("CELERY_BROKER_URL", "str", "", "Celery's broker (compose: redis://redis:6379/1).",
          checks=(_broker_url,), secret=True,
          shown_default="REDIS_URL, else a file-system broker in RELEASECAL_VAR_DIR"),
        S("CELERY_QUEUE", "str", "celery",
          "The queue web, beat and workers share: one per deployment sharing a Redis."),
        S("CELERY_VISIBILITY_TIMEOUT", "int", 3600,
          "Seconds before an unacknowledged message is delivered again (longer than any task runs, 300).",
          min=301, max=7 * 24 * 3600),
        S("OUTBOX_SWEEP_SECONDS", "float", 60, "Beat sweeps for due reminders and notices every this many seconds.",
          min=1, max=120, deprecated=("REMINDERS_SWEEP_SECONDS",)),
    ),
    *_group(
        "Intake mailbox",
        S("INTAKE_IMAP_HOST", "str", "",
          "IMAP server of the mailbox on the SIG Release list (off until host, user and password are set).",
          example=""),
        S("INTAKE_IMAP_PORT", "int", 0, "IMAP port (0: 993 with ssl, 143 otherwise).", min=0, max=65535),
        S("INTAKE_IMAP_USER", "str", "", "IMAP login.", example=""),
        S("INTAKE_IMAP_PASSWORD", "str", "", "IMAP password (or an app password).", secret=True, example=""),
        S("INTAKE_IMAP_FOLDER", "str", "INBOX", "The folder read."),
        S("INTAKE_IMAP_TLS", "str", "ssl", "ssl (IMAPS), starttls, or none (loopback only).",
          choices=("ssl", "starttls", "none")),
        S("INTAKE_IMAP_ENTERED_BY", "str", "", "Username of the release-team member who owns the mailbox.", example=""),
        S("INTAKE_IMAP_BATCH", "int", 50, "Messages read per poll at most.", min=1, max=1000),
        S("INTAKE_IMAP_TIMEOUT", "float", 30, "Seconds an IMAP command may take.", min=1, max=600),
        S("INTAKE_IMAP_POLL_SECONDS", "float", 60, "Beat polls the mailbox every this many seconds.",
          min=1, max=24 * 3600),
    ),
    *_group(
        "Outbox (every ledger: reminders, schedule notices, GitHub writes)",
        S("OUTBOX_LEASE_SECONDS", "int", 300,
          "A claimed send unfinished this long is claimed again (its task's time limit is 80% of it).",
          min=2, max=3600, deprecated=("REMINDERS_LEASE_SECONDS",)),
        S("OUTBOX_REQUEUE_SECONDS", "int", 300, "A queued send not started this long is queued again by the sweep.",
          min=1, max=24 * 3600, deprecated=("REMINDERS_REQUEUE_SECONDS",)),
        S("OUTBOX_MAX_ATTEMPTS", "int", 6, "Failed attempts before a send is given up (a 429 is not one).",
          min=1, max=100, deprecated=("REMINDERS_MAX_ATTEMPTS",)),
        S("OUTBOX_RETRY_BASE_SECONDS", "float", 60, "First wait after a failed attempt (doubled each time).",
          min=0, max=24 * 3600, deprecated=("REMINDERS_RETRY_BASE_SECONDS",)),
        S("OUTBOX_RETRY_MAX_SECONDS", "float", 3600, "Longest wait between attempts.",
          min=0, max=7 * 24 * 3600, deprecated=("REMINDERS_RETRY_MAX_SECONDS",)),
        S("OUTBOX_HTTP_TIMEOUT", "float", 10, "Seconds a Slack or webhook request may take.",
          min=0.1, max=300, deprecated=("REMINDERS_HTTP_TIMEOUT",)),
        S("OUTBOX_HTTP_TRIES", "int", 3, "Tries of one HTTP request within an attempt.",
          min=1, max=10, deprecated=("REMINDERS_HTTP_TRIES",)),
        S("OUTBOX_HTTP_BACKOFF_BASE", "float", 0.5, "First wait between those tries, in seconds.",
          min=0, max=60, deprecated=("REMINDERS_HTTP_BACKOFF_BASE",)),
        S("OUTBOX_HTTP_BACKOFF_MAX", "float", 8, "Longest wait between those tries, in seconds.",
          min=0, max=600, deprecated=("REMINDERS_HTTP_BACKOFF_MAX",)),
        S("OUTBOX_SLACK_CHANNEL_RATE", "int", 1,
          "Messages a second per Slack channel, webhook or DM, shared by every worker (0: no limit).",
          min=0, max=100, deprecated=("REMINDERS_SLACK_CHANNEL_RATE",)),
        S("OUTBOX_SLACK_MAX_WAIT_SECONDS", "int", 60,
          "Longest wait for a channel's turn in the queue; a longer one goes back to the ledger.",
          min=1, max=3600, deprecated=("REMINDERS_SLACK_MAX_WAIT_SECONDS",)),
    ),
    *_group(
        "Reminders and notices",
        S("REMINDERS_GRACE_MINUTES", "int", 30, "A reminder found this late is still sent; later, it is marked missed.",
          min=0, max=7 * 24 * 60),
        S("REMINDERS_STALL_MINUTES", "int", 5,
          "No completed sweep for this long: check_services and the admin say so, the release team is emailed once.",
          min=3, max=24 * 60),
        S("REMINDERS_DIGESTS", "bool", True,
          "Deliveries due in one sweep for one channel go out as one digest where their rules allow it."),
        S("REMINDERS_RELEASE_TEAM_EMAIL", "str", "release-team@example.com",
          "The release team's address: stall and missed-reminder alerts, the default email channel.",
          checks=(_email,), example="release-team@example.org"),
        S("REMINDERS_RELEASE_TEAM_SLACK_CHANNEL", "str", "release-team",
          "The default Slack channel of the release team's reminders.", example="release-team"),
        S("EXCEPTION_NUDGE_AFTER_HOURS", "float", 24,
          "A pending exception request undecided this long is brought up to the release team again.",
          min=0, max=30 * 24),
    ),
    *_group(
        "Commands",
        S("RELEASECAL_ADMIN_PASSWORD", "str", "", "make run and ensure_admin: the admin's password.",
          secret=True, read_by="make run", shown_default="a new random one each run"),
        S("RELEASECAL_USER", "str", "", "ingest_exception: who enters the request when --entered-by is not given.",
          shown_default="the login name, when such a user exists"),
    ),
    *_group(
        "gunicorn",
        S("GUNICORN_BIND", "str", "0.0.0.0:8000",
          "Where gunicorn listens (HOST:PORT, comma-separated, or unix:PATH); the health check asks there.",
          checks=(_host_port,), read_by="gunicorn"),
        S("WEB_CONCURRENCY", "int", 3, "gunicorn worker processes.", min=1, max=64, read_by="gunicorn", example="3"),
        S("GUNICORN_THREADS", "int", 2, "Threads per gunicorn worker.", min=1, max=64, read_by="gunicorn", example="2"),
        S("GUNICORN_TIMEOUT", "int", 30, "Seconds a request may take before its worker is restarted.",
          min=1, max=3600, read_by="gunicorn"),
        S("GUNICORN_GRACEFUL_TIMEOUT", "int", 25, "On SIGTERM, seconds workers get to finish the requests in hand.",
          min=0, max=3600, read_by="gunicorn"),
        S("GUNICORN_MAX_REQUESTS", "int", 2000, "A worker is replaced after this many requests (0: never).",
          min=0, max=10**7, read_by="gunicorn"),
        S("GUNICORN_WORKER_TMP_DIR", "path", None, "Where workers keep their heartbeat file.",
          read_by="gunicorn", shown_default="/dev/shm when it exists"),  # noqa: S108
        S("GUNICORN_CONTROL_SOCKET", "path", None, "gunicornc's control socket (the image: /tmp/gunicorn.ctl).",
          read_by="gunicorn", shown_default="gunicorn's, under $HOME"),
        S("FORWARDED_ALLOW_IPS", "str", "",
          "Addresses or networks of the proxy whose X-Forwarded-Proto gunicorn believes (empty: no proxy; never *).",
          checks=(_addresses,), read_by="gunicorn", example=""),
    ),
    *_group(
        "docker compose (compose.yml reads these, not the code)",
        S("POSTGRES_PASSWORD", "str", None,
          "The PostgreSQL password; compose builds DATABASE_URL from it (the example's is refused).",
          read_by="compose", example=EXAMPLE_DATABASE_PASSWORD, shown_default="none: required"),
        S("WEB_BIND", "str", "127.0.0.1", "The host address the web port is published on (0.0.0.0: every interface).",
          read_by="compose", example=""),
        S("WEB_PORT", "int", 8000, "The host port of the web service.", min=1, max=65535,
          read_by="compose", example=""),
        S("WORKER_CONCURRENCY", "int", 4,
          "Celery processes per worker container (compose's and the Kubernetes worker's command line read it).",
          min=1, max=64, read_by="compose", example="4"),
        S("RELEASECAL_IMAGE", "str", "releasecal:latest", "The image every service runs.", read_by="compose"),
    ),
)  # fmt: skip
del S

BY_NAME: dict[str, Setting] = {setting.name: setting for setting in VARIABLES}


# --------------------------------------------------------------------------- reading


def _given(name: str) -> bool:
    return os.environ.get(name, "") != ""


def _empty_file(path: str) -> bool:
    """A readable file holding nothing but whitespace (an unreadable one is refused later)."""
    try:
        return Path(path).read_text(encoding="utf-8").strip() == ""
    except (OSError, UnicodeDecodeError):
        return False


def _is_set(setting: Setting, name: str) -> bool:
    in_file = setting.secret and _given(f"{name}_FILE")
    if in_file and _given(name):
        raise EnvironmentRefused([f"{name} and {name}_FILE are both set: set one of them"])
    if in_file and _empty_file(os.environ[f"{name}_FILE"]):
        # An empty file is an empty value, so unset: a Kubernetes Secret holds every key,
        # with nothing in those not used (no Slack, no mailbox).
        return False
    return in_file or _given(name)


def _source(setting: Setting) -> str | None:
    """The name the value is read under: the setting's own, else an old name (with a
    warning naming the new one), else None (unset: the default)."""
    found = [name for name in (setting.name, *setting.deprecated) if _is_set(setting, name)]
    if not found:
        return None
    name = found[0]
    if name != setting.name:
        warnings.warn(f"{name} is deprecated: set {setting.name} instead", DeprecatedSettingWarning, stacklevel=4)
    for ignored in found[1:]:
        warnings.warn(
            f"{ignored} is deprecated and ignored ({name} is read): remove it", DeprecatedSettingWarning, stacklevel=4
        )
    return name


def validators(setting: Setting) -> list[Callable[[Any], Any]]:
    found: list[Callable[[Any], Any]] = []
    if setting.min is not None or setting.max is not None:
        if setting.min is not None and setting.max is not None:
            error = "must be {min} to {max}"
        elif setting.min is not None:
            error = "must be at least {min}"
        else:
            error = "must be at most {max}"
        found.append(validate.Range(min=setting.min, max=setting.max, error=error))
    if setting.choices:
        found.append(validate.OneOf(setting.choices, error="must be one of {choices}"))
    found.extend(setting.checks)
    return found


def read_setting(setting: Setting) -> Any:
    """One variable's value, parsed and checked; raises ``EnvironmentRefused`` with one
    line naming it."""
    name = _source(setting)
    if name is None:
        return float(setting.default) if setting.type == "float" else setting.default
    reader = environs.FileAwareEnv(strip_whitespace=True) if setting.secret else environs.Env()
    shown = "" if setting.secret else f"={os.environ.get(name, '')!r}"
    label = f"{name} (from {name}_FILE)" if setting.secret and _given(f"{name}_FILE") else name
    try:
        value = getattr(reader, setting.type)(name)
    except ValueError as exc:  # FileAwareEnv: NAME_FILE names no readable file
        if isinstance(exc, environs.EnvError):
            raise EnvironmentRefused([f"{label}{shown} is not {_TYPE_WORDS[setting.type]}"]) from None
        raise EnvironmentRefused([f"{name}_FILE={os.environ.get(f'{name}_FILE')!r} is not a readable file"]) from None
    if setting.type == "list":
        value = [item.strip() for item in value if item.strip()]
    for check in validators(setting):
        try:
            check(value)
        except ValidationError as exc:
            (message,) = exc.messages
            raw = os.environ.get(name, "")
            if setting.secret:  # never shown
                line = f"{label} {message}"
            elif message.startswith("must"):  # a range or a choice
                line = f"{label} {message}, not {raw}"
            else:
                line = f"{label}={raw!r} {message}"
            raise EnvironmentRefused([line]) from None
    return value


def read(name: str) -> Any:
    """The value of the declared variable ``name`` (a management command's, read when it runs)."""
    return read_setting(BY_NAME[name])


def unknown_problems(settings: Iterable[Setting] = VARIABLES) -> list[str]:
    """A variable named with one of our own prefixes that nothing declares: a typo
    (``REMINDERS_DIGEST=0``) would otherwise be ignored without a word."""
    known = set()
    for setting in (*VARIABLES, *settings):
        for name in (setting.name, *setting.deprecated):
            known.update((name, f"{name}_FILE") if setting.secret else (name,))
    problems = []
    for name in sorted(os.environ):
        if name.startswith(OWN_PREFIXES) and name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"{name} is not a variable releasecal reads{hint}: see docs/settings.md")
    return problems


def load(settings: Iterable[Setting] = VARIABLES) -> dict[str, Any]:
    """Every variable the Python code reads, checked together: ``EnvironmentRefused``
    names each one that is wrong, one line each (and each unknown one of our prefixes)."""
    settings = tuple(settings)
    values: dict[str, Any] = {}
    problems: list[str] = unknown_problems(settings)
    for setting in settings:
        if setting.read_by not in PYTHON_READERS:
            continue
        try:
            values[setting.name] = read_setting(setting)
        except EnvironmentRefused as exc:
            problems.extend(exc.problems)
    if problems:
        raise EnvironmentRefused(problems)
    return values


def production_problems(values: Mapping[str, Any]) -> list[str]:
    """What the production settings refuse, one line per variable: a missing, short,
    development or example SECRET_KEY; the example database password."""
    problems = []
    key = values["SECRET_KEY"]
    advice = f"Set SECRET_KEY to a random value of at least {SECRET_KEY_MIN_LENGTH} characters"
    if not _is_set(BY_NAME["SECRET_KEY"], "SECRET_KEY"):  # unset, empty, or an empty file
        problems.append(f"SECRET_KEY is not set. {advice} (or SECRET_KEY_FILE to a file holding it).")
    elif key in (DEV_SECRET_KEY, EXAMPLE_SECRET_KEY):
        problems.append(f"SECRET_KEY is the {'example' if key == EXAMPLE_SECRET_KEY else 'development'} key. {advice}.")
    elif len(key) < SECRET_KEY_MIN_LENGTH:
        problems.append(f"SECRET_KEY has {len(key)} characters. {advice}.")
    if values["DATABASE_URL"]:
        import dj_database_url

        if dj_database_url.parse(values["DATABASE_URL"]).get("PASSWORD") == EXAMPLE_DATABASE_PASSWORD:
            problems.append(
                f"DATABASE_URL has the example password {EXAMPLE_DATABASE_PASSWORD!r} "
                "(POSTGRES_PASSWORD in docker/.env.example): choose a password of your own."
            )
    return problems


def check_production(values: Mapping[str, Any]) -> None:
    problems = production_problems(values)
    if problems:
        raise EnvironmentRefused(problems)


def use_settings_module() -> str:
    """Point Django at the declared settings module (DJANGO_SETTINGS_MODULE, checked);
    what manage.py, the WSGI application and the Celery app call before Django starts."""
    module = read("DJANGO_SETTINGS_MODULE")
    os.environ["DJANGO_SETTINGS_MODULE"] = module
    return module


# --------------------------------------------------------------------------- generated pages


def _shown_default(setting: Setting) -> str:
    if setting.shown_default is not None:
        return setting.shown_default
    return _plain(setting.default) or "empty"


def _plain(value: Any) -> str:
    """A value as it is written in the environment."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(value)
    return "" if value is None else str(value)


def _type_words(setting: Setting) -> str:
    words = {"str": "string", "list": "list"}.get(setting.type, setting.type)
    if setting.choices:
        return "one of " + ", ".join(f"`{choice}`" for choice in setting.choices)
    if setting.min is not None and setting.max is not None:
        return f"{words}, {_plain(setting.min)} to {_plain(setting.max)}"
    if setting.min is not None:
        return f"{words}, at least {_plain(setting.min)}"
    return words


def _groups() -> dict[str, list[Setting]]:
    groups: dict[str, list[Setting]] = {}
    for setting in VARIABLES:
        groups.setdefault(setting.group, []).append(setting)
    return groups


def markdown() -> str:
    """docs/settings.md: every variable, by group."""
    lines = [
        "# Settings",
        "",
        "<!-- Generated from config/env.py by `manage.py settings_doc`: edit the declaration, not this page"
        " (tests/config/test_settings_page.py fails when they differ). -->",
        "",
        f"Every environment variable releasecal reads, {len(VARIABLES)} of them, declared once in `config/env.py`"
        " (read with the environs library) and read through it by the Django settings,"
        " gunicorn's config (`docker/gunicorn.conf.py`, before Django starts), `docker/healthcheck.py`, `manage.py`,"
        " the Celery app and the management commands; compose reads the last group itself.",
        "",
        "- **Strict**: a value that is not of its type (`DEBUG=ture`), out of its range or not one of its choices"
        " stops the start, in every process, with one line naming the variable (no traceback). Booleans are"
        " `1`/`0`, `true`/`false`, `yes`/`no` or `on`/`off`.",
        "- **Empty is unset**: `NAME=` gives the default.",
        "- **No misspelt names**: a variable under one of releasecal's own prefixes ("
        + ", ".join(f"`{prefix}`" for prefix in OWN_PREFIXES)
        + ") that is not declared here is refused, with the closest declared name.",
        "- **Secrets from files**: a variable marked *yes* under `_FILE` may instead be given as `NAME_FILE`, the path"
        " of a file holding the value (Kubernetes mounts Secrets as files; surrounding whitespace is stripped; an"
        " empty file is an unset variable). Setting both is refused.",
        "- **Renamed variables**: an old name still reads, with a warning naming the new one (a"
        " `DeprecatedSettingWarning`); the old names are listed beside the new.",
        "- **Production** (`DJANGO_SETTINGS_MODULE=config.settings.production`) also refuses a missing, short,"
        " development or example `SECRET_KEY`, and a `DATABASE_URL` with the example password (`change-me`).",
        "- `docker/.env.example` (generated with this page) lists what a compose deployment sets.",
    ]
    for group, settings in _groups().items():
        lines += [
            "",
            f"## {group}",
            "",
            "| variable | type | default | description | `_FILE` |",
            "| --- | --- | --- | --- | --- |",
        ]
        for setting in settings:
            default = _shown_default(setting)
            default = f"`{default}`" if setting.shown_default is None and default != "empty" else default
            help_text = setting.help
            if setting.deprecated:
                help_text += " Old name" + ("s" if len(setting.deprecated) > 1 else "") + ": "
                help_text += ", ".join(f"`{old}`" for old in setting.deprecated) + "."
            from_file = "yes" if setting.secret else ""
            lines.append(f"| `{setting.name}` | {_type_words(setting)} | {default} | {help_text} | {from_file} |")
    return "\n".join(lines) + "\n"


def env_example() -> str:
    """docker/.env.example: what a compose deployment sets; a commented line shows the default."""
    lines = [
        "# Copy to docker/.env and fill in: compose reads its own variables here and gives the rest to the app.",
        "# Generated from config/env.py by `manage.py settings_doc`; every variable: docs/settings.md.",
        "# A line commented out shows the default: uncomment it to change it.",
    ]
    for group, settings in _groups().items():
        chosen = [setting for setting in settings if setting.example is not None]
        if not chosen:
            continue
        lines += ["", f"# --- {group}"]
        for setting in chosen:
            lines.append(f"# {setting.help}")
            if setting.example:
                lines.append(f"{setting.name}={setting.example}")
            else:
                lines.append(f"# {setting.name}={_plain(setting.default)}")
    return "\n".join(lines) + "\n"
