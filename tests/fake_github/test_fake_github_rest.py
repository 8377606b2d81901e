"""The fake GitHub's REST (validated against GitHub's OpenAPI description), OAuth, Apps,
limits and faults."""

from __future__ import annotations

import time
from urllib.parse import parse_qs, urlsplit

import requests

from tests.fake_github.conftest import Client
from tests.support.fake_github import FakeGitHub

ISSUE = "/repos/kubernetes/enhancements/issues/1880"


def test_comments_labels_and_milestones_as_github_serves_them(client, board, fake):
    created = client.rest("POST", f"{ISSUE}/comments", json={"body": "/remove-label tracked/yes\n/label tracked/no"})
    assert created.status_code == 201
    assert created.json()["html_url"].startswith("https://github.com/kubernetes/enhancements/issues/1880#issuecomment-")
    assert created.headers["location"] == created.json()["url"]
    for n in range(2, 36):
        client.rest("POST", f"{ISSUE}/comments", json={"body": f"comment {n}"})
    page = client.rest("GET", f"{ISSUE}/comments", params={"per_page": 30})
    assert len(page.json()) == 30
    assert 'rel="next"' in page.headers["link"]
    last = client.rest("GET", f"{ISSUE}/comments", params={"per_page": 30, "page": 2})
    assert [c["body"] for c in last.json()] == [f"comment {n}" for n in range(31, 36)]

    added = client.rest("POST", f"{ISSUE}/labels", json={"labels": ["tracked/no"]})
    assert [label["name"] for label in added.json()] == ["lead-opted-in", "sig/network", "tracked/yes", "tracked/no"]
    removed = client.rest("DELETE", f"{ISSUE}/labels/tracked%2Fyes")
    assert [label["name"] for label in removed.json()] == ["lead-opted-in", "sig/network", "tracked/no"]
    again = client.rest("DELETE", f"{ISSUE}/labels/tracked%2Fyes")
    assert again.status_code == 404
    assert again.json()["message"] == "Label does not exist"

    milestones = client.rest("GET", "/repos/kubernetes/enhancements/milestones").json()
    assert [m["title"] for m in milestones] == ["v1.36"]
    cleared = client.rest("PATCH", ISSUE, json={"milestone": None})
    assert cleared.status_code == 200
    assert cleared.json()["milestone"] is None
    set_again = client.rest("PATCH", ISSUE, json={"milestone": milestones[0]["number"]})
    assert set_again.json()["milestone"]["title"] == "v1.36"
    unknown = client.rest("PATCH", ISSUE, json={"milestone": 99})
    assert unknown.status_code == 422
    assert unknown.json()["errors"][0]["field"] == "milestone"
    assert [c.kind for c in fake.changes(via="rest")].count("comment") == 35
    assert [(c.kind, c.name) for c in fake.changes(via="rest") if c.kind.startswith("label")] == [
        ("label-added", "tracked/no"),
        ("label-removed", "tracked/yes"),
    ]
    assert [(c.before, c.after) for c in fake.changes("milestone")] == [("v1.36", None), (None, "v1.36")]
    assert fake.fake_bugs == []


def test_locked_deleted_and_missing_issues_answer_as_github(client, board, fake):
    issue = fake.repository().issues[1880]
    issue.locked = True
    locked = client.rest("POST", f"{ISSUE}/comments", json={"body": "hello"})
    assert locked.status_code == 403
    assert locked.json()["message"] == "Unable to create comment because issue is locked."
    assert client.rest("POST", f"{ISSUE}/labels", json={"labels": ["tracked/no"]}).status_code == 200  # labels still
    issue.deleted = True
    gone = client.rest("GET", ISSUE)
    assert gone.status_code == 410
    assert gone.json()["message"] == "This issue was deleted"
    assert client.rest("POST", f"{ISSUE}/comments", json={"body": "hello"}).status_code == 410
    missing = client.rest("GET", "/repos/kubernetes/enhancements/issues/999999")
    assert missing.status_code == 404
    assert missing.json()["message"] == "Not Found"
    invalid = client.rest("POST", "/repos/kubernetes/enhancements/issues/2400/comments", json={"bodyy": "x"})
    assert invalid.status_code == 422
    assert invalid.json()["message"].startswith("Invalid request.")
    assert fake.changes("comment") == []


def test_tokens_without_issue_write_are_refused_with_githubs_answer(fake, board):
    classic = Client(fake, fake.token("reader", scopes=("read:project",)))
    assert classic.rest("GET", ISSUE).status_code == 200
    refused = classic.rest("POST", f"{ISSUE}/comments", json={"body": "x"})
    assert refused.status_code == 404
    assert refused.json()["message"] == "Not Found"
    assert refused.headers["x-oauth-scopes"] == "read:project"
    assert refused.headers["x-accepted-oauth-scopes"] == "repo"
    fine = Client(fake, fake.token("reader2", kind="fine-grained", permissions={"issues": "read"}))
    forbidden = fine.rest("POST", f"{ISSUE}/labels", json={"labels": ["x"]})
    assert forbidden.status_code == 403
    assert forbidden.json()["message"] == "Resource not accessible by personal access token"
    assert forbidden.headers["x-accepted-github-permissions"] == "issues=write"
    anonymous = requests.post(fake.api_url + f"{ISSUE}/comments", json={"body": "x"}, timeout=10)
    assert anonymous.status_code == 401
    assert anonymous.headers["x-ratelimit-limit"] == "60"
    assert fake.changes("comment") == []
    assert fake.changes("label-added") == []


