"""Schedule change notices (issue 14 item 6): a milestone moved, cancelled or back on, or
the hard stop moved, is told once per change to the release team's channel and to the
owners of the affected KEPs (Slack DM when their identity is known, email otherwise),
with the old and new deadline in the native zone and UTC and the grants it overrides.
Edits that change nothing people see tell nobody. Through the services, the admin and
the schedule importer; sent on commit by the Celery task, against the fake Slack."""

from __future__ import annotations

import datetime as dt
import math
import time

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.urls import reverse

from exceptions.services import exception_request_approve
from notices.models import NoticeDelivery, ScheduleNotice
from notices.services import notice_for_milestone_change, notice_send, notices_sweep
from notices.tasks import notice_send_task
from outbox import ratelimit
from releasecal import tz
from releasecal.importers.schedule import schedule_import
from releasecal.models import EnhancementOwner, Milestone, Release
from releasecal.services import milestone_cancel, milestone_save
from slack_integration.models import SlackIdentity
from tests.releasecal.test_admin import _inline_index, _payload
from tests.support.fake_slack import FakeSlack

LA = "America/Los_Angeles"
WAS = "Was: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)"
NOW_28 = "Now: 19:00 PDT Sunday 28 July 2024 (02:00 UTC Monday 29 July 2024)"
GRANT = "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)"


@pytest.fixture
def granted(pending_request, release_team_member):
    exception_request_approve(
        request=pending_request, actor=release_team_member,
        granted_until=tz.parse_wall_time("2024-07-26 19:00", LA), granted_zone=LA,
    )  # fmt: skip
    return pending_request


@pytest.fixture
def linked_owner(kep):
    """A second owner of KEP-2400 whose releasecal account is linked to Slack: the linked
    identity wins over the (stale) id the KEP lists."""
    user = User.objects.create_user("swapfan", "swapfan@example.com", "pw")
    SlackIdentity.objects.create(user=user, slack_user_id="U0LINKED", team_id="T0TEAM")
    return EnhancementOwner.objects.create(enhancement=kep, github="swapfan", slack_id="U0STALE", user=user)


def _posts(fake_slack, channel: str | None = None) -> list:
    return fake_slack.matching(
        lambda call: call.method == "chat.postMessage" and call.delivered and channel in (None, call.data["channel"])
    )


def _texts(call) -> list[str]:
    """Every text a person reads in a posted message, block by block."""
    texts = []
    for block in call.data["blocks"]:
        if block["type"] == "context":
            texts += [element["text"] for element in block["elements"]]
        else:
            texts.append(block["text"]["text"])
    return texts


def _save(milestone: Milestone, capture, *, execute: bool = True, **changes) -> None:
    for name, value in changes.items():
        setattr(milestone, name, value)
    with capture(execute=execute):
        milestone_save(milestone=milestone)


