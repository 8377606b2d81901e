"""Self-service linking: /relcal link (or /relcal request) gives an unlinked Slack user a
signed, 15-minute, one-time link; opened in a browser it asks for the releasecal login
and a confirmation, then ties the Slack team+user id to the account. Expired, replayed
and tampered links and a Slack identity linked to someone else get a clear 4xx page and
change nothing."""

from __future__ import annotations

import re
import time
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.core import signing

from slack_integration import linking
from slack_integration.models import SlackIdentity, SlackLinkToken
from tests.support.slack import post_signed


def link_path(client, user: str = "U0NEW") -> str:
    fields = {"command": "/relcal", "text": "link", "user_id": user, "team_id": "T1"}
    text = post_signed(client, "/slack/commands", fields).json()["text"]
    assert text.startswith("Your Slack account is not linked to a releasecal account, so you cannot file requests")
    url = re.search(r"<([^|>]+)\|this link>", text).group(1)
    assert url.startswith("https://releasecal.example.org/slack/link/")
    return urlsplit(url).path


@pytest.fixture
def settings_site(settings):
    settings.SITE_URL = "https://releasecal.example.org"
    settings.SLACK_SIGNING_SECRET = "test-signing-secret-0123456789abcdef"


def test_the_link_asks_for_the_login_then_a_confirmation_and_links_the_account(client, settings_site, requester):
    path = link_path(client)
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/slack/link/login?next=/slack/link/")
    login = client.post("/slack/link/login", {"username": "requester", "password": "pw", "next": path})
    assert (login.status_code, login["Location"]) == (302, path)
    page = client.get(path)
    assert page.status_code == 200
    assert "Link Slack user <code>U0NEW</code> (workspace <code>T1</code>) to your releasecal account" in (
        page.content.decode()
    )
    assert not SlackIdentity.objects.exists()  # opening the page changes nothing
    done = client.post(path)
    assert done.status_code == 200
    assert "is now linked to your releasecal account <strong>requester</strong>" in done.content.decode()
    identity = SlackIdentity.objects.get()
    assert (identity.slack_user_id, identity.team_id, identity.user) == ("U0NEW", "T1", requester)
    fields = {"command": "/relcal", "text": "link", "user_id": "U0NEW", "team_id": "T1"}
    assert post_signed(client, "/slack/commands", fields).json()["text"] == (
        "Your Slack account is linked to the releasecal account requester."
    )


def test_a_used_link_cannot_be_replayed(client, settings_site, requester):
    path = link_path(client)
    client.force_login(requester)
    assert client.post(path).status_code == 200
    other = User.objects.create_user("mallory", "m@example.com", "pw")
    client.force_login(other)
    for response in (client.get(path), client.post(path)):
        assert response.status_code == 410
        assert "This link has already been used. Type /relcal link in Slack to get a new link." in (
            response.content.decode()
        )
    assert SlackIdentity.objects.get().user == requester
    assert SlackLinkToken.objects.count() == 1


def expired_token(age: int) -> str:
    class Aged(signing.TimestampSigner):
        def timestamp(self):
            return signing.b62_encode(int(time.time()) - age)

    return Aged(salt=linking.SALT).sign_object({"u": "U0NEW", "t": "T1", "n": "nonce-aged"})


def test_a_link_expires_after_15_minutes(client, requester):
    client.force_login(requester)
    response = client.post(f"/slack/link/{expired_token(15 * 60 + 5)}")
    assert response.status_code == 410
    assert "This link has expired: links work for 15 minutes." in response.content.decode()
    assert not SlackIdentity.objects.exists()
    assert not SlackLinkToken.objects.exists()
    assert client.post(f"/slack/link/{expired_token(14 * 60)}").status_code == 200  # still inside
    assert SlackIdentity.objects.get().user == requester


def test_a_tampered_link_is_refused(client, settings_site, requester):
    path = link_path(client)
    token = path.rsplit("/", 1)[1]
    payload = signing.loads(token, salt=linking.SALT)
    forged = signing.dumps({**payload, "u": "U0VICTIM"}, salt="another salt")
    client.force_login(requester)
    for bad in (forged, token[:-2] + ("AA" if not token.endswith("AA") else "BB"), "garbage"):
        response = client.post(f"/slack/link/{bad}")
        assert response.status_code == 400
        assert "This link is not valid" in response.content.decode()
    assert not SlackIdentity.objects.exists()
    assert not SlackLinkToken.objects.exists()


def test_a_slack_identity_linked_to_another_account_is_not_taken_over(client, settings_site, requester):
    owner = User.objects.create_user("owner", "o@example.com", "pw")
    SlackIdentity.objects.create(slack_user_id="U0NEW", team_id="T1", user=owner, zone="Europe/Berlin")
    token = linking.link_token(slack_user_id="U0NEW", team_id="T1")
    client.force_login(requester)
    response = client.post(f"/slack/link/{token}")
    assert response.status_code == 409
    assert (
        "This Slack account is already linked to another releasecal account; nothing was changed."
        in response.content.decode()
    )
    identity = SlackIdentity.objects.get()
    assert (identity.user, identity.zone) == (owner, "Europe/Berlin")
    assert not SlackLinkToken.objects.exists()  # not spent


def test_an_account_linked_to_another_slack_user_is_not_relinked(client, requester):
    SlackIdentity.objects.create(slack_user_id="U0OLD", team_id="T1", user=requester)
    token = linking.link_token(slack_user_id="U0NEW", team_id="T1")
    client.force_login(requester)
    response = client.post(f"/slack/link/{token}")
    assert response.status_code == 409
    assert "already linked to another Slack account (U0OLD); nothing was changed." in response.content.decode()
    assert list(SlackIdentity.objects.values_list("slack_user_id", "user")) == [("U0OLD", requester.pk)]


def test_an_identity_known_only_by_its_zone_gets_the_account(client, requester):
    SlackIdentity.objects.create(slack_user_id="U0NEW", zone="Asia/Tokyo")  # from /relcal tz
    client.force_login(requester)
    assert client.post(f"/slack/link/{linking.link_token(slack_user_id='U0NEW', team_id='T1')}").status_code == 200
    identity = SlackIdentity.objects.get()
    assert (identity.user, identity.zone, identity.team_id) == (requester, "Asia/Tokyo", "T1")


@pytest.mark.parametrize("next_url", ["", "https://evil.example/"])
def test_the_link_login_without_a_usable_next_lands_on_the_home_page(client, requester, next_url):
    data = {"username": "requester", "password": "pw"} | ({"next": next_url} if next_url else {})
    response = client.post("/slack/link/login", data)
    assert (response.status_code, response["Location"]) == (302, "/")
    assert client.get(response["Location"]).status_code == 200


def test_the_link_login_opened_while_logged_in_lands_on_the_home_page(client, requester):
    client.force_login(requester)
    response = client.get("/slack/link/login")
    assert (response.status_code, response["Location"]) == (302, "/")