def test_rest_primary_and_secondary_limits_with_the_real_headers(client, board, fake):
    first = client.rest("GET", ISSUE)
    assert first.headers["x-ratelimit-resource"] == "core"
    assert (
        first.headers["x-ratelimit-limit"],
        first.headers["x-ratelimit-remaining"],
        first.headers["x-ratelimit-used"],
    ) == (
        "5000",
        "4999",
        "1",
    )
    fake.limits.set_remaining("core", 0, reset_in=120)
    refused = client.rest("GET", ISSUE)
    assert refused.status_code == 403
    assert refused.headers["x-ratelimit-remaining"] == "0"
    assert int(refused.headers["x-ratelimit-reset"]) - fake.time() > 100
    assert refused.json()["message"].startswith("API rate limit exceeded for user ID")
    fake.limits.primary_status = 429
    assert client.rest("GET", ISSUE).status_code == 429
    fake.advance(121)
    assert client.rest("GET", ISSUE).status_code == 200
    fake.limits.content_per_minute = 2
    assert client.rest("POST", f"{ISSUE}/comments", json={"body": "1"}).status_code == 201
    assert client.rest("POST", f"{ISSUE}/comments", json={"body": "2"}).status_code == 201
    fake.limits.secondary_status = 429
    third = client.rest("POST", f"{ISSUE}/comments", json={"body": "3"})
    assert third.status_code == 429
    assert int(third.headers["retry-after"]) >= 1
    assert [c.after for c in fake.changes("comment")] == ["1", "2"]
    assert client.rest("GET", "/rate_limit").json()["resources"]["core"]["used"] == 3


def test_faults_502_slow_and_lost_replies(client, board, fake):
    fake.faults.fail_next(2, status=502, match="POST .*/comments")
    assert client.rest("POST", f"{ISSUE}/comments", json={"body": "a"}).status_code == 502
    assert client.rest("GET", ISSUE).status_code == 200  # not matched
    assert client.rest("POST", f"{ISSUE}/comments", json={"body": "a"}).status_code == 502
    assert client.rest("POST", f"{ISSUE}/comments", json={"body": "a"}).status_code == 201
    assert len(fake.changes("comment")) == 1
    fake.faults.fail_next(1, status=502, match="graphql", after=True)  # written, then the answer is lost
    lost = client.graphql("{ viewer { login } }")
    assert lost.status_code == 502
    assert "Something went wrong" in lost.json()["errors"][0]["message"]
    fake.faults.slow_next(0.5, match="rest")
    started = time.monotonic()
    assert client.rest("GET", ISSUE).status_code == 200
    assert time.monotonic() - started >= 0.5
    assert [r.fault for r in fake.requests if r.fault] == ["status 502", "status 502", "after 502", "delay 0.5"]
    comments = fake.rest_requests("POST", "/comments")
    assert [r.status for r in comments] == [502, 502, 201]


