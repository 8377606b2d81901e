"""The Slack app manifest of this deployment: create the app from it in one step.

Slack reads a manifest (``api.slack.com/apps`` -> Create New App -> From an app
manifest) and configures the slash command, interactivity, the Events API subscription,
the Home tab and the bot scopes from it. Every URL comes from ``settings.SITE_URL``, so
the manifest printed by ``manage.py slack_manifest`` is the one for this deployment.

Slack publishes no manifest schema package on PyPI or npm; the structure is asserted in
tests/slack_integration/test_slack_manifest.py against Slack's documented fields.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings

APP_NAME = "releasecal"
COMMAND = "/relcal"
BOT_EVENTS = ["app_home_opened"]
USAGE_HINT = "next | kep 1880 | release 1.31 | exceptions pending | request 1880 | link | tz Europe/Berlin | help"

# What each bot scope is for (the manifest lists only the names).
BOT_SCOPES = {
    "chat:write": "post requests, reminders and DMs; update request messages; ephemeral answers",
    "chat:write.public": "post reminders to public channels the bot has not been invited to",
    "commands": "the /relcal slash command",
    "users:read": "read a user's time zone (users.info) for the Home tab, and their name for the link page",
    "team:read": "read the workspace's name (team.info) for the link page",
    "im:write": "open a direct message with a requester (decisions) or a KEP owner (conversations.open)",
}

# The paths of slack_integration/urls.py under /slack/ (config/urls.py).
COMMANDS_PATH = "/slack/commands"
INTERACTIONS_PATH = "/slack/interactions"
EVENTS_PATH = "/slack/events"


class ManifestError(ValueError):
    """The site URL cannot be given to Slack (one sentence saying why)."""


def site_url(value: str | None = None) -> str:
    """The deployment's public base URL, checked: Slack calls only https URLs."""
    url = (settings.SITE_URL if value is None else value).strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ManifestError(
            f"Slack only calls https URLs, and the site URL is {url or 'empty'!r}: "
            "set SITE_URL to the public https address (or pass --site-url)."
        )
    if parts.query or parts.fragment:
        raise ManifestError(f"The site URL {url!r} must not carry a query or a fragment.")
    return url


def build_manifest(base_url: str | None = None) -> dict:
    """The manifest as a dict (JSON/YAML-ready), every URL under ``base_url`` (SITE_URL)."""
    base = site_url(base_url)
    return {
        "_metadata": {"major_version": 1, "minor_version": 1},
        "display_information": {
            "name": APP_NAME,
            "description": "Kubernetes release calendar: deadlines, exception requests, reminders",
            "long_description": (
                "releasecal answers /relcal questions about release deadlines (in your time zone), "
                "posts exception requests to the release team with Approve and Reject buttons, sends "
                "deadline reminders, and shows your KEPs, their deadlines and your requests in its Home tab. "
                f"Everything it shows comes from {base}."
            ),
            "background_color": "#326ce5",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": True,
                "messages_tab_enabled": False,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": APP_NAME, "always_online": True},
            "slash_commands": [
                {
                    "command": COMMAND,
                    "url": base + COMMANDS_PATH,
                    "description": "Release deadlines, KEPs and exception requests",
                    "usage_hint": USAGE_HINT,
                    "should_escape": False,
                }
            ],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": {"request_url": base + EVENTS_PATH, "bot_events": list(BOT_EVENTS)},
            "interactivity": {"is_enabled": True, "request_url": base + INTERACTIONS_PATH},
            "org_deploy_enabled": False,
            "socket_mode_enabled": False,
            "token_rotation_enabled": False,
        },
    }
