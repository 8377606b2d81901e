"""The one Slack client: every call to Slack (the buttons' posts and updates, the
ephemeral replies of the slash command and the buttons, reminder messages to channels,
DMs and incoming webhooks) goes through here.

In the style of healthchecks' transports: one HTTP transport with bounded retry
(exponential backoff with jitter for 5xx, timeouts, connection errors and 429 with
``Retry-After``), raising the outbox's :class:`~outbox.errors.TransportError`, which says
whether a failure is ``permanent`` (retrying cannot fix it), whether it should
``disable_channel`` (the token or the channel is wrong: a reminder channel is marked
failing so the admin shows it) and whether it was ``rate_limited`` (a 429).
Which Slack error is which is decided by one table, :data:`SLACK_ERRORS`.
"""

from __future__ import annotations

import logging
import time
from typing import ClassVar

import requests
from django.conf import settings

from outbox.errors import TransportError, backoff_delay, retry_after

log = logging.getLogger(__name__)


DISABLE_CHANNEL = "disable channel"  # the token or the channel is wrong: every message would fail
PERMANENT = "permanent"  # this message (or this recipient) is wrong: retrying cannot fix it

# Slack Web API errors that a retry cannot fix. Anything else (ratelimited,
# internal_error, fatal_error, service_unavailable, an error Slack adds later) is retried.
SLACK_ERRORS: dict[str, str] = {
    "invalid_auth": DISABLE_CHANNEL,
    "invalid_token": DISABLE_CHANNEL,
    "not_authed": DISABLE_CHANNEL,
    "token_revoked": DISABLE_CHANNEL,
    "token_expired": DISABLE_CHANNEL,
    "account_inactive": DISABLE_CHANNEL,
    "missing_scope": DISABLE_CHANNEL,
    "no_service": DISABLE_CHANNEL,
    "no_team": DISABLE_CHANNEL,
    "team_disabled": DISABLE_CHANNEL,
    "channel_not_found": DISABLE_CHANNEL,
    "is_archived": DISABLE_CHANNEL,
    "channel_is_archived": DISABLE_CHANNEL,
    "not_in_channel": DISABLE_CHANNEL,
    "invalid_blocks": PERMANENT,
    "invalid_payload": PERMANENT,
    "invalid_arguments": PERMANENT,
    "msg_too_long": PERMANENT,
    "no_text": PERMANENT,
    "user_not_found": PERMANENT,
    "user_not_in_channel": PERMANENT,
    "cannot_dm_bot": PERMANENT,
    "message_not_found": PERMANENT,
    "cant_update_message": PERMANENT,
    "edit_window_closed": PERMANENT,
}
# views.open answers a slash command whose trigger_id expires after 3 seconds.
VIEWS_OPEN_TIMEOUT = 2.0
# HTTP statuses that mean the URL (a webhook) or the credentials are gone for good.
DISABLING_STATUSES = frozenset({401, 403, 404, 410})


def slack_error(error: str) -> TransportError:
    """The TransportError for an ``{"ok": false, "error": error}`` answer."""
    kind = SLACK_ERRORS.get(error)
    return TransportError(f"Slack: {error}", permanent=kind is not None, disable_channel=kind == DISABLE_CHANNEL)


def _retry_after(response: requests.Response) -> float | None:
    return retry_after(response.headers, now=time.time())