def test_enterprise_paths_for_allauth_and_the_oauth_web_flow(fake, board):
    app = fake.oauth_app("Iv1.client", "s3cret", "http://127.0.0.1:8000/accounts/github/login/callback/")
    fake.sign_in("aojea", name="Antonio Ojea", email="aojea@example.org")
    authorize = requests.get(
        fake.url + "/login/oauth/authorize",
        params={"client_id": app.client_id, "redirect_uri": app.callback_url, "scope": "user:email", "state": "xyz"},
        allow_redirects=False,
        timeout=10,
    )
    assert authorize.status_code == 302
    location = urlsplit(authorize.headers["location"])
    query = parse_qs(location.query)
    assert query["state"] == ["xyz"]
    assert location.path == "/accounts/github/login/callback/"
    code = query["code"][0]
    exchange = {"client_id": app.client_id, "client_secret": "s3cret", "code": code, "redirect_uri": app.callback_url}
    token = requests.post(
        fake.url + "/login/oauth/access_token", data=exchange, headers={"Accept": "application/json"}, timeout=10
    )
    assert token.status_code == 200
    assert token.json()["token_type"] == "bearer"
    assert token.json()["scope"] == "user:email"
    reused = requests.post(fake.url + "/login/oauth/access_token", data=exchange, timeout=10)
    assert reused.status_code == 200  # GitHub answers errors of this endpoint with 200
    assert parse_qs(reused.text)["error"] == ["bad_verification_code"]
    assert parse_qs(reused.text)["error_description"] == ["The code passed is incorrect or expired."]
    wrong_secret = requests.post(
        fake.url + "/login/oauth/access_token",
        data={**exchange, "client_secret": "x"},
        headers={"Accept": "application/json"},
        timeout=10,
    )
    assert wrong_secret.json()["error"] == "incorrect_client_credentials"

    other = fake.oauth_app("Iv1.other", "other", "http://127.0.0.1:9000/cb/")
    second = requests.get(
        fake.url + "/login/oauth/authorize", params={"client_id": app.client_id}, allow_redirects=False, timeout=10
    )
    foreign_code = parse_qs(urlsplit(second.headers["location"]).query)["code"][0]
    foreign = requests.post(
        fake.url + "/login/oauth/access_token",
        json={"client_id": other.client_id, "client_secret": "other", "code": foreign_code},
        headers={"Accept": "application/json"},
        timeout=10,
    )
    assert foreign.json()["error"] == "bad_verification_code"
    mismatch = requests.get(
        fake.url + "/login/oauth/authorize",
        params={"client_id": app.client_id, "redirect_uri": "http://evil.example/cb"},
        allow_redirects=False,
        timeout=10,
    )
    assert parse_qs(urlsplit(mismatch.headers["location"]).query)["error"] == ["redirect_uri_mismatch"]

    user_token = token.json()["access_token"]
    profile = requests.get(fake.url + "/api/v3/user", headers={"Authorization": f"token {user_token}"}, timeout=10)
    assert profile.status_code == 200
    assert (profile.json()["login"], profile.json()["name"], profile.json()["email"]) == (
        "aojea",
        "Antonio Ojea",
        "aojea@example.org",
    )
    assert isinstance(profile.json()["id"], int)
    emails = requests.get(
        fake.url + "/api/v3/user/emails", headers={"Authorization": f"token {user_token}"}, timeout=10
    )
    assert emails.json() == [{"email": "aojea@example.org", "primary": True, "verified": True, "visibility": "public"}]
    no_scope = fake.token("aojea", kind="oauth", scopes=())
    assert (
        requests.get(
            fake.url + "/api/v3/user/emails", headers={"Authorization": f"token {no_scope}"}, timeout=10
        ).status_code
        == 404
    )


def test_github_app_jwt_and_installation_tokens(fake, board):
    app = fake.app(app_id=1234)
    installation = fake.install(app, "kubernetes", permissions={"organization_projects": "write", "issues": "write"})
    url = f"{fake.url}/app/installations/{installation}/access_tokens"
    made = requests.post(url, headers={"Authorization": f"Bearer {app.jwt()}"}, timeout=10)
    assert made.status_code == 201
    assert made.json()["token"].startswith("ghs_")
    installation_client = Client(fake, made.json()["token"])
    assert (
        "errors"
        not in installation_client.graphql(
            '{ organization(login: "kubernetes") { projectV2(number: 241) { id } } }'
        ).json()
    )
    assert installation_client.rest("GET", "/user").json()["message"] == "Resource not accessible by integration"
    expired = app.jwt(lifetime=-10, issued_ago=120)
    refused = requests.post(url, headers={"Authorization": f"Bearer {expired}"}, timeout=10)
    assert refused.status_code == 401
    assert "'Expiration time' claim ('exp')" in refused.json()["message"]
    assert requests.post(url, headers={"Authorization": f"Bearer {app.jwt(lifetime=900)}"}, timeout=10).json()[
        "message"
    ] == ("'Expiration time' claim ('exp') is too far in the future")
    stranger = fake.app(app_id=99)
    forged = stranger.jwt().replace(".", ".", 1)
    import jwt as pyjwt

    claims = pyjwt.decode(forged, options={"verify_signature": False})
    signed_by_other = pyjwt.encode({**claims, "iss": "1234"}, stranger.private_key_pem, algorithm="RS256")
    assert requests.post(url, headers={"Authorization": f"Bearer {signed_by_other}"}, timeout=10).json()["message"] == (
        "A JSON web token could not be decoded"
    )
    too_much = requests.post(
        url,
        json={"permissions": {"administration": "write"}},
        headers={"Authorization": f"Bearer {app.jwt()}"},
        timeout=10,
    )
    assert too_much.status_code == 422
    fake.advance(3601)
    assert installation_client.graphql("{ viewer { login } }").status_code == 401


def test_one_process_loads_the_schemas_once_and_a_fake_starts_in_milliseconds():
    started = time.monotonic()
    with FakeGitHub() as fake:
        fake.repository().issue(1, "x")
        token = fake.token()
        assert (
            requests.get(
                fake.api_url + "/repos/kubernetes/enhancements/issues/1",
                headers={"Authorization": f"token {token}"},
                timeout=10,
            ).status_code
            == 200
        )
        assert (
            requests.post(
                fake.graphql_url,
                json={"query": "{ viewer { login } }"},
                headers={"Authorization": f"token {token}"},
                timeout=10,
            ).status_code
            == 200
        )
    assert time.monotonic() - started < 2.0  # the schemas were loaded by earlier tests of this process
