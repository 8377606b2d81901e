"""The fake GitHub's webhooks: payloads valid against @octokit/webhooks-schemas, signed as
GitHub signs them, delivered (or dropped) to a URL."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.fake_github import PayloadInvalid, sign, verify
from tests.support.fake_github.webhooks import validate


class Receiver:
    """A webhook endpoint on a port of its own that keeps what arrives."""

    def __init__(self):
        self.received: list[tuple[dict, bytes]] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_port}/github/webhook"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    running = Receiver()
    yield running
    running.close()


def test_every_payload_it_builds_is_valid_against_the_pinned_schema(fake, board):
    issue = fake.repository().issues[1880]
    item = board.item_for(issue)
    draft = board.drafts()[0]
    built = [
        fake.payloads.projects_v2_item("created", item),
        fake.payloads.projects_v2_item("edited", item, field_name="Exception Status"),
        fake.payloads.projects_v2_item("edited", draft, field_name="Additional Time"),
        fake.payloads.projects_v2_item("deleted", draft, installation_id=77),
        fake.payloads.issues("labeled", issue, label="tracked/no"),
        fake.payloads.issues("unlabeled", issue, label="tracked/yes"),
        fake.payloads.issues("milestoned", issue),
    ]
    issue.state, issue.closed_at = "closed", fake.world.clock()
    built.append(fake.payloads.issues("closed", issue))
    issue.milestone = None
    built.append(fake.payloads.issues("demilestoned", issue, milestone=fake.repository().milestone("v1.36")))
    for delivery in built:
        validate(delivery.event, delivery.action, delivery.payload)  # again, from the outside
    edited = built[1].payload
    assert edited["changes"] == {
        "field_value": {"field_node_id": board.field("Exception Status").node_id, "field_type": "single_select"}
    }
    assert edited["projects_v2_item"]["content_type"] == "Issue"
    assert edited["projects_v2_item"]["project_node_id"] == board.node_id
    assert built[3].payload["installation"]["id"] == 77
    assert built[4].payload["label"]["name"] == "tracked/no"
    assert built[8].payload["issue"]["milestone"] is None
    assert built[8].payload["milestone"]["title"] == "v1.36"


def test_it_refuses_a_payload_the_schema_refuses_and_adds_extras_after_validation(fake, board):
    item = board.item_for(fake.repository().issues[1880])
    payload = fake.payloads.projects_v2_item("edited", item, field_name="Status").payload
    payload["changes"]["field_value"]["from"] = {"name": "At Risk"}  # not in the pinned schema
    with pytest.raises(PayloadInvalid, match="changes/field_value"):
        validate("projects_v2_item", "edited", payload)
    with pytest.raises(ValueError, match="custom field"):
        fake.payloads.projects_v2_item("edited", item, field_name="Labels")
    extended = fake.payloads.projects_v2_item(
        "edited",
        item,
        field_name="Status",
        extra={"changes": {"field_value": {"field_name": "Status", "project_number": 241}}},
    )
    assert extended.payload["changes"]["field_value"]["field_name"] == "Status"  # what GitHub sends today


def test_signatures_are_githubs_hmac_sha256_of_the_body(fake, board):
    delivery = fake.payloads.issues("labeled", fake.repository().issues[2400], label="sig/node")
    headers = delivery.headers("It's a Secret to Everybody")
    expected = hmac.new(b"It's a Secret to Everybody", delivery.body, hashlib.sha256).hexdigest()
    assert headers["X-Hub-Signature-256"] == f"sha256={expected}"
    assert verify("It's a Secret to Everybody", delivery.body, headers["X-Hub-Signature-256"])
    assert not verify("another secret", delivery.body, headers["X-Hub-Signature-256"])
    assert not verify("It's a Secret to Everybody", delivery.body + b" ", headers["X-Hub-Signature-256"])
    # GitHub's documented test vector
    assert sign("It's a Secret to Everybody", b"Hello, World!") == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )
    assert headers["X-GitHub-Event"] == "issues"
    assert len(headers["X-GitHub-Delivery"]) == 36
    assert "X-Hub-Signature-256" not in delivery.headers(None)  # a hook without a secret is not signed


def test_it_delivers_signed_events_for_api_and_human_changes_and_drops_on_demand(fake, board, client, receiver):
    fake.hooks.add(receiver.url, "s3cret")
    item = board.item_for(fake.repository().issues[1880])
    fake.human_edit(item, "Exception Status", "Approved")
    client.rest("POST", "/repos/kubernetes/enhancements/issues/1880/labels", json={"labels": ["tracked/no"]})
    fake.hooks.drop_next(1)
    fake.human_edit(item, "Note", "dropped")
    fake.human_edit(item, "Note", "delivered")
    fake.hooks.wait_idle()
    events = []
    for headers, body in receiver.received:
        assert headers["x-hub-signature-256"] == sign("s3cret", body)
        payload = json.loads(body)
        events.append((headers["x-github-event"], payload["action"]))
    assert events == [("projects_v2_item", "edited"), ("issues", "labeled"), ("projects_v2_item", "edited")]
    assert [s.dropped for s in fake.hooks.sent] == [False, False, True, False]
    forged = fake.payloads.issues("labeled", fake.repository().issues[2400], label="x").send(
        receiver.url, "s3cret", headers={"X-Hub-Signature-256": "sha256=00"}
    )
    assert forged.status_code == 204
    assert receiver.received[-1][0]["x-hub-signature-256"] == "sha256=00"
