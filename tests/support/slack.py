"""Helpers for Slack tests: sign requests like Slack does. The fake Slack Web API is
tests.support.fake_slack.FakeSlack."""

from __future__ import annotations

import time
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = "test-signing-secret-0123456789abcdef"


def signed_headers(body: bytes, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    timestamp = int(time.time()) if timestamp is None else timestamp
    signature = SignatureVerifier(secret).generate_signature(timestamp=str(timestamp), body=body)
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(timestamp), "HTTP_X_SLACK_SIGNATURE": signature}


def post_signed(client, path: str, fields: dict[str, str], **kwargs):
    body = urlencode(fields).encode()
    return client.post(
        path, data=body, content_type="application/x-www-form-urlencoded", **signed_headers(body, **kwargs)
    )
