"""Self-service linking: /relcal link (or /relcal request) gives an unlinked Slack user a
signed, 15-minute, one-time link; opened in a browser it asks for the releasecal login
and a confirmation, then ties the Slack team+user id to the account. Expired, replayed
and tampered links and a Slack identity linked to someone else get a clear 4xx page and
change nothing."""

from __future__ import annotations

import re
import time
from urllib.parse import quote, urlsplit

import pytest
from django.contrib.auth.models import User
from django.core import signing

from slack_integration import linking
from slack_integration.models import SlackIdentity, SlackLinkToken
from tests.support.github_oauth import github_sign_in
from tests.support.slack import post_signed


def link_path(client, user: str = "U0NEW") -> str:
    fields = {"command": "/relcal", "text": "link", "user_id": user, "team_id": "T1"}
    text = post_signed(client, "/slack/commands", fields).json()["text"]
    assert text.startswith("Your Slack account is not linked to a releasecal account, so you cannot file requests")
    url = re.search(r"<([^|>]+)\|this link>", text).group(1)
    assert url.startswith("https://releasecal.example.org/slack/link/")
    return urlsplit(url).path


@pytest.fixture
def settings_site(settings, fake_slack):
    """The site's address, and a Slack that knows the link's user and workspace."""
    settings.SITE_URL = "https://releasecal.example.org"
    settings.SLACK_SIGNING_SECRET = "test-signing-secret-0123456789abcdef"
    fake_slack.users["U0NEW"] = {
        "name": "newbie", "team_id": "T1", "real_name": "Nora Newbie",
        "profile": {"display_name": "nora", "real_name": "Nora Newbie"},
    }  # fmt: skip
    fake_slack.teams["T1"] = {"name": "Kubernetes", "domain": "kubernetes"}
    return fake_slack


def confirm(client, path: str, user) -> object:
    """What the person who asked does: open the link in their browser, sign in there
    (after opening it), confirm."""
    opened = client.get(path)
    assert opened.status_code in (200, 302)
    client.force_login(user)  # a sign-in (user_logged_in) after the link was opened
    return client.post(path)


def test_the_link_asks_for_the_login_then_a_confirmation_and_links_the_account(client, settings_site, requester):
    path = link_path(client)
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/slack/link/")
    login = client.post("/slack/link/login", {"username": "requester", "password": "pw", "next": path})
    assert (login.status_code, login["Location"]) == (302, path)
    page = client.get(path)
    assert page.status_code == 200
    text = page.content.decode()
    assert (
        "Slack user <strong>nora</strong> (Nora Newbie), @newbie <code>U0NEW</code>, of the Slack workspace "
        "<strong>Kubernetes</strong> <code>T1</code>, asks to act as your releasecal account "
        "<strong>requester</strong>."
    ) in text
    assert "<strong>That Slack user will approve and reject exception requests as you</strong>" in text
    assert 'id="confirm-link"' in text
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


def test_a_link_sent_to_someone_already_signed_in_needs_a_new_sign_in(client, settings_site, requester):
    """Issue 29 item 14: a team member who clicks a link someone else sent them does not
    hand that Slack user their decisions with one click."""
    path = link_path(client)
    client.force_login(requester)  # signed in earlier, before the link arrived
    page = client.get(path)
    assert page.status_code == 200
    text = page.content.decode()
    assert "If someone sent you this link, close this page." in text
    assert 'id="confirm-link"' not in text
    assert 'id="sign-in-again"' in text
    response = client.post(path)
    assert response.status_code == 403
    assert "a link is confirmed only by a sign-in made for it. Nothing was changed." in response.content.decode()
    assert not SlackIdentity.objects.exists()
    assert not SlackLinkToken.objects.exists()
    client.force_login(requester)  # signing in again after opening it is what confirms
    assert client.post(path).status_code == 200
    assert SlackIdentity.objects.get().user == requester


def test_a_link_opened_in_another_browser_cannot_be_confirmed_here(client, settings_site, requester):
    from django.test import Client

    path = link_path(client)
    Client().get(path)  # the asker's browser opened it
    client.force_login(requester)  # another browser: signed in, never opened it
    response = client.post(path)
    assert response.status_code == 403
    assert not SlackIdentity.objects.exists()


def test_a_slack_user_of_another_workspace_than_the_links_is_refused(client, settings_site, requester):
    settings_site.users["U0NEW"]["team_id"] = "T2"
    path = link_path(client)
    response = confirm(client, path, requester)
    assert response.status_code == 400
    assert "This link names a Slack user of another workspace than its own." in response.content.decode()
    assert not SlackIdentity.objects.exists()


def test_without_slacks_names_nothing_is_linked(client, settings_site, requester, settings):
    path = link_path(client)
    settings_site.fail_with = "ratelimited"  # Slack answering, but not with the names
    response = confirm(client, path, requester)
    assert response.status_code in (400, 503)
    assert not SlackIdentity.objects.exists()
    settings_site.fail_with = None
    settings.SLACK_BOT_TOKEN = ""
    response = client.post(path)
    assert response.status_code == 503
    assert "releasecal cannot ask Slack who this Slack user is" in response.content.decode()
    assert not SlackIdentity.objects.exists()


