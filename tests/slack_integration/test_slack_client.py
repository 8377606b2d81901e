"""The one Slack client: one table decides which failures are permanent and which
disable a channel, for the buttons' posts, the ephemeral replies and reminders alike."""

from __future__ import annotations

import pytest

from outbox.errors import TransportError
from slack_integration import services
from slack_integration.client import (
    DISABLE_CHANNEL,
    PERMANENT,
    SLACK_ERRORS,
    SlackClient,
    bot_client,
    post_webhook,
)
from slack_integration.models import SlackDecisionMessage


@pytest.fixture(autouse=True)
def _fast_backoff(settings):
    settings.OUTBOX_HTTP_TRIES = 3
    settings.OUTBOX_HTTP_BACKOFF_BASE = 0.01
    settings.OUTBOX_HTTP_BACKOFF_MAX = 0.5


def _refused_with(fake_slack, error: str) -> TransportError:
    fake_slack.fail_with = error
    with pytest.raises(TransportError) as raised:
        bot_client().post_message(channel="C0RELEASE", text="hi", blocks=[])
    return raised.value


@pytest.mark.parametrize("error", sorted(SLACK_ERRORS))
def test_every_error_in_the_table_is_permanent_and_asked_once(fake_slack, error):
    refused = _refused_with(fake_slack, error)
    assert refused.permanent
    assert refused.disable_channel == (SLACK_ERRORS[error] == DISABLE_CHANNEL)
    assert str(refused) == f"Slack: {error}"
    assert fake_slack.methods() == ["chat.postMessage"]


def test_the_table_says_which_errors_disable_a_channel():
    assert {e for e, kind in SLACK_ERRORS.items() if kind == DISABLE_CHANNEL} >= {
        "invalid_auth", "token_revoked", "channel_not_found", "is_archived", "not_in_channel",
    }  # fmt: skip
    assert {e for e, kind in SLACK_ERRORS.items() if kind == PERMANENT} >= {
        "invalid_blocks", "msg_too_long", "message_not_found", "cant_update_message",
    }  # fmt: skip


@pytest.mark.parametrize("error", ["ratelimited", "internal_error", "fatal_error", "some_new_error"])
def test_an_error_not_in_the_table_is_worth_retrying(fake_slack, error):
    refused = _refused_with(fake_slack, error)
    assert (refused.permanent, refused.disable_channel) == (False, False)


def test_it_retries_a_500_within_its_bound_and_then_succeeds(fake_slack):
    fake_slack.fail_next(2, status=500)
    answer = bot_client().post_message(channel="C0RELEASE", text="hi", blocks=[])
    assert answer["ok"]
    assert answer["channel"] == "C0RELEASE"
    assert fake_slack.methods() == ["chat.postMessage"] * 3


def test_it_gives_up_on_a_500_after_the_bound_as_a_transient_error(fake_slack):
    fake_slack.fail_next(3, status=500)
    with pytest.raises(TransportError) as raised:
        bot_client().update_message(channel="C0RELEASE", ts="1.2", text="hi", blocks=[])
    assert not raised.value.permanent
    assert fake_slack.methods() == ["chat.update"] * 3


def test_it_sends_the_bot_token_and_json(fake_slack):
    bot_client().post_ephemeral(channel="C1", user="U1", text="only you", blocks=[{"type": "divider"}])
    [call] = fake_slack.calls
    assert call.authorization == "Bearer xoxb-test"
    assert call.data == {"channel": "C1", "user": "U1", "text": "only you", "blocks": [{"type": "divider"}]}


def test_without_a_token_there_is_no_client_and_a_channel_is_disabled(settings):
    settings.SLACK_BOT_TOKEN = ""
    assert bot_client() is None
    with pytest.raises(TransportError) as raised:
        SlackClient("")
    assert raised.value.disable_channel


def test_a_gone_webhook_disables_its_channel(fake_slack):
    fake_slack.fail_next(1, status=404)
    with pytest.raises(TransportError) as raised:
        post_webhook(fake_slack.webhook_url(), {"text": "x"})
    assert (raised.value.permanent, raised.value.disable_channel) == (True, True)


def test_the_buttons_message_uses_the_same_table(fake_slack, pending_request):
    fake_slack.fail_with = "not_in_channel"
    with pytest.raises(TransportError) as raised:
        services.slack_post_exception_request(request_id=pending_request.pk)
    assert raised.value.disable_channel
    assert not SlackDecisionMessage.objects.exists()


def test_a_failed_ephemeral_reply_is_logged_not_raised(fake_slack, caplog):
    fake_slack.fail_with = "user_not_in_channel"
    services.slack_post_ephemeral(channel="C1", user="U1", text="You cannot decide <this>")
    assert "Could not tell U1 in C1: Slack: user_not_in_channel" in caplog.text
