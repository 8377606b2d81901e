"""Each request's liaison, its Slack thread and board item, and the end of its grant:
the liaison from the moment a request arrives, changed by a lead (admin, API), written to
the board; when a granted deadline passes, the liaison hears it once (Slack DM with the
two outcomes, else email), the cockpit lists it, and an outcome sets the tracking status
and the board's Status."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.test import Client

from exceptions.followup import exception_grants_end
from exceptions.models import GrantEnd
from exceptions.services import exception_request_approve
from github.models import Board, BoardWrite
from github.writes import board_write_send
from releasecal.models import Tracking
from reminders.models import Delivery
from reminders.services import deliveries_sweep, delivery_send
from slack_integration import tasks
from slack_integration.models import SlackIdentity
from tests.github.test_board_writes import file
from tests.support.slack import post_signed

ENDED = (
    "The time granted to KEP-2400 ended at 00:00 PDT Friday 26 July 2024 (07:00 UTC Friday 26 July 2024): re-evaluate"
)


@pytest.fixture
def writing(board, github_settings, github):
    board.mode = Board.Mode.READ_WRITE
    board.save()
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write", "issues": "read"}
    )
    return board


@pytest.fixture
def team(release, release_team_member):
    """A lead, the Enhancements Lead (on the team), and someone off the team."""
    lead = User.objects.create_user("grace", "grace@example.com", "pw", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    release.leads.add(lead)
    enh = User.objects.create_user("enid", "enid@example.com", "pw")
    release.team.add(enh)
    release.enhancements_lead = enh
    release.save()
    outsider = User.objects.create_user("olga", "olga@example.com", "pw")
    release_team_member.is_staff = True
    release_team_member.save()
    return {"lead": lead, "enh": enh, "member": release_team_member, "outsider": outsider}


@pytest.fixture
def item(project, enhancements):
    swap = enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31")
    return project.add_issue(swap, {"Status": "Tracked For Code Freeze"})


def send_all() -> list[str]:
    return [board_write_send(write_id=w.pk) for w in BoardWrite.objects.order_by("pk")]


def api(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_request_arrives_with_the_enhancements_lead_as_liaison_and_a_lead_changes_it(
    writing, item, team, kep, code_freeze, requester
):
    request = file(kep, code_freeze, requester)
    assert request.liaison == team["enh"]
    send_all()
    assert item.value("Exception Liaison") == "enid"

    url = f"/api/v1/exceptions/{request.pk}/liaison/"
    refused = api(team["member"]).post(url, {"liaison": "lead"}, content_type="application/json")
    assert refused.status_code == 403
    off_team = api(team["lead"]).post(url, {"liaison": "olga"}, content_type="application/json")
    assert off_team.status_code == 400
    assert off_team.json()["message"] == "olga is not on the 1.31 release team (its leads and team): a liaison must be."
    done = api(team["lead"]).post(url, {"liaison": "lead"}, content_type="application/json")
    assert done.status_code == 200
    assert done.json()["liaison"] == "lead"
    assert send_all()[-1] == "sent"
    assert item.value("Exception Liaison") == "lead"
    # Filterable, in the API and the admin.
    assert [r["id"] for r in Client().get("/api/v1/exceptions/?liaison=lead").json()["results"]] == [request.pk]
    assert Client().get("/api/v1/exceptions/?liaison=enid").json()["results"] == []
    row = f"/admin/exceptions/exceptionrequest/{request.pk}/change/"
    assert row in api(team["member"]).get("/admin/exceptions/exceptionrequest/?liaison=me").content.decode()
    assert row not in api(team["lead"]).get("/admin/exceptions/exceptionrequest/?liaison=me").content.decode()


def test_the_slack_thread_and_the_board_item_are_kept_and_shown(
    writing, item, team, kep, code_freeze, requester, fake_slack, settings
):
    request = file(kep, code_freeze, requester)
    tasks.slack_post_exception_request(request.pk)
    request.refresh_from_db()
    thread = "https://releasecal-test.slack.com/archives/C0RELEASE/p1721780000000100"
    assert request.slack_thread_url == thread
    assert send_all() == ["sent", "sent"]  # submitted, then the thread
    assert item.value("Exception Request Slack Thread") == thread
    request.refresh_from_db()
    board_link = f"https://github.com/orgs/kubernetes/projects/241?pane=issue&itemId={item.database_id}"
    assert request.board_item_url == board_link
    assert Client().get(f"/api/v1/exceptions/{request.pk}/").json()["board_item_url"] == board_link
    page = Client().get("/releases/1.31/exceptions/").content.decode()
    assert f'<a class="kind board-item" href="{board_link.replace("&", "&amp;")}">on the release board</a>' in page


@pytest.fixture
def granted(writing, item, team, kep, code_freeze, requester):
    request = file(kep, code_freeze, requester)
    decision = exception_request_approve(request=request, actor=team["lead"])
    send_all()
    return request, decision.granted_until


def test_the_end_of_a_grant_is_told_once_to_the_liaison_by_email_and_listed_in_the_cockpit(granted, team):
    request, until = granted
    assert exception_grants_end(now=until - dt.timedelta(seconds=1)) == []
    queued = []
    deliveries_sweep(now=until + dt.timedelta(minutes=1), enqueue=queued.append)
    deliveries_sweep(now=until + dt.timedelta(minutes=2), enqueue=queued.append)
    (grant_end,) = GrantEnd.objects.all()
    (row,) = Delivery.objects.filter(offset="event:grant_ended")
    assert (row.recipient, queued) == ("email:enid@example.com", [row.pk])
    assert delivery_send(delivery_id=row.pk, now=until + dt.timedelta(minutes=1)) == "sent"
    (sent,) = mail.outbox
    assert sent.subject == ENDED
    assert "Tracked for code freeze, or Removed From Milestone?" in sent.body

    cockpit = api(team["lead"]).get("/admin/").content.decode()
    assert f"#{request.pk}</a> {ENDED}." in cockpit
    assert ">Tracked for code freeze</button>" in cockpit
    assert ENDED not in api(team["lead"]).get(f"/admin/?liaison={team['member'].pk}").content.decode()
    answer = api(team["lead"]).post(
        f"/admin/exceptions/exceptionrequest/{request.pk}/reevaluate/",
        {"grant_end": grant_end.pk, "outcome": "removed"},
    )
    assert answer.status_code == 302
    assert Tracking.objects.get(enhancement=request.enhancement).status == Tracking.Status.REMOVED
    grant_end.refresh_from_db()
    assert (grant_end.outcome, grant_end.resolved_by) == ("removed", team["lead"])


def test_the_liaisons_slack_dm_has_both_outcomes_and_a_button_sets_tracking_and_the_board(
    granted, team, item, fake_slack, settings
):
    request, until = granted
    SlackIdentity.objects.create(user=team["enh"], slack_user_id="U0ENID")
    deliveries_sweep(now=until + dt.timedelta(minutes=1), enqueue=lambda ids: None)
    (row,) = Delivery.objects.filter(offset="event:grant_ended")
    assert row.recipient == "slack:U0ENID"
    assert delivery_send(delivery_id=row.pk, now=until + dt.timedelta(minutes=1)) == "sent"
    (dm,) = [c for c in fake_slack.calls if c.method == "chat.postMessage"]
    assert dm.data["channel"] == "U0ENID"
    assert dm.data["text"].startswith(ENDED)
    (actions,) = [b for b in dm.data["blocks"] if b["type"] == "actions"]
    grant_end = GrantEnd.objects.get()
    assert [(e["action_id"], e["text"]["text"], e["value"]) for e in actions["elements"]] == [
        ("grant_tracked", "Tracked for code freeze", str(grant_end.pk)),
        ("grant_removed", "Removed From Milestone", str(grant_end.pk)),
    ]
    payload = {
        "type": "block_actions",
        "user": {"id": "U0ENID"},
        "channel": {"id": "D0ENID"},
        "container": {"type": "message", "message_ts": "1721780000.000100", "channel_id": "D0ENID"},
        "actions": [{"action_id": "grant_tracked", "value": str(grant_end.pk), "type": "button"}],
    }
    assert post_signed(Client(), "/slack/interactions", {"payload": json.dumps(payload)}).status_code == 200
    assert Tracking.objects.get(enhancement=request.enhancement).status == Tracking.Status.TRACKED
    assert fake_slack.calls[-1].method == "chat.update"
    assert "*Tracked for code freeze*, by enid." in json.dumps(fake_slack.calls[-1].data["blocks"])
    assert send_all()[-1] == "sent"
    assert item.value("Status") == "Tracked For Code Freeze"
    assert item.value("Exception Status") == "Approved"
    # Once: a second press is refused with what was chosen.
    again = post_signed(Client(), "/slack/interactions", {"payload": json.dumps(payload)})
    assert again.status_code == 200
    ephemeral = [c for c in fake_slack.calls if c.method == "chat.postEphemeral"]
    assert ephemeral[-1].data["text"] == ("KEP-2400 was already re-evaluated after its grant: Tracked for code freeze.")
