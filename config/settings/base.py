"""Settings, from the environment: every variable is declared in config/env.py (type,
default, range, description; docs/settings.md is generated from it) and read here
through it, checked all at once: a bad value stops the start with one line naming it.

The embedded default (no variables set) is a development setup: SQLite, local-memory
cache, a file-system Celery broker and console email. Production sets DATABASE_URL,
REDIS_URL, SECRET_KEY, ALLOWED_HOSTS and DEBUG=0 (see docker/.env.example).
"""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from csp.constants import NONCE as _CSP_NONCE

from config import env

# Lower case: not a Django setting (it holds the secrets as read).
environment = env.load()

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = environment["RELEASECAL_VAR_DIR"] or BASE_DIR / "var"

DEBUG = environment["DEBUG"]
SECRET_KEY = environment["SECRET_KEY"]
ALLOWED_HOSTS = environment["ALLOWED_HOSTS"]
CSRF_TRUSTED_ORIGINS = environment["CSRF_TRUSTED_ORIGINS"]
# The host part of calendar UIDs: stable across deployments of the same instance.
SITE_HOST = environment["SITE_HOST"]
SITE_URL = environment["SITE_URL"].rstrip("/")

INSTALLED_APPS = [
    "config.admin_apps.AdminConfig",  # django.contrib.admin with the release team's cockpit
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by us
    "csp",
    # Sign in with GitHub (people/): allauth's accounts, third-party accounts and its GitHub provider
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.github",
    # Inner to outer: the schedule domain, the exception workflow, reminders, then the
    # faces (feeds, pages, the shared API parts, Slack), the demo and the project's wiring.
    "releasecal",
    "exceptions",
    "reminders",
    "feeds",
    "pages",
    "api",
    "slack_integration",
    "notices",
    "github",  # the release board on GitHub (app label github_board: allauth's provider is "github")
    "demo",
    "config",
    "intake",
    "people",
]

MIDDLEWARE = [
    # Outermost: the request id for every log line; then /healthz, /readyz and /metrics,
    # answered before the host check (a kubelet sends the pod's IP as Host); then the
    # latency of every other request, per view.
    "config.middleware.RequestIdMiddleware",
    "config.middleware.ProbeMiddleware",
    "config.metrics.RequestLatencyMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.RejectNulMiddleware",
    # The feeds, answered here: they need nothing below (config.middleware.FeedMiddleware).
    "config.middleware.FeedMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        environment["DATABASE_URL"] or f"sqlite:///{VAR_DIR / 'releasecal.sqlite3'}",
        conn_max_age=environment["CONN_MAX_AGE"],
        conn_health_checks=True,
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = environment["REDIS_URL"]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": environment["CACHE_KEY_PREFIX"],
            # Short socket timeouts: a frozen Redis costs a request at most this long
            # (throttles fail open, feeds fall back to the database), never a stall.
            "OPTIONS": {
                "socket_connect_timeout": environment["CACHE_CONNECT_TIMEOUT"],
                "socket_timeout": environment["CACHE_SOCKET_TIMEOUT"],
            },
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# /readyz: a down Redis makes a web process not ready, unless declared optional (feeds
# then come from the database and throttles fail open).
READYZ_CACHE_OPTIONAL = environment["READYZ_CACHE_OPTIONAL"]

# /metrics (config/metrics.py): a scrape shows this token (Authorization: Bearer ...) or
# comes from one of these networks (the connecting address); neither set: refused.
METRICS_TOKEN = environment["METRICS_TOKEN"]
METRICS_ALLOW_IPS = [part.strip() for part in environment["METRICS_ALLOW_IPS"].split(",") if part.strip()]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = environment["STATIC_ROOT"] or BASE_DIR / "staticfiles"
# Hashed, compressed static files need `collectstatic`: production turns them on
# (settings_production); development and tests serve the plain files.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# One login page for everyone (people/views.py): staff sign in with their releasecal
# password, contributors with GitHub; the Slack link flow (/slack/link/) sends people here.
LOGIN_URL = "/login/"
LOGIN_REDIRECT_URL = "/me/"
LOGOUT_REDIRECT_URL = "/"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",  # staff: username and password (admin, /login/)
    "allauth.account.auth_backends.AuthenticationBackend",  # GitHub sign-in
]

