"""Gunicorn settings for the web containers (all overridable by environment)."""

import os

from gunicorn.glogging import Logger

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("WEB_CONCURRENCY", "3"))
threads = int(os.environ.get("GUNICORN_THREADS", "2"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
# On SIGTERM, workers get this long to finish in-flight requests.
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "25"))
keepalive = 5
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "2000"))
max_requests_jitter = 200
# A RAM-backed heartbeat file, as gunicorn recommends in containers.
worker_tmp_dir = os.environ.get("GUNICORN_WORKER_TMP_DIR", "/dev/shm" if os.path.isdir("/dev/shm") else None)  # noqa: S108
# Trust X-Forwarded-* only from the proxy network.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# gunicornc's control socket: gunicorn's default is under $HOME, which in the image is the
# code the app user cannot write; the image sets GUNICORN_CONTROL_SOCKET=/tmp/gunicorn.ctl.
if os.environ.get("GUNICORN_CONTROL_SOCKET"):
    control_socket = os.environ["GUNICORN_CONTROL_SOCKET"]
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
