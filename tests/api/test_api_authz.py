"""Authorization matrix: every endpoint x {anonymous, requester, release-team member, staff}.

Reads are public; writes need a token; deciding needs the release-team permission and
never your own request.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.services import exception_request_approve
from releasecal import tz

ROLES = ["anonymous", "requester", "release_team", "staff"]

# (method, path template, body, expected status per role)
MATRIX = [
    ("get", "/api/v1/releases/", None, (200, 200, 200, 200)),
    ("get", "/api/v1/releases/1.31/", None, (200, 200, 200, 200)),
    ("get", "/api/v1/releases/1.31/milestones/", None, (200, 200, 200, 200)),
    ("get", "/api/v1/milestones/?release=1.31&upcoming=true", None, (200, 200, 200, 200)),
    ("get", "/api/v1/enhancements/?release=1.31&sig=node", None, (200, 200, 200, 200)),
    ("get", "/api/v1/enhancements/2400/", None, (200, 200, 200, 200)),
    ("get", "/api/v1/deadlines/next/?release=1.31&tz=Europe/Berlin", None, (200, 200, 200, 200)),
    ("get", "/api/v1/exceptions/?state=pending", None, (200, 200, 200, 200)),
    ("get", "/api/v1/exceptions/{id}/", None, (200, 200, 200, 200)),
    ("post", "/api/v1/exceptions/parse/", {"text": "Additional time needed: 2 days"}, (200, 200, 200, 200)),
    ("post", "/api/v1/exceptions/", "new_request", (401, 201, 201, 201)),
    ("patch", "/api/v1/exceptions/{id}/", {"days": 3}, (401, 200, 200, 200)),
    # A sign-off needs a SIG lead or the release's team (issue 13 item 10): not the requester, not staff.
    ("post", "/api/v1/exceptions/{id}/signoff/", {"role": "SIG Node lead"}, (401, 403, 201, 403)),
    ("post", "/api/v1/exceptions/{id}/approve/", {}, (401, 403, 200, 403)),
    ("post", "/api/v1/exceptions/{id}/reject/", {"note": "too late"}, (401, 403, 200, 403)),
    ("post", "/api/v1/exceptions/{id}/withdraw/", {}, (401, 200, 200, 200)),
]


def _client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Three users per case, 64 cases: the default PBKDF2 rounds would dominate the run.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def actors(requester, release_team_member, staff) -> dict[str, User | None]:
    return {"anonymous": None, "requester": requester, "release_team": release_team_member, "staff": staff}


@pytest.mark.parametrize(("method", "path", "body", "expected"), MATRIX, ids=[f"{m} {p}" for m, p, _, _ in MATRIX])
@pytest.mark.parametrize("role", ROLES)
def test_authorization_matrix(
    role, method, path, body, expected, actors, pending_request, enhancements_freeze, monkeypatch
):
    if body == "new_request":
        # File within the enhancements-freeze window (a day after the freeze).
        now = enhancements_freeze.deadline + dt.timedelta(days=1)
        monkeypatch.setattr(tz, "utc_now", lambda: now)
        body = {"kep": 2400, "milestone": enhancements_freeze.pk, "days": 2, "stage": "beta"}
    url = path.format(id=pending_request.pk)
    response = getattr(_client(actors[role]), method)(url, body, format="json")
    want = expected[ROLES.index(role)]
    assert response.status_code == want, response.content
    if want >= 400:
        assert set(response.json()) == {"message", "extra"}


def test_the_requester_cannot_decide_their_own_request_even_on_the_release_team(pending_request, requester):
    requester.groups.add(Group.objects.get(name="Release Team"))
    pending_request.release.team.add(requester)
    response = _client(requester).post(f"/api/v1/exceptions/{pending_request.pk}/approve/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["message"] == ("You filed this request, so someone else on the release team must decide it.")


def test_an_invalid_token_is_a_401(pending_request):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-key")
    response = client.post(f"/api/v1/exceptions/{pending_request.pk}/withdraw/", {}, format="json")
    assert response.status_code == 401
    assert response.json()["message"] == "Invalid token."


def test_reads_stay_public_with_a_decided_request(pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)
    body = APIClient().get(f"/api/v1/exceptions/{pending_request.pk}/").json()
    assert body["decision"]["decided_by"] == "lead"
    assert body["decision"]["granted_until_local"]["abbreviation"] == "PDT"
