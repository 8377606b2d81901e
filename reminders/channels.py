"""Notification channels, one class each, in the style of healthchecks' transports.

Each class knows its recipients and how to send one rendered message to one of them.
Slack goes through the one Slack client (``slack_integration.client``: bounded retry),
email through ``outbox.smtp``; both raise the outbox's
:class:`~outbox.errors.TransportError`, saying whether a failure is permanent and whether
it disables the channel. A permanent failure with ``disable_channel=True`` marks the
channel failing.
"""

from __future__ import annotations

import hashlib
import logging
from typing import ClassVar

from django.conf import settings
from django.core.mail.message import forbid_multi_line_headers

from outbox.ratelimit import conversation_key
from outbox.smtp import send_email
from reminders.messages import DigestPart, Message, render_email_digest, render_slack_digest
from slack_integration.client import SlackClient, post_webhook
from slack_integration.models import SlackIdentity

log = logging.getLogger(__name__)


class ChannelSender:
    kind: ClassVar[str]

    def __init__(self, channel) -> None:
        self.channel = channel
        self.config = channel.config or {}

    def recipients(self, *, owners=(), requester_email: str = "") -> list[str]:
        """One ledger row per returned recipient; ``""`` means the channel itself."""
        return [""]

    def parts(self, messages: list[Message], recipient: str) -> list[DigestPart]:
        """The messages to send for a digest of ``messages`` (one, unless Slack's limits split it)."""
        return render_slack_digest(messages)

    def send_part(self, part: DigestPart, recipient: str) -> None:
        raise NotImplementedError

    def check(self, message: Message, recipient: str) -> None:
        """Render ``message`` alone as it would be sent to ``recipient`` and raise when it
        cannot go (an email subject with CR/LF: Django's ``BadHeaderError``), so that a
        digest drops that row instead of failing with it."""
        for part in self.parts([message], recipient):
            if isinstance(part.payload, tuple):  # email: (subject, body)
                forbid_multi_line_headers("Subject", part.payload[0], settings.DEFAULT_CHARSET)

    def send(self, message: Message, recipient: str) -> None:
        for part in self.parts([message], recipient):
            self.send_part(part, recipient)

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        return []


class EmailChannel(ChannelSender):
    kind = "email"

    def recipients(self, *, owners=(), requester_email: str = "") -> list[str]:
        return [f"email:{address.strip()}" for address in self.config.get("to", []) if address.strip()]

    def parts(self, messages: list[Message], recipient: str) -> list[DigestPart]:
        return [render_email_digest(messages)]

    def send_part(self, part: DigestPart, recipient: str) -> None:
        send_email_text(*part.payload, recipient.removeprefix("email:"))

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        to = config.get("to")
        if not isinstance(to, list) or not to or not all(isinstance(a, str) and "@" in a for a in to):
            return ['Give "to": a list of email addresses.']
        return []


def send_email_text(subject: str, body: str, address: str) -> None:
    send_email(subject=subject, body=body, address=address)


class SlackWebhookChannel(ChannelSender):
    kind = "slack_webhook"

    def send_part(self, part: DigestPart, recipient: str) -> None:
        # A 429 is the ledger's to honour (Retry-After becomes the rows' next attempt).
        post_webhook(self.config["url"], part.payload, wait_on_rate_limit=False)

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        url = config.get("url", "")
        if not isinstance(url, str) or not url.startswith(("https://", "http://")):
            return ['Give "url": the webhook URL Slack issued.']
        return []


def slack_post_payload(*, token: str, channel: str, payload: dict) -> None:
    # A 429 is the ledger's to honour (Retry-After becomes the rows' next attempt).
    SlackClient(token, wait_on_rate_limit=False).post_message(channel=channel, **payload, unfurl_links=False)


class SlackBotChannel(ChannelSender):
    kind = "slack_bot"

    def send_part(self, part: DigestPart, recipient: str) -> None:
        token = self.config.get("token") or settings.SLACK_BOT_TOKEN
        slack_post_payload(token=token, channel=self.config["channel"], payload=part.payload)

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

    def parts(self, messages: list[Message], recipient: str) -> list[DigestPart]:
        if recipient.startswith("slack:"):
            return render_slack_digest(messages)
        return [render_email_digest(messages)]

    def send_part(self, part: DigestPart, recipient: str) -> None:
        if recipient.startswith("slack:"):
            token = self.config.get("token") or settings.SLACK_BOT_TOKEN
            slack_post_payload(token=token, channel=recipient.removeprefix("slack:"), payload=part.payload)
        else:
            send_email_text(*part.payload, recipient.removeprefix("email:"))

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        if config.get("via", "email") not in {"email", "slack"}:
            return ['"via" is "email" or "slack".']
        return []


class LiaisonChannel(KepOwnersChannel):
    """A request's liaison, by Slack DM when their Slack is linked, else by email: the
    recipient is chosen when the row is written (``liaison_recipient``)."""

    kind = "liaison"

    def recipients(self, *, owners=(), requester_email: str = "") -> list[str]:
        return []  # no rule addresses it: the end of a grant writes its one row

    @staticmethod
    def config_errors(config: dict) -> list[str]:
        return []


def liaison_recipient(user) -> str:
    """ "slack:<user id>" when ``user``'s Slack is linked, else "email:<address>" ("" when neither)."""
    identity = SlackIdentity.objects.filter(user=user).first() if user is not None else None
    if identity is not None and identity.slack_user_id:
        return f"slack:{identity.slack_user_id}"
    return f"email:{user.email.lower()}" if user is not None and user.email else ""


SENDERS: dict[str, type[ChannelSender]] = {
    cls.kind: cls for cls in (EmailChannel, SlackWebhookChannel, SlackBotChannel, KepOwnersChannel, LiaisonChannel)
}


def target_key(channel, recipient: str) -> str | None:
    """The Slack target a delivery posts to (its key in ``outbox.ratelimit``), or None
    when it is not a Slack post."""
    config = channel.config or {}
    if channel.kind == "slack_bot":
        return conversation_key(config.get("channel", ""))
    if channel.kind in ("kep_owners", "liaison") and recipient.startswith("slack:"):
        return conversation_key(recipient.removeprefix("slack:"))
    if channel.kind == "slack_webhook":
        return "hook:" + hashlib.sha256(str(config.get("url", "")).encode()).hexdigest()[:24]
    return None


def sender_for(channel) -> ChannelSender:
    return SENDERS[channel.kind](channel)


def channel_config_errors(kind: str, config) -> list[str]:
    if kind not in SENDERS:
        return [f"Unknown channel kind {kind!r}."]
    if not isinstance(config, dict):
        return ["The configuration is a JSON object."]
    return SENDERS[kind].config_errors(config)
