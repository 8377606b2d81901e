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
RELEASECAL_PRODUCTION = True

# TLS is terminated by the proxy in front of gunicorn, which sets X-Forwarded-Proto.
# gunicorn alone decides whether a request came over HTTPS: it believes the header only
# from FORWARDED_ALLOW_IPS (none by default) and sets wsgi.url_scheme, which Django reads.
# No SECURE_PROXY_SSL_HEADER: Django would believe the header from any peer, so a client
# reaching gunicorn directly could pass for HTTPS (secure cookies sent, no redirect).
SECURE_PROXY_SSL_HEADER = None
SECURE_SSL_REDIRECT = environment["SECURE_SSL_REDIRECT"]
# Kubelet probes, container health checks and Prometheus speak plain HTTP to the pod
# (config.middleware.ProbeMiddleware answers them before this redirect anyway).
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
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
