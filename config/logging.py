"""Structured logging to stdout, with secrets redacted before anything is written.

``JsonFormatter`` writes one JSON object a line (production); ``RedactSecretsFilter``
removes personal feed tokens from paths, API tokens from headers and the SECRET_KEY
wherever they appear in a message, whatever the format.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re

_PATTERNS = [
    # Personal feed URLs: /calendar/u/<token>.ics
    (re.compile(r"(/calendar/u/)[^/\s\"'?]+"), r"\1[redacted]"),
    # Authorization: Token <key> / Bearer <key>
    (re.compile(r"((?:Token|Bearer)\s+)[A-Za-z0-9_\-.]{8,}", re.IGNORECASE), r"\1[redacted]"),
    # Slack tokens
    (re.compile(r"xox[abpr]-[A-Za-z0-9-]+"), "[redacted-slack-token]"),
]


def redact(text: str) -> str:
    from django.conf import settings

    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
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


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "ts": dt.datetime.fromtimestamp(record.created, tz=dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        status = getattr(record, "status_code", None)
        if status is not None:
            payload["status"] = status
        if record.exc_info:
            payload["exc"] = redact(self.formatException(record.exc_info))
        return json.dumps(payload, ensure_ascii=False)