class HttpTransport:
    """POST JSON with bounded retry. One session per process (created after fork).

    Tries, timeout and backoff come from the ``OUTBOX_HTTP_*`` settings (reminders
    were the first to send through it). ``wait_on_rate_limit=False``: a 429 is raised at
    once (``rate_limited``), for a caller that honours Retry-After in its own schedule
    (the reminder ledger) instead of holding a worker asleep."""

    _session: ClassVar[requests.Session | None] = None

    def __init__(self, *, wait_on_rate_limit: bool = True, tries: int | None = None, timeout: float | None = None):
        self.wait_on_rate_limit = wait_on_rate_limit
        self.tries = tries  # None: OUTBOX_HTTP_TRIES
        self.timeout = timeout  # None: OUTBOX_HTTP_TIMEOUT

    @classmethod
    def session(cls) -> requests.Session:
        if cls._session is None:
            cls._session = requests.Session()
        return cls._session

    def post(
        self, url: str, *, json: dict | None = None, data: dict | None = None, headers: dict | None = None
    ) -> requests.Response:
        """POST ``json`` (a JSON body) or ``data`` (form-encoded)."""
        tries = max(1, self.tries or settings.OUTBOX_HTTP_TRIES)
        for attempt in range(tries):
            error = self._post_once(url, json=json, data=data, headers=headers)
            if not isinstance(error, TransportError):
                return error
            if error.permanent or attempt == tries - 1 or (error.rate_limited and not self.wait_on_rate_limit):
                raise error
            if error.retry_after is not None and error.retry_after > settings.OUTBOX_HTTP_BACKOFF_MAX:
                # A long Retry-After is honoured by the caller's own schedule (the
                # reminder ledger, Celery's retry), not by holding a worker asleep.
                raise error
            time.sleep(
                backoff_delay(
                    attempt,
                    base=settings.OUTBOX_HTTP_BACKOFF_BASE,
                    cap=settings.OUTBOX_HTTP_BACKOFF_MAX,
                    retry_after=error.retry_after,
                )
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def _post_once(
        self, url: str, *, json: dict | None, data: dict | None, headers: dict | None
    ) -> requests.Response | TransportError:
        timeout = self.timeout or settings.OUTBOX_HTTP_TIMEOUT
        try:
            response = self.session().post(url, json=json, data=data, headers=headers, timeout=timeout)
        except requests.Timeout:
            return TransportError(f"Timed out after {timeout}s")
        except requests.ConnectionError as exc:
            return TransportError(f"Connection failed: {exc.__class__.__name__}")
        except requests.RequestException as exc:
            return TransportError(f"Request failed: {exc}", permanent=True)
        status = response.status_code
        if status == 429:
            return TransportError("Rate limited (429)", retry_after=_retry_after(response) or 1.0, rate_limited=True)
        if status >= 500:
            return TransportError(f"Server error {status}", retry_after=_retry_after(response))
        if status >= 400:
            # An incoming webhook answers errors as plain text ("channel_not_found").
            body = response.text[:200].strip()
            disable = status in DISABLING_STATUSES or SLACK_ERRORS.get(body) == DISABLE_CHANNEL
            return TransportError(f"HTTP {status}: {body or response.reason}", permanent=True, disable_channel=disable)
        return response


class SlackClient:
    """Slack's Web API with one bot token: ``call("chat.postMessage", channel=..., ...)``."""

    def __init__(self, token: str, *, api_url: str | None = None, wait_on_rate_limit: bool = True):
        if not token:
            raise TransportError(
                "No Slack bot token (set SLACK_BOT_TOKEN or the channel's token)", disable_channel=True
            )
        self.token = token
        self.api_url = (api_url or settings.SLACK_API_URL).rstrip("/") + "/"
        self.wait_on_rate_limit = wait_on_rate_limit

    def call(self, method: str, **payload) -> dict:
        """The answer's JSON when ``ok``; a TransportError (classified by SLACK_ERRORS) otherwise."""
        response = HttpTransport(wait_on_rate_limit=self.wait_on_rate_limit).post(
            self.api_url + method, json=payload, headers={"Authorization": f"Bearer {self.token}"}
        )
        return self._answer(method, response)

    def call_form(self, method: str, **params: str) -> dict:
        """Like :meth:`call`, form-encoded: Slack's read methods (``users.info``) take
        their arguments as form fields, not JSON."""
        response = HttpTransport(wait_on_rate_limit=self.wait_on_rate_limit).post(
            self.api_url + method, data=params, headers={"Authorization": f"Bearer {self.token}"}
        )
        return self._answer(method, response)

    def _answer(self, method: str, response: requests.Response) -> dict:
        try:
            data = response.json()
        except ValueError as exc:
            raise TransportError(f"Slack answered {response.status_code} without JSON") from exc
        if not isinstance(data, dict):
            raise TransportError(f"Slack answered {response.status_code} with JSON that is not an object")
        if data.get("ok"):
            return data
        error = slack_error(str(data.get("error", "unknown_error")))
        if error.permanent:
            log.error("Slack refused %s: %s", method, error)
        raise error

    def post_message(self, *, channel: str, text: str, blocks: list, **options) -> dict:
        return self.call("chat.postMessage", channel=channel, text=text, blocks=blocks, **options)

    def permalink(self, *, channel: str, ts: str) -> dict:
        """A message's link (``{"permalink": "https://…/archives/C…/p…"}``)."""
        return self.call_form("chat.getPermalink", channel=channel, message_ts=ts)

    def update_message(self, *, channel: str, ts: str, text: str, blocks: list) -> dict:
        return self.call("chat.update", channel=channel, ts=ts, text=text, blocks=blocks)

    def post_ephemeral(self, *, channel: str, user: str, text: str, blocks: list) -> dict:
        return self.call("chat.postEphemeral", channel=channel, user=user, text=text, blocks=blocks)

    def user_info(self, *, user: str) -> dict:
        """``users.info``'s ``user`` object (``tz`` is the user's IANA zone)."""
        data = self.call_form("users.info", user=user)
        return data["user"] if isinstance(data.get("user"), dict) else {}

    def team_info(self, *, team: str) -> dict:
        """``team.info``'s ``team`` object (``name``: the workspace's name; scope ``team:read``)."""
        data = self.call_form("team.info", team=team)
        return data["team"] if isinstance(data.get("team"), dict) else {}

    def publish_view(self, *, user_id: str, view: dict) -> dict:
        """``views.publish``: the user's Home tab."""
        return self.call("views.publish", user_id=user_id, view=view)

    def open_view(self, *, trigger_id: str, view: dict) -> dict:
        """``views.open``: a modal, answering an interaction. Its trigger_id lives 3 s and
        Slack gives up on the command's answer after 3 s, so one try, bounded by
        :data:`VIEWS_OPEN_TIMEOUT`: a retry could not arrive in time."""
        response = HttpTransport(tries=1, timeout=VIEWS_OPEN_TIMEOUT).post(
            self.api_url + "views.open",
            json={"trigger_id": trigger_id, "view": view},
            headers={"Authorization": f"Bearer {self.token}"},
        )
        return self._answer("views.open", response)

    def open_dm(self, *, user: str) -> str:
        """``conversations.open`` with one user: the id of the DM channel."""
        data = self.call("conversations.open", users=user)
        channel = data.get("channel")
        channel_id = channel.get("id") if isinstance(channel, dict) else None
        if not isinstance(channel_id, str) or not channel_id:
            raise TransportError("Slack: conversations.open answered without a channel id", permanent=True)
        return channel_id


def bot_client() -> SlackClient | None:
    """The client with the app's bot token, or None when Slack is not configured."""
    return SlackClient(settings.SLACK_BOT_TOKEN) if settings.SLACK_BOT_TOKEN else None


def post_webhook(url: str, payload: dict, *, wait_on_rate_limit: bool = True) -> None:
    """Post to an incoming webhook (its errors come back as HTTP statuses)."""
    HttpTransport(wait_on_rate_limit=wait_on_rate_limit).post(url, json=payload)
