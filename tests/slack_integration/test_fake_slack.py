"""The fake Slack itself (tests/support/fake_slack.py): its HTTP side answers."""

from __future__ import annotations

import json
import urllib.request

from tests.support.fake_slack import FakeSlack


def test_get_stats_answers_after_messages_arrived():
    # Issue 13 item 15: /_stats took the fake's lock twice and hung forever.
    with FakeSlack() as fake:
        for text in ("one", "two", "two"):
            body = json.dumps({"text": text}).encode()
            request = urllib.request.Request(
                fake.webhook_url("alerts"), data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=5) as response:
                assert response.status == 200
        with urllib.request.urlopen(f"{fake.base}/_stats", timeout=5) as response:
            stats = json.loads(response.read())
    assert stats["requests"] == 3
    assert stats["messages"] == sum(stats["received"].values())
