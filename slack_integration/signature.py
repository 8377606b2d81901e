"""Slack's v0 request signature: HMAC-SHA256 of ``v0:<timestamp>:<body>`` with the
signing secret, compared in constant time, within a 5-minute window.

Everything that cannot be verified (a missing or malformed header, a stale or future
timestamp, a body that is not UTF-8, no signing secret configured) is a
``SignatureError``, which the views turn into one generic 401 (the same body for every
reason; the reason is logged) — never a 500. slack_sdk's own
verifier raises on a non-UTF-8 body and on a malformed timestamp, so it is not used
on the request path (the tests check both agree on Slack's published vector).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Callable
from urllib.parse import parse_qs

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

logger = logging.getLogger(__name__)

MAX_AGE_SECONDS = 300
# Slack's ids (users U…/W…, teams T…, channels C…/G…/D…, enterprises E…) and message
# timestamps (``1721780000.000100``); anything else never came from Slack and would not
# fit our columns (32 characters).
_SLACK_ID = re.compile(r"\A[A-Z0-9]{1,32}\Z")
_SLACK_TS = re.compile(r"\A[0-9]{1,16}\.[0-9]{1,15}\Z")
_TIMESTAMP = re.compile(r"\A[0-9]{1,12}\Z")
_SIGNATURE = re.compile(r"\Av0=[0-9a-f]{64}\Z")


class SignatureError(Exception):
    pass


def _now() -> float:
    return time.time()


def compute_signature(*, signing_secret: str, timestamp: str, body: bytes) -> str:
    base = b"v0:" + timestamp.encode("ascii") + b":" + body
    return "v0=" + hmac.new(signing_secret.encode("utf-8"), base, hashlib.sha256).hexdigest()


def verify_signature(
    *,
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    signing_secret: str,
    now: float | None = None,
) -> None:
    """Return quietly when the request is Slack's; raise SignatureError otherwise."""
    if not signing_secret:
        raise SignatureError("SLACK_SIGNING_SECRET is not configured")
    if not timestamp or not signature:
        raise SignatureError("missing X-Slack-Request-Timestamp or X-Slack-Signature")
    if not _TIMESTAMP.match(timestamp):
        raise SignatureError("malformed timestamp")
    now = _now() if now is None else now
    if abs(now - int(timestamp)) > MAX_AGE_SECONDS:
        raise SignatureError("timestamp outside the 5-minute window")
    if not _SIGNATURE.match(signature):
        raise SignatureError("malformed signature")
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        raise SignatureError("body is not UTF-8") from None
    expected = compute_signature(signing_secret=signing_secret, timestamp=timestamp, body=body)
    if not hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii")):
        raise SignatureError("signature mismatch")


def slack_id(value: object) -> str:
    """``value`` when it has the shape of a Slack id, else "" (treated as absent)."""
    return value if isinstance(value, str) and _SLACK_ID.match(value) else ""


def slack_ts(value: object) -> str:
    """``value`` when it has the shape of a Slack message timestamp, else ""."""
    return value if isinstance(value, str) and _SLACK_TS.match(value) else ""


def _bad_request(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"message": message, "extra": {}}, status=status)


UNAUTHORIZED_MESSAGE = "Slack request signature could not be verified."


def _unauthorized() -> JsonResponse:
    """The one answer to every request we cannot verify: the same bytes whatever the
    reason (missing header, stale timestamp, bad signature, unknown version, no secret
    configured), so the answer tells a caller nothing; the reason is only logged."""
    return JsonResponse({"message": UNAUTHORIZED_MESSAGE, "extra": {}}, status=401)


def _verified_body(request: HttpRequest) -> bytes | JsonResponse:
    """The body of a POST that Slack signed, or the 405/413/401 answer."""
    if request.method != "POST":
        return JsonResponse({"message": "Use POST.", "extra": {}}, status=405, headers={"Allow": "POST"})
    try:
        body = request.body
    except RequestDataTooBig:
        return _bad_request("The request body is too large.", status=413)
    try:
        verify_signature(
            body=body,
            timestamp=request.headers.get("X-Slack-Request-Timestamp"),
            signature=request.headers.get("X-Slack-Signature"),
            signing_secret=settings.SLACK_SIGNING_SECRET,
        )
    except SignatureError as exc:
        logger.warning("Refused a Slack request to %s: %s", request.path, exc)
        return _unauthorized()
    return body


def slack_signed(view: Callable[[HttpRequest, dict[str, str]], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """A POST-only, CSRF-exempt view that runs only for a verified Slack request.

    The view gets the form fields (first value of each) decoded from the verified body.
    """

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request: HttpRequest) -> HttpResponse:
        body = _verified_body(request)
        if isinstance(body, HttpResponse):
            return body
        form = {key: values[0] for key, values in parse_qs(body.decode("utf-8"), keep_blank_values=True).items()}
        # No text we store or look up may hold a NUL (PostgreSQL refuses it in text).
        if any("\x00" in key or "\x00" in value for key, value in form.items()):
            return _bad_request("The request contains a NUL character.")
        return view(request, form)

    return wrapper


def slack_signed_json(view: Callable[[HttpRequest, dict], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Like :func:`slack_signed` for a JSON body (the Events API): the view gets the
    verified body's JSON object; anything else is a 400."""

    @csrf_exempt
    @functools.wraps(view)
    def wrapper(request: HttpRequest) -> HttpResponse:
        body = _verified_body(request)
        if isinstance(body, HttpResponse):
            return body
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: nesting deeper than Python's stack
            return _bad_request("The request body is not JSON.")
        if not isinstance(payload, dict):
            return _bad_request("The request body is not a JSON object.")
        return view(request, payload)

    return wrapper
