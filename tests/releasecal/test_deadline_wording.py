"""Deadlines worded the way people say them (issue 16, item 1).

A deadline at the first instant of a local day is "the end of" the day before:
Kubernetes writes "Thursday 10 December 2026 (AoE)" for the instant Friday 00:00 AoE.
Every expected string here was worked out by hand from the zone's rules.
"""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from exceptions.services import exception_request_approve
from releasecal import tz
from releasecal.errors import ValidationFailed

UTC = dt.UTC


@pytest.mark.parametrize(
    ("instant", "zone", "expected"),
    [
        # AoE: end of Thursday 10 December 2026 anywhere on Earth = Friday 12:00 UTC.
        (
            dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC),
            "AoE",
            "end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
        ),
        # Not a day's first instant: the clock time, as before.
        (
            dt.datetime(2024, 7, 27, 2, 0, tzinfo=UTC),
            "America/Los_Angeles",
            "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)",
        ),
        # 00:00 on the day daylight saving time starts (the jump is at 02:00): PST.
        (
            dt.datetime(2024, 3, 10, 8, 0, tzinfo=UTC),
            "America/Los_Angeles",
            "end of Saturday 9 March 2024 PST (08:00 UTC Sunday 10 March 2024)",
        ),
        # 00:00 on the day it ends (the fold is at 02:00): still PDT.
        (
            dt.datetime(2024, 11, 3, 7, 0, tzinfo=UTC),
            "America/Los_Angeles",
            "end of Saturday 2 November 2024 PDT (07:00 UTC Sunday 3 November 2024)",
        ),
        # UTC+5:45 (Kathmandu): the zone has no letters, so its offset is the label.
        (
            dt.datetime(2025, 1, 15, 18, 15, tzinfo=UTC),
            "Asia/Kathmandu",
            "end of Wednesday 15 January 2025 UTC+05:45 (18:15 UTC Wednesday 15 January 2025)",
        ),
        # Santiago skips midnight when daylight saving time starts (00:00 -> 01:00 on
        # Sunday 8 September 2024): the day's first instant is 01:00 -03.
        (
            dt.datetime(2024, 9, 8, 4, 0, tzinfo=UTC),
            "America/Santiago",
            "end of Saturday 7 September 2024 UTC-03:00 (04:00 UTC Sunday 8 September 2024)",
        ),
        # A minute later it is a clock time again.
        (
            dt.datetime(2024, 9, 8, 4, 1, tzinfo=UTC),
            "America/Santiago",
            "01:01 UTC-03:00 Sunday 8 September 2024 (04:01 UTC Sunday 8 September 2024)",
        ),
        # UTC itself: no parenthesis.
        (dt.datetime(2026, 12, 11, 0, 0, tzinfo=UTC), "UTC", "end of Thursday 10 December 2026 UTC"),
    ],
)
def test_a_deadline_at_the_start_of_a_day_is_the_end_of_the_day_before(instant, zone, expected):
    assert tz.render_deadline(instant, zone) == expected


def test_the_deadline_day_is_the_day_the_words_name():
    assert tz.deadline_day(dt.datetime(2024, 9, 8, 4, 0, tzinfo=UTC), "America/Santiago") == dt.date(2024, 9, 7)
    assert tz.deadline_day(dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC), "AoE") == dt.date(2026, 12, 10)


def test_the_readers_zone_says_end_of_only_when_it_is_midnight_there_too():
    aoe_deadline = dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC)
    assert tz.render_deadline_in_zone(aoe_deadline, "Europe/Berlin") == "13:00 CET Friday 11 December 2026"
    assert tz.render_deadline_in_zone(aoe_deadline, "Etc/GMT+12") == "end of Thursday 10 December 2026 AoE"
    utc_midnight = dt.datetime(2026, 12, 11, 0, 0, tzinfo=UTC)
    assert tz.render_deadline_in_zone(utc_midnight, "Europe/London") == "end of Thursday 10 December 2026 GMT"


