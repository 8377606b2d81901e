"""A new request is posted to the release-team channel; Approve / Reject from Slack go
through the same workflow rules and the message is rewritten with chat.update."""

from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth.models import User

from exceptions.models import ExceptionRequest
from exceptions.services import RequestFields, exception_request_submit
from outbox.errors import TransportError
from slack_integration import tasks
from slack_integration.models import SlackDecisionMessage, SlackIdentity
from tests.support.slack import post_signed, redis_unreachable, signed_headers


@pytest.fixture
def posted(fake_slack, eager_celery, kep, code_freeze, requester, django_capture_on_commit_callbacks):
    """A request filed through the service: the hook posts it after commit."""
    with django_capture_on_commit_callbacks(execute=True):
        request = exception_request_submit(
            enhancement=kep, milestone=code_freeze, requester=requester,
            fields=RequestFields(days=2, stage="beta", sig="node", reason="e2e PR waiting for approval"),
            submitted_at=code_freeze.deadline,
        )  # fmt: skip
    return request


def press(client, request: ExceptionRequest, action: str, slack_user: str, team: str = ""):
    payload = {
        "type": "block_actions",
        "user": {"id": slack_user, **({"team_id": team} if team else {})},
        **({"team": {"id": team, "domain": "workspace"}} if team else {}),
        "channel": {"id": "C0RELEASE"},
        "container": {"type": "message", "message_ts": "1721780000.000100", "channel_id": "C0RELEASE"},
        "actions": [{"action_id": f"exception_{action}", "value": str(request.pk), "type": "button"}],
    }
    return post_signed(client, "/slack/interactions", {"payload": json.dumps(payload)})


def test_a_new_request_is_posted_with_approve_and_reject_buttons(posted, fake_slack):
    assert fake_slack.methods() == ["chat.postMessage", "chat.getPermalink"]  # the thread kept on the request
    message = fake_slack.calls[0].data
    assert message["channel"] == "C0RELEASE"
    actions = next(b for b in message["blocks"] if b["type"] == "actions")
    assert [e["action_id"] for e in actions["elements"]] == ["exception_approve", "exception_reject"]
    assert {e["value"] for e in actions["elements"]} == {str(posted.pk)}
    text = json.dumps(message["blocks"])
    assert "Code Freeze, 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)" in text
    assert "Approving grants until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)." in text
    saved = SlackDecisionMessage.objects.get(request=posted)
    assert (saved.channel, saved.ts) == ("C0RELEASE", "1721780000.000100")


def test_posting_twice_does_not_post_twice(posted, fake_slack):
    tasks.slack_post_exception_request(posted.pk)
    assert fake_slack.methods() == ["chat.postMessage", "chat.getPermalink"]


def test_a_mapped_release_team_member_approves_and_the_message_is_updated(
    client, posted, fake_slack, release_team_member, django_capture_on_commit_callbacks
):
    SlackIdentity.objects.create(user=release_team_member, slack_user_id="ULEAD")
    with django_capture_on_commit_callbacks(execute=True):
        response = press(client, posted, "approve", "ULEAD")
    assert response.status_code == 200
    posted.refresh_from_db()
    assert posted.state == "approved"
    assert posted.decision.decided_by == release_team_member
    last = fake_slack.calls[-1]
    method, update = last.method, last.data
    assert method == "chat.update"
    assert (update["channel"], update["ts"]) == ("C0RELEASE", "1721780000.000100")
    text = json.dumps(update["blocks"])
    assert (
        "*Approved* by lead. KEP-2400 may land until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)."
        in text
    )
    assert not any(b["type"] == "actions" for b in update["blocks"])  # no buttons left


def test_a_press_while_redis_is_down_is_saved_and_answered_200_within_3_s(
    client, posted, fake_slack, eager_celery, settings, release_team_member, django_capture_on_commit_callbacks
):
    """The decision is the request's work and is committed before anything is queued;
    the broker's refusal after commit is logged (robust on_commit), never a 500."""
    SlackIdentity.objects.create(user=release_team_member, slack_user_id="ULEAD")
    eager_celery.conf.task_always_eager = False  # publish to the (unreachable) broker
    before = len(fake_slack.calls)
    with redis_unreachable(settings), django_capture_on_commit_callbacks(execute=True):
        started = time.monotonic()
        response = press(client, posted, "approve", "ULEAD")
        took = time.monotonic() - started
    assert response.status_code == 200
    assert took < 3, f"{took:.1f} s: Slack wants its answer within 3 s"
    posted.refresh_from_db()
    assert posted.state == "approved"
    assert posted.decision.decided_by == release_team_member
    assert len(fake_slack.calls) == before  # nothing reached Slack inside the request


