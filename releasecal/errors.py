"""Domain errors: raised by services and selectors, mapped to HTTP/CLI by the edges.

Each carries a human message and a JSON-safe ``extra`` dict. The DRF exception handler
turns them into ``{"message": ..., "extra": {...}}`` with ``status_code``; admin and
management commands show ``message``.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, extra: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.extra = extra or {}

    def __str__(self) -> str:
        return self.message


class ValidationFailed(DomainError):
    status_code = 400
    code = "invalid"


class PolicyViolation(DomainError):
    """The request is well formed but the release's rules forbid it."""

    status_code = 400
    code = "policy"


class NotAllowed(DomainError):
    status_code = 403
    code = "forbidden"


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    """The object changed state under us (a second approval, a stale amendment)."""

    status_code = 409
    code = "conflict"
