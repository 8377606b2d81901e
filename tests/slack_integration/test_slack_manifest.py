"""The Slack app manifest: its structure (Slack publishes no schema package on PyPI or
npm to validate against), its URLs from SITE_URL, and manage.py slack_manifest."""

from __future__ import annotations

import json
from io import StringIO
from urllib.parse import urlsplit

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.urls import resolve

from slack_integration.manifest import ManifestError, build_manifest

SITE = "https://releasecal.example.org"

# Slack's documented manifest keys (docs.slack.dev reference/app-manifest), per section.
TOP_KEYS = {"_metadata", "display_information", "features", "oauth_config", "settings"}
DISPLAY_KEYS = {"name", "description", "long_description", "background_color"}
FEATURE_KEYS = {"app_home", "bot_user", "slash_commands"}
SETTINGS_KEYS = {
    "event_subscriptions",
    "interactivity",
    "org_deploy_enabled",
    "socket_mode_enabled",
    "token_rotation_enabled",
}


def test_the_manifest_has_slacks_structure_and_limits():
    manifest = build_manifest(SITE)
    assert set(manifest) == TOP_KEYS
    assert manifest["_metadata"] == {"major_version": 1, "minor_version": 1}
    display = manifest["display_information"]
    assert set(display) == DISPLAY_KEYS
    assert 1 <= len(display["name"]) <= 35
    assert len(display["description"]) <= 140
    assert 175 <= len(display["long_description"]) <= 4000
    assert display["background_color"].startswith("#")
    assert len(display["background_color"]) == 7
    features = manifest["features"]
    assert set(features) == FEATURE_KEYS
    assert features["app_home"]["home_tab_enabled"] is True
    assert 1 <= len(features["bot_user"]["display_name"]) <= 80
    (command,) = features["slash_commands"]
    assert command["command"] == "/relcal"
    assert len(command["description"]) <= 2000
    assert len(command["usage_hint"]) <= 1000
    assert command["should_escape"] is False
    assert "request 1880" in command["usage_hint"]  # the filing modal (views.open needs no extra scope)
    assert "link" in command["usage_hint"]
    assert set(manifest["settings"]) == SETTINGS_KEYS
    assert manifest["settings"]["socket_mode_enabled"] is False  # Slack calls our URLs


def test_scopes_and_events_are_the_ones_the_code_uses():
    manifest = build_manifest(SITE)
    assert manifest["oauth_config"] == {
        "scopes": {"bot": ["chat:write", "chat:write.public", "commands", "users:read", "team:read", "im:write"]}
    }
    assert manifest["settings"]["event_subscriptions"]["bot_events"] == ["app_home_opened"]
    assert manifest["settings"]["interactivity"]["is_enabled"] is True


def test_every_url_is_under_the_site_url_and_served_here():
    manifest = build_manifest(SITE)
    urls = {
        "commands": manifest["features"]["slash_commands"][0]["url"],
        "interactions": manifest["settings"]["interactivity"]["request_url"],
        "events": manifest["settings"]["event_subscriptions"]["request_url"],
    }
    assert urls == {
        "commands": "https://releasecal.example.org/slack/commands",
        "interactions": "https://releasecal.example.org/slack/interactions",
        "events": "https://releasecal.example.org/slack/events",
    }
    for name, url in urls.items():
        assert resolve(urlsplit(url).path).url_name == f"slack-{name}"


def test_the_url_comes_from_settings(settings):
    settings.SITE_URL = "https://cal.k8s.example/"
    assert build_manifest()["settings"]["interactivity"]["request_url"] == "https://cal.k8s.example/slack/interactions"


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "", "releasecal.example.org", "https://x.example/?a=1"])
def test_a_site_url_slack_cannot_call_is_refused_with_a_sentence(url):
    with pytest.raises(ManifestError) as caught:
        build_manifest(url)
    assert "\n" not in str(caught.value)


def test_the_command_prints_json_and_yaml_of_the_same_manifest(settings):
    settings.SITE_URL = SITE
    out = StringIO()
    call_command("slack_manifest", stdout=out)
    as_json = json.loads(out.getvalue())
    out = StringIO()
    call_command("slack_manifest", "--json", stdout=out)
    assert json.loads(out.getvalue()) == as_json
    out = StringIO()
    call_command("slack_manifest", "--yaml", stdout=out)
    assert yaml.safe_load(out.getvalue()) == as_json == build_manifest(SITE)
    out = StringIO()
    call_command("slack_manifest", "--yaml", "--site-url", "https://other.example", stdout=out)
    assert "https://other.example/slack/events" in out.getvalue()


def test_the_command_refuses_an_http_site_url_in_one_line(settings):
    settings.SITE_URL = "http://127.0.0.1:8000"
    with pytest.raises(CommandError, match="Slack only calls https URLs"):
        call_command("slack_manifest")