# Sign in with GitHub (docs/github.md): an OAuth app registered on GitHub, its callback
# SITE_URL + /accounts/github/login/callback/. Off (the login page says so) while
# GITHUB_OAUTH_CLIENT_ID is empty. GitHub's numeric user id is the key of an account;
# the handle is what it is shown as and what KEPs are matched by (people/).
GITHUB_OAUTH_CLIENT_ID = environment["GITHUB_OAUTH_CLIENT_ID"]
GITHUB_OAUTH_CLIENT_SECRET = environment["GITHUB_OAUTH_CLIENT_SECRET"]
# GitHub's web root (GitHub Enterprise, or the tests' fake): allauth's GitHub provider
# reads it when its module is imported, then calls GITHUB_URL/api/v3/user and /user/emails.
GITHUB_URL = environment["GITHUB_URL"].rstrip("/")
SOCIALACCOUNT_PROVIDERS = {
    "github": {
        "APPS": (
            [{"client_id": GITHUB_OAUTH_CLIENT_ID, "secret": GITHUB_OAUTH_CLIENT_SECRET, "key": ""}]
            if GITHUB_OAUTH_CLIENT_ID
            else []
        ),
        **({"GITHUB_URL": GITHUB_URL} if GITHUB_URL else {}),
    }
}
ACCOUNT_ADAPTER = "people.adapters.AccountAdapter"  # no password sign-up: staff accounts are made in the admin
SOCIALACCOUNT_ADAPTER = "people.adapters.SocialAccountAdapter"
ACCOUNT_LOGIN_METHODS = {"username"}
ACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_AUTO_SIGNUP = True
SOCIALACCOUNT_LOGIN_ON_GET = False  # the sign-in starts with a POST (CSRF) from the login page
SOCIALACCOUNT_STORE_TOKENS = False  # the user's GitHub token is not needed after sign-in: not kept
SOCIALACCOUNT_QUERY_EMAIL = True  # scope user:email: the verified addresses, for reminders
SOCIALACCOUNT_REQUESTS_TIMEOUT = environment["GITHUB_OAUTH_TIMEOUT"]

# The release board on GitHub (github/): a fine-grained token or a GitHub App; neither: off.
GITHUB_API_URL = environment["GITHUB_API_URL"]
GITHUB_TOKEN = environment["GITHUB_TOKEN"]
GITHUB_APP_ID = environment["GITHUB_APP_ID"]
GITHUB_APP_PRIVATE_KEY = environment["GITHUB_APP_PRIVATE_KEY"]
GITHUB_APP_INSTALLATION_ID = environment["GITHUB_APP_INSTALLATION_ID"]
GITHUB_TIMEOUT = environment["GITHUB_TIMEOUT"]
GITHUB_WEBHOOK_SECRET = environment["GITHUB_WEBHOOK_SECRET"]  # POST /github/webhook; empty: every delivery 401

