"""The board's fixtures, for every test that writes or reads a board (``tests/github``,
and the outbox's rules in ``tests/outbox``): a FakeGitHub of the test's own (never the
sign-in fixture's socket), a 1.31 board on it, and the settings pointing releasecal's
client at it. A conftest imports them by name."""

from __future__ import annotations

import pytest

from github.models import Board
from tests.support.fake_github import FakeGitHub, k8s_board
from tests.support.fake_github.schemas import graphql_schema


@pytest.fixture
def github():
    """A running fake GitHub; at the end, every REST answer passed the OpenAPI check.
    GitHub's GraphQL schema is built here, once per process (seconds on a loaded
    machine), not inside the first request, whose client waits GITHUB_TIMEOUT only."""
    graphql_schema()
    with FakeGitHub() as running:
        yield running
        running.check()


@pytest.fixture
def enhancements(github):
    return github.repository("kubernetes/enhancements")


@pytest.fixture
def project(github):
    return k8s_board(github, number=241, release="1.31")


@pytest.fixture
def github_settings(settings, github):
    """releasecal's client on the fake with a fine-grained token that may read projects."""
    settings.GITHUB_API_URL = github.api_url
    settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "read", "metadata": "read"}
    )
    settings.GITHUB_APP_ID = 0
    settings.GITHUB_APP_PRIVATE_KEY = ""
    settings.GITHUB_APP_INSTALLATION_ID = 0
    settings.GITHUB_TIMEOUT = 5
    return settings


@pytest.fixture
def board(release, github_settings, project):
    return Board.objects.create(release=release, owner="kubernetes", number=241)
