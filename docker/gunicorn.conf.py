"""Gunicorn settings for the web containers, from the environment through the one
declaration (config/env.py), read here before Django starts.

The whole environment is checked now, in the master, the production refusals included:
a bad value stops gunicorn with one line naming it, before any worker boots (a worker
that failed on it would be started again and again).

Logs: with LOG_FORMAT=json, the access and error lines are JSON objects of the same shape
as Django's (config.logging.JsonFormatter; an access line also has method, path, status,
duration_ms, bytes, remote_addr, user_agent and the request id), secrets redacted.

Metrics: prometheus-client's multiprocess mode, so /metrics sums every worker: its files
go to PROMETHEUS_MULTIPROC_DIR (default RELEASECAL_VAR_DIR/prometheus: /tmp in the image,
an emptyDir on Kubernetes), emptied when gunicorn starts; a worker that exits is marked dead.
"""

import os
import shutil
import sys
from pathlib import Path

from gunicorn.glogging import Logger

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout, for config.env

from config import env  # noqa: E402 - after the path above

environment = env.load()
if environment["DJANGO_SETTINGS_MODULE"] == env.PRODUCTION_SETTINGS:
    env.check_production(environment)

# Before prometheus-client is imported anywhere (it picks its mode when imported): the
# workers, forked from this master, inherit the variable and the mode.
metrics_dir = Path(
    environment["PROMETHEUS_MULTIPROC_DIR"] or (environment["RELEASECAL_VAR_DIR"] or ROOT / "var") / "prometheus"
)
os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)

from prometheus_client import multiprocess  # noqa: E402 - after the variable above

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
if environment["LOG_FORMAT"] == "json":
    _console = {"formatter": "json", "filters": ["redact", "request_id"]}
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "redact": {"()": "config.logging.RedactSecretsFilter"},
            "request_id": {"()": "config.request_id.RequestIdFilter"},
        },
        "formatters": {"json": {"()": "config.logging.JsonFormatter"}},
        "handlers": {
            "access": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout", **_console},
            "error": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", **_console},
        },
        "root": {"level": environment["LOG_LEVEL"], "handlers": ["error"]},
        "loggers": {
            "gunicorn.error": {"level": "INFO", "handlers": ["error"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["access"], "propagate": False},
        },
    }


def on_starting(server):
    """Metrics of a previous run (a restarted container keeps its emptyDir) are dropped."""
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True, exist_ok=True)


def child_exit(server, worker):
    multiprocess.mark_process_dead(worker.pid)


class RedactingLogger(Logger):
    """Access lines must not carry personal feed tokens or API keys; in JSON, each part
    of the line is a field of its own."""

    def atoms(self, resp, req, environ, request_time):
        from config.logging import redact

        atoms = super().atoms(resp, req, environ, request_time)
        return {key: redact(value) if isinstance(value, str) else value for key, value in atoms.items()}

    def access(self, resp, req, environ, request_time):
        if environment["LOG_FORMAT"] != "json" or not self.access_log_enabled:
            return super().access(resp, req, environ, request_time)
        atoms = self.atoms(resp, req, environ, request_time)
        fields = {
            "request_id": atoms.get("{x-request-id}o", ""),
            "method": atoms.get("m"),
            "path": atoms.get("U", "") + (f"?{atoms['q']}" if atoms.get("q") else ""),
            "status": int(atoms["s"]) if str(atoms.get("s", "")).isdigit() else atoms.get("s"),
            "duration_ms": round(request_time.total_seconds() * 1000, 1),
            "bytes": atoms.get("B"),
            "remote_addr": atoms.get("h"),
            "user_agent": atoms.get("a", ""),
        }
        try:
            self.access_log.info(self.cfg.access_log_format, self.atoms_wrapper_class(atoms), extra=fields)
        except Exception:  # noqa: BLE001 - as gunicorn's own access(): an unloggable line is an error line
            import traceback

            self.error(traceback.format_exc())


logger_class = RedactingLogger