def test_a_github_account_links_slack_through_the_same_page(client, db, settings_site, fake_github, oauth_app):
    """The Slack link flow reuses the GitHub identity: sign in with GitHub, then confirm."""
    path = link_path(client)
    assert client.get(path)["Location"] == f"/login/?next={quote(path)}"
    page = client.get(f"/login/?next={path}").content.decode()
    assert "Linking your Slack account." in page
    fake_github.sign_in("aojea")
    flow = github_sign_in(client, fake_github, next_url=path)
    assert flow.answer["Location"] == path
    assert client.post(path).status_code == 200
    identity = SlackIdentity.objects.get()
    assert identity.user.socialaccount_set.get().uid == str(fake_github.world.users["aojea"].database_id)


def test_a_used_link_cannot_be_replayed(client, settings_site, requester):
    path = link_path(client)
    assert confirm(client, path, requester).status_code == 200
    other = User.objects.create_user("mallory", "m@example.com", "pw")
    client.force_login(other)
    for response in (client.get(path), client.post(path)):
        assert response.status_code == 410
        assert "This link has already been used. Type /relcal link in Slack to get a new link." in (
            response.content.decode()
        )
    assert SlackIdentity.objects.get().user == requester
    assert SlackLinkToken.objects.count() == 1


def expired_token(age: int, nonce: str = "nonce-aged") -> str:
    class Aged(signing.TimestampSigner):
        def timestamp(self):
            return signing.b62_encode(int(time.time()) - age)

    return Aged(salt=linking.SALT).sign_object({"u": "U0NEW", "t": "T1", "n": nonce})


def test_a_link_expires_after_15_minutes(client, settings_site, requester):
    client.force_login(requester)
    response = client.post(f"/slack/link/{expired_token(15 * 60 + 5)}")
    assert response.status_code == 410
    assert "This link has expired: links work for 15 minutes." in response.content.decode()
    assert not SlackIdentity.objects.exists()
    assert not SlackLinkToken.objects.exists()
    assert confirm(client, f"/slack/link/{expired_token(14 * 60)}", requester).status_code == 200  # still inside
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
    response = confirm(client, f"/slack/link/{token}", requester)
    assert response.status_code == 409
    assert (
        "This Slack account is already linked to another releasecal account; nothing was changed."
        in response.content.decode()
    )
    identity = SlackIdentity.objects.get()
    assert (identity.user, identity.zone) == (owner, "Europe/Berlin")
    assert not SlackLinkToken.objects.exists()  # not spent


def test_the_same_user_id_in_another_workspace_is_another_identity(client, settings_site, requester):
    """Issue 29 item 6: links compare the team id too."""
    owner = User.objects.create_user("owner", "o@example.com", "pw")
    SlackIdentity.objects.create(slack_user_id="U0NEW", team_id="T9", user=owner)
    fields = {"command": "/relcal", "text": "link", "user_id": "U0NEW", "team_id": "T1"}
    text = post_signed(client, "/slack/commands", fields).json()["text"]
    assert text.startswith("Your Slack account is not linked to a releasecal account")  # not "linked to owner"
    token = linking.link_token(slack_user_id="U0NEW", team_id="T1")
    assert confirm(client, f"/slack/link/{token}", requester).status_code == 200
    assert sorted(SlackIdentity.objects.values_list("team_id", "user__username")) == [
        ("T1", "requester"),
        ("T9", "owner"),
    ]


def test_an_account_linked_to_another_slack_user_is_not_relinked(client, settings_site, requester):
    SlackIdentity.objects.create(slack_user_id="U0OLD", team_id="T1", user=requester)
    token = linking.link_token(slack_user_id="U0NEW", team_id="T1")
    response = confirm(client, f"/slack/link/{token}", requester)
    assert response.status_code == 409
    assert "already linked to another Slack account (U0OLD); nothing was changed." in response.content.decode()
    assert list(SlackIdentity.objects.values_list("slack_user_id", "user")) == [("U0OLD", requester.pk)]


def test_an_identity_known_only_by_its_zone_gets_the_account(client, settings_site, requester):
    SlackIdentity.objects.create(slack_user_id="U0NEW", zone="Asia/Tokyo")  # from /relcal tz
    token = linking.link_token(slack_user_id="U0NEW", team_id="T1")
    assert confirm(client, f"/slack/link/{token}", requester).status_code == 200
    identity = SlackIdentity.objects.get()
    assert (identity.user, identity.zone, identity.team_id) == (requester, "Asia/Tokyo", "T1")


@pytest.mark.parametrize("next_url", ["", "https://evil.example/"])
def test_the_link_login_without_a_usable_next_lands_on_my_keps(client, requester, next_url):
    # /slack/link/login is the one login page (/login/) at its old address.
    data = {"username": "requester", "password": "pw"} | ({"next": next_url} if next_url else {})
    response = client.post("/slack/link/login", data)
    assert (response.status_code, response["Location"]) == (302, "/me/")
    assert client.get(response["Location"]).status_code == 200


def test_the_link_login_opened_while_logged_in_says_who_is_signed_in(client, requester):
    client.force_login(requester)
    response = client.get("/slack/link/login")
    assert response.status_code == 200
    assert "You are signed in as <strong>requester</strong>." in response.content.decode()
