"""The fake GitHub's own tests: a fake per test, its own port, checked at the end."""

from __future__ import annotations

import pytest
import requests

from tests.support.fake_github import FakeGitHub, k8s_board


@pytest.fixture
def fake():
    """A running FakeGitHub on a port of its own; at the end, every REST answer it gave
    must have passed GitHub's OpenAPI description (fake.check())."""
    with FakeGitHub() as running:
        yield running
        running.check()


@pytest.fixture
def board(fake):
    """The 1.36 board with two KEP issues on it and a draft item."""
    repo = fake.repository("kubernetes/enhancements")
    cidrs = repo.issue(
        1880,
        "Multiple Service CIDRs",
        labels=["lead-opted-in", "sig/network", "tracked/yes"],
        milestone="v1.36",
        assignees=["aojea"],
    )
    swap = repo.issue(2400, "Node memory swap support", labels=["lead-opted-in", "sig/node"], milestone="v1.36")
    project = k8s_board(fake)
    project.add_issue(cidrs, {"Status": "Tracked For Code Freeze", "Stage": "Stable", "SIG": "sig-network"})
    project.add_issue(swap, {"Status": "At Risk For Code Freeze", "Stage": "Stable", "Note": "waiting on reviews"})
    project.add_draft(
        "KEP-1880: second exception", body="docs freeze", values={"Exception Request Type": "Docs Freeze"}
    )
    return project


class Client:
    """What a test talks to the fake with: requests, a token, GraphQL and REST helpers."""

    def __init__(self, fake: FakeGitHub, token: str):
        self.fake = fake
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"bearer {token}"

    def graphql(self, query: str, **variables) -> requests.Response:
        return self.session.post(self.fake.graphql_url, json={"query": query, "variables": variables}, timeout=10)

    def rest(self, method: str, path: str, **kwargs) -> requests.Response:
        return self.session.request(method, self.fake.api_url + path, timeout=10, **kwargs)


@pytest.fixture
def client(fake):
    return Client(fake, fake.token("releasecal-bot"))
