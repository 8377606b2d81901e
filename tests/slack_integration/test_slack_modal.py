"""``/relcal request [KEP]`` opens the filing modal (views.open while answering the
command); its submission files through the same services and policy as email and API,
with every refusal inline (``response_action: errors``) and nothing saved; the requester
is the Slack user's linked account, and gets a DM when the request is filed and when it
is decided (exactly once per decision, whichever face decided)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from exceptions.models import ExceptionRequest
from exceptions.services import exception_request_approve, exception_request_reject
from outbox.errors import TransportError
from releasecal import tz
from slack_integration import services, tasks
from slack_integration.models import SlackIdentity, SlackRequesterNotice
from tests.support.slack import post_signed

# An hour after the code freeze (02:00 UTC Wed 24 July 2024): its request window is open
# until 02:00 UTC Sat 27 July; the enhancements freeze's closed in June.
NOW = dt.datetime(2024, 7, 24, 3, 0, tzinfo=dt.UTC)


@pytest.fixture
def now(monkeypatch):
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)
    return NOW


@pytest.fixture
def linked(requester):
    return SlackIdentity.objects.create(slack_user_id="U0REQ", team_id="T1", user=requester)


def command(client, text: str, *, user: str = "U0REQ", trigger_id: str = "1337.42.abcd"):
    fields = {"command": "/relcal", "text": text, "user_id": user, "team_id": "T1", "channel_id": "C0DEV"}
    if trigger_id:
        fields["trigger_id"] = trigger_id
    return post_signed(client, "/slack/commands", fields)


def opened_view(fake_slack) -> dict:
    (call,) = fake_slack.matching(lambda c: c.method == "views.open")
    assert call.data["trigger_id"] == "1337.42.abcd"
    return call.data["view"]


def inputs(view: dict) -> dict[str, dict]:
    return {block["block_id"]: block for block in view["blocks"] if block["type"] == "input"}


def state_of(view: dict, values: dict[str, str]) -> dict:
    """What Slack sends as ``view.state.values`` for these answers to the opened view."""
    state = {}
    for block_id, block in inputs(view).items():
        element = block["element"]
        if block_id not in values:
            continue
        if element["type"] == "static_select":
            state[block_id] = {"value": {"type": "static_select", "selected_option": {"value": values[block_id]}}}
        else:
            state[block_id] = {"value": {"type": element["type"], "value": values[block_id]}}
    return state


def submit(client, view: dict, values: dict[str, str], *, user: str = "U0REQ"):
    payload = {
        "type": "view_submission",
        "team": {"id": "T1"},
        "user": {"id": user, "team_id": "T1"},
        "view": {
            "id": "V0MODAL",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": state_of(view, values)},
        },
    }
    return post_signed(client, "/slack/interactions", {"payload": json.dumps(payload)})


def good_values(code_freeze, **changes) -> dict[str, str]:
    return {
        "kep": "2400",
        "milestone": str(code_freeze.pk),
        "days": "2",
        "enhancement_name": "Node memory swap support",
        "stage": "beta",
        "sig": "node",
        "issue_url": "https://github.com/kubernetes/enhancements/issues/2400",
        "pr_urls": "https://github.com/kubernetes/kubernetes/pull/1\nhttps://github.com/kubernetes/kubernetes/pull/2",
        "reason": "The e2e PR is waiting for approval.",
        "risks_adding": "Low: feature gated.",
        "risks_cutting": "Users wait a release.",
    } | changes


@pytest.fixture
def modal_view(client, fake_slack, now, kep, code_freeze, linked):
    response = command(client, "request 2400")
    assert response.status_code == 200
    assert response.content == b""  # the modal is the answer
    return opened_view(fake_slack)


def test_request_with_a_kep_opens_the_modal_prefilled_from_the_kep_and_the_open_freeze(
    modal_view, fake_slack, code_freeze
):
    assert fake_slack.methods() == ["views.open"]
    view = modal_view
    assert (view["type"], view["callback_id"]) == ("modal", "exception_request")
    fields = inputs(view)
    assert list(fields) == [
        "kep", "milestone", "days", "until_text", "until_zone", "enhancement_name", "stage", "sig",
        "issue_url", "pr_urls", "reason", "risks_adding", "risks_cutting",
    ]  # fmt: skip
    assert fields["kep"]["element"]["initial_value"] == "2400"
    assert fields["enhancement_name"]["element"]["initial_value"] == "Node memory swap support"
    assert fields["sig"]["element"]["initial_value"] == "node"
    assert fields["stage"]["element"]["initial_option"]["value"] == "beta"
    freeze = fields["milestone"]["element"]
    assert [o["value"] for o in freeze["options"]] == [str(code_freeze.pk)]  # the June freeze's window closed
    assert freeze["initial_option"]["text"]["text"] == "1.31 Code Freeze"
    texts = json.dumps(view["blocks"], ensure_ascii=False)
    assert "*KEP-2400: Node memory swap support*\\nSIG node · owners: kannon92" in texts
    assert (
        "1.31 Code Freeze: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024). Requests are "
        "accepted until 19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)."
    ) in texts
    assert all(b["block_id"] != "reason" or "optional" not in b for b in view["blocks"] if b["type"] == "input")


def test_without_a_kep_the_kep_field_is_empty(client, fake_slack, now, kep, code_freeze, linked):
    assert command(client, "request").status_code == 200
    fields = inputs(opened_view(fake_slack))
    assert "initial_value" not in fields["kep"]["element"]
    assert "initial_value" not in fields["enhancement_name"]["element"]


def test_submitting_files_the_request_posts_it_to_the_channel_and_dms_the_requester(
    client, modal_view, fake_slack, code_freeze, requester, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = submit(client, modal_view, good_values(code_freeze, reason="Needed <!channel> & more"))
    assert response.status_code == 200
    assert response.content == b""  # closes the modal
    request = ExceptionRequest.objects.get()
    assert (request.requester, request.entered_by, request.days, request.milestone) == (
        requester, requester, 2, code_freeze
    )  # fmt: skip
    revision = request.current
    assert revision.reason == "Needed <!channel> & more"  # stored as written
    assert revision.pr_urls == [
        "https://github.com/kubernetes/kubernetes/pull/1", "https://github.com/kubernetes/kubernetes/pull/2"
    ]  # fmt: skip
    assert (revision.stage, revision.sig, revision.risks_cutting) == ("beta", "node", "Users wait a release.")
    assert fake_slack.methods() == [
        "views.open", "chat.postMessage", "chat.getPermalink", "conversations.open", "chat.postMessage"
    ]  # fmt: skip
    post, dm = fake_slack.matching(lambda c: c.method == "chat.postMessage")
    assert post.data["channel"] == "C0RELEASE"
    assert [e["action_id"] for b in post.data["blocks"] if b["type"] == "actions" for e in b["elements"]] == [
        "exception_approve", "exception_reject"
    ]  # fmt: skip
    assert "*Why it is critical:* Needed &lt;!channel&gt; &amp; more" in post.text
    assert dm.data["channel"] == "DU0REQ"
    assert dm.data["text"] == f"Filed: Exception request #{request.pk}: KEP-2400 Node memory swap support"
    assert (
        "Your request was filed and posted to the release team: 2 days past Code Freeze "
        "(19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024))."
    ) in dm.text


def test_a_policy_refusal_comes_back_inline_and_nothing_is_saved(client, modal_view, fake_slack, code_freeze):
    response = submit(client, modal_view, good_values(code_freeze, days="0"))
    assert response.status_code == 200
    assert response.json() == {
        "response_action": "errors",
        "errors": {
            "days": "A Code Freeze exception must ask for at least 1 day; asking for no time (admission only) "
            "is for enhancements-freeze and prr-freeze requests."
        },
    }
    assert not ExceptionRequest.objects.exists()
    assert fake_slack.methods() == ["views.open"]


def test_a_kep_removed_at_the_enhancements_freeze_is_refused_a_code_freeze_request_on_the_freeze(
    client, modal_view, fake_slack, code_freeze, kep, enhancements_freeze
):
    from releasecal.services import tracking_set

    tracking_set(release=code_freeze.release, enhancement=kep, stage="beta", status="removed_from_milestone")
    tracking = kep.tracking.get()
    tracking.missed_freeze = enhancements_freeze
    tracking.save()
    response = submit(client, modal_view, good_values(code_freeze))
    assert response.json() == {
        "response_action": "errors",
        "errors": {
            "milestone": "KEP-2400 was removed from the 1.31 milestone at Enhancements Freeze: it may ask an "
            "exception for Enhancements Freeze, the freeze it missed, not for Code Freeze. Without that exception "
            "it is not in 1.31."
        },
    }
    assert not ExceptionRequest.objects.exists()


def test_a_second_request_for_the_same_kep_and_freeze_is_refused_on_the_kep(
    client, modal_view, fake_slack, code_freeze, pending_request
):
    response = submit(client, modal_view, good_values(code_freeze))
    assert response.json() == {
        "response_action": "errors",
        "errors": {
            "kep": f"KEP-2400 already has a pending exception request (#{pending_request.pk}) for Code Freeze; "
            "amend that one instead of filing another."
        },
    }
    assert ExceptionRequest.objects.count() == 1


def test_every_field_hostile_gets_an_error_each_and_nothing_is_saved(
    client, modal_view, fake_slack, enhancements_freeze
):
    huge = "<!channel> " + "x" * 100_000
    values = dict.fromkeys(inputs(modal_view), huge) | {
        "kep": "99999",
        "milestone": str(enhancements_freeze.pk),
        "days": "<!channel>",
        "stage": "<!here>",
        "until_zone": "Mars/Olympus\x00",
        "reason": "why\x00",
        "risks_adding": "",
    }
    response = submit(client, modal_view, values)
    assert response.status_code == 200
    errors = response.json()["errors"]
    assert errors == {
        "kep": "No KEP 99999 is known.",
        "milestone": "The request window for Enhancements Freeze closed at 19:00 PDT Sunday 16 June 2024 "
        "(02:00 UTC Monday 17 June 2024) (72 hours after the freeze); this request was sent at "
        "20:00 PDT Tuesday 23 July 2024 (03:00 UTC Wednesday 24 July 2024).",
        "days": "A whole number of days, e.g. 3.",
        "stage": "Choose a stage: alpha, beta, stable, deprecation.",
        "until_text": "At most 200 characters (this has 100,011).",
        "until_zone": "Remove the NUL character: it cannot be stored.",
        "enhancement_name": "At most 300 characters (this has 100,011).",
        "sig": "At most 64 characters (this has 100,011).",
        "issue_url": "At most 500 characters (this has 100,011).",
        "pr_urls": "At most 3,000 characters (this has 100,011).",
        "reason": "Remove the NUL character: it cannot be stored.",
        "risks_cutting": "At most 3,000 characters (this has 100,011).",
    }
    assert not ExceptionRequest.objects.exists()
    assert fake_slack.methods() == ["views.open"]


def test_bad_links_and_zones_are_refused_inline(client, modal_view, code_freeze):
    values = good_values(code_freeze, issue_url="javascript:alert(1)", pr_urls="see below", until_zone="Mars/Base")
    errors = submit(client, modal_view, values).json()["errors"]
    assert errors["issue_url"] == "A link (https://…), or leave it empty."
    assert errors["pr_urls"] == "Not a link: see below. One PR link per line."
    assert set(errors) == {"issue_url", "pr_urls", "until_zone"}
    assert not ExceptionRequest.objects.exists()


def test_an_unlinked_slack_user_is_told_how_to_link_and_no_modal_opens(client, fake_slack, now, kep, code_freeze):
    response = command(client, "request 2400", user="USTRANGER")
    text = response.json()["text"]
    assert text.startswith(
        "Your Slack account is not linked to a releasecal account, so you cannot file a request yet. Open <"
    )
    assert "/slack/link/" in text
    assert "|this link> within 15 minutes, log in to releasecal and confirm" in text
    assert fake_slack.methods() == []


def test_a_submission_from_an_unlinked_user_is_refused_inline(client, modal_view, code_freeze):
    response = submit(client, modal_view, good_values(code_freeze), user="USTRANGER")
    assert response.json()["errors"] == {
        "kep": "Your Slack account is not linked to a releasecal account: type /relcal link, open the link, "
        "log in and confirm, then submit again."
    }
    assert not ExceptionRequest.objects.exists()


def test_an_unknown_kep_a_closed_season_and_a_slack_failure_are_sentences(
    client, fake_slack, monkeypatch, kep, code_freeze, linked
):
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)
    assert command(client, "request 99999").json()["text"] == "No KEP 99999 is known."
    assert command(client, "request 2400 2401").json()["text"].startswith("Usage: `/relcal request 1880`")
    fake_slack.fail_next(1, status=503)  # one try: a retry could not beat the trigger's 3 seconds
    assert command(client, "request 2400").json()["text"] == (
        "Slack did not open the form (Server error 503). Try `/relcal request` again."
    )
    assert fake_slack.methods() == ["views.open"]
    fake_slack.view_delay = 5  # Slack would give up on the command before this answer
    assert command(client, "request 2400").json()["text"] == (
        "Slack did not open the form (Timed out after 2.0s). Try `/relcal request` again."
    )
    fake_slack.view_delay = 0
    fake_slack.fail_with = "expired_trigger_id"
    assert command(client, "request 2400").json()["text"] == (
        "Slack did not open the form (Slack: expired_trigger_id). Try `/relcal request` again."
    )
    monkeypatch.setattr(tz, "utc_now", lambda: NOW + dt.timedelta(days=30))
    assert command(client, "request 2400").json()["text"] == (
        "No freeze has an open request window now, so there is nothing to file a request for."
    )


# ------------------------------------------------------------------ the decision DM


def dms(fake_slack):
    return fake_slack.matching(lambda c: c.method == "chat.postMessage" and c.data["channel"].startswith("D"))


def test_the_requester_gets_one_dm_per_decision_with_the_deadline_from_tz(
    pending_request, requester, linked, release_team_member, fake_slack, eager_celery,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        exception_request_approve(request=pending_request, actor=release_team_member, note="ok <!here>")
    (dm,) = dms(fake_slack)
    assert dm.data["channel"] == "DU0REQ"
    assert dm.data["text"] == f"Exception request #{pending_request.pk}: KEP-2400 Node memory swap support (approved)"
    assert (
        ":white_check_mark: *Approved* by lead. KEP-2400 may land until end of Thursday 25 July 2024 PDT "
        "(07:00 UTC Friday 26 July 2024)."
    ) in dm.text
    assert "Note: ok &lt;!here&gt;" in dm.text
    # A redelivered task (or a second one) sends nothing more.
    tasks.slack_notify_requester(pending_request.pk, "approved")
    tasks.slack_notify_requester(pending_request.pk, "rejected")  # not what was decided
    assert len(dms(fake_slack)) == 1
    notice = SlackRequesterNotice.objects.get()
    assert (notice.event, notice.channel, notice.sent_at is not None) == ("approved", "DU0REQ", True)


def test_a_rejection_dm_keeps_the_freeze_deadline(
    pending_request, linked, release_team_member, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        exception_request_reject(request=pending_request, actor=release_team_member)
    (dm,) = dms(fake_slack)
    assert (
        ":x: *Rejected* by lead. The Code Freeze deadline stays 19:00 PDT Tuesday 23 July 2024 "
        "(02:00 UTC Wednesday 24 July 2024)."
    ) in dm.text


def test_a_requester_without_slack_gets_no_dm(
    pending_request, release_team_member, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        exception_request_approve(request=pending_request, actor=release_team_member)
    assert dms(fake_slack) == []
    assert not SlackRequesterNotice.objects.exists()


def test_a_failed_dm_is_retried_by_the_task_and_then_sent_once(
    pending_request, linked, release_team_member, fake_slack, settings
):
    settings.OUTBOX_HTTP_TRIES = 1
    exception_request_approve(request=pending_request, actor=release_team_member)
    fake_slack.fail_next(1, status=503)
    with pytest.raises(TransportError, match="Server error 503"):
        services.slack_notify_requester(request_id=pending_request.pk, event="approved")
    assert SlackRequesterNotice.objects.filter(sent_at__isnull=False).count() == 0
    tasks.slack_notify_requester(pending_request.pk, "approved")
    assert len(dms(fake_slack)) == 1
