"""The board's GitHub client: credentials from the environment (a token or a GitHub App),
GitHub's refusals, faults and rate limits in an operator's words; the queries are
GitHub's (validated against its published schema)."""

from __future__ import annotations

import pytest
from graphql import parse, validate

from github import client as github_client
from github.client import GitHubUnavailable, credentials
from github.services import BoardRefused, board_sync
from tests.support.fake_github.graphql_api import schema


@pytest.mark.parametrize("name", sorted(path.stem for path in github_client.QUERIES.glob("*.graphql")))
def test_every_query_is_valid_against_githubs_schema(name):
    assert validate(schema(), parse(github_client.query(name))) == []


def test_no_credentials_is_off(settings):
    settings.GITHUB_TOKEN = ""
    settings.GITHUB_APP_ID = settings.GITHUB_APP_INSTALLATION_ID = 0
    settings.GITHUB_APP_PRIVATE_KEY = ""
    assert credentials() is None
    assert github_client.board_client() is None


def test_a_token_and_an_app_at_once_or_half_an_app_are_refused_by_name(settings):
    settings.GITHUB_TOKEN = "github_pat_x"
    settings.GITHUB_APP_ID = 12
    settings.GITHUB_APP_PRIVATE_KEY = ""
    settings.GITHUB_APP_INSTALLATION_ID = 0
    with pytest.raises(GitHubUnavailable, match="GITHUB_TOKEN and GITHUB_APP_ID are both set"):
        credentials()
    settings.GITHUB_TOKEN = ""
    with pytest.raises(
        GitHubUnavailable,
        match="A GitHub App needs GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID: "
        "GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID is not set",
    ):
        credentials()


def test_a_board_without_credentials_is_refused_with_what_to_set(board, settings):
    settings.GITHUB_TOKEN = ""
    with pytest.raises(BoardRefused, match="No GitHub credentials are set: GITHUB_TOKEN, or GITHUB_APP_ID"):
        board_sync(board=board, dry_run=True)


def test_it_reads_as_a_github_app_installation(board, github, github_settings):
    app = github.app(app_id=1234)
    installation = github.install(app, "kubernetes")
    github_settings.GITHUB_TOKEN = ""
    github_settings.GITHUB_APP_ID = 1234
    github_settings.GITHUB_APP_PRIVATE_KEY = app.private_key_pem
    github_settings.GITHUB_APP_INSTALLATION_ID = installation
    report = board_sync(board=board, dry_run=True)
    assert report.title == "v1.31 Release Tracking"
    assert [(r.method, r.path, r.kind, r.actor) for r in github.requests] == [
        ("POST", f"/app/installations/{installation}/access_tokens", "app", "releasecal[bot]"),
        ("POST", "/graphql", "graphql", "releasecal[bot]"),
        ("POST", "/graphql", "graphql", "releasecal[bot]"),
    ]


def test_a_token_without_the_projects_permission_is_a_clear_refusal(board, github, github_settings):
    github_settings.GITHUB_TOKEN = github.token("someone", kind="fine-grained", permissions={"issues": "read"})
    with pytest.raises(BoardRefused) as refused:
        board_sync(board=board, dry_run=True)
    assert refused.value.message == (
        "The board kubernetes/241 could not be read: GitHub refused the query: "
        "FORBIDDEN: Resource not accessible by personal access token"
    )
    board.refresh_from_db()
    assert board.reachable is False
    assert board.last_error.startswith("GitHub refused the query: FORBIDDEN")


def test_bad_credentials_and_a_missing_board_are_named(board, github, github_settings):
    github_settings.GITHUB_TOKEN = "github_pat_nobody"
    with pytest.raises(BoardRefused, match=r"GitHub refused the credentials \(401 Bad credentials\)"):
        board_sync(board=board, dry_run=True)
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "read"}
    )
    board.number = 999
    board.save()
    with pytest.raises(BoardRefused, match="NOT_FOUND"):
        board_sync(board=board, dry_run=True)


def test_a_502_is_retried_and_the_read_completes(board, github):
    github.faults.fail_next(1, status=502, match="graphql")
    report = board_sync(board=board, dry_run=True)
    assert report.title == "v1.31 Release Tracking"
    assert [r.status for r in github.graphql_requests()] == [502, 200, 200]


def test_github_down_is_a_message_and_the_board_records_it(board, github):
    github.faults.fail_next(3, status=502, match="graphql")
    with pytest.raises(BoardRefused, match=r"GitHub answered 502 \(retried twice\)"):
        board_sync(board=board, dry_run=True)
    board.refresh_from_db()
    assert (board.reachable, board.last_synced_at) == (False, None)


def test_a_spent_rate_limit_says_when_it_comes_back(board, github):
    github.limits.set_remaining("graphql", 0, reset_in=120)
    with pytest.raises(
        BoardRefused,
        match=r"GitHub's rate limit is spent \(GraphQL RATE_LIMITED\): it comes back at \d\d:\d\d:\d\d UTC",
    ):
        board_sync(board=board, dry_run=True)
    assert len(github.graphql_requests()) == 1  # not waited out, not hammered
