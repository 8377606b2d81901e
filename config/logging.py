"""Structured logging to stdout, with secrets redacted before anything is written.

``JsonFormatter`` writes one JSON object a line (production): ``ts``, ``level``,
``logger``, ``message``, then whichever of ``FIELDS`` the record carries (the request id
on every line written during a request or a task; gunicorn's access lines add the
method, path, status, duration, size, client and user agent), then ``exc``. Django, the
Celery worker and beat, and gunicorn's access and error logs (docker/gunicorn.conf.py)
all write through it. ``RedactSecretsFilter`` removes personal feed tokens and Slack link tokens from paths
(also percent-encoded, as in a ``?next=``), API tokens from headers and the SECRET_KEY
wherever they appear in a message or a field, whatever the format.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from urllib.parse import unquote

_PATTERNS = [
    # Personal feed URLs: /calendar/u/<token>.ics
    (re.compile(r"(/calendar/u/)[^/\s\"'?]+", re.IGNORECASE), r"\1[redacted]"),
    # Slack link URLs: /slack/link/<signed token> (not the old /slack/link/login)
    (re.compile(r"(/slack/+link/+)(?!login(?![^/\s\"'?&]))[^/\s\"'?&]+", re.IGNORECASE), r"\1[redacted]"),
    # Authorization: Token <key> / Bearer <key>
    (re.compile(r"((?:Token|Bearer)\s+)[A-Za-z0-9_\-.]{8,}", re.IGNORECASE), r"\1[redacted]"),
    # Slack tokens
    (re.compile(r"xox[abpr]-[A-Za-z0-9-]+"), "[redacted-slack-token]"),
]


# A word that, percent-decoded (up to three times: %2575 is %75 is "u"), is a personal
# feed path. Access logs write the request line as sent, and django.request writes the
# path decoded once, so /calendar/%75/<token>.ics reaches a log either way.
_WORD = re.compile(r"[^\s\"']+")
_FEED_PATH = re.compile(r"/calendar/+u/+|/slack/+link/+(?!login(?![^/\s\"'?&]))", re.IGNORECASE)


def _redact_encoded_feed_path(match: re.Match) -> str:
    word = match.group(0)
    if "%" not in word and "calendar" not in word.lower() and "slack" not in word.lower():
        return word
    decoded = word
    for _ in range(3):
        if "%" not in decoded:
            break
        decoded = unquote(decoded)
    found = _FEED_PATH.search(decoded)
    if found is None:
        return word
    return decoded[: found.end()] + "[redacted]"


def redact(text: str) -> str:
    from django.conf import settings

    text = _WORD.sub(_redact_encoded_feed_path, text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    if not settings.configured:  # gunicorn's master, before Django: no secrets read yet
        return text
    for secret in (getattr(settings, "SECRET_KEY", ""), getattr(settings, "SLACK_SIGNING_SECRET", "")):
        if secret and len(secret) >= 8:
            text = text.replace(secret, "[redacted]")
    return text


class RedactSecretsFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string must not hide the record
            message = str(record.msg)
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        # django.request attaches the request; its repr carries the path.
        if hasattr(record, "request"):
            record.request = None
        return True


# Written when a record carries them (``extra=``), in this order, after the message.
FIELDS = ("request_id", "method", "path", "status", "duration_ms", "bytes", "remote_addr", "user_agent")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        status = getattr(record, "status_code", None)  # django.request's
        if status is not None:
            payload["status"] = status
        for name in FIELDS:
            value = getattr(record, name, None)
            if value not in (None, ""):
                payload[name] = value
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, ensure_ascii=False)


class SkipStaticRequestsFilter(logging.Filter):
    """Drops the development server's lines for static files (``django.server`` logs
    each request as ``"GET /static/admin/css/base.css HTTP/1.1" 200 ...``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from django.conf import settings

        if not record.args or not isinstance(record.args, tuple) or not isinstance(record.args[0], str):
            return True
        parts = record.args[0].split()
        prefix = "/" + settings.STATIC_URL.lstrip("/")
        return not (len(parts) >= 2 and parts[1].startswith(prefix))
