"""Slack v0 signatures: the published vector, the 5-minute window, and no 500 ever."""

from __future__ import annotations

import time

import pytest
from slack_sdk.signature import SignatureVerifier

from slack_integration.signature import SignatureError, compute_signature, verify_signature
from tests.support.slack import SIGNING_SECRET, post_signed, signed_headers

# Slack's known-answer example ("Verifying requests from Slack", api.slack.com docs).
KAT_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
KAT_TIMESTAMP = "1531420618"
KAT_BODY = (
    b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V"
    b"&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text="
    b"&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN"
    b"&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
)
KAT_SIGNATURE = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"


def test_it_reproduces_slacks_published_signature():
    assert compute_signature(signing_secret=KAT_SECRET, timestamp=KAT_TIMESTAMP, body=KAT_BODY) == KAT_SIGNATURE
    assert SignatureVerifier(KAT_SECRET).generate_signature(timestamp=KAT_TIMESTAMP, body=KAT_BODY) == KAT_SIGNATURE


def test_it_accepts_the_published_request_at_its_own_time():
    verify_signature(
        body=KAT_BODY, timestamp=KAT_TIMESTAMP, signature=KAT_SIGNATURE, signing_secret=KAT_SECRET, now=1531420618
    )


@pytest.mark.parametrize("skew", [-300, 0, 300])
def test_it_accepts_requests_within_five_minutes(skew):
    verify_signature(
        body=KAT_BODY, timestamp=KAT_TIMESTAMP, signature=KAT_SIGNATURE, signing_secret=KAT_SECRET,
        now=int(KAT_TIMESTAMP) + skew,
    )  # fmt: skip


@pytest.mark.parametrize("skew", [-301, 301, 86400])
def test_it_refuses_requests_outside_five_minutes(skew):
    with pytest.raises(SignatureError, match="5-minute window"):
        verify_signature(
            body=KAT_BODY, timestamp=KAT_TIMESTAMP, signature=KAT_SIGNATURE, signing_secret=KAT_SECRET,
            now=int(KAT_TIMESTAMP) + skew,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("body", "secret"), [(KAT_BODY + b"&x=1", KAT_SECRET), (KAT_BODY, "another-secret")], ids=["body", "secret"]
)
def test_it_refuses_a_changed_body_or_another_secret(body, secret):
    with pytest.raises(SignatureError, match="mismatch"):
        verify_signature(
            body=body, timestamp=KAT_TIMESTAMP, signature=KAT_SIGNATURE, signing_secret=secret, now=1531420618
        )


@pytest.fixture
def slack_settings(settings):
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    return settings


def test_a_signed_command_gets_an_answer(client, slack_settings, db):
    response = post_signed(client, "/slack/commands", {"user_id": "U1", "team_id": "T1", "text": "help"})
    assert response.status_code == 200
    assert response.json()["response_type"] == "ephemeral"


@pytest.fixture
def frozen_clock(monkeypatch) -> int:
    now = 1_721_780_000
    monkeypatch.setattr("slack_integration.signature._now", lambda: float(now))
    return now


@pytest.mark.parametrize("skew", [-300, 300])
def test_the_endpoint_accepts_the_edges_of_the_window(client, slack_settings, db, frozen_clock, skew):
    response = post_signed(client, "/slack/commands", {"user_id": "U1", "text": "help"}, timestamp=frozen_clock + skew)
    assert response.status_code == 200


@pytest.mark.parametrize("skew", [-301, 301])
def test_the_endpoint_refuses_a_replay_outside_the_window(client, slack_settings, db, frozen_clock, skew, caplog):
    response = post_signed(client, "/slack/commands", {"user_id": "U1", "text": "help"}, timestamp=frozen_clock + skew)
    assert response.status_code == 401
    assert response.json() == {"message": "Slack request signature could not be verified.", "extra": {}}
    assert "Refused a Slack request to /slack/commands: timestamp outside the 5-minute window" in caplog.messages


def _headers(timestamp, signature):
    headers = {}
    if timestamp is not None:
        headers["HTTP_X_SLACK_REQUEST_TIMESTAMP"] = timestamp
    if signature is not None:
        headers["HTTP_X_SLACK_SIGNATURE"] = signature
    return headers


BODY = b"user_id=U1&text=help"


def _valid_signature(timestamp: str, body: bytes = BODY) -> str:
    return compute_signature(signing_secret=SIGNING_SECRET, timestamp=timestamp, body=body)


