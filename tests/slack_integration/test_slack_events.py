"""POST /slack/events: signed like the other endpoints; url_verification; unknown events
acknowledged and ignored; app_home_opened publishes the Home tab (views.publish) with the
user's KEPs, effective deadlines in their Slack zone (users.info) with native zone and
UTC beside, their requests, and the next deadlines of the active release."""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest

from exceptions.services import exception_request_approve
from releasecal import tz
from releasecal.models import EnhancementOwner
from slack_integration.models import SlackIdentity
from tests.support.slack import redis_unreachable, signed_headers

NOW = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC)


def post_event(client, payload: dict, **sign):
    body = json.dumps(payload).encode()
    return client.post("/slack/events", data=body, content_type="application/json", **signed_headers(body, **sign))


def home_opened(user: str = "U0OWNER", tab: str = "home") -> dict:
    return {
        "type": "event_callback",
        "team_id": "T1",
        "event": {"type": "app_home_opened", "user": user, "channel": "D0HOME", "tab": tab},
    }


@pytest.fixture
def now(monkeypatch):
    """The Home tab's clock (asked for after the fixtures that file requests)."""
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)
    return NOW


@pytest.fixture
def owner(kep, requester):
    """requester owns KEP-2400 and is linked to Slack user U0OWNER."""
    EnhancementOwner.objects.filter(enhancement=kep).update(user=requester)
    SlackIdentity.objects.create(slack_user_id="U0OWNER", team_id="T1", user=requester)
    return requester


def published(fake_slack) -> dict:
    (call,) = fake_slack.matching(lambda c: c.method == "views.publish")
    assert call.authorization == "Bearer xoxb-test"
    assert call.data["user_id"] == "U0OWNER"
    view = call.data["view"]
    assert view["type"] == "home"
    assert len(view["blocks"]) <= 50
    return view


def texts(view: dict) -> list[str]:
    found = []
    for block in view["blocks"]:
        if "text" in block:
            found.append(block["text"]["text"])
        found += [element["text"] for element in block.get("elements", [])]
    return found


def test_url_verification_answers_the_challenge(client, fake_slack):
    response = post_event(client, {"type": "url_verification", "token": "x", "challenge": "3eZbrw1aBm2rZgRNFdxV2"})
    assert response.status_code == 200
    assert response.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2"}


def test_a_bad_signature_is_refused_and_nothing_is_called(client, fake_slack, eager_celery, owner):
    body = json.dumps(home_opened()).encode()
    headers = signed_headers(body, secret="not-the-signing-secret")
    response = client.post("/slack/events", data=body, content_type="application/json", **headers)
    assert response.status_code == 401
    stale = post_event(client, home_opened(), timestamp=int(NOW.timestamp()))
    assert stale.status_code == 401
    assert fake_slack.calls == []


def test_unknown_events_are_acknowledged_and_ignored(client, fake_slack, eager_celery, owner):
    for payload in (
        {"type": "event_callback", "event": {"type": "reaction_added", "user": "U0OWNER"}},
        {"type": "app_rate_limited", "minute_rate_limited": 1518467820},
        home_opened(tab="messages"),
    ):
        response = post_event(client, payload)
        assert response.status_code == 200, payload
    assert fake_slack.calls == []


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({}, "The event has no type."),
        ({"type": ["event_callback"]}, "The event has no type."),
        ({"type": "event_callback", "event": "not an object"}, "The event_callback's event is not an object."),
        ({"type": "event_callback", "event": {"type": "app_home_opened", "user": "<!channel>"}},
         "app_home_opened names no Slack user."),
        ({"type": "event_callback", "event": {"type": "app_home_opened"}}, "app_home_opened names no Slack user."),
        ({"type": "url_verification", "challenge": 5}, "url_verification without a challenge."),
    ],
)  # fmt: skip
def test_a_signed_event_missing_fields_or_of_wrong_types_is_a_400(client, fake_slack, eager_celery, payload, message):
    response = post_event(client, payload)
    assert response.status_code == 400
    assert response.json() == {"message": message, "extra": {}}
    assert fake_slack.calls == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"type=url_verification", "The request body is not JSON."),
        (b"[" * 100_000, "The request body is not JSON."),  # deeper than Python's stack: was a 500
        (b"[1, 2]", "The request body is not a JSON object."),
    ],
)
def test_a_signed_body_that_is_not_a_json_object_is_a_400(client, fake_slack, body, message):
    response = client.post("/slack/events", data=body, content_type="application/json", **signed_headers(body))
    assert response.status_code == 400
    assert response.json() == {"message": message, "extra": {}}


