"""Authorization matrix: every endpoint x {anonymous, requester, release-team member, staff}.

Reads are public; writes need a token; deciding needs the release-team permission and
never your own request.

Every cell checks its effect, not only its status: an allowed read returns the rows it
names (literal values, at a fixed now inside the 1.31 cycle), an allowed write changed
the rows it says it changed and answers with them, and a refused write changed nothing.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import Decision, ExceptionRequest, SignOff
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


# An hour after the pending request was filed, five days before rc.0.
NOW = dt.datetime(2024, 7, 24, 4, 0, tzinfo=dt.UTC)
CYCLE = ["enhancements-freeze", "code-freeze", "rc", "ga"]
UPCOMING = ["code-freeze", "rc", "ga"]  # the code freeze's window runs to 7 August


def _effect_of_success(method: str, path: str, body: dict, actor: User, pending: ExceptionRequest, freeze) -> None:
    """What an allowed call did: the response's key fields and, for writes, the rows."""
    pending.refresh_from_db()
    if (method, path) == ("get", "/api/v1/releases/"):
        assert [r["slug"] for r in body["results"]] == ["1.31"]
    elif (method, path) == ("get", "/api/v1/releases/1.31/"):
        assert (body["slug"], body["zone"]) == ("1.31", "America/Los_Angeles")
        assert [m["kind"] for m in body["milestones"]] == CYCLE
    elif (method, path) == ("get", "/api/v1/releases/1.31/milestones/"):
        assert [m["kind"] for m in body["results"]] == CYCLE
        assert body["results"][1]["deadline"] == "2024-07-24T02:00:00Z"
    elif path.startswith("/api/v1/milestones/?"):
        assert [m["kind"] for m in body["results"]] == UPCOMING
    elif path.startswith("/api/v1/enhancements/?"):
        assert [e["number"] for e in body["results"]] == [2400]
        assert body["results"][0]["tracking"] == [
            {"release": "1.31", "stage": "beta", "status": "exception_pending", "pr_urls": [], "missed_freeze": None}
        ]
    elif path == "/api/v1/enhancements/2400/":
        assert [(r["id"], r["state"], r["days"]) for r in body["exception_requests"]] == [(pending.pk, "pending", 2)]
    elif path.startswith("/api/v1/deadlines/next/"):
        assert body["now"] == "2024-07-24T04:00:00Z"
        shown = body["next"]
        assert (shown["kind"], shown["deadline"], shown["deadline_viewer"]["display"]) == (
            "rc",
            "2024-07-30T17:00:00Z",
            "19:00 CEST Tuesday 30 July 2024 (17:00 UTC Tuesday 30 July 2024)",
        )
    elif path == "/api/v1/exceptions/?state=pending":
        assert [r["id"] for r in body["results"]] == [pending.pk]
    elif (method, path) == ("get", "/api/v1/exceptions/{id}/"):
        assert (body["id"], body["state"], body["requester"], body["days"]) == (pending.pk, "pending", "requester", 2)
    elif path == "/api/v1/exceptions/parse/":
        assert body["fields"]["days"] == 2
    elif (method, path) == ("post", "/api/v1/exceptions/"):
        filed = ExceptionRequest.objects.get(pk=body["id"])
        assert (filed.requester, filed.milestone, filed.state, filed.days) == (actor, freeze, "pending", 2)
        assert (body["requester"], body["kep"]["number"], body["milestone"]["kind"]) == (
            actor.username,
            2400,
            "enhancements-freeze",
        )
    elif method == "patch":
        assert pending.days == 3
        assert [(r.number, r.days, r.created_by) for r in pending.revisions.order_by("number")][-1] == (2, 3, actor)
        assert (body["days"], body["current"]["number"], body["current"]["created_by"]) == (3, 2, actor.username)
    elif path.endswith("/signoff/"):
        assert [(s.author, s.role) for s in pending.signoffs.all()] == [(actor, "1.31 release team")]
        assert [(s["author"], s["role"]) for s in body["signoffs"]] == [(actor.username, "1.31 release team")]
    elif path.endswith("/approve/"):
        decision = pending.decision
        assert (pending.state, decision.outcome, decision.decided_by) == ("approved", "approved", actor)
        assert decision.granted_until == dt.datetime(2024, 7, 26, 7, 0, tzinfo=dt.UTC)  # end of Thu 25 July PDT
        assert (body["state"], body["decision"]["decided_by"], body["decision"]["granted_until"]) == (
            "approved",
            actor.username,
            "2024-07-26T07:00:00Z",
        )
    elif path.endswith("/reject/"):
        decision = pending.decision
        assert (pending.state, decision.outcome, decision.decided_by, decision.note) == (
            "rejected",
            "rejected",
            actor,
            "too late",
        )
        assert (body["state"], body["decision"]["note"], body["decision"]["granted_until"]) == (
            "rejected",
            "too late",
            None,
        )
    elif path.endswith("/withdraw/"):
        assert pending.state == "withdrawn"
        assert not Decision.objects.filter(request=pending).exists()
        assert body["state"] == "withdrawn"
    else:
        raise AssertionError(f"no effect check for {method} {path}")


def _nothing_changed(pending: ExceptionRequest, requests_before: int) -> None:
    pending.refresh_from_db()
    assert (pending.state, pending.days, pending.revisions.count()) == ("pending", 2, 1)
    assert not SignOff.objects.filter(request=pending).exists()
    assert not Decision.objects.filter(request=pending).exists()
    assert ExceptionRequest.objects.count() == requests_before


def _client(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def actors(requester, release_team_member, staff) -> dict[str, User | None]:
    return {"anonymous": None, "requester": requester, "release_team": release_team_member, "staff": staff}


@pytest.mark.parametrize(("method", "path", "body", "expected"), MATRIX, ids=[f"{m} {p}" for m, p, _, _ in MATRIX])
@pytest.mark.parametrize("role", ROLES)
def test_authorization_matrix(
    role, method, path, body, expected, actors, pending_request, enhancements_freeze, monkeypatch
):
    now = NOW
    if body == "new_request":
        # File within the enhancements-freeze window (a day after the freeze).
        now = enhancements_freeze.deadline + dt.timedelta(days=1)
        body = {"kep": 2400, "milestone": enhancements_freeze.pk, "days": 2, "stage": "beta"}
    monkeypatch.setattr(tz, "utc_now", lambda: now)
    requests_before = ExceptionRequest.objects.count()
    url = path.format(id=pending_request.pk)
    response = getattr(_client(actors[role]), method)(url, body, format="json")
    want = expected[ROLES.index(role)]
    assert response.status_code == want, response.content
    if want >= 400:
        assert set(response.json()) == {"message", "extra"}
        _nothing_changed(pending_request, requests_before)
    else:
        _effect_of_success(method, path, response.json(), actors[role], pending_request, enhancements_freeze)


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