def test_a_moved_freeze_is_told_once_to_the_channel_and_each_owner_with_the_grant_it_supersedes(
    granted, linked_owner, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-28 19:00", LA))

    superseded = (
        f"• KEP-2400 (exception #{granted.pk}): superseded by the freeze. The granted extension (until {GRANT}) "
        "is superseded by the freeze: the Code Freeze deadline (19:00 PDT Sunday 28 July 2024 (02:00 UTC Monday "
        "29 July 2024)) is now later, so it applies."
    )
    told = [
        "1.31: Code Freeze moved",
        f"Code Freeze (Kubernetes v1.31) moved.\n{WAS}\n{NOW_28}",
        "Granted extensions this change overrides:",
        superseded,
    ]
    [channel] = _posts(fake_slack, "C0RELEASE")
    assert _texts(channel) == told
    assert channel.data["text"] == "1.31: Code Freeze moved"
    [dm] = _posts(fake_slack, "U0LINKED")
    assert _texts(dm) == [*told, "You get this as an owner of KEP-2400."]
    assert len(_posts(fake_slack)) == 2  # nothing to the stale id, nothing else

    [email] = mail.outbox
    assert email.to == ["kep2400@example.com"]
    assert email.subject == "[releasecal] 1.31: Code Freeze moved"
    assert email.body == (
        f"Code Freeze (Kubernetes v1.31) moved.\n{WAS}\n"
        "Now: 19:00 PDT Sunday 28 July 2024 (02:00 UTC Monday 29 July 2024)\n\n"
        f"Granted extensions this change overrides:\n- {superseded.removeprefix('• ')}\n\n"
        "You get this as an owner of KEP-2400.\n"
    )
    notice = ScheduleNotice.objects.get()
    assert notice.exception_ids == [granted.pk]
    assert set(notice.deliveries.values_list("state", flat=True)) == {"sent"}

    # The task again (a redelivered message), the sweep, and the hook replayed: nothing more.
    notice_send_task.delay(notice.pk)
    assert notices_sweep(now=tz.utc_now() + dt.timedelta(hours=1)) == []
    old = Milestone.objects.get(pk=code_freeze.pk)
    old.at = tz.parse_wall_time("2024-07-23 19:00", LA)
    assert notice_for_milestone_change(old=old, milestone=code_freeze) is None
    assert (len(_posts(fake_slack)), len(mail.outbox), ScheduleNotice.objects.count()) == (2, 1, 1)


def test_without_slack_every_owner_is_told_by_email(
    settings, kep, linked_owner, code_freeze, eager_celery, django_capture_on_commit_callbacks
):
    settings.SLACK_BOT_TOKEN, settings.SLACK_RELEASE_TEAM_CHANNEL = "", "C0RELEASE"
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-25 19:00", LA))
    # The linked owner lists no address of their own: their account's is used.
    assert sorted(m.to[0] for m in mail.outbox) == ["kep2400@example.com", "swapfan@example.com"]
    assert sorted(NoticeDelivery.objects.values_list("recipient", "state")) == [
        ("email:kep2400@example.com", "sent"),
        ("email:swapfan@example.com", "sent"),
    ]


def test_moving_back_is_another_change_and_told_again(
    kep, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-25 19:00", LA))
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-23 19:00", LA))
    first, second = _posts(fake_slack, "C0RELEASE")
    assert _texts(first)[1] == (
        f"Code Freeze (Kubernetes v1.31) moved.\n{WAS}\n"
        "Now: 19:00 PDT Thursday 25 July 2024 (02:00 UTC Friday 26 July 2024)"
    )
    assert _texts(second)[1] == (
        "Code Freeze (Kubernetes v1.31) moved.\n"
        "Was: 19:00 PDT Thursday 25 July 2024 (02:00 UTC Friday 26 July 2024)\n"
        "Now: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)"
    )
    assert len(first.data["blocks"]) == 2  # no grant overridden: no list
    assert [m.subject for m in mail.outbox] == ["[releasecal] 1.31: Code Freeze moved"] * 2


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({}, id="saved-unchanged"),
        pytest.param({"description": "Notes for the team."}, id="notes-only"),
        pytest.param({"title": "Code Freeze (final)"}, id="title-only"),
        pytest.param({"zone": "UTC", "at": dt.datetime(2024, 7, 24, 2, 0, tzinfo=dt.UTC)}, id="same-instant-in-utc"),
    ],
)
def test_an_edit_that_moves_no_deadline_tells_nobody(
    changes, granted, linked_owner, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    before = code_freeze.sequence
    _save(code_freeze, django_capture_on_commit_callbacks, **changes)
    assert code_freeze.sequence == before + (1 if changes else 0)  # the edit itself was saved
    assert ScheduleNotice.objects.count() == 0
    assert _posts(fake_slack) == []
    assert mail.outbox == []


def test_a_cancelled_milestone_and_its_return_are_told(
    kep, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        milestone_cancel(milestone=code_freeze)
    _save(code_freeze, django_capture_on_commit_callbacks, title="Code Freeze (still cancelled)")
    _save(code_freeze, django_capture_on_commit_callbacks, cancelled=False, title="Code Freeze")
    cancelled, back = _posts(fake_slack, "C0RELEASE")
    assert _texts(cancelled) == ["1.31: Code Freeze cancelled", f"Code Freeze (Kubernetes v1.31) is cancelled.\n{WAS}"]
    assert _texts(back) == [
        "1.31: Code Freeze is back on",
        "Code Freeze (Kubernetes v1.31) is no longer cancelled.\n"
        "Now: 19:00 PDT Tuesday 23 July 2024 (02:00 UTC Wednesday 24 July 2024)",
    ]
    assert [m.subject for m in mail.outbox] == [
        "[releasecal] 1.31: Code Freeze cancelled",
        "[releasecal] 1.31: Code Freeze is back on",
    ]
    assert mail.outbox[0].body == (
        f"Code Freeze (Kubernetes v1.31) is cancelled.\n{WAS}\n\nYou get this as an owner of KEP-2400.\n"
    )


def test_a_freeze_move_does_not_concern_a_kep_whose_grant_stays_later(
    granted, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    # 23 July -> 24 July: KEP-2400's grant (26 July) still applies, unchanged.
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-24 19:00", LA))
    assert len(_posts(fake_slack, "C0RELEASE")) == 1
    assert mail.outbox == []


def test_a_retry_sends_only_what_failed_and_nothing_twice(
    settings, granted, linked_owner, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    settings.OUTBOX_HTTP_TRIES = 1  # the client's own retry off: the ledger's retry is under test
    fake_slack.fail_next(1, status=503)  # the channel's post (the first row) fails, transiently
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-28 19:00", LA))
    channel_row = NoticeDelivery.objects.get(recipient="channel:C0RELEASE")
    assert (channel_row.state, channel_row.last_error) == ("pending", "Server error 503")
    assert _posts(fake_slack, "C0RELEASE") == []
    assert len(_posts(fake_slack, "U0LINKED")) == 1

    # The task again before the row's time: nothing. At its time the sweep queues the
    # notice again and the send takes the channel's row only.
    assert notice_send(notice_id=channel_row.notice_id)["sent"] == 0
    later = channel_row.next_attempt_at + dt.timedelta(seconds=61)
    assert notices_sweep(now=later) == [channel_row.notice_id]
    assert notice_send(notice_id=channel_row.notice_id, now=later)["sent"] == 1
    assert (len(_posts(fake_slack, "C0RELEASE")), len(_posts(fake_slack, "U0LINKED"))) == (1, 1)
    assert notice_send(notice_id=channel_row.notice_id, now=later) == {
        "sent": 0, "retry": 0, "failed": 0, "waiting": 0, "not-claimed": 0,
    }  # fmt: skip
    assert notices_sweep(now=later + dt.timedelta(hours=1)) == []
    assert len(mail.outbox) == 1


def test_a_row_held_by_another_sender_is_not_sent_again(
    settings, kep, code_freeze, fake_slack, django_capture_on_commit_callbacks
):
    # Nothing queued on commit here: the test is the second sender.
    _save(code_freeze, django_capture_on_commit_callbacks, execute=False, at=tz.parse_wall_time("2024-07-25 19:00", LA))
    notice = ScheduleNotice.objects.get()
    now = tz.utc_now()
    NoticeDelivery.objects.filter(notice=notice, recipient="channel:C0RELEASE").update(state="sending", claimed_at=now)
    assert notice_send(notice_id=notice.pk, now=now)["sent"] == 1  # the email only
    assert _posts(fake_slack) == []
    # Its sender lost (lease over): the row is sent, once.
    after_lease = now + dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS + 1)
    assert notice_send(notice_id=notice.pk, now=after_lease)["sent"] == 1
    assert notice_send(notice_id=notice.pk, now=after_lease)["sent"] == 0
    assert len(_posts(fake_slack, "C0RELEASE")) == 1


def _send_in_turn(notice_id: int) -> list[float]:
    """Run the send as the worker would, again at each turn it reserved, until nothing
    is left to send; the turns it waited for."""
    slots, turns, requeued = None, [], []
    while True:
        requeued.clear()
        notice_send(notice_id=notice_id, slots=slots, requeue=lambda *args: requeued.append(args))
        if not requeued:
            assert set(NoticeDelivery.objects.filter(notice_id=notice_id).values_list("state", flat=True)) == {"sent"}
            return turns
        [(_, slots, _)] = requeued
        turns.append(min(slots.values()))
        while time.time() < turns[-1]:  # wait for the turn's second to come
            time.sleep(0.01)


def test_the_channel_s_turn_is_shared_with_the_reminders_and_waited_for(
    settings, kep, code_freeze, django_capture_on_commit_callbacks
):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    with FakeSlack(rate_limit=1) as fake:
        settings.SLACK_BOT_TOKEN, settings.SLACK_API_URL = "xoxb-test", fake.api_url
        settings.SLACK_RELEASE_TEAM_CHANNEL = "C0TURN"
        for wall in ("2024-07-25 19:00", "2024-07-26 19:00"):
            _save(code_freeze, django_capture_on_commit_callbacks, execute=False, at=tz.parse_wall_time(wall, LA))
        first, second = ScheduleNotice.objects.order_by("pk")
        # Slack told a reminder to wait 5 s for this channel: the notice waits its turn.
        start = time.time()
        ratelimit.hold("chan:C0TURN", 5, now=start)
        assert _send_in_turn(first.pk) == [float(math.ceil(start + 5))]
        _send_in_turn(second.pk)  # one message per second: its turn is a later second
        first_at, second_at = (call.at for call in _posts(fake))
        assert first_at >= math.ceil(start + 5)
        assert math.floor(second_at) > math.floor(first_at)
        assert [_texts(call)[0] for call in _posts(fake)] == ["1.31: Code Freeze moved"] * 2
        assert fake.rate_limited == 0  # Slack never had to answer 429


# ------------------------------------------------------------------ the hard stop

HARD_STOP_CUT = (
    "past the hard stop (rc.0). The granted extension (until {grant}) runs past the release's hard stop "
    "(10:00 PDT Friday 26 July 2024 (17:00 UTC Friday 26 July 2024), the rc.0 cut)."
)


@pytest.fixture
def su_client(db, client):
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_rc0_moved_before_a_grant_in_the_admin_posts_the_warning(
    su_client, granted, linked_owner, release, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    rc = release.milestones.get(kind__slug="rc")
    url = reverse("admin:releasecal_milestone_change", args=[rc.pk])
    payload = _payload(su_client.get(url))
    payload["at"] = "2024-07-26 10:00"
    with django_capture_on_commit_callbacks(execute=True):
        assert su_client.post(url, payload).status_code == 302
    [channel] = _posts(fake_slack, "C0RELEASE")
    assert _texts(channel) == [
        "1.31: 1.31.0-rc.0 released moved",
        "1.31.0-rc.0 released (Kubernetes v1.31) moved.\n"
        "Was: 10:00 PDT Tuesday 30 July 2024 (17:00 UTC Tuesday 30 July 2024)\n"
        "Now: 10:00 PDT Friday 26 July 2024 (17:00 UTC Friday 26 July 2024)",
        "Granted extensions this change overrides:",
        f"• KEP-2400 (exception #{granted.pk}): " + HARD_STOP_CUT.format(grant=GRANT),
    ]
    [dm] = _posts(fake_slack, "U0LINKED")
    assert _texts(dm)[-1] == "You get this as an owner of KEP-2400."
    assert [m.to for m in mail.outbox] == [["kep2400@example.com"]]


def test_an_explicit_hard_stop_set_in_the_admin_before_a_grant_posts_the_warning(
    su_client, granted, release, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    url = reverse("admin:releasecal_release_change", args=[release.pk])
    payload = _payload(su_client.get(url))
    payload["hard_stop"] = "2024-07-26 10:00"
    with django_capture_on_commit_callbacks(execute=True):
        assert su_client.post(url, payload).status_code == 302
    release.refresh_from_db()
    assert release.hard_stop == tz.parse_wall_time("2024-07-26 10:00", LA)
    assert release.hard_stop_wall == dt.datetime(2024, 7, 26, 10, 0)  # the wall time entered, kept (tzdata_check)
    [channel] = _posts(fake_slack, "C0RELEASE")
    assert _texts(channel) == [
        "1.31: hard stop moved",
        "The hard stop of Kubernetes v1.31 (no extension may end after it) moved.\n"
        "Was: 10:00 PDT Tuesday 30 July 2024 (17:00 UTC Tuesday 30 July 2024)\n"
        "Now: 10:00 PDT Friday 26 July 2024 (17:00 UTC Friday 26 July 2024)",
        "Granted extensions this change overrides:",
        f"• KEP-2400 (exception #{granted.pk}): " + HARD_STOP_CUT.format(grant=GRANT),
    ]
    assert [m.subject for m in mail.outbox] == ["[releasecal] 1.31: hard stop moved"]

    # Saving the release again, hard stop unchanged (and another field edited): nothing more.
    payload = _payload(su_client.get(url))
    payload["name"] = "Kubernetes v1.31 (Elli)"
    with django_capture_on_commit_callbacks(execute=True):
        assert su_client.post(url, payload).status_code == 302
    assert len(_posts(fake_slack)) == 1
    assert ScheduleNotice.objects.count() == 1


def test_a_freeze_moved_in_the_release_form_is_told(
    su_client, granted, release, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    url = reverse("admin:releasecal_release_change", args=[release.pk])
    payload = _payload(su_client.get(url))
    payload[f"{_inline_index(payload, code_freeze)}-at"] = "2024-07-28 19:00"
    with django_capture_on_commit_callbacks(execute=True):
        assert su_client.post(url, payload).status_code == 302
    [channel] = _posts(fake_slack, "C0RELEASE")
    assert _texts(channel)[0] == "1.31: Code Freeze moved"
    assert _texts(channel)[3].startswith(f"• KEP-2400 (exception #{granted.pk}): superseded by the freeze.")


# ------------------------------------------------------------------ the importer

SCHEDULE = """
release:
  slug: "1.31"
  name: Kubernetes v1.31
  zone: America/Los_Angeles
  start_date: 2024-05-13
  ga_date: 2024-08-13
  status: active
{hard_stop}milestones:
  - kind: enhancements-freeze
    title: Enhancements Freeze
    at: "2024-06-13 19:00"
  - kind: code-freeze
    title: Code Freeze
    at: "{freeze}"
    ends_at: "2024-08-07 19:00"
  - kind: rc
    title: 1.31.0-rc.0 released
    at: "2024-07-30 10:00"
  - kind: ga
    title: v1.31 released
    date: 2024-08-13
"""


def _import(tmp_path, capture, *, freeze: str = "2024-07-23 19:00", hard_stop: str = "") -> None:
    path = tmp_path / f"schedule-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(SCHEDULE.format(freeze=freeze, hard_stop=f'  hard_stop: "{hard_stop}"\n' if hard_stop else ""))
    with capture(execute=True):
        schedule_import(path=path)


def test_the_importer_tells_a_moved_freeze_once_and_an_unchanged_file_nothing(
    tmp_path, granted, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    _import(tmp_path, django_capture_on_commit_callbacks)  # the stored schedule, as it is
    assert ScheduleNotice.objects.count() == 0
    _import(tmp_path, django_capture_on_commit_callbacks, freeze="2024-07-28 19:00")
    _import(tmp_path, django_capture_on_commit_callbacks, freeze="2024-07-28 19:00")  # again: no change
    [channel] = _posts(fake_slack, "C0RELEASE")
    assert _texts(channel)[:2] == [
        "1.31: Code Freeze moved",
        f"Code Freeze (Kubernetes v1.31) moved.\n{WAS}\n{NOW_28}",
    ]
    assert "superseded by the freeze" in _texts(channel)[3]
    assert len(mail.outbox) == 1


def test_the_importer_setting_a_hard_stop_before_a_grant_posts_the_warning(
    tmp_path, granted, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    _import(tmp_path, django_capture_on_commit_callbacks, hard_stop="2024-07-26 10:00")
    _import(tmp_path, django_capture_on_commit_callbacks, hard_stop="2024-07-26 10:00")  # again: no change
    [channel] = _posts(fake_slack, "C0RELEASE")
    assert _texts(channel)[0] == "1.31: hard stop moved"
    assert _texts(channel)[3] == f"• KEP-2400 (exception #{granted.pk}): " + HARD_STOP_CUT.format(grant=GRANT)
    assert [m.subject for m in mail.outbox] == ["[releasecal] 1.31: hard stop moved"]
    stored = Release.objects.get(slug="1.31")
    assert (stored.hard_stop_wall, stored.milestones.get(title="Code Freeze").at_wall) == (
        dt.datetime(2024, 7, 26, 10, 0),
        dt.datetime(2024, 7, 23, 19, 0),
    )


def test_the_admin_shows_the_ledger_read_only(
    su_client, kep, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    _save(code_freeze, django_capture_on_commit_callbacks, at=tz.parse_wall_time("2024-07-25 19:00", LA))
    notice = ScheduleNotice.objects.get()
    listing = su_client.get(reverse("admin:notices_schedulenotice_changelist")).content.decode()
    assert "1.31: Code Freeze moved" in listing
    page = su_client.get(reverse("admin:notices_schedulenotice_change", args=[notice.pk])).content.decode()
    assert "channel:C0RELEASE" in page
    assert "email:kep2400@example.com" in page
    assert su_client.get(reverse("admin:notices_schedulenotice_add")).status_code == 403
