"""Errors: one DRF exception handler turns ``DomainError`` and DRF's own errors into
``{"message": ..., "extra": {...}}`` with the error's 4xx status."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import exception_handler as drf_exception_handler

from releasecal.errors import DomainError


class ErrorSerializer(serializers.Serializer):
    message = serializers.CharField()
    extra = serializers.DictField(child=serializers.JSONField())


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    descriptions = {
        400: "Bad input or a policy rule: the message says which.",
        401: "Missing or invalid token (Authorization: Token <key>).",
        403: "Not allowed (deciding needs the release-team permission; nobody decides their own request).",
        404: "No such object.",
        409: "The request changed state already (e.g. a second approval).",
        413: "Too long to read here: the message gives the limit.",
        422: "Readable, but not what this endpoint takes (e.g. not an exception request): the message says what.",
        429: "Throttled.",
    }
    # Every endpoint can be throttled.
    return {code: OpenApiResponse(ErrorSerializer, description=descriptions[code]) for code in (*codes, 429)}


def _first_message(detail: Any) -> str:
    """A sentence from DRF's nested error detail: the first field error, named."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            inner = _first_message(value)
            if key in {"non_field_errors", api_settings.NON_FIELD_ERRORS_KEY}:
                return inner
            return f"{key}: {inner}"
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    return str(detail)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DomainError):
        return Response({"message": exc.message, "extra": exc.extra}, status=exc.status_code)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied(str(exc) or None)
    response = drf_exception_handler(exc, context)  # keeps WWW-Authenticate, Retry-After
    if response is None:
        return None  # a real bug: let Django answer 500 and log it
    detail = exc.detail if isinstance(exc, drf_exceptions.APIException) else response.data
    if isinstance(exc, drf_exceptions.ValidationError):
        message, extra = _first_message(detail), {"fields": detail}
    else:
        message = str(detail.get("detail", detail)) if isinstance(detail, dict) else str(detail)
        extra = {"code": getattr(exc, "default_code", "error")}
        if isinstance(exc, drf_exceptions.Throttled) and exc.wait is not None:
            extra["retry_after_seconds"] = int(exc.wait)
    response.data = {"message": message, "extra": extra}
    return response
