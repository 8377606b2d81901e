"""Sign in with GitHub, end to end against the fake GitHub over HTTP: allauth's GitHub
provider, the callback, /api/v3/user and /user/emails, and what releasecal records.

GitHub's numeric user id is the key (allauth's SocialAccount uid); the handle is display
and what KEPs are matched by, in any case. Every refusal says why and saves nothing.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from django.test import override_settings

from people.models import GitHubHandle
from people.selectors import enhancement_list_of_user, user_for_handle
from releasecal.models import AuditLog, EnhancementOwner
from releasecal.services import enhancement_upsert
from tests.support.github_oauth import CALLBACK_PATH, github_sign_in

pytestmark = pytest.mark.django_db


def _me(client) -> str:
    response = client.get("/me/")
    assert response.status_code == 200
    return response.content.decode()


def test_a_first_sign_in_makes_an_account_keyed_by_githubs_id_and_lands_on_my_keps(client, fake_github, oauth_app, kep):
    EnhancementOwner.objects.create(enhancement=kep, github="AOjea")  # another case than GitHub's
    github = fake_github.sign_in("aojea", name="Antonio Ojea", email="aojea@example.com")

    flow = github_sign_in(client, fake_github)

    assert flow.answer.status_code == 302
    assert flow.answer["Location"] == "/me/"
    account = SocialAccount.objects.get(provider="github")
    assert account.uid == str(github.database_id)
    assert account.user.username == "aojea"
    assert account.user.email == "aojea@example.com"
    assert not account.user.has_usable_password()
    assert not account.user.is_staff
    assert list(GitHubHandle.objects.values_list("handle", flat=True)) == ["aojea"]
    page = _me(client)
    assert "Signed in as @aojea on GitHub" in page
    assert 'data-kep="2400"' in page
    assert "KEP-2400: Node memory swap support" in page
    # allauth asked the fake what it should: the token, /user and /user/emails (scope user:email)
    paths = [r.path for r in fake_github.requests]
    assert paths == ["/login/oauth/authorize", "/login/oauth/access_token", "/user", "/user/emails"]
    assert [r.headers.get("authorization", "")[:10] for r in fake_github.requests[2:]] == ["token gho_"] * 2
    assert fake_github.requests[0].query["scope"] == "user:email"
    assert not fake_github.fake_bugs  # every answer passed GitHub's OpenAPI description
    assert AuditLog.objects.filter(action="people.github_handle_added").count() == 1


def test_a_handle_that_matches_no_kep_is_told_so(client, fake_github, oauth_app, kep):
    fake_github.sign_in("newcomer")
    flow = github_sign_in(client, fake_github)
    assert flow.answer.status_code == 302
    page = _me(client)
    assert "No KEP names @newcomer yet." in page
    assert 'data-kep="' not in page


def test_signing_in_again_is_the_same_account(client, fake_github, oauth_app):
    fake_github.sign_in("aojea")
    github_sign_in(client, fake_github)
    client.post("/logout/")
    github_sign_in(client, fake_github)
    assert User.objects.count() == 1
    assert SocialAccount.objects.count() == 1
    assert GitHubHandle.objects.count() == 1


def test_a_renamed_github_account_keeps_its_account_and_its_keps(client, fake_github, oauth_app, kep):
    EnhancementOwner.objects.create(enhancement=kep, github="oldname")
    newer = enhancement_upsert(number=5000, title="Newer KEP", owning_sig="node", owners=[{"github": "NewName"}])
    github = fake_github.sign_in("oldname")
    github_sign_in(client, fake_github)
    user = User.objects.get()
    assert [k.number for k in enhancement_list_of_user(user=user)] == [2400]

    fake_github.rename_user("oldname", "newname")
    client.post("/logout/")
    flow = github_sign_in(client, fake_github)

    assert flow.answer.status_code == 302
    assert User.objects.get() == user, "the numeric id is the key: the same account"
    assert SocialAccount.objects.get().uid == str(github.database_id)
    assert SocialAccount.objects.get().extra_data["login"] == "newname"
    assert sorted(GitHubHandle.objects.values_list("handle", flat=True)) == ["newname", "oldname"]
    # kep.yaml written before the rename still names @oldname: still this person's
    assert [k.number for k in enhancement_list_of_user(user=user)] == [2400, newer.number]
    page = _me(client)
    assert "Signed in as @newname on GitHub" in page
    assert "or @oldname before a rename" in page


def test_a_handle_github_gave_to_another_account_moves_to_it(client, fake_github, oauth_app, kep):
    EnhancementOwner.objects.create(enhancement=kep, github="alice")
    fake_github.sign_in("alice")
    github_sign_in(client, fake_github)
    first = User.objects.get()
    fake_github.rename_user("alice", "alice-renamed")  # then someone else takes "alice"
    client.post("/logout/")
    fake_github.sign_in("Alice")  # a new GitHub user: another numeric id
    github_sign_in(client, fake_github)

    second = User.objects.exclude(pk=first.pk).get()
    assert SocialAccount.objects.get(user=second).uid != SocialAccount.objects.get(user=first).uid
    assert user_for_handle(handle="ALICE") == second
    assert [k.number for k in enhancement_list_of_user(user=second)] == [2400]
    assert list(enhancement_list_of_user(user=first)) == []
    moved = AuditLog.objects.get(action="people.github_handle_moved")
    assert moved.before["user"] == first.pk
    assert moved.after["user"] == second.pk


def _nothing_saved(client) -> None:
    assert User.objects.count() == 0 or not SocialAccount.objects.exists()
    assert not GitHubHandle.objects.exists()
    assert "_auth_user_id" not in client.session


def test_a_wrong_state_is_a_clear_400_and_nothing_is_saved(client, fake_github, oauth_app):
    fake_github.sign_in("aojea")
    flow = github_sign_in(client, fake_github, tamper=lambda cb: cb.replace("state=", "state=x"))
    assert flow.answer.status_code == 400
    assert "did not match a sign-in started in this browser" in flow.answer.content.decode()
    assert "Nothing was saved" in flow.answer.content.decode()
    assert not User.objects.exists()
    _nothing_saved(client)
    assert [r.path for r in fake_github.requests] == ["/login/oauth/authorize"]  # no code was spent


def test_a_callback_without_a_state_is_refused(client, fake_github, oauth_app):
    fake_github.sign_in("aojea")
    flow = github_sign_in(client, fake_github, tamper=lambda cb: cb.split("&state=")[0])
    assert flow.answer.status_code == 400
    assert not User.objects.exists()


def test_a_wrong_code_is_githubs_bad_verification_code_and_nothing_is_saved(client, fake_github, oauth_app):
    fake_github.sign_in("aojea")
    flow = github_sign_in(
        client, fake_github, tamper=lambda cb: cb.replace("code=", "code=0000") if "code=" in cb else cb
    )
    body = flow.answer.content.decode()
    assert flow.answer.status_code == 400
    assert "GitHub refused the sign-in code: it was already used or has expired" in body
    assert not User.objects.exists()
    _nothing_saved(client)
    assert [r.path for r in fake_github.requests][-1] == "/login/oauth/access_token"


def test_a_replayed_callback_is_refused(client, fake_github, oauth_app):
    fake_github.sign_in("aojea")
    flow = github_sign_in(client, fake_github)
    assert flow.answer.status_code == 302
    client.post("/logout/")
    again = client.get(flow.callback)  # the same code and state, a second time
    assert again.status_code == 400
    assert "Nothing was saved" in again.content.decode()
    assert "_auth_user_id" not in client.session


def test_cancelling_on_github_is_said_plainly(client, fake_github, oauth_app):
    fake_github.sign_in("aojea")

    def cancelled(callback: str) -> str:  # GitHub's answer to Cancel: error=access_denied, the state kept
        state = parse_qs(urlsplit(callback).query)["state"][0]
        denied = "error=access_denied&error_description=The+user+has+denied+your+application+access."
        return f"{CALLBACK_PATH}?{denied}&state={state}"

    flow = github_sign_in(client, fake_github, tamper=cancelled)
    assert flow.answer.status_code == 400
    assert "You cancelled the sign-in on GitHub. Nothing was saved." in flow.answer.content.decode()
    assert not User.objects.exists()


def test_an_owner_entry_linked_to_another_account_refuses_a_second_account(
    client, fake_github, oauth_app, kep, requester
):
    EnhancementOwner.objects.create(enhancement=kep, github="Alice", user=requester)
    fake_github.sign_in("alice")
    flow = github_sign_in(client, fake_github)
    body = flow.answer.content.decode()
    assert flow.answer.status_code == 409
    assert "KEP-2400 lists @alice as an owner already linked to the releasecal account “requester”" in body
    assert "Nothing was saved." in body
    assert list(User.objects.all()) == [requester]
    _nothing_saved(client)


def test_an_email_another_account_uses_refuses_a_second_account(client, fake_github, oauth_app, requester):
    fake_github.sign_in("someone", email="Requester@Example.com")
    flow = github_sign_in(client, fake_github)
    body = flow.answer.content.decode()
    assert flow.answer.status_code == 409
    assert "The releasecal account “requester” already uses the email address GitHub gave for @someone" in body
    assert list(User.objects.all()) == [requester]


def test_a_staff_account_connects_github_and_its_handle_is_linked(client, fake_github, oauth_app, kep, staff):
    EnhancementOwner.objects.create(enhancement=kep, github="staffer")
    client.force_login(staff)
    fake_github.sign_in("staffer")
    flow = github_sign_in(client, fake_github, next_url="/me/", process="connect")
    assert flow.answer.status_code == 302
    assert flow.answer["Location"] == "/me/"
    assert SocialAccount.objects.get().user == staff
    assert [k.number for k in enhancement_list_of_user(user=staff)] == [2400]
    assert User.objects.count() == 1


def test_connecting_a_github_account_another_account_signs_in_with_is_refused(client, fake_github, oauth_app, staff):
    fake_github.sign_in("aojea")
    github_sign_in(client, fake_github)
    contributor = User.objects.exclude(pk=staff.pk).get()
    client.post("/logout/")
    client.force_login(staff)
    flow = github_sign_in(client, fake_github, next_url="/me/", process="connect")
    body = flow.answer.content.decode()
    assert flow.answer.status_code == 409
    assert f"GitHub @aojea is already how the releasecal account “{contributor.username}” signs in" in body
    assert SocialAccount.objects.get().user == contributor


def test_a_second_github_account_for_one_releasecal_account_is_refused(client, fake_github, oauth_app, staff):
    client.force_login(staff)
    fake_github.sign_in("first")
    github_sign_in(client, fake_github, process="connect")
    fake_github.sign_in("second")
    flow = github_sign_in(client, fake_github, process="connect")
    assert flow.answer.status_code == 409
    assert "already connected to GitHub as @first; it cannot also be @second" in flow.answer.content.decode()
    assert SocialAccount.objects.count() == 1


def test_no_password_sign_up(client, db):
    response = client.get("/accounts/signup/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    response = client.post("/accounts/login/", {"login": "x", "password": "y"})
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


@override_settings(SOCIALACCOUNT_PROVIDERS={"github": {"APPS": []}})
def test_without_an_oauth_app_the_login_page_says_so_and_the_start_is_a_404(client, db):
    page = client.get("/login/").content.decode()
    assert "GitHub sign-in is not set up on this site" in page
    assert 'id="github-sign-in"' not in page
    response = client.post("/accounts/github/login/")
    assert response.status_code == 404
