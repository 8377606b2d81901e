"""Notification channels, one class each, in the style of healthchecks' transports.

Each class knows its recipients and how to send one rendered message to one of them.
They share :class:`HttpTransport`: bounded retry with exponential backoff and full
jitter for transient failures (5xx, timeouts, connection errors, 429 with
``Retry-After``), and an immediate :class:`TransportError` with ``permanent=True`` for
failures that retrying cannot fix (Slack 404, ``invalid_token``, ``channel_not_found``).
A permanent failure with ``disable_channel=True`` marks the channel failing.
"""

from __future__ import annotations

import logging
import random
import smtplib
import time
from typing import ClassVar

import requests
from django.conf import settings
from django.core.mail import EmailMessage

from reminders.messages import Message, render_email, render_slack

log = logging.getLogger(__name__)


class TransportError(Exception):
    def __init__(
        self, message: str, *, permanent: bool = False, disable_channel: bool = False, retry_after: float | None = None
    ):
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.disable_channel = disable_channel
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


def backoff_delay(attempt: int, *, base: float, cap: float, retry_after: float | None = None) -> float:
    """Exponential backoff with jitter, never less than the server's Retry-After.

    ``attempt`` counts from 0: with ``ceiling = min(cap, base * 2**attempt)`` the delay
    is drawn from [ceiling/2, ceiling] ("equal jitter": it still grows exponentially,
    and retries from many workers spread out instead of arriving together).
    """
    ceiling = min(cap, base * (2**attempt))
    delay = random.uniform(ceiling / 2, ceiling)  # noqa: S311 (jitter, not cryptography)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return delay


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "").strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


# Slack errors that a retry cannot fix and that mean the channel's configuration is
# wrong: the channel is marked failing so the admin shows it.
SLACK_DISABLING_ERRORS = frozenset(
    {
        "invalid_token",
        "token_revoked",
        "token_expired",
        "account_inactive",
        "not_authed",
        "channel_not_found",
        "is_archived",
        "channel_is_archived",
        "not_in_channel",
        "no_service",
        "no_team",
        "team_disabled",
        "missing_scope",
    }
)
# Errors about this one message (or one recipient): permanent, channel stays healthy.
SLACK_PERMANENT_ERRORS = frozenset(
    {
        "invalid_blocks",
        "invalid_payload",
        "msg_too_long",
        "no_text",
        "user_not_found",
        "cannot_dm_bot",
        "invalid_arguments",
    }
)


