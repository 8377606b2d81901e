"""Helpers for Slack tests: sign requests like Slack does. The fake Slack Web API is
tests.support.fake_slack.FakeSlack."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

from tests.support.processes import free_port

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


@contextlib.contextmanager
def broker_at(url: str) -> Iterator[str]:
    """The Celery app of the code under test publishes to the broker at ``url`` (a
    redis-server of the test's own); the pooled connections are dropped before and after."""
    from config.celery import app

    saved = app.conf.broker_url

    def reconnect() -> None:
        # Drop the pooled connections and the producer pool (kept on app.amqp, a cached
        # property, even when app.pool was never made) so the next publish connects anew.
        app.close()
        with contextlib.suppress(AttributeError):
            del app.amqp

    reconnect()
    app.conf.broker_url = url
    try:
        yield url
    finally:
        app.conf.broker_url = saved
        reconnect()


@contextlib.contextmanager
def redis_unreachable(settings) -> Iterator[str]:
    """Redis down for the code under test: the Celery app's broker and Django's cache
    point at a closed port on 127.0.0.1 (refused at once, as when Redis has stopped).
    ``settings`` is pytest-django's fixture, which restores CACHES afterwards."""
    url = f"redis://127.0.0.1:{free_port()}/0"
    with broker_at(url):
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": url}}
        yield url
