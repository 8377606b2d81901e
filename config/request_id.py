"""The request id: one token that follows a request from the proxy through gunicorn's
access line, Django's log lines and every Celery task the request queued (and the tasks
those queue), so one grep finds all of it.

Bound in a context variable by ``config.middleware.RequestIdMiddleware`` (web) and by the
Celery signal handlers in ``config/celery.py`` (a task runs under the id of the request
that queued it, carried in the message's ``request_id`` header; a task queued by beat
gets a new one). ``RequestIdFilter`` writes it on every log record.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

# What a proxy may send us: a plain token (ingress-nginx sends 32 hex digits). Anything
# else (too long, spaces, quotes) is replaced, so a client cannot write into log lines.
_ACCEPTED = re.compile(r"[A-Za-z0-9._:-]{8,128}")
_current: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
HEADER = "request_id"  # the Celery message header


def new() -> str:
    return uuid.uuid4().hex


def accepted(value: str | None) -> str | None:
    return value if value and _ACCEPTED.fullmatch(value) else None


def bind(value: str | None) -> contextvars.Token:
    """Make ``value`` (when acceptable, else a new id) the current id; returns the token
    for ``reset``."""
    return _current.set(accepted(value) or new())


def reset(token: contextvars.Token) -> None:
    _current.reset(token)


def clear() -> None:
    _current.set("")


def current() -> str:
    return _current.get()


class RequestIdFilter(logging.Filter):
    """Puts the current request id on every record (``record.request_id``, "" outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", ""):
            record.request_id = current()
        return True
