"""Gunicorn settings for the web containers, from the environment through the one
declaration (config/env.py), read here before Django starts.

The whole environment is checked now, in the master, the production refusals included:
a bad value stops gunicorn with one line naming it, before any worker boots (a worker
that failed on it would be started again and again).
"""

import sys
from pathlib import Path

from gunicorn.glogging import Logger

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the checkout, for config.env

from config import env

environment = env.load()
if environment["DJANGO_SETTINGS_MODULE"] == env.PRODUCTION_SETTINGS:
    env.check_production(environment)

bind = environment["GUNICORN_BIND"]
workers = environment["WEB_CONCURRENCY"]
threads = environment["GUNICORN_THREADS"]
timeout = environment["GUNICORN_TIMEOUT"]
# On SIGTERM, workers get this long to finish in-flight requests.
graceful_timeout = environment["GUNICORN_GRACEFUL_TIMEOUT"]
keepalive = 5
max_requests = environment["GUNICORN_MAX_REQUESTS"]
max_requests_jitter = 200
# A RAM-backed heartbeat file, as gunicorn recommends in containers.
if environment["GUNICORN_WORKER_TMP_DIR"]:
    worker_tmp_dir = str(environment["GUNICORN_WORKER_TMP_DIR"])
elif Path("/dev/shm").is_dir():  # noqa: S108
    worker_tmp_dir = "/dev/shm"  # noqa: S108
# Trust X-Forwarded-* only from the proxy's addresses; none by default (no proxy).
forwarded_allow_ips = environment["FORWARDED_ALLOW_IPS"]
# gunicornc's control socket: gunicorn's default is under $HOME, which in the image is the
# code the app user cannot write; the image sets GUNICORN_CONTROL_SOCKET=/tmp/gunicorn.ctl.
if environment["GUNICORN_CONTROL_SOCKET"]:
    control_socket = str(environment["GUNICORN_CONTROL_SOCKET"])
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)sms'


class RedactingLogger(Logger):
    """Access lines must not carry personal feed tokens or API keys."""

    def atoms(self, resp, req, environ, request_time):
        from config.logging import redact

        atoms = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()}


logger_class = RedactingLogger