def test_the_same_user_id_from_another_workspace_decides_nothing(client, posted, fake_slack, release_team_member):
    """Issue 29 item 6: a Slack identity is a user id in its workspace (the team id is compared)."""
    SlackIdentity.objects.create(user=release_team_member, slack_user_id="ULEAD", team_id="T1")
    response = press(client, posted, "approve", "ULEAD", team="T2")
    assert response.status_code == 200
    posted.refresh_from_db()
    assert posted.state == "pending"
    assert fake_slack.calls[-1].method == "chat.postEphemeral"
    assert "Your Slack account is not linked to a releasecal user" in json.dumps(fake_slack.calls[-1].data)
    press(client, posted, "approve", "ULEAD", team="T1")
    posted.refresh_from_db()
    assert posted.state == "approved"
    assert posted.decision.decided_by == release_team_member


def test_reject_updates_the_message_with_the_unchanged_deadline(
    client, posted, fake_slack, release_team_member, django_capture_on_commit_callbacks
):
    SlackIdentity.objects.create(user=release_team_member, slack_user_id="ULEAD")
    with django_capture_on_commit_callbacks(execute=True):
        press(client, posted, "reject", "ULEAD")
    posted.refresh_from_db()
    assert posted.state == "rejected"
    last = fake_slack.calls[-1]
    method, update = last.method, last.data
    assert method == "chat.update"
    assert "*Rejected* by lead. The Code Freeze deadline stays 19:00 PDT Tuesday 23 July 2024" in json.dumps(
        update["blocks"]
    )


def test_the_requester_cannot_approve_their_own_request_from_slack(
    client, posted, fake_slack, requester, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import Group

    requester.groups.add(Group.objects.get(name="Release Team"))
    posted.release.team.add(requester)
    SlackIdentity.objects.create(user=requester, slack_user_id="UREQ")
    with django_capture_on_commit_callbacks(execute=True):
        press(client, posted, "approve", "UREQ")
    posted.refresh_from_db()
    assert posted.state == "pending"
    last = fake_slack.calls[-1]
    method, ephemeral = last.method, last.data
    assert method == "chat.postEphemeral"
    assert ephemeral["user"] == "UREQ"
    assert ephemeral["text"] == "You filed this request, so someone else on the release team must decide it."


def test_someone_without_the_permission_cannot_decide(client, posted, fake_slack, django_capture_on_commit_callbacks):
    outsider = User.objects.create_user("outsider")
    SlackIdentity.objects.create(user=outsider, slack_user_id="UOUT")
    press(client, posted, "approve", "UOUT")
    posted.refresh_from_db()
    assert posted.state == "pending"
    assert fake_slack.calls[-1].data["text"] == (
        "Only the 1.31 release team (its leads and team, kept per release) can approve or reject its "
        "exception requests."
    )


def test_an_unmapped_slack_user_is_told_to_get_linked(client, posted, fake_slack):
    press(client, posted, "approve", "USTRANGER")
    posted.refresh_from_db()
    assert posted.state == "pending"
    assert "not linked to a releasecal user" in fake_slack.calls[-1].data["text"]


def test_a_second_press_is_refused_with_the_conflict_message(
    client, posted, fake_slack, release_team_member, django_capture_on_commit_callbacks
):
    SlackIdentity.objects.create(user=release_team_member, slack_user_id="ULEAD")
    with django_capture_on_commit_callbacks(execute=True):
        press(client, posted, "approve", "ULEAD")
        press(client, posted, "reject", "ULEAD")
    posted.refresh_from_db()
    assert posted.state == "approved"
    ephemerals = [call.data["text"] for call in fake_slack.calls if call.method == "chat.postEphemeral"]
    assert ephemerals == [f"Exception request #{posted.pk} is already approved; it cannot be rejected."]


def test_a_decision_made_in_the_api_also_updates_the_slack_message(
    posted, fake_slack, release_team_member, django_capture_on_commit_callbacks
):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=release_team_member).key}")
    with django_capture_on_commit_callbacks(execute=True):
        api.post(
            f"/api/v1/exceptions/{posted.pk}/approve/", {"granted_until": "2024-07-25T18:00:00-07:00"}, format="json"
        )
    last = fake_slack.calls[-1]
    method, update = last.method, last.data
    assert method == "chat.update"
    assert "may land until 18:00 PDT Thursday 25 July 2024 (01:00 UTC Friday 26 July 2024)" in json.dumps(
        update["blocks"]
    )


