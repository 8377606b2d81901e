"""The demo's path end to end, in one process: the demo mailbox's email, filed by the
intake, is on the board with every exception field the handbook has the Enhancements
Lead set by hand; Approve pressed in Slack makes it Approved / Exception Approved."""

from __future__ import annotations

import datetime as dt
import json
from email.message import EmailMessage
from email.utils import format_datetime

from django.test import Client

from demo.management.commands.intake_demo_mailbox import DEMO_BODY
from github.models import Board, BoardWrite
from github.writes import board_write_send
from intake.filing import file_mail
from intake.mail import read_mail
from slack_integration import tasks
from slack_integration.models import SlackIdentity
from tests.support.slack import post_signed

MSGID = "CADemo-1%40mail.gmail.com"


def demo_mail(kep, at: dt.datetime) -> bytes:
    message = EmailMessage()
    message["From"] = "'Demo Contributor' via kubernetes-sig-release <kubernetes-sig-release@googlegroups.com>"
    message["X-Original-Sender"] = "demo.contributor@example.com"
    message["To"] = "kubernetes-sig-release@googlegroups.com"
    message["Subject"] = f"Exception Request for KEP-{kep.number} (Code Freeze)"
    message["Date"] = format_datetime(at)
    message["Message-ID"] = "<CADemo-1@mail.gmail.com>"
    message.set_content(DEMO_BODY.format(title=kep.title, sig=kep.owning_sig, number=kep.number, msgid=MSGID))
    return message.as_bytes()


def send_all() -> list[str]:
    return [board_write_send(write_id=w.pk) for w in BoardWrite.objects.order_by("pk")]


def test_an_emailed_request_is_on_the_board_with_every_field_and_slacks_approve_approves_it(
    board, github_settings, github, project, enhancements, kep, code_freeze, release, release_team_member, fake_slack
):
    board.mode = Board.Mode.READ_WRITE
    board.save()
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write", "issues": "read"}
    )
    swap = enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31")
    item = project.add_issue(swap, {"Status": "Tracked For Code Freeze"})
    release.enhancements_lead = release_team_member
    release.save()

    mail = read_mail(demo_mail(kep, code_freeze.deadline + dt.timedelta(hours=1)), fallback_id="1")
    request = file_mail(mail).request
    tasks.slack_post_exception_request(request.pk)  # the release team channel's post
    assert send_all() == ["sent", "sent"]
    assert {name: value for name, value in item.fields().items() if name.startswith(("Exception", "Add"))} == {
        "Exception Request Type": "Code and Test Freeze",
        "Exception Status": "In Review",
        "Exception Request Link": f"https://groups.google.com/d/msgid/kubernetes-sig-release/{MSGID}",
        "Exception Request Slack Thread": "https://releasecal-test.slack.com/archives/C0RELEASE/p1721780000000100",
        "Exception Related PRs": "https://github.com/kubernetes/kubernetes/pull/130000",
        "Additional Time": 2.0,
        "Exception Request Date": dt.date(2024, 7, 24),
        "Exception Liaison": "lead",
    }
    assert item.value("Status") == "Exception Pending"

    SlackIdentity.objects.create(user=release_team_member, slack_user_id="U0LEAD")
    payload = {
        "type": "block_actions",
        "user": {"id": "U0LEAD"},
        "channel": {"id": "C0RELEASE"},
        "container": {"type": "message", "message_ts": "1721780000.000100", "channel_id": "C0RELEASE"},
        "actions": [{"action_id": "exception_approve", "value": str(request.pk), "type": "button"}],
    }
    assert post_signed(Client(), "/slack/interactions", {"payload": json.dumps(payload)}).status_code == 200
    assert send_all()[-1] == "sent"
    assert item.value("Exception Status") == "Approved"
    assert item.value("Status") == "Exception Approved"
    assert item.value("Exception Decision Date") is not None
