"""No text a user controls becomes a live mention or link in Slack (issue 13, item 1).

Every user-controlled field of a request (template fields, the name of the person it is
filed for, the KEP title, an echoed command argument) is filled with mrkdwn attacks and
pushed through every Slack message we build: the release-team post and its chat.update,
the decision notice, each slash-command answer and a reminder. Every mrkdwn text object
must be ``verbatim`` (Slack turns nothing into a link by itself) and the only ``<...>``
left anywhere is a link our own code wrote.
"""

from __future__ import annotations

import json
import re

import pytest
from django.conf import settings as django_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequest
from exceptions.services import exception_request_approve
from releasecal.services import enhancement_upsert
from reminders.messages import Message, render_slack
from slack_integration.commands import relcal
from slack_integration.models import SlackIdentity
from slack_integration.mrkdwn import clip, escape
from tests.slack_integration.test_slack_interactions import press
from tests.support.slack import post_signed

ATTACKS = [
    "<!channel>",
    "<!here|here>",
    "<!subteam^S0EVIL>",
    "<@U0EVIL>",
    "<#C0EVIL>",
    "<https://evil.example|Approve here>",
    "<mailto:evil@example.com|mail>",
    "@here @channel #general https://evil.example/approve",
    "&lt;!channel&gt;",
]
HOSTILE = " ".join(ATTACKS)
SHORT = "<!channel> <@U0EVIL> <https://evil.example|Approve here> @here"  # for 200-character fields
ANGLE = re.compile(r"<([^>]*)>")


def _allowed_link(token: str) -> bool:
    url = token.split("|", 1)[0]
    return url.startswith(django_settings.SITE_URL + "/") or url.startswith("https://github.com/kubernetes/")


def assert_nothing_live(payload: dict | list) -> int:
    """Walk a Slack payload; return how many mrkdwn texts were checked."""
    checked = 0

    def check_text(text: str) -> None:
        for token in ANGLE.findall(text):
            assert _allowed_link(token), f"live <{token}> in {text!r}"
        for word in ("<!", "<@", "<#"):
            assert word not in text, text

    def walk(node) -> None:
        nonlocal checked
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                assert node.get("verbatim") is True, node
                check_text(node["text"])
                checked += 1
            elif "text" in node and isinstance(node["text"], str) and node.get("type") is None:
                check_text(node["text"])  # the fallback ``text`` of a message
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(payload)
    return checked


@pytest.fixture
def hostile_request(fake_slack, eager_celery, kep, code_freeze, staff, django_capture_on_commit_callbacks):
    """Filed through the API by a staff token holder, for a hostile name, with every
    template field hostile; the hook posts it to the release team's channel."""
    enhancement_upsert(number=kep.number, title=f"Swap {HOSTILE}", owning_sig="node")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=staff).key}")
    body = {
        "kep": kep.number,
        "milestone": code_freeze.pk,
        "days": 2,
        "requester_name": f"Mallory {SHORT}",
        "enhancement_name": SHORT,
        "sig": "node",
        "stage": "beta",
        "until_text": f"EOD Friday {SHORT}",
        "reason": HOSTILE,
        "risks_adding": HOSTILE,
        "risks_cutting": HOSTILE,
        "submitted_at": code_freeze.deadline.isoformat(),
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/api/v1/exceptions/", body, format="json")
    assert response.status_code == 201, response.content
    return ExceptionRequest.objects.get(pk=response.json()["id"])


def test_the_release_team_post_and_its_update_carry_no_live_mention(
    hostile_request,
    fake_slack,
    release_team_member,
    django_capture_on_commit_callbacks,
):
    post = fake_slack.calls[0]
    assert post.method == "chat.postMessage"
    assert assert_nothing_live(post.data) >= 3
    text = json.dumps(post.data["blocks"])
    assert "Mallory &lt;!channel&gt;" in text  # shown, as written
    with django_capture_on_commit_callbacks(execute=True):
        exception_request_approve(request=hostile_request, actor=release_team_member)
    update = fake_slack.calls[-1]
    assert update.method == "chat.update"
    assert assert_nothing_live(update.data) >= 3


def test_every_slash_command_answer_is_inert(hostile_request, client, fake_slack):
    SlackIdentity.objects.create(slack_user_id="UVIEW", zone="Europe/Berlin")
    for text in ["kep 2400", "exceptions pending", "next", "release 1.31", f"release {HOSTILE}", HOSTILE]:
        answer = relcal(text, slack_user_id="UVIEW")
        assert assert_nothing_live(answer) >= 1, text
    response = post_signed(client, "/slack/commands", {"user_id": "UVIEW", "text": f"kep {HOSTILE}"})
    assert response.status_code == 200
    assert_nothing_live(response.json())


def test_an_ephemeral_refusal_does_not_echo_a_live_mention(hostile_request, client, fake_slack):
    press(client, hostile_request, "approve", "U0NOTLINKED")  # unlinked: told why, in an ephemeral
    ephemeral = fake_slack.calls[-1]
    assert ephemeral.method == "chat.postEphemeral"
    assert_nothing_live(ephemeral.data)


def test_a_reminder_with_hostile_text_is_inert():
    payload = render_slack(
        Message(
            headline=f"KEP-1 {HOSTILE}",
            deadline_sentence=HOSTILE,
            lines=(HOSTILE,),
            link=f"{django_settings.SITE_URL}/kep/1/",
            link_label=HOSTILE,
            footer=HOSTILE,
            late_note=HOSTILE,
        )
    )
    assert assert_nothing_live(payload) == 4


@pytest.mark.parametrize("limit", range(2, 14))
def test_clipping_never_cuts_an_escape_in_half(limit):
    clipped = clip(escape("<<&>>" * 4), limit)
    assert len(clipped) <= limit
    body = clipped.removesuffix("…")
    assert re.fullmatch(r"(?:&lt;|&gt;|&amp;)*", body), clipped
