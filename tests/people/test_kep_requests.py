"""The KEP page's request forms: a signed-in owner files and amends their own exception
request there, through exceptions.services (the API's policy and messages)."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from rest_framework.authtoken.models import Token

from exceptions.models import ExceptionRequest
from people.models import GitHubHandle
from releasecal import tz
from releasecal.models import EnhancementOwner, Release, Tracking
from releasecal.services import enhancement_upsert, milestone_create, tracking_set

pytestmark = pytest.mark.django_db

FORM = {"days": "3", "stage": "beta", "reason": "Two PRs are in review.", "risks_adding": "Low.", "pr_urls": ""}


def github_user(handle: str, uid: str = "4242") -> User:
    """A contributor as a GitHub sign-in leaves them (tests/people/test_github_sign_in.py
    drives the real flow): an account, allauth's SocialAccount and the handle."""
    user = User.objects.create_user(handle.lower())
    user.set_unusable_password()
    user.save()
    account = SocialAccount.objects.create(user=user, provider="github", uid=uid, extra_data={"login": handle})
    GitHubHandle.objects.create(account=account, handle=handle, first_seen_at=tz.utc_now())
    return user


@pytest.fixture
def current(kinds):
    """A release whose code freeze was a day ago: its request window is open."""
    now = tz.utc_now()
    release = Release.objects.create(
        slug="1.99", name="Kubernetes v1.99", zone="UTC", start_date=(now - dt.timedelta(days=60)).date(),
        ga_date=(now + dt.timedelta(days=30)).date(), status=Release.Status.ACTIVE,
    )  # fmt: skip
    freeze = milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze", at=now - dt.timedelta(days=1)
    )
    milestone_create(release=release, kind=kinds["rc"], title="rc.0", at=now + dt.timedelta(days=20))
    kep = enhancement_upsert(number=4444, title="Mine", owning_sig="node", owners=[{"github": "Owner-One"}])
    tracking_set(release=release, enhancement=kep, stage="beta", status="tracked")
    return kep, freeze


def test_an_owner_by_handle_files_a_request_from_the_kep_page(client, current):
    kep, freeze = current
    user = github_user("owner-one")  # the KEP writes @Owner-One
    client.force_login(user)
    page = client.get("/kep/4444/").content.decode()
    assert 'id="file-request"' in page
    assert f'<option value="{freeze.pk}"' in page

    response = client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk})

    assert response.status_code == 302
    assert response["Location"] == "/kep/4444/#requests"
    created = ExceptionRequest.objects.get()
    assert (created.requester, created.entered_by, created.state, created.days) == (user, user, "pending", 3)
    assert created.current.reason == "Two PRs are in review."
    assert created.current.enhancement_name == "Mine"
    assert Tracking.objects.get(enhancement=kep).status == Tracking.Status.EXCEPTION_PENDING
    page = client.get("/kep/4444/").content.decode()
    assert f"Request #{created.pk} is filed" in page
    assert f'data-request="{created.pk}"' in page  # now amendable


def test_a_late_request_is_refused_with_the_apis_message(client, current, code_freeze, kep):
    """The conftest's 1.31 closed its windows in 2024: the page and the API refuse alike."""
    user = github_user("kannon92")  # kep 2400 names @kannon92
    client.force_login(user)
    response = client.post("/kep/2400/requests/", {**FORM, "milestone": code_freeze.pk})
    assert response.status_code == 400
    page = response.content.decode()
    token = Token.objects.create(user=user)
    api = client.post(
        "/api/v1/exceptions/",
        {"kep": 2400, "milestone": code_freeze.pk, "days": 3, "reason": FORM["reason"]},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )
    assert api.status_code == 400
    message = api.json()["message"]
    assert message.startswith("The request window for Code Freeze closed at ")
    assert f'<p id="request-problem">{message}</p>' in page
    assert not ExceptionRequest.objects.exists()


def test_a_kep_that_does_not_name_you_has_no_form_and_refuses_a_post(client, current):
    _kep, freeze = current
    client.force_login(github_user("somebody-else"))
    page = client.get("/kep/4444/").content.decode()
    assert 'id="not-named"' in page
    assert 'id="file-request"' not in page
    response = client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk})
    assert response.status_code == 403
    assert "KEP-4444 does not name you" in response.content.decode()
    assert not ExceptionRequest.objects.exists()


def test_an_owner_linked_in_the_admin_files_too(client, current, requester):
    kep, freeze = current
    EnhancementOwner.objects.create(enhancement=kep, user=requester)
    client.force_login(requester)
    response = client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk})
    assert response.status_code == 302
    assert ExceptionRequest.objects.get().requester == requester


def test_anonymous_readers_are_offered_sign_in(client, current):
    page = client.get("/kep/4444/").content.decode()
    assert 'href="/login/?next=%2Fkep%2F4444%2F"' in page
    response = client.post("/kep/4444/requests/", FORM)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=/kep/4444/requests/")