def test_home_tab_shows_keps_deadlines_in_the_slack_zone_requests_and_next_deadlines(
    client, fake_slack, eager_celery, owner, pending_request, release_team_member, now
):
    exception_request_approve(request=pending_request, actor=release_team_member, at=pending_request.submitted_at)
    fake_slack.users["U0OWNER"] = {"tz": "Asia/Tokyo", "tz_label": "Japan Standard Time"}
    response = post_event(client, home_opened())
    assert response.status_code == 200
    assert [c.method for c in fake_slack.calls] == ["users.info", "views.publish"]
    assert fake_slack.calls[0].data == {"user": "U0OWNER"}  # form-encoded, as Slack's read methods want
    view = published(fake_slack)
    shown = texts(view)
    assert "Times in your Slack time zone, Asia/Tokyo, then native zone and UTC." in shown
    kep = next(t for t in shown if t.startswith("*KEP-2400"))
    assert kep.splitlines() == [
        "*KEP-2400: Node memory swap support (SIG node)*",
        # Code freeze 19:00 PDT Tue 23 July + 2 days, at end of day in the release's zone:
        # 00:00 PDT Fri 26 July = 07:00 UTC = 16:00 JST Fri 26 July.
        "Code Freeze (1.31): *16:00 JST Friday 26 July 2024* · end of Thursday 25 July 2024 PDT "
        f"(07:00 UTC Friday 26 July 2024) _(extended by exception #{pending_request.pk})_",
        "1.31.0-rc.0 released (1.31): *02:00 JST Wednesday 31 July 2024* · 10:00 PDT Tuesday 30 July 2024 "
        "(17:00 UTC Tuesday 30 July 2024)",
        "v1.31 released (1.31): *16:00 JST Wednesday 14 August 2024* · end of Tuesday 13 August 2024 PDT "
        "(07:00 UTC Wednesday 14 August 2024)",
    ]
    requests = next(t for t in shown if t.startswith("*Your exception requests*"))
    assert requests.splitlines()[1] == (
        f"#{pending_request.pk} KEP-2400 Code Freeze (1.31), 2 days: *approved* until "
        "*16:00 JST Friday 26 July 2024* · end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)"
    )
    assert shown[-1].splitlines() == [
        "Code Freeze (1.31): *11:00 JST Wednesday 24 July 2024* · 19:00 PDT Tuesday 23 July 2024 "
        "(02:00 UTC Wednesday 24 July 2024)",
        "1.31.0-rc.0 released (1.31): *02:00 JST Wednesday 31 July 2024* · 10:00 PDT Tuesday 30 July 2024 "
        "(17:00 UTC Tuesday 30 July 2024)",
        "v1.31 released (1.31): *16:00 JST Wednesday 14 August 2024* · end of Tuesday 13 August 2024 PDT "
        "(07:00 UTC Wednesday 14 August 2024)",
    ]
    assert all(block.get("text", {}).get("verbatim", True) for block in view["blocks"] if block["type"] != "header")


def test_every_user_value_is_escaped_in_the_home_tab(
    client, fake_slack, eager_celery, owner, kep, pending_request, now
):
    kep.title = "<!channel> swap & <https://evil.example|click>"
    kep.save()
    fake_slack.users["U0OWNER"] = {"tz": "Europe/Berlin"}
    assert post_event(client, home_opened()).status_code == 200
    view = published(fake_slack)
    dumped = json.dumps(view)
    assert "<!channel>" not in dumped
    assert "<https://evil" not in dumped
    first_lines = [text.splitlines()[0] for text in texts(view)]
    assert "*KEP-2400: &lt;!channel&gt; swap &amp; &lt;https://evil.example|click&gt; (SIG node)*" in first_lines


def test_when_slack_cannot_say_the_zone_the_relcal_tz_zone_is_used(
    client, fake_slack, eager_celery, owner, pending_request, now
):
    SlackIdentity.objects.filter(slack_user_id="U0OWNER").update(zone="Europe/Berlin")
    # fake_slack.users has no U0OWNER: users.info answers user_not_found.
    assert post_event(client, home_opened()).status_code == 200
    shown = texts(published(fake_slack))
    assert "Times in your Slack time zone, Europe/Berlin, then native zone and UTC." in shown
    assert (
        f"#{pending_request.pk} KEP-2400 Code Freeze (1.31), 2 days: *pending*"
        in next(t for t in shown if t.startswith("*Your exception requests*")).splitlines()
    )
    assert "Code Freeze (1.31): *04:00 CEST Wednesday 24 July 2024* · 19:00 PDT Tuesday 23 July 2024" in shown[-1]


def test_an_unlinked_user_is_told_how_to_link_and_still_sees_the_next_deadlines(
    client, fake_slack, eager_celery, now, release
):
    fake_slack.users["U0STRANGER"] = {"tz": "America/Los_Angeles"}
    assert post_event(client, home_opened("U0STRANGER")).status_code == 200
    (call,) = fake_slack.matching(lambda c: c.method == "views.publish")
    shown = texts(call.data["view"])
    assert any(t.startswith("Your Slack account is not linked to a releasecal account") for t in shown)
    # The viewer's zone is the release's own: shown once, with UTC.
    assert (
        shown[-1].splitlines()[0]
        == "Code Freeze (1.31): *19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)*"
    )


def test_app_home_opened_while_redis_is_down_is_a_200_and_logged(client, fake_slack, settings, owner, caplog):
    with redis_unreachable(settings) as url:
        started = time.monotonic()
        response = post_event(client, home_opened())
        took = time.monotonic() - started
    assert response.status_code == 200  # was a 500, and Slack retried into the same outage
    assert took < 3, f"{took:.1f} s: Slack wants its answer within 3 s"
    assert any(m.startswith("Home tab of U0OWNER not queued, the broker is unreachable") for m in caplog.messages)
    assert fake_slack.calls == []
    assert url.startswith("redis://127.0.0.1:")