@pytest.mark.parametrize(
    ("timestamp", "signature"),
    [
        (None, None),
        ("now", None),
        (None, "valid"),
        ("", "valid"),
        ("abc", "valid"),
        ("1e9", "valid"),
        (" now", "valid"),
        ("now\n", "valid"),
        ("-1", "valid"),
        ("1_700_000_000", "valid"),
        ("٣٣٣", "valid"),  # Arabic-Indic digits: int() would take them
        ("99999999999999999999999", "valid"),
        ("now", ""),
        ("now", "v0="),
        ("now", "v1=" + "0" * 64),
        ("now", "sha256=deadbeef"),
        ("now", "v0=" + "Z" * 64),
        ("now", "valid-uppercase"),
    ],
)
@pytest.mark.parametrize("path", ["/slack/commands", "/slack/interactions"])
def test_malformed_headers_are_a_401_never_a_500(client, slack_settings, db, path, timestamp, signature):
    now = str(int(time.time()))
    if timestamp is not None:
        timestamp = timestamp.replace("now", now)
    if signature == "valid":
        signature = _valid_signature(now)
    elif signature == "valid-uppercase":
        signature = _valid_signature(now).upper()
    response = client.post(
        path, data=BODY, content_type="application/x-www-form-urlencoded", **_headers(timestamp, signature)
    )
    assert response.status_code == 401
    assert response.json()["message"] == "Slack request signature could not be verified."


@pytest.mark.parametrize("path", ["/slack/commands", "/slack/interactions"])
def test_a_non_utf8_body_is_a_401_even_when_correctly_signed(client, slack_settings, db, path, caplog):
    body = b"user_id=U1&text=\xff\xfe caf\xe9"
    with pytest.raises(UnicodeDecodeError):
        # slack_sdk's verifier raises here, which is why the view has its own check.
        SignatureVerifier(SIGNING_SECRET).is_valid(body=body, timestamp=str(int(time.time())), signature="v0=00")
    timestamp = str(int(time.time()))
    response = client.post(
        path, data=body, content_type="application/x-www-form-urlencoded",
        **_headers(timestamp, _valid_signature(timestamp, body)),
    )  # fmt: skip
    assert response.status_code == 401
    assert response.json() == {"message": "Slack request signature could not be verified.", "extra": {}}
    assert f"Refused a Slack request to {path}: body is not UTF-8" in caplog.messages


def test_without_a_signing_secret_everything_is_refused(client, settings, db):
    settings.SLACK_SIGNING_SECRET = ""
    body = b"user_id=U1&text=help"
    response = client.post("/slack/commands", data=body, content_type="application/x-www-form-urlencoded",
                           **signed_headers(body))  # fmt: skip
    assert response.status_code == 401


GENERIC_401 = b'{"message": "Slack request signature could not be verified.", "extra": {}}'


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ("missing headers", "missing X-Slack-Request-Timestamp or X-Slack-Signature"),
        ("stale timestamp", "timestamp outside the 5-minute window"),
        ("bad signature", "signature mismatch"),
        ("unknown version", "malformed signature"),
        ("no secret configured", "SLACK_SIGNING_SECRET is not configured"),
    ],
)
@pytest.mark.parametrize("path", ["/slack/commands", "/slack/interactions", "/slack/events"])
def test_every_refusal_is_the_same_401_and_only_the_log_says_why(
    client, slack_settings, db, caplog, path, case, reason
):
    now = int(time.time())
    headers = signed_headers(BODY)
    if case == "missing headers":
        headers = {}
    elif case == "stale timestamp":
        headers = signed_headers(BODY, timestamp=now - 301)
    elif case == "bad signature":
        headers = signed_headers(BODY, secret="not-the-signing-secret")
    elif case == "unknown version":
        headers["HTTP_X_SLACK_SIGNATURE"] = "v1=" + headers["HTTP_X_SLACK_SIGNATURE"].removeprefix("v0=")
    elif case == "no secret configured":
        slack_settings.SLACK_SIGNING_SECRET = ""
    response = client.post(path, data=BODY, content_type="application/x-www-form-urlencoded", **headers)
    assert response.status_code == 401
    assert response.content == GENERIC_401
    assert reason.encode() not in response.content
    assert f"Refused a Slack request to {path}: {reason}" in caplog.messages


def test_get_is_a_405(client, slack_settings):
    assert client.get("/slack/commands").status_code == 405