def test_a_bad_form_is_a_400_showing_each_problem_and_nothing_is_saved(client, current):
    _kep, freeze = current
    client.force_login(github_user("owner-one"))
    response = client.post(
        "/kep/4444/requests/", {"milestone": freeze.pk, "days": "soon", "until_zone": "Mars/Olympus", "pr_urls": "nope"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "Enter a whole number." in page
    assert "Not a link: nope." in page
    assert "This field is required." in page  # the reason
    assert not ExceptionRequest.objects.exists()


def test_a_second_request_for_the_same_freeze_is_the_services_refusal(client, current):
    _kep, freeze = current
    client.force_login(github_user("owner-one"))
    assert client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk}).status_code == 302
    again = client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk})
    assert again.status_code == 400
    assert "already has a pending exception request" in again.content.decode()
    assert ExceptionRequest.objects.count() == 1


def test_the_requester_amends_their_pending_request(client, current):
    _kep, freeze = current
    client.force_login(github_user("owner-one"))
    client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk})
    created = ExceptionRequest.objects.get()
    prefix = f"r{created.pk}-"
    response = client.post(
        f"/kep/4444/requests/{created.pk}/amend/",
        {prefix + k: v for k, v in {**FORM, "days": "2", "reason": "One PR left."}.items()},
    )
    assert response.status_code == 302
    created.refresh_from_db()
    assert created.days == 2
    assert [r.days for r in created.revisions.order_by("number")] == [3, 2]
    assert created.current.reason == "One PR left."


def test_another_owners_request_cannot_be_amended_here(client, current):
    kep, freeze = current
    client.force_login(github_user("owner-one"))
    client.post("/kep/4444/requests/", {**FORM, "milestone": freeze.pk})
    created = ExceptionRequest.objects.get()
    EnhancementOwner.objects.create(enhancement=kep, github="co-owner")
    client.force_login(github_user("co-owner", uid="5151"))
    response = client.post(
        f"/kep/4444/requests/{created.pk}/amend/", {f"r{created.pk}-days": "1", f"r{created.pk}-reason": "x"}
    )
    assert response.status_code == 403
    assert f"Request #{created.pk} is not yours" in response.content.decode()
    assert ExceptionRequest.objects.get().days == 3


@pytest.fixture
def both_open(kinds):
    """A release whose PRR freeze was a day ago (its window open) and whose enhancements
    freeze is in six days: one request may name both."""
    now = tz.utc_now().replace(microsecond=0)
    release = Release.objects.create(
        slug="1.98", name="Kubernetes v1.98", zone="UTC", start_date=(now - dt.timedelta(days=30)).date(),
        ga_date=(now + dt.timedelta(days=90)).date(), status=Release.Status.ACTIVE,
    )  # fmt: skip
    prr = milestone_create(release=release, kind=kinds["prr-freeze"], title="PRR Freeze", at=now - dt.timedelta(days=1))
    enh = milestone_create(
        release=release, kind=kinds["enhancements-freeze"], title="Enhancements Freeze", at=now + dt.timedelta(days=6)
    )
    code = milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze", at=now + dt.timedelta(days=40)
    )
    kep = enhancement_upsert(number=4445, title="Both", owning_sig="node", owners=[{"github": "Owner-One"}])
    tracking_set(release=release, enhancement=kep, stage="alpha", status="tracked")
    return prr, enh, code


def test_an_owner_names_both_freezes_when_both_are_open(client, both_open):
    prr, enh, code = both_open
    client.force_login(github_user("owner-one"))
    page = client.get("/kep/4445/").content.decode()
    (select,) = re.findall(r'<select name="also_milestone".*?</select>', page, re.S)
    assert re.findall(r"<option[^>]*>([^<]*)</option>", select) == [
        "— (this deadline only)", "PRR Freeze (Kubernetes v1.98)", "Enhancements Freeze (Kubernetes v1.98)",
    ]  # fmt: skip

    # Named in either order, and only as the pair: each a form error, a 400, nothing saved.
    refused = client.post("/kep/4445/requests/", {**FORM, "milestone": prr.pk, "also_milestone": prr.pk})
    assert refused.status_code == 400
    assert (
        "A request names two freezes only for the PRR freeze and the enhancements freeze of one release (one "
        "completion date); PRR Freeze (1.98) and PRR Freeze (1.98) cannot be asked together: file one request per "
        "freeze." in html.unescape(refused.content.decode())
    )
    wrong = client.post("/kep/4445/requests/", {**FORM, "milestone": prr.pk, "also_milestone": code.pk})
    assert wrong.status_code == 400
    assert "Select a valid choice. That choice is not one of the available choices." in wrong.content.decode()
    junk = client.post("/kep/4445/requests/", {**FORM, "milestone": prr.pk, "also_milestone": "9" * 30})
    assert junk.status_code == 400
    assert not ExceptionRequest.objects.exists()

    response = client.post("/kep/4445/requests/", {**FORM, "milestone": enh.pk, "also_milestone": prr.pk})
    assert response.status_code == 302
    created = ExceptionRequest.objects.get()
    assert (created.milestone, created.also_milestone, created.days) == (prr, enh, 3)
    assert created.freezes_title == "PRR Freeze and Enhancements Freeze"


def test_no_second_freeze_is_offered_when_the_pair_is_not_open(client, current):
    client.force_login(github_user("owner-one"))
    page = client.get("/kep/4444/").content.decode()
    assert 'id="file-request"' in page
    assert 'name="also_milestone"' not in page