@pytest.mark.parametrize("payload", ["not json", "[1, 2]", ""])
def test_a_garbled_payload_is_a_400(client, fake_slack, db, payload):
    assert post_signed(client, "/slack/interactions", {"payload": payload}).status_code == 400


def test_a_permanent_slack_error_is_not_retried(posted, fake_slack):
    fake_slack.fail_with = "channel_not_found"
    SlackDecisionMessage.objects.all().delete()
    before = len(fake_slack.calls)
    with pytest.raises(TransportError) as raised:
        tasks.slack_post_exception_request(posted.pk)
    assert (raised.value.permanent, raised.value.disable_channel) == (True, True)
    assert fake_slack.methods()[before:] == ["chat.postMessage"]  # asked once, not retried


def test_without_a_bot_token_nothing_is_posted(
    settings, kep, code_freeze, requester, eager_celery, django_capture_on_commit_callbacks
):
    settings.SLACK_BOT_TOKEN = ""
    with django_capture_on_commit_callbacks(execute=True):
        exception_request_submit(enhancement=kep, milestone=code_freeze, requester=requester,
                                 fields=RequestFields(days=2), submitted_at=code_freeze.deadline)  # fmt: skip
    assert not SlackDecisionMessage.objects.exists()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"user": {"id": "U1"}}, "The payload has no type."),
        ({"type": 7, "user": {"id": "U1"}}, "The payload has no type."),
        ({"type": "block_actions", "user": "U1", "actions": "x"}, "The payload names no Slack user."),
        ({"type": "block_actions", "user": {"id": 5}, "actions": [{"action_id": "exception_approve"}]},
         "The payload names no Slack user."),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": "x"},
         "The block_actions payload has no list of actions."),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": []},
         "The block_actions payload has no list of actions."),
        ({"type": "block_actions", "user": {"id": "U1"}, "actions": [1], "channel": 3},
         "The block_actions payload has no list of actions."),
        ({"type": "view_submission"}, "The payload names no Slack user."),
        ({"type": "view_submission", "user": {"id": "U1"}, "view": "v"}, "The view_submission has no view object."),
    ],
)  # fmt: skip
def test_a_signed_payload_missing_fields_or_of_wrong_types_is_a_400(client, fake_slack, db, payload, message):
    response = post_signed(client, "/slack/interactions", {"payload": json.dumps(payload)})
    assert response.status_code == 400
    assert response.json() == {"message": message, "extra": {}}
    assert fake_slack.calls == []


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"text": "help"}, "The request has no payload field."),
        ({"payload": "not json"}, "The payload is not JSON."),
        ({"payload": "[" * 100_000}, "The payload is not JSON."),
        ({"payload": "[1, 2]"}, "The payload is not a JSON object."),
    ],
)
def test_a_signed_body_that_is_not_a_payload_is_a_400_with_a_message(client, fake_slack, db, fields, message):
    response = post_signed(client, "/slack/interactions", fields)
    assert response.status_code == 400
    assert response.json() == {"message": message, "extra": {}}


def test_a_signed_body_that_is_not_form_data_is_a_400(client, fake_slack, db):
    body = b'{"type": "block_actions"}'
    response = client.post("/slack/interactions", data=body, content_type="application/json", **signed_headers(body))
    assert response.status_code == 400
    assert response.json() == {"message": "The request has no payload field.", "extra": {}}


def test_other_interaction_types_and_foreign_buttons_are_acknowledged(client, fake_slack, db):
    for payload in (
        {"type": "shortcut", "user": {"id": "U1"}},
        {"type": "block_actions", "user": {"id": "U1"}, "actions": [{"action_id": "someone_elses_button"}]},
    ):
        response = post_signed(client, "/slack/interactions", {"payload": json.dumps(payload)})
        assert response.status_code == 200, payload
    assert fake_slack.calls == []
