"""A fake GitHub as strict as the real one where it matters (issues 25 and 26): GraphQL
executed by graphql-core against GitHub's published schema over an in-memory Projects (v2)
board, REST validated against GitHub's OpenAPI description, OAuth's web flow, GitHub App
JWTs and installation tokens, rate limits with the real headers, scripted faults, signed
webhooks validated against ``@octokit/webhooks-schemas``, and a record of every request.

    with FakeGitHub() as fake:
        board = k8s_board(fake)            # or fake.project("kubernetes", 241, "v1.36 Release Tracking")
        token = fake.token("releasecal-bot")
        ...                                # point the client at fake.graphql_url / fake.api_url
        assert board.item_for(issue).value("Exception Status") == "Approved"

How to use it in a test: docs/testing.md ("The fake GitHub").
"""

from tests.support.fake_github.boards import K8S_FIELDS, k8s_board
from tests.support.fake_github.graphql_api import GitHubError, MutationCall
from tests.support.fake_github.limits import RecordedRequest
from tests.support.fake_github.model import Change, DraftIssue, Issue, Item, Project, ProjectField, World
from tests.support.fake_github.server import FakeBug, FakeGitHub, OAuthApp
from tests.support.fake_github.webhooks import Delivery, PayloadInvalid, sign, verify

__all__ = [
    "K8S_FIELDS",
    "Change",
    "Delivery",
    "DraftIssue",
    "FakeBug",
    "FakeGitHub",
    "GitHubError",
    "Issue",
    "Item",
    "MutationCall",
    "OAuthApp",
    "PayloadInvalid",
    "Project",
    "ProjectField",
    "RecordedRequest",
    "World",
    "k8s_board",
    "sign",
    "verify",
]