def test_instants_that_are_not_deadlines_keep_their_clock_time():
    midnight = dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC)
    assert tz.render(midnight, "AoE") == "00:00 AoE Friday 11 December 2026 (12:00 UTC Friday 11 December 2026)"
    assert tz.local_time(midnight, "AoE").as_dict() == {
        "datetime": "2026-12-11T00:00:00-12:00",
        "timezone": "AoE",
        "abbreviation": "AoE",
        "display": "00:00 AoE Friday 11 December 2026 (12:00 UTC Friday 11 December 2026)",
    }
    assert tz.local_time(midnight, "AoE", deadline=True).as_dict() == {
        "datetime": "2026-12-11T00:00:00-12:00",
        "timezone": "AoE",
        "abbreviation": "AoE",
        "display": "end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
        "deadline_day": "2026-12-10",
    }


def test_the_api_words_deadlines_and_gives_their_day_but_not_other_instants(pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)  # until end of Thu 25 July PDT
    body = APIClient().get(f"/api/v1/exceptions/{pending_request.pk}/", {"tz": "Europe/Berlin"}).json()
    assert body["effective_deadline"] == "2024-07-26T07:00:00Z"
    assert body["effective_deadline_local"]["display"] == (
        "end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)"
    )
    assert body["effective_deadline_local"]["deadline_day"] == "2024-07-25"
    # In Berlin it is 09:00 on Friday: a clock time, and Friday is the day there.
    assert body["effective_deadline_viewer"]["display"] == (
        "09:00 CEST Friday 26 July 2024 (07:00 UTC Friday 26 July 2024)"
    )
    assert body["effective_deadline_viewer"]["deadline_day"] == "2024-07-26"
    # A submission time is not a deadline.
    assert "deadline_day" not in body["submitted_at_local"]
    assert body["submitted_at_local"]["display"] == "20:00 PDT Tuesday 23 July 2024 (03:00 UTC Wednesday 24 July 2024)"


# ------------------------------------------------------------------ every face, every zone kind
# One freeze per kind of zone, at the first instant of a local day there; each face must
# say "end of" the day before, in the words below (worked out by hand from the zone rules).
FACES = {
    # AoE (the project's name for Etc/GMT+12): Friday 00:00 AoE = 12:00 UTC.
    "aoe": {
        "zone": "AoE",
        "instant": dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC),
        "full": "end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
        "native": "end of Thursday 10 December 2026 AoE",
        "aoe": "end of Thursday 10 December 2026 AoE",
        "email": "Deadline: end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026).",
        "day": "2026-12-10",
        # Three days (72 h) later: Monday 00:00 AoE.
        "window": "end of Sunday 13 December 2026 AoE",
    },
    # 00:00 on the day daylight saving time starts in Los Angeles (the jump is at 02:00).
    "dst": {
        "zone": "America/Los_Angeles",
        "instant": dt.datetime(2024, 3, 10, 8, 0, tzinfo=UTC),
        "full": "end of Saturday 9 March 2024 PST (08:00 UTC Sunday 10 March 2024)",
        "native": "end of Saturday 9 March 2024 PST",
        "aoe": "20:00 AoE Saturday 9 March 2024",
        "email": "Deadline: end of Saturday 9 March 2024 PST (08:00 UTC Sunday 10 March 2024)"
        " / 20:00 AoE Saturday 9 March 2024.",
        "day": "2024-03-09",
        # 72 h later the clocks have sprung forward: 01:00 PDT, not a day's start.
        "window": "01:00 PDT Wednesday 13 March 2024",
    },
    # UTC+5:45: Kathmandu's midnight is 18:15 UTC the day before.
    "kathmandu": {
        "zone": "Asia/Kathmandu",
        "instant": dt.datetime(2025, 1, 15, 18, 15, tzinfo=UTC),
        "full": "end of Wednesday 15 January 2025 UTC+05:45 (18:15 UTC Wednesday 15 January 2025)",
        "native": "end of Wednesday 15 January 2025 UTC+05:45",
        "aoe": "06:15 AoE Wednesday 15 January 2025",
        "email": "Deadline: end of Wednesday 15 January 2025 UTC+05:45 (18:15 UTC Wednesday 15 January 2025)"
        " / 06:15 AoE Wednesday 15 January 2025.",
        "day": "2025-01-15",
        "window": "end of Saturday 18 January 2025 UTC+05:45",
    },
    # Santiago skips midnight on Sunday 8 September 2024: the day starts at 01:00 -03.
    "santiago": {
        "zone": "America/Santiago",
        "instant": dt.datetime(2024, 9, 8, 4, 0, tzinfo=UTC),
        "full": "end of Saturday 7 September 2024 UTC-03:00 (04:00 UTC Sunday 8 September 2024)",
        "native": "end of Saturday 7 September 2024 UTC-03:00",
        "aoe": "16:00 AoE Saturday 7 September 2024",
        "email": "Deadline: end of Saturday 7 September 2024 UTC-03:00 (04:00 UTC Sunday 8 September 2024)"
        " / 16:00 AoE Saturday 7 September 2024.",
        "day": "2024-09-07",
        # Wednesday has a midnight: 72 h later is a clock time.
        "window": "01:00 UTC-03:00 Wednesday 11 September 2024",
    },
}