class HttpTransport:
    """POST JSON with bounded retry. One session per process (created after fork)."""

    _session: ClassVar[requests.Session | None] = None

    @classmethod
    def session(cls) -> requests.Session:
        if cls._session is None:
            cls._session = requests.Session()
        return cls._session

    def post(self, url: str, *, json: dict, headers: dict | None = None) -> requests.Response:
        tries = max(1, settings.REMINDERS_HTTP_TRIES)
        for attempt in range(tries):
            error = self._post_once(url, json=json, headers=headers)
            if not isinstance(error, TransportError):
                return error
            if error.permanent or attempt == tries - 1:
                raise error
            if error.retry_after is not None and error.retry_after > settings.REMINDERS_HTTP_BACKOFF_MAX:
                # A long Retry-After is honoured by the ledger (next_attempt_at), not by
                # holding a worker process asleep.
                raise error
            time.sleep(
                backoff_delay(
                    attempt,
                    base=settings.REMINDERS_HTTP_BACKOFF_BASE,
                    cap=settings.REMINDERS_HTTP_BACKOFF_MAX,
                    retry_after=error.retry_after,
                )
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _post_once(self, url: str, *, json: dict, headers: dict | None) -> requests.Response | TransportError:
        try:
            response = self.session().post(url, json=json, headers=headers, timeout=settings.REMINDERS_HTTP_TIMEOUT)
        except requests.Timeout:
            return TransportError(f"Timed out after {settings.REMINDERS_HTTP_TIMEOUT}s")
        except requests.ConnectionError as exc:
            return TransportError(f"Connection failed: {exc.__class__.__name__}")
        except requests.RequestException as exc:
            return TransportError(f"Request failed: {exc}", permanent=True)
        status = response.status_code
        if status == 429:
            return TransportError("Rate limited (429)", retry_after=_retry_after(response) or 1.0)
        if status >= 500:
            return TransportError(f"Server error {status}", retry_after=_retry_after(response))
        if status >= 400:
            body = response.text[:200].strip()
            disable = status in (401, 403, 404, 410) or body in SLACK_DISABLING_ERRORS
            return TransportError(f"HTTP {status}: {body or response.reason}", permanent=True, disable_channel=disable)
        return response


class ChannelSender:
    kind: ClassVar[str]

    def __init__(self, channel) -> None:
        self.channel = channel
        self.config = channel.config or {}

    def recipients(self, *, owners=(), requester_email: str = "") -> list[str]:
        """One ledger row per returned recipient; ``""`` means the channel itself."""
        return [""]

    def send(self, message: Message, recipient: str) -> None:
        raise NotImplementedError

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        return []


class EmailChannel(ChannelSender):
    kind = "email"

    def recipients(self, *, owners=(), requester_email: str = "") -> list[str]:
        return [f"email:{address.strip()}" for address in self.config.get("to", []) if address.strip()]

    def send(self, message: Message, recipient: str) -> None:
        send_email(message, recipient.removeprefix("email:"))

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        to = config.get("to")
        if not isinstance(to, list) or not to or not all(isinstance(a, str) and "@" in a for a in to):
            return ['Give "to": a list of email addresses.']
        return []


def send_email(message: Message, address: str) -> None:
    subject, body = render_email(message)
    try:
        EmailMessage(subject=subject, body=body, to=[address]).send()
    except smtplib.SMTPRecipientsRefused as exc:
        raise TransportError(f"Address refused: {address}", permanent=True) from exc
    except smtplib.SMTPAuthenticationError as exc:
        raise TransportError("SMTP authentication failed", permanent=True, disable_channel=True) from exc
    except (smtplib.SMTPException, OSError) as exc:
        raise TransportError(f"SMTP error: {exc.__class__.__name__}: {exc}") from exc


class SlackWebhookChannel(ChannelSender):
    kind = "slack_webhook"

    def send(self, message: Message, recipient: str) -> None:
        HttpTransport().post(self.config["url"], json=render_slack(message))

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        url = config.get("url", "")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            return ['Give "url": the webhook URL Slack issued.']
        return []


def slack_api_url(method: str) -> str:
    return settings.SLACK_API_URL.rstrip("/") + "/" + method


def slack_post_message(*, token: str, channel: str, message: Message) -> None:
    if not token:
        raise TransportError(
            "No Slack bot token (set SLACK_BOT_TOKEN or the channel's token)", permanent=True, disable_channel=True
        )
    payload = {"channel": channel, **render_slack(message), "unfurl_links": False}
    response = HttpTransport().post(
        slack_api_url("chat.postMessage"), json=payload, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        data = response.json()
    except ValueError as exc:
        raise TransportError(f"Slack answered {response.status_code} without JSON") from exc
    if data.get("ok"):
        return
    error = str(data.get("error", "unknown_error"))
    if error in SLACK_DISABLING_ERRORS:
        raise TransportError(f"Slack: {error}", permanent=True, disable_channel=True)
    if error in SLACK_PERMANENT_ERRORS:
        raise TransportError(f"Slack: {error}", permanent=True)
    raise TransportError(f"Slack: {error}")


class SlackBotChannel(ChannelSender):
    kind = "slack_bot"

    def send(self, message: Message, recipient: str) -> None:
        token = self.config.get("token") or settings.SLACK_BOT_TOKEN
        slack_post_message(token=token, channel=self.config["channel"], message=message)

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        if not isinstance(config.get("channel"), str) or not config.get("channel"):
            return ['Give "channel": the Slack channel id (C0123…) or name.']
        return []


class KepOwnersChannel(ChannelSender):
    """The owners of the KEP a deadline concerns: by email, or by Slack DM (bot)."""

    kind = "kep_owners"

    def recipients(self, *, owners=(), requester_email: str = "") -> list[str]:
        via_slack = self.config.get("via") == "slack"
        found = []
        for owner in owners:
            if via_slack and owner.slack_id:
                found.append(f"slack:{owner.slack_id}")
            elif owner.email:
                found.append(f"email:{owner.email.lower()}")
        if requester_email:
            found.append(f"email:{requester_email.lower()}")
        return list(dict.fromkeys(found))

    def send(self, message: Message, recipient: str) -> None:
        if recipient.startswith("slack:"):
            token = self.config.get("token") or settings.SLACK_BOT_TOKEN
            slack_post_message(token=token, channel=recipient.removeprefix("slack:"), message=message)
        else:
            send_email(message, recipient.removeprefix("email:"))

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        if config.get("via", "email") not in {"email", "slack"}:
            return ['"via" is "email" or "slack".']
        return []


SENDERS: dict[str, type[ChannelSender]] = {
    cls.kind: cls for cls in (EmailChannel, SlackWebhookChannel, SlackBotChannel, KepOwnersChannel)
}


def sender_for(channel) -> ChannelSender:
    return SENDERS[channel.kind](channel)


def channel_config_errors(kind: str, config) -> list[str]:
    if kind not in SENDERS:
        return [f"Unknown channel kind {kind!r}."]
    if not isinstance(config, dict):
        return ["The configuration is a JSON object."]
    return SENDERS[kind].config_errors(config)
