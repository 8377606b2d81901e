"""/relcal subcommands, answered from the database, ephemeral, with tz-rendered sentences."""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.services import exception_request_approve
from releasecal import tz
from slack_integration.models import SlackIdentity
from tests.support.slack import SIGNING_SECRET, post_signed


@pytest.fixture
def slack(settings, monkeypatch):
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    now = dt.datetime(2024, 7, 1, 12, 0, tzinfo=dt.UTC)
    monkeypatch.setattr(tz, "utc_now", lambda: now)
    return now


def relcal(client, text: str, user: str = "U2CERLKJA") -> dict:
    response = post_signed(
        client, "/slack/commands", {"command": "/relcal", "text": text, "user_id": user, "team_id": "T1"}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["response_type"] == "ephemeral"
    assert body["blocks"]
    return body


def all_text(body: dict) -> str:
    parts = [body["text"]]
    for block in body["blocks"]:
        if "text" in block:
            parts.append(block["text"]["text"])
        parts += [element["text"] for element in block.get("elements", []) if "text" in element]
    return "\n".join(parts)


def test_help_lists_every_subcommand(client, slack, db):
    text = all_text(relcal(client, "help"))
    for sub in ("next", "next code-freeze", "kep 1880", "release 1.31", "exceptions pending", "tz Europe/Berlin"):
        assert f"/relcal {sub}" in text


def test_an_empty_command_is_help(client, slack, db):
    assert "/relcal next" in all_text(relcal(client, ""))


def test_an_unknown_subcommand_says_so_and_shows_help(client, slack, db):
    text = all_text(relcal(client, "dance"))
    assert "Unknown subcommand `dance`" in text
    assert "/relcal kep 1880" in text


def test_next_lists_upcoming_deadlines_with_the_zone_label_in_force(client, slack, release):
    text = all_text(relcal(client, "next"))
    assert "*Code Freeze* (1.31): 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)" in text
    assert "Enhancements Freeze" not in text  # passed on 13 June


def test_next_kind_answers_one_deadline(client, slack, release):
    text = all_text(relcal(client, "next rc"))
    assert "1.31.0-rc.0 released" in text
    assert "Code Freeze" not in text


def test_next_with_an_unknown_kind_lists_the_kinds(client, slack, release):
    text = all_text(relcal(client, "next coffee-break"))
    assert "No milestone kind `coffee-break`" in text
    assert "`code-freeze`" in text


def test_tz_is_remembered_and_then_used(client, slack, release):
    assert "Saved" in all_text(relcal(client, "tz europe/berlin"))
    assert SlackIdentity.objects.get(slack_user_id="U2CERLKJA").zone == "Europe/Berlin"
    text = all_text(relcal(client, "next code-freeze"))
    assert "your time: 04:00 CEST Wednesday 24 July 2024" in text
    assert "Your zone: Europe/Berlin" in all_text(relcal(client, "tz"))


def test_tz_refuses_an_unknown_zone_with_the_time_module_message(client, slack, db):
    text = all_text(relcal(client, "tz Mars/Olympus"))
    assert "Unknown time zone 'Mars/Olympus'" in text
    assert not SlackIdentity.objects.exists()


def test_kep_shows_the_extension_and_the_decision(client, pending_request, release_team_member, slack):
    exception_request_approve(request=pending_request, actor=release_team_member)
    text = all_text(relcal(client, "kep 2400"))
    assert "KEP-2400: Node memory swap support" in text
    assert "*Code Freeze* (1.31): end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)" in text
    assert f"extended by exception #{pending_request.pk}" in text
    assert "2 days: *approved* until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)" in text


def test_kep_accepts_the_kep_prefix_and_says_when_unknown(client, slack, kep):
    assert "KEP-2400" in all_text(relcal(client, "kep KEP-2400"))
    assert "No KEP 1880 is known." in all_text(relcal(client, "kep 1880"))
    assert "Usage" in all_text(relcal(client, "kep"))


def test_release_shows_the_schedule(client, slack, release):
    text = all_text(relcal(client, "release 1.31"))
    assert "Kubernetes v1.31" in text
    assert "Enhancements Freeze: 19:00 PDT Thursday 13 June 2024" in text
    assert "(passed)" in text
    assert "*v1.31 released*: Tuesday 13 August 2024 (all day)" in text
    assert "No release `9.99`" in all_text(relcal(client, "release 9.99"))


def test_exceptions_pending_lists_requests_waiting(client, pending_request, slack):
    text = all_text(relcal(client, "exceptions pending"))
    assert f"#{pending_request.pk} KEP-2400 Node memory swap support: Code Freeze (1.31), 2 days, by requester" in text


def test_exceptions_pending_when_none(client, slack, db):
    assert "No exception request is waiting" in all_text(relcal(client, "exceptions pending"))


def test_a_command_without_a_user_is_a_400(client, slack, db):
    response = post_signed(client, "/slack/commands", {"text": "help"})
    assert response.status_code == 400


@pytest.mark.parametrize("text", ["help", "", "dance"])
def test_help_and_an_unknown_subcommand_read_no_row(client, slack, db, django_assert_num_queries, text):
    # The same text for everyone: no identity lookup, no query at all (issue 27).
    with django_assert_num_queries(0):
        body = relcal(client, text)
    assert "/relcal kep 1880" in all_text(body)