@pytest.fixture(params=sorted(FACES))
def face(request, kinds):
    from django.contrib.auth.models import Group, User

    from exceptions.models import ExceptionRequest
    from releasecal.models import Enhancement, Milestone, Release

    case = FACES[request.param]
    release = Release.objects.create(
        slug=f"7.{len(request.param)}", name=f"Release in {case['zone']}", zone=case["zone"],
        start_date=(case["instant"] - dt.timedelta(days=90)).date(), status=Release.Status.ACTIVE,
    )  # fmt: skip
    freeze = Milestone.objects.create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze", at=case["instant"], zone=case["zone"]
    )
    kep = Enhancement.objects.create(number=4711, title="Wording KEP", owning_sig="node")
    pending = ExceptionRequest.objects.create(
        release=release, enhancement=kep, milestone=freeze, requester_name="Author", days=2,
        submitted_at=case["instant"] + dt.timedelta(hours=1),
    )  # fmt: skip
    lead = User.objects.create_user("wording-lead", "lead@example.com", "pw", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    return {**case, "release": release, "freeze": freeze, "request": pending, "lead": lead}


def _just_before(face, monkeypatch) -> None:
    """The clock a day before the freeze, so that it is upcoming."""
    monkeypatch.setattr(tz, "utc_now", lambda: face["instant"] - dt.timedelta(days=1))


def test_the_api_says_the_deadline_and_its_day(face):
    body = APIClient().get(f"/api/v1/releases/{face['release'].slug}/milestones/", {"tz": "Etc/GMT+12"}).json()
    rows = body["results"] if isinstance(body, dict) else body
    (freeze,) = [row for row in rows if row["title"] == "Code Freeze"]
    assert freeze["deadline_local"]["display"] == face["full"]
    assert freeze["deadline_local"]["deadline_day"] == face["day"]
    # The reader in AoE: "end of" only where it is midnight in AoE too.
    assert freeze["deadline_viewer"]["display"].startswith(face["aoe"] + " (")


def test_the_public_release_page_says_the_deadline(face, client):
    body = client.get(f"/releases/{face['release'].slug}/", {"tz": "UTC"}).content.decode()
    assert f">{face['native']}</time>" in body
    assert f">{face['aoe']}</time>" in body


def test_the_admin_lists_and_pages_say_the_deadline(face, client, monkeypatch):
    _just_before(face, monkeypatch)
    client.force_login(face["lead"])
    cockpit = client.get("/admin/").content.decode()
    assert f"<strong>Code Freeze</strong> ({face['release'].slug}): {face['full']}" in cockpit
    assert f"requests until {face['window']}" in cockpit
    milestones = client.get("/admin/releasecal/milestone/").content.decode()
    assert face["full"] in milestones
    milestone_page = client.get(f"/admin/releasecal/milestone/{face['freeze'].pk}/change/").content.decode()
    assert face["full"] in milestone_page
    release_page = client.get(f"/admin/releasecal/release/{face['release'].pk}/change/").content.decode()
    assert face["full"] in release_page
    requests = client.get("/admin/exceptions/exceptionrequest/").content.decode()
    assert f'<td class="field-deadline">{face["full"]}</td>' in requests
    assert face["window"] in requests
    request_page = client.get(f"/admin/exceptions/exceptionrequest/{face['request'].pk}/change/").content.decode()
    assert face["full"] in request_page


def test_slack_answers_and_the_home_tab_say_the_deadline(face, monkeypatch):
    from slack_integration.commands import relcal
    from slack_integration.home import home_view

    _just_before(face, monkeypatch)
    answer = relcal(f"release {face['release'].slug}", slack_user_id="U-NOBODY")
    texts = [block["text"]["text"] for block in answer["blocks"] if block.get("type") == "section"]
    assert f"*Code Freeze*: {face['full']}\n" in texts[0]
    home = home_view(identity=None, slack_tz="UTC", now=face["instant"] - dt.timedelta(days=1))
    lines = [block["text"]["text"] for block in home["blocks"] if block.get("type") == "section"]
    assert any(f"Code Freeze ({face['release'].slug}): *{face['full']}*" in text for text in lines), lines


def test_reminders_by_email_and_slack_say_the_deadline(face):
    from reminders.messages import message_for_delivery, render_email, render_slack
    from reminders.models import Channel, Delivery

    delivery = Delivery.objects.create(
        channel=Channel.objects.create(name="team", kind="email", config={"to": ["team@example.com"]}),
        milestone=face["freeze"], offset="3d", deadline_at=face["instant"], deadline_zone=face["zone"],
        due_at=face["instant"] - dt.timedelta(days=3),
    )  # fmt: skip
    message = message_for_delivery(delivery, now=delivery.due_at)
    _subject, body = render_email(message)
    assert f"\n\n{face['email']}\n\n" in body
    slack = render_slack(message)
    assert face["email"] in slack["blocks"][1]["text"]["text"]
    assert slack["text"].endswith(f" — {face['email']}")


def test_the_warnings_about_a_grant_word_its_deadlines(pending_request, release_team_member, code_freeze):
    from exceptions.selectors import kep_effective_deadline
    from releasecal.models import Milestone, Release

    exception_request_approve(request=pending_request, actor=release_team_member)  # until end of Thu 25 July PDT
    kep, release = pending_request.enhancement, pending_request.release
    # The release's hard stop set afterwards at the end of Wednesday 24 July: the grant runs past it.
    Release.objects.filter(pk=release.pk).update(hard_stop=dt.datetime(2024, 7, 25, 7, 0, tzinfo=UTC))
    code_freeze.refresh_from_db()
    assert kep_effective_deadline(enhancement=kep, milestone=code_freeze).warning == (
        "The granted extension (until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)) runs past "
        "the release's hard stop (end of Wednesday 24 July 2024 PDT (07:00 UTC Thursday 25 July 2024), the rc.0 cut)."
    )
    # The freeze moved to the end of Saturday 27 July, past the grant: the freeze applies.
    Release.objects.filter(pk=release.pk).update(hard_stop=None)
    Milestone.objects.filter(pk=code_freeze.pk).update(at=dt.datetime(2024, 7, 28, 7, 0, tzinfo=UTC))
    code_freeze.refresh_from_db()
    assert kep_effective_deadline(enhancement=kep, milestone=code_freeze).warning == (
        "The granted extension (until end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)) is superseded "
        "by the freeze: the Code Freeze deadline (end of Saturday 27 July 2024 PDT (07:00 UTC Sunday 28 July 2024)) "
        "is now later, so it applies."
    )


# ------------------------------------------------------------ entering a deadline (issue 24, item 5)
# A form pre-fills and reads a deadline in the words render_deadline shows it in: the day
# it closes on, and a clock time only when it is not the end of that day.


@pytest.mark.parametrize(
    ("instant", "zone", "day", "time"),
    [
        (dt.datetime(2026, 12, 14, 12, 0, tzinfo=UTC), "AoE", "2026-12-13", ""),  # end of Sunday 13 December AoE
        (dt.datetime(2024, 7, 27, 2, 0, tzinfo=UTC), "America/Los_Angeles", "2024-07-26", "19:00"),
        (dt.datetime(2024, 3, 10, 8, 0, tzinfo=UTC), "America/Los_Angeles", "2024-03-09", ""),  # PST midnight
        (dt.datetime(2024, 11, 3, 8, 30, tzinfo=UTC), "America/Los_Angeles", "2024-11-03", "01:30-07:00"),  # fold
        (dt.datetime(2024, 9, 8, 4, 0, tzinfo=UTC), "America/Santiago", "2024-09-07", ""),  # midnight skipped
        (dt.datetime(2024, 7, 27, 2, 0, 30, tzinfo=UTC), "UTC", "2024-07-27", "02:00:30"),
    ],
)
def test_a_deadline_is_entered_as_its_words_name_it_and_reads_back(instant, zone, day, time):
    shown = tz.deadline_input(instant, zone)
    assert (shown.day, shown.time) == (day, time)
    assert tz.parse_deadline_input(shown.day, shown.time, zone) == instant
    assert tz.deadline_day(instant, zone).isoformat() == day


def test_an_empty_time_or_24_00_is_the_end_of_the_day():
    end = dt.datetime(2026, 12, 14, 12, 0, tzinfo=UTC)
    assert tz.parse_deadline_input("2026-12-13", "", "AoE") == end
    assert tz.parse_deadline_input(" 2026-12-13 ", "24:00", "AoE") == end
    assert tz.parse_deadline_input("2026-12-13", "9:05", "AoE") == dt.datetime(2026, 12, 13, 21, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("day", "time", "zone", "message"),
    [
        ("2026-12-14", "00:00", "AoE",
         "00:00 on Monday 14 December 2026 starts that day: it is the end of Sunday 13 December 2026 AoE. "
         "Give that day, 2026-12-13, with no time."),
        ("2024-09-08", "01:00", "America/Santiago",
         "01:00 on Sunday 8 September 2024 starts that day: it is the end of Saturday 7 September 2024 UTC-03:00. "
         "Give that day, 2024-09-07, with no time."),
        ("2024-03-10", "02:30", "America/Los_Angeles",
         "2024-03-10 02:30 does not exist in America/Los_Angeles: the clocks skip over it when daylight saving "
         "time starts. The two offsets around the gap are -07:00 and -08:00; give the time with an explicit "
         "offset or pick a time outside the gap."),
        ("2026-13-01", "", "AoE", "'2026-13-01' is not a date: month must be in 1..12."),
        ("1969-12-31", "", "AoE", "The deadline 1969-12-31 is not a plausible date: use a date between 1970 and 2099."),
        ("tomorrow", "", "AoE", "Give the deadline day as YYYY-MM-DD (e.g. 2026-12-13), not 'tomorrow'."),
        ("2026-12-13", "noon", "AoE",
         "Give the deadline time as HH:MM (e.g. 18:00), or leave it empty for the end of the day; not 'noon'."),
    ],
)  # fmt: skip
def test_a_deadline_that_cannot_be_entered_so_is_refused_with_one_sentence(day, time, zone, message):
    with pytest.raises(ValidationFailed) as err:
        tz.parse_deadline_input(day, time, zone)
    assert err.value.message == message
