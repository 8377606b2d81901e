"""Production settings: the base settings, hardened. Everything still comes from the
environment (config/env.py); a missing, short, development or example SECRET_KEY and the
example database password are refused at start-up, one line naming each variable.

DJANGO_SETTINGS_MODULE=config.settings.production (the Docker image sets it).
"""

from __future__ import annotations

from config import env
from config.settings.base import *  # noqa: F403
from config.settings.base import environment

env.check_production(environment)

DEBUG = False

# TLS is terminated by the proxy in front of gunicorn, which sets X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = environment["SECURE_SSL_REDIRECT"]
# Container and load-balancer health probes speak plain HTTP to the container.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = environment["SECURE_HSTS_SECONDS"]
SECURE_HSTS_INCLUDE_SUBDOMAINS = environment["SECURE_HSTS_INCLUDE_SUBDOMAINS"]
SECURE_HSTS_PRELOAD = environment["SECURE_HSTS_PRELOAD"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SECURE = True
X_FRAME_OPTIONS = "DENY"

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