# Content-Security-Policy (django-csp) for pages, admin and API docs: scripts only from
# our own origin (no inline scripts anywhere; a template that needs one adds
# nonce="{{ request.csp_nonce }}"), styles may be inline (style attributes), no framing.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'", _CSP_NONCE],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        # The GitHub sign-in form posts here and is redirected to GitHub's authorize page.
        "form-action": ["'self'", GITHUB_URL or "https://github.com"],
        "frame-ancestors": ["'none'"],
    }
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PARSER_CLASSES": [
        "api.parsers.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "api.filters.OrderingFilter",
    ],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "api.errors.exception_handler",
    # Counters live in Django's default cache (Redis when REDIS_URL is set), so the
    # limit holds across gunicorn workers and web replicas.
    "DEFAULT_THROTTLE_CLASSES": [
        "api.throttles.AnonThrottle",
        "api.throttles.UserThrottle",
        "api.throttles.ScopedThrottle",  # only views with a throttle_scope
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": environment["API_THROTTLE_ANON"],
        "user": environment["API_THROTTLE_USER"],
        # exceptions/parse/: anonymous, up to half a second of CPU per call.
        "parse": environment["API_THROTTLE_PARSE"],
    },
    # How many proxies of ours stand in front of gunicorn and append to
    # X-Forwarded-For. 0: count the connecting address, ignore the header (anyone can
    # write it). Behind one proxy (compose, a load balancer): 1.
    "NUM_PROXIES": environment["NUM_PROXIES"],
}
SPECTACULAR_SETTINGS = {
    "TITLE": "releasecal API",
    "DESCRIPTION": "The calendar and rulebook of a release cycle.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from drf-spectacular-sidecar (pinned, served as our static files), not a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Email: EMAIL_URL such as smtp://user:pass@host:587 or console:// (the default).
EMAIL_URL = environment["EMAIL_URL"]
if EMAIL_URL.startswith("console:"):
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
elif EMAIL_URL.startswith("locmem:"):
    EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
else:
    from urllib.parse import unquote, urlparse

    _email = urlparse(EMAIL_URL)
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_HOST = _email.hostname or "localhost"
    EMAIL_PORT = _email.port or 25
    EMAIL_HOST_USER = unquote(_email.username or "")
    EMAIL_HOST_PASSWORD = unquote(_email.password or "")
    EMAIL_USE_TLS = _email.scheme in {"smtp+tls", "submission"} or EMAIL_PORT == 587
    EMAIL_USE_SSL = _email.scheme == "smtps"
DEFAULT_FROM_EMAIL = environment["DEFAULT_FROM_EMAIL"]

SLACK_SIGNING_SECRET = environment["SLACK_SIGNING_SECRET"]
SLACK_BOT_TOKEN = environment["SLACK_BOT_TOKEN"]
SLACK_API_URL = environment["SLACK_API_URL"]
# Where new exception requests are posted with Approve / Reject buttons (a channel id).
SLACK_RELEASE_TEAM_CHANNEL = environment["SLACK_RELEASE_TEAM_CHANNEL"]

# Celery. Production: Redis (CELERY_BROKER_URL, else REDIS_URL). The embedded default
# needs nothing installed: kombu's file-system transport under var/celery/.
# (The host in "filesystem://localhost/" is ignored; without one kombu warns on every use.)
CELERY_BROKER_URL = environment["CELERY_BROKER_URL"] or REDIS_URL or "filesystem://localhost/"
if CELERY_BROKER_URL.startswith("filesystem://"):
    _celery_dir = VAR_DIR / "celery"
    for _sub in ("queue", "processed"):
        (_celery_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_celery_dir / "queue"),
        "data_folder_out": str(_celery_dir / "queue"),
        "processed_folder": str(_celery_dir / "processed"),
        "control_folder": str(_celery_dir / "control"),
        "store_processed": False,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        # Longer than any task may run (time limits below): a message unacknowledged this
        # long is redelivered. Nothing is scheduled with an ETA, so none outlives it.
        "visibility_timeout": environment["CELERY_VISIBILITY_TIMEOUT"],
        # Where kombu's Redis transport reads its socket timeouts (redis-py waits forever
        # by default): a frozen Redis (SIGSTOP, a half-open connection) accepts the TCP
        # connection and never answers, so without these a publish on commit hung a web
        # request for minutes. A publish now gives up after 1 s (the promised ~2 s). At
        # 0.5 s a busy Redis on a loaded host timed out live publishes (seen in CI: the
        # worker tests' tasks never arrived). The worker's BRPOP is read when its reply
        # is there, so this never cuts it short.
        "socket_timeout": 1.0,
        "socket_connect_timeout": 1.0,
    }
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The worker survives a broker loss: it reconnects for ever (None: no limit)
# instead of giving up after the default 100 tries; tasks running when the
# connection drops are left to finish (acks_late: an unacknowledged one is redelivered).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Publishing happens on commit in web requests: with the broker down, give up within a
# couple of seconds (the minute sweep queues whatever was not, from its ledger) instead
# of hanging. The connect timeout is for transports other than Redis (above for Redis).
# No publish retry: each try costs a socket timeout on a frozen broker, and every send
# is in a ledger that a sweep queues again (redis-py reconnects a pooled connection that
# a restarted Redis closed when it takes it from the pool, without a retry).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 0}
# The queue web, beat and workers share; give each deployment (or test run) its own
# when several share one Redis database.
CELERY_TASK_DEFAULT_QUEUE = environment["CELERY_QUEUE"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_TASK_TIME_LIMIT = 300
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fix-up closes every database connection before and after each task
# unless this is set (then it closes them only every so many tasks), so each task paid a
# new PostgreSQL connection (~5 ms, more than a delivery's three statements). The
# worker instead ends a task the way Django ends a request (config/celery.py:
# close_old_connections): CONN_MAX_AGE, the health check and a broken connection's
# close apply as they do to the web.
CELERY_DB_REUSE_MAX = 1000
CELERY_TIMEZONE = "UTC"
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Every OUTBOX_SWEEP_SECONDS (a minute), find due reminders and schedule notices and
# queue their sends. A sweep not started before the next one is due is dropped (expires).
# 1 to 120 s (config/env.py): well inside REMINDERS_STALL_MINUTES.
OUTBOX_SWEEP_SECONDS = environment["OUTBOX_SWEEP_SECONDS"]
_SWEEP_OPTIONS = {"expires": max(1.0, OUTBOX_SWEEP_SECONDS - 5)}
CELERY_BEAT_SCHEDULE = {
    "reminders-sweep": {"task": "reminders.sweep", "schedule": OUTBOX_SWEEP_SECONDS, "options": _SWEEP_OPTIONS},
    "notices-sweep": {"task": "notices.sweep", "schedule": OUTBOX_SWEEP_SECONDS, "options": _SWEEP_OPTIONS},
    "github-board-sweep": {"task": "github.board_sweep", "schedule": OUTBOX_SWEEP_SECONDS, "options": _SWEEP_OPTIONS},
    # The whole board read every few minutes: correct with no webhook (docs/github.md).
    "github-board-reconcile": {
        "task": "github.board_reconcile",
        "schedule": environment["GITHUB_RECONCILE_SECONDS"],
        "options": {"expires": max(1.0, environment["GITHUB_RECONCILE_SECONDS"] - 5)},
    },
    "slack-sweep": {"task": "slack.sweep", "schedule": OUTBOX_SWEEP_SECONDS, "options": _SWEEP_OPTIONS},
    "github-issue-comments-sweep": {
        "task": "github.issue_comments_sweep",
        "schedule": OUTBOX_SWEEP_SECONDS,
        "options": _SWEEP_OPTIONS,
    },
}

# The intake mailbox (docs/intake.md): an IMAP folder subscribed to the SIG Release list,
# polled by beat; off unless host, user and password are set.
INTAKE_IMAP_HOST = environment["INTAKE_IMAP_HOST"]
INTAKE_IMAP_TLS = environment["INTAKE_IMAP_TLS"]  # ssl, starttls, or none (loopback only)
INTAKE_IMAP_PORT = environment["INTAKE_IMAP_PORT"] or (143 if INTAKE_IMAP_TLS != "ssl" else 993)
INTAKE_IMAP_USER = environment["INTAKE_IMAP_USER"]
INTAKE_IMAP_PASSWORD = environment["INTAKE_IMAP_PASSWORD"]  # or an app password
INTAKE_IMAP_FOLDER = environment["INTAKE_IMAP_FOLDER"]
INTAKE_IMAP_ENTERED_BY = environment["INTAKE_IMAP_ENTERED_BY"]  # the mailbox owner's username
INTAKE_IMAP_BATCH = environment["INTAKE_IMAP_BATCH"]
INTAKE_IMAP_TIMEOUT = environment["INTAKE_IMAP_TIMEOUT"]
INTAKE_IMAP_POLL_SECONDS = environment["INTAKE_IMAP_POLL_SECONDS"]
if INTAKE_IMAP_HOST:
    CELERY_BEAT_SCHEDULE["intake-poll"] = {
        "task": "intake.poll_mailbox",
        "schedule": INTAKE_IMAP_POLL_SECONDS,
        "options": {"expires": max(1.0, INTAKE_IMAP_POLL_SECONDS - 5)},
    }

# The outbox (outbox/, docs/outbox.md): the claim, lease, backoff, give-up and rate-limit
# turn every ledger shares (reminders, schedule notices, GitHub writes).
OUTBOX_LEASE_SECONDS = environment["OUTBOX_LEASE_SECONDS"]
OUTBOX_SEND_TIME_LIMIT = max(2, int(OUTBOX_LEASE_SECONDS * 0.8))
OUTBOX_SEND_SOFT_TIME_LIMIT = max(1, int(OUTBOX_LEASE_SECONDS * 0.6))
OUTBOX_REQUEUE_SECONDS = environment["OUTBOX_REQUEUE_SECONDS"]
OUTBOX_MAX_ATTEMPTS = environment["OUTBOX_MAX_ATTEMPTS"]
OUTBOX_RETRY_BASE_SECONDS = environment["OUTBOX_RETRY_BASE_SECONDS"]
OUTBOX_RETRY_MAX_SECONDS = environment["OUTBOX_RETRY_MAX_SECONDS"]
OUTBOX_HTTP_TIMEOUT = environment["OUTBOX_HTTP_TIMEOUT"]
OUTBOX_HTTP_TRIES = environment["OUTBOX_HTTP_TRIES"]
OUTBOX_HTTP_BACKOFF_BASE = environment["OUTBOX_HTTP_BACKOFF_BASE"]
OUTBOX_HTTP_BACKOFF_MAX = environment["OUTBOX_HTTP_BACKOFF_MAX"]
# Slack allows about one message per second per channel: messages per second per Slack
# channel (or webhook, or DM), shared by every worker through the cache; 0 = no limit.
OUTBOX_SLACK_CHANNEL_RATE = environment["OUTBOX_SLACK_CHANNEL_RATE"]
# A send waiting for its channel's turn is queued again with a countdown to its reserved
# second, at most this long (well below the broker's visibility timeout); a longer wait
# goes back to the ledger (next_attempt_at) for a later sweep.
OUTBOX_SLACK_MAX_WAIT_SECONDS = environment["OUTBOX_SLACK_MAX_WAIT_SECONDS"]

# Reminders (see docs/reminders.md).
REMINDERS_GRACE_MINUTES = environment["REMINDERS_GRACE_MINUTES"]
# No completed sweep for this long: check_services and the admin say so, the team is alerted once.
REMINDERS_STALL_MINUTES = environment["REMINDERS_STALL_MINUTES"]
# Deliveries due in the same sweep for the same channel (or email address) go out as one
# digest when their rules allow it (ReminderRule.combine); off: one message per row.
REMINDERS_DIGESTS = environment["REMINDERS_DIGESTS"]
REMINDERS_RELEASE_TEAM_EMAIL = environment["REMINDERS_RELEASE_TEAM_EMAIL"]
# True under config.settings.production: setup_defaults then refuses an example address.
RELEASECAL_PRODUCTION = False
REMINDERS_RELEASE_TEAM_SLACK_CHANNEL = environment["REMINDERS_RELEASE_TEAM_SLACK_CHANNEL"]
EXCEPTION_NUDGE_AFTER_HOURS = environment["EXCEPTION_NUDGE_AFTER_HOURS"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "redact": {"()": "config.logging.RedactSecretsFilter"},
        "request_id": {"()": "config.request_id.RequestIdFilter"},
        "skip_static": {"()": "config.logging.SkipStaticRequestsFilter"},
    },
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "config.logging.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stdout",
            "formatter": environment["LOG_FORMAT"],
            "filters": ["redact", "request_id"],
        }
    },
    "root": {"handlers": ["console"], "level": environment["LOG_LEVEL"]},
    "loggers": {
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # runserver's request lines (make run), without one line per stylesheet or script.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False, "filters": ["skip_static"]},
    },
}
