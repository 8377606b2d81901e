"""Future deadlines keep the wall time they were set to when tzdata changes a zone's
rules (issue 11): ``manage.py tzdata_check`` against a test tzdata compiled with zic.

Two test zones, compiled twice (``OLD`` then ``NEW``) into directories put first on
``zoneinfo.TZPATH`` through the public API (``zoneinfo.reset_tzpath``), with every
zone cache emptied (``tz.zone_rules_reload``: releasecal.tz's caches, the API's
rendering cache and ``ZoneInfo.clear_cache``):

- ``Test/Dropland``: US daylight saving rules; NEW drops daylight saving time from 2028
  (standard time, UTC-8, all year).
- ``Test/Shifted``: UTC-5 all year; NEW says UTC-6 for all time (a history correction),
  so a *past* deadline would move too if the command touched the past, until 11 March
  2029 02:00, when it jumps to UTC-5 (02:30 that day no longer exists).
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import zoneinfo
from typing import NamedTuple

import icalendar
import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from exceptions.models import Decision
from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from feeds import ical
from notices.models import ScheduleNotice
from releasecal import tz
from releasecal.models import AuditLog, Milestone, Release
from releasecal.services import enhancement_upsert, milestone_create, milestone_save, release_save, tracking_set
from reminders.models import Channel, Delivery, ReminderRule
from reminders.services import deliveries_sync_all
from tests.support.reminders_helpers import channel, rule

ZIC = shutil.which("zic") or "/usr/sbin/zic"

RULES = """\
Rule\tTUS\t2007\tmax\t-\tMar\tSun>=8\t2:00\t1:00\tD
Rule\tTUS\t2007\tmax\t-\tNov\tSun>=1\t2:00\t0\tS
"""
OLD = (
    RULES
    + """\
Zone\tTest/Dropland\t-8:00\tTUS\tP%sT
Zone\tTest/Shifted\t-5:00\t-\tEST
"""
)
NEW = (
    RULES
    + """\
Zone\tTest/Dropland\t-8:00\tTUS\tP%sT\t2028 Jan 1 0:00
\t\t\t-8:00\t-\tPST
Zone\tTest/Shifted\t-6:00\t-\tCST\t2029 Mar 11 2:00
\t\t\t-5:00\t-\tEST
"""
)


def compile_tzdata(source: str, directory) -> str:
    directory.mkdir()
    (directory / "test.zi").write_text(source)
    subprocess.run([ZIC, "-d", str(directory / "zoneinfo"), str(directory / "test.zi")], check=True)
    return str(directory / "zoneinfo")


class TzdataDirs(NamedTuple):
    old: str
    new: str
    original: tuple[str, ...]


@pytest.fixture
def tzdata_dirs(tmp_path):
    """The OLD and NEW compiled test tzdata (and the TZPATH before); zoneinfo and releasecal.tz restored afterwards."""
    if not shutil.which(ZIC):
        pytest.fail(f"zic is needed to compile the test tzdata (looked for {ZIC})")
    original = zoneinfo.TZPATH
    old = compile_tzdata(OLD, tmp_path / "old")
    new = compile_tzdata(NEW, tmp_path / "new")
    yield TzdataDirs(old, new, original)
    zoneinfo.reset_tzpath(to=original)
    tz.zone_rules_reload()


def use_rules(directory: str, original=zoneinfo.TZPATH) -> None:
    zoneinfo.reset_tzpath(to=[directory, *original])
    tz.zone_rules_reload()


def wall(text: str, zone: str) -> dt.datetime:
    return tz.parse_wall_time(text, zone)


def utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def run(*args) -> tuple[int, str, str]:
    from io import StringIO

    out, err = StringIO(), StringIO()
    try:
        call_command("tzdata_check", *args, stdout=out, stderr=err)
    except CommandError as exc:
        err.write(f"CommandError: {exc}\n")
        return exc.returncode, out.getvalue(), err.getvalue()
    return 0, out.getvalue(), err.getvalue()


@pytest.fixture
def schedule(under_old_rules, kinds, requester, release_team_member_dropland, reminder_rules):
    """Deadlines set under the OLD rules (wall times recorded by the services)."""
    release = release_team_member_dropland.release
    zone = "Test/Dropland"
    rows = {
        # 2028 summer: PDT under OLD, PST under NEW: moves an hour later.
        "freeze": milestone_create(
            release=release, kind=kinds["enhancements-freeze"], title="Enhancements Freeze",
            at=wall("2028-07-13 19:00", zone),
        ),
        # 2027 summer: before the change, stays.
        "docs": milestone_create(
            release=release, kind=kinds["docs-freeze"], title="Docs Freeze", at=wall("2027-07-08 19:00", zone)
        ),
        # 2028 winter: standard time under both rules, stays.
        "winter": milestone_create(
            release=release, kind=kinds["rc"], title="rc.0", at=wall("2028-12-07 10:00", zone)
        ),
        # A window in summer 2028: both ends move.
        "window": milestone_create(
            release=release, kind=kinds["code-freeze"], title="Code Freeze",
            at=wall("2028-06-01 09:00", zone), ends_at=wall("2028-06-05 17:00", zone),
        ),
        # The past, in a zone whose whole history NEW changes: never touched.
        "past": milestone_create(
            release=release, kind=kinds["docs-freeze"], title="Old docs freeze",
            at=wall("2025-06-02 12:00", "Test/Shifted"), zone="Test/Shifted",
        ),
        "shifted": milestone_create(
            release=release, kind=kinds["docs-freeze"], title="Shifted docs freeze",
            at=wall("2027-03-01 12:00", "Test/Shifted"), zone="Test/Shifted",
        ),
        # In a gap under NEW: moves to the end of the gap, the wall time kept.
        "gap": milestone_create(
            release=release, kind=kinds["test-freeze"], title="Gap freeze",
            at=wall("2029-03-11 02:30", "Test/Shifted"), zone="Test/Shifted",
        ),
        # The second 01:30 of a fall-back night (set with its offset): the kept wall time
        # has no fold bit, and the stored instant is still one of its readings: stays.
        "fold": milestone_create(
            release=release, kind=kinds["test-freeze"], title="Fold freeze", at=wall("2027-11-07 01:30-08:00", zone),
        ),
    }  # fmt: skip
    kep = enhancement_upsert(number=4242, title="Dropping DST", owning_sig="node", owners=[{"github": "owner"}])
    tracking_set(release=release, enhancement=kep, stage="beta")
    request = exception_request_submit(
        enhancement=kep,
        milestone=rows["freeze"],
        requester=requester,
        fields=RequestFields(days=3, enhancement_name=kep.title, stage="beta", sig="node"),
    )
    rows["grant"] = exception_request_approve(
        request=request,
        actor=release_team_member_dropland.user,
        granted_until=wall("2028-07-16 19:00", zone),
        granted_zone=zone,
    )
    return rows


@pytest.fixture
def under_old_rules(tzdata_dirs):
    use_rules(tzdata_dirs.old)
    return tzdata_dirs


@pytest.fixture
def reminder_rules(kinds):
    """A day-before reminder of the enhancements freeze and of granted extensions."""
    team = Channel.objects.create(name="team", kind="email", config={"to": ["team@example.com"]})
    freezes = ReminderRule.objects.create(name="freeze", offsets="1d", channel=team)
    freezes.kinds.set([kinds["enhancements-freeze"]])
    ReminderRule.objects.create(
        name="extensions", offsets="1d", channel=team, applies_to=ReminderRule.AppliesTo.EXTENSIONS
    )


def MOVED_LINES(schedule) -> list[str]:
    f, w, s, g = schedule["freeze"].pk, schedule["window"].pk, schedule["shifted"].pk, schedule["grant"].request_id
    gap = schedule["gap"].pk
    return [
        f"milestone {s} [1.99] Shifted docs freeze, at: set to 12:00 Monday 1 March 2027 Test/Shifted; "
        "was 17:00 UTC Monday 1 March 2027, now 12:00 CST Monday 1 March 2027 (18:00 UTC Monday 1 March 2027)",
        f"milestone {w} [1.99] Code Freeze, at: set to 09:00 Thursday 1 June 2028 Test/Dropland; "
        "was 16:00 UTC Thursday 1 June 2028, now 09:00 PST Thursday 1 June 2028 (17:00 UTC Thursday 1 June 2028)",
        f"milestone {w} [1.99] Code Freeze, ends_at: set to 17:00 Monday 5 June 2028 Test/Dropland; "
        "was 00:00 UTC Tuesday 6 June 2028, now 17:00 PST Monday 5 June 2028 (01:00 UTC Tuesday 6 June 2028)",
        f"milestone {f} [1.99] Enhancements Freeze, at: set to 19:00 Thursday 13 July 2028 Test/Dropland; "
        "was 02:00 UTC Friday 14 July 2028, now 19:00 PST Thursday 13 July 2028 (03:00 UTC Friday 14 July 2028)",
        f"milestone {gap} [1.99] Gap freeze, at: set to 02:30 Sunday 11 March 2029 Test/Shifted; "
        "was 07:30 UTC Sunday 11 March 2029, now 03:00 EST Sunday 11 March 2029 (08:00 UTC Sunday 11 March 2029) "
        "(the new rules skip this wall time: it is now the end of the gap)",
        f"grant of exception request {g} (KEP-4242, [1.99] Enhancements Freeze), granted_until: set to 19:00 "
        "Sunday 16 July 2028 Test/Dropland; was 02:00 UTC Monday 17 July 2028, "
        "now 19:00 PST Sunday 16 July 2028 (03:00 UTC Monday 17 July 2028)",
        "release 1.99, hard_stop: set to 19:00 Friday 20 October 2028 Test/Dropland; was 02:00 UTC Saturday 21 "
        "October 2028, now 19:00 PST Friday 20 October 2028 (03:00 UTC Saturday 21 October 2028)",
    ]


@pytest.fixture
def release_team_member_dropland(kinds, release_team_member):
    from types import SimpleNamespace

    release = release_save(
        release=Release(
            slug="1.99", name="Kubernetes v1.99", zone="Test/Dropland", start_date=dt.date(2028, 5, 1),
            hard_stop=wall("2028-10-20 19:00", "Test/Dropland"),  # PDT under OLD: moves
        )
    )  # fmt: skip
    release.team.add(release_team_member)
    return SimpleNamespace(release=release, user=release_team_member)


def test_wall_times_are_recorded_under_the_rules_they_were_set_with(tzdata_dirs, kinds, release):
    old = tzdata_dirs.old
    use_rules(old)
    milestone = milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs", at=wall("2028-07-13 19:00", "Test/Dropland"),
        zone="Test/Dropland",
    )  # fmt: skip
    milestone.refresh_from_db()
    assert milestone.at == utc("2028-07-14 02:00")
    assert milestone.at_wall == dt.datetime(2028, 7, 13, 19, 0)
    assert milestone.ends_at_wall is None


def test_the_command_reports_exactly_the_moved_future_instants_and_changes_nothing(under_old_rules, schedule):
    new = under_old_rules.new
    assert run() == (0, "No future deadline moved: 10 future instant(s) checked against " + tz.zone_rules_source()
                     + ".\n", "")  # fmt: skip
    audit_rows = AuditLog.objects.count()
    sequences = dict(Milestone.objects.values_list("pk", "sequence"))

    use_rules(new)
    code, out, err = run()
    assert code == 1
    assert out.splitlines() == MOVED_LINES(schedule)
    assert err == (
        f"CommandError: 7 future instant(s) moved under the zone rules of {tz.zone_rules_source()}; "
        "nothing was saved: run `manage.py tzdata_check --apply`.\n"
    )
    # Nothing changed.
    assert AuditLog.objects.count() == audit_rows
    assert dict(Milestone.objects.values_list("pk", "sequence")) == sequences
    assert Milestone.objects.get(pk=schedule["freeze"].pk).at == utc("2028-07-14 02:00")
    assert Decision.objects.get(pk=schedule["grant"].pk).granted_until == utc("2028-07-17 02:00")


def feed_events(path: str) -> dict[str, dict]:
    response = Client().get(path)
    assert response.status_code == 200, response.content
    events = {}
    for event in icalendar.Calendar.from_ical(response.content).walk("VEVENT"):
        events[str(event["SUMMARY"])] = {
            "DTSTART": event["DTSTART"].to_ical().decode(),
            "TZID": event["DTSTART"].params.get("TZID"),
            "instant": event.decoded("DTSTART").astimezone(dt.UTC) if "TZID" in event["DTSTART"].params else None,
            "SEQUENCE": int(event["SEQUENCE"]),
        }
    return events


def test_apply_saves_the_new_instants_with_the_wall_times_kept_and_a_second_run_finds_nothing(
    under_old_rules, schedule
):
    new = under_old_rules.new
    walls_before = dict(Milestone.objects.values_list("pk", "at_wall"))
    ends_before = dict(Milestone.objects.values_list("pk", "ends_at_wall"))
    sequences = dict(Milestone.objects.values_list("pk", "sequence"))
    request = schedule["grant"].request
    deliveries_before = {
        (d.milestone_id, d.request_id): d.deadline_at for d in Delivery.objects.filter(state="pending")
    }
    assert deliveries_before == {
        (schedule["freeze"].pk, None): utc("2028-07-14 02:00"),
        (schedule["freeze"].pk, request.pk): utc("2028-07-17 02:00"),
    }

    use_rules(new)
    feed = "/calendar/kep/4242.ics"
    events_before = feed_events(feed)
    code, out, err = run("--apply")
    assert (code, err) == (0, ""), err
    assert out.splitlines() == [
        *MOVED_LINES(schedule),
        f"7 future instant(s) moved under the zone rules of {tz.zone_rules_source()}; 7 saved (wall times kept).",
    ]

    moved = {schedule[name].pk for name in ("freeze", "window", "shifted", "gap")}
    rows = {m.pk: m for m in Milestone.objects.all()}
    assert rows[schedule["freeze"].pk].at == utc("2028-07-14 03:00")
    assert (rows[schedule["window"].pk].at, rows[schedule["window"].pk].ends_at) == (
        utc("2028-06-01 17:00"),
        utc("2028-06-06 01:00"),
    )
    assert rows[schedule["shifted"].pk].at == utc("2027-03-01 18:00")
    assert rows[schedule["past"].pk].at == utc("2025-06-02 17:00")  # the past is never touched
    assert rows[schedule["docs"].pk].at == utc("2027-07-09 02:00")
    assert rows[schedule["winter"].pk].at == utc("2028-12-07 18:00")
    assert rows[schedule["fold"].pk].at == utc("2027-11-07 09:30")
    assert rows[schedule["gap"].pk].at == utc("2029-03-11 08:00")
    assert dict(Milestone.objects.values_list("pk", "at_wall")) == walls_before
    assert dict(Milestone.objects.values_list("pk", "ends_at_wall")) == ends_before
    assert {pk: row.sequence - sequences[pk] for pk, row in rows.items()} == {pk: int(pk in moved) for pk in sequences}
    decision = Decision.objects.get(pk=schedule["grant"].pk)
    assert decision.granted_until == utc("2028-07-17 03:00")
    assert decision.granted_wall == dt.datetime(2028, 7, 16, 19, 0)

    # The audit log says who moved what, from which instant to which.
    audit = AuditLog.objects.filter(actor_label="tzdata upgrade (manage.py tzdata_check --apply)")

    def instant(values: dict) -> str:
        return values.get("at") or values.get("granted_until") or values["hard_stop"]

    release = schedule["freeze"].release
    assert sorted((row.action, row.object_id, instant(row.before), instant(row.after)) for row in audit) == sorted([
        ("milestone.update", str(schedule["freeze"].pk), "2028-07-14T02:00:00Z", "2028-07-14T03:00:00Z"),
        ("milestone.update", str(schedule["window"].pk), "2028-06-01T16:00:00Z", "2028-06-01T17:00:00Z"),
        ("milestone.update", str(schedule["shifted"].pk), "2027-03-01T17:00:00Z", "2027-03-01T18:00:00Z"),
        ("milestone.update", str(schedule["gap"].pk), "2029-03-11T07:30:00Z", "2029-03-11T08:00:00Z"),
        ("exception.grant_moved", str(request.pk), "2028-07-17T02:00:00Z", "2028-07-17T03:00:00Z"),
        ("release.update", str(release.pk), "2028-10-21T02:00:00Z", "2028-10-21T03:00:00Z"),
    ])  # fmt: skip
    release.refresh_from_db()
    assert (release.hard_stop, release.hard_stop_wall) == (utc("2028-10-21 03:00"), dt.datetime(2028, 10, 20, 19, 0))

    # Reminders follow the new instants, as on any move.
    deliveries_after = {(d.milestone_id, d.request_id): d.deadline_at for d in Delivery.objects.filter(state="pending")}
    assert deliveries_after == {
        (schedule["freeze"].pk, None): utc("2028-07-14 03:00"),
        (schedule["freeze"].pk, request.pk): utc("2028-07-17 03:00"),
    }

    # The feed shows the same wall time at the new instant, with a higher SEQUENCE.
    events_after = feed_events(feed)
    # Before --apply the new rules show the stale instants an hour off the wall time set
    # (18:00 PST); after it, the wall time set (19:00) at a higher SEQUENCE. The past
    # and the instants the new rules did not move are as they were.
    F = ical.SEQUENCE_FORMAT  # the writer-format part of every SEQUENCE
    shown = {summary: (event["DTSTART"], event["SEQUENCE"]) for summary, event in events_before.items()}
    assert shown == {
        "[1.99] Old docs freeze": ("20250602T110000", F + 0),
        "[1.99] Shifted docs freeze": ("20270301T110000", F + 0),
        "[1.99] Docs Freeze": ("20270708T190000", F + 0),
        "[1.99] Code Freeze": ("20280601T080000", F + 0),
        "[1.99] Enhancements Freeze": ("20280713T180000", F + 0),
        "[1.99] Enhancements Freeze extended for KEP-4242": ("20280716T180000", F + 1),
        "[1.99] rc.0": ("20281207T100000", F + 0),
        # In the fold: written in UTC (docs/feeds.md), the wall time in the summary.
        "[1.99] Fold freeze (01:30 PST Sunday 7 November 2027)": ("20271107T093000Z", F + 0),
        "[1.99] Gap freeze": ("20290311T013000", F + 0),
    }
    shown = {summary: (event["DTSTART"], event["SEQUENCE"]) for summary, event in events_after.items()}
    assert shown == {
        "[1.99] Old docs freeze": ("20250602T110000", F + 0),
        "[1.99] Shifted docs freeze": ("20270301T120000", F + 1),
        "[1.99] Docs Freeze": ("20270708T190000", F + 0),
        "[1.99] Code Freeze": ("20280601T090000", F + 1),
        "[1.99] Enhancements Freeze": ("20280713T190000", F + 1),
        "[1.99] Enhancements Freeze extended for KEP-4242": ("20280716T190000", F + 2),
        "[1.99] rc.0": ("20281207T100000", F + 0),
        # In the fold: written in UTC (docs/feeds.md), the wall time in the summary.
        "[1.99] Fold freeze (01:30 PST Sunday 7 November 2027)": ("20271107T093000Z", F + 0),
        "[1.99] Gap freeze": ("20290311T030000", F + 1),
    }
    assert events_after["[1.99] Enhancements Freeze"]["instant"] == utc("2028-07-14 03:00")
    assert events_after["[1.99] Enhancements Freeze extended for KEP-4242"]["instant"] == utc("2028-07-17 03:00")
    assert run() == (0, "No future deadline moved: 10 future instant(s) checked against " + tz.zone_rules_source()
                     + ".\n", "")  # fmt: skip


def test_an_edit_before_apply_keeps_the_wall_time_set(under_old_rules, schedule):
    """After the upgrade and before --apply, the stored instant is stale: editing the
    title keeps the wall time as set, and the command still moves the instant."""
    new = under_old_rules.new
    use_rules(new)
    freeze = Milestone.objects.get(pk=schedule["freeze"].pk)
    freeze.title = "Enhancements Freeze (renamed)"
    milestone_save(milestone=freeze)
    freeze.refresh_from_db()
    assert (freeze.at, freeze.at_wall) == (utc("2028-07-14 02:00"), dt.datetime(2028, 7, 13, 19, 0))
    assert run("--apply")[0] == 0
    freeze.refresh_from_db()
    assert (freeze.at, freeze.at_wall) == (utc("2028-07-14 03:00"), dt.datetime(2028, 7, 13, 19, 0))
    # A person who then sets another time sets another wall time.
    freeze.at = wall("2028-07-13 20:00", "Test/Dropland")
    milestone_save(milestone=freeze)
    freeze.refresh_from_db()
    assert (freeze.at, freeze.at_wall) == (utc("2028-07-14 04:00"), dt.datetime(2028, 7, 13, 20, 0))


def test_reloading_the_zone_rules_reaches_every_cache_of_them(tzdata_dirs, kinds, release):
    """The API's rendering cache and the pages' zone list follow ``tz.zone_rules_reload``
    (registered with ``tz.rules_cache_register``): the same stored instant reads PDT
    under OLD and PST under NEW, and a zone only the test tzdata has is offered only
    while it is on the path."""
    from django.test import Client

    from pages.views import _zone_options

    old, new, _ = tzdata_dirs
    use_rules(old)
    milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs", at=wall("2028-07-13 19:00", "Test/Dropland"),
        zone="Test/Dropland",
    )  # fmt: skip

    def at_local() -> dict:
        body = Client().get("/api/v1/milestones/", {"kind": "docs-freeze"}).json()
        return body["results"][0]["at_local"]

    assert at_local() == {
        "datetime": "2028-07-13T19:00:00-07:00",
        "timezone": "Test/Dropland",
        "abbreviation": "PDT",
        "display": "19:00 PDT Thursday 13 July 2028 (02:00 UTC Friday 14 July 2028)",
    }
    assert "Test/Dropland" in _zone_options()
    use_rules(new)
    assert at_local() == {
        "datetime": "2028-07-13T18:00:00-08:00",
        "timezone": "Test/Dropland",
        "abbreviation": "PST",
        "display": "18:00 PST Thursday 13 July 2028 (02:00 UTC Friday 14 July 2028)",
    }
    zoneinfo.reset_tzpath(to=tzdata_dirs.original)
    tz.zone_rules_reload()
    assert "Test/Dropland" not in _zone_options()
    assert not tz.is_valid_zone("Test/Dropland")


def test_the_admin_shows_the_wall_time_set_and_says_when_the_rules_moved_it(under_old_rules, schedule):
    from django.contrib.auth.models import User
    from django.urls import reverse

    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    url = reverse("admin:releasecal_milestone_change", args=[schedule["freeze"].pk])
    set_as = '<div class="readonly">19:00 Thursday 13 July 2028 Test/Dropland</div>'
    assert set_as in client.get(url).content.decode()
    use_rules(under_old_rules.new)
    assert (
        '<div class="readonly">19:00 Thursday 13 July 2028 Test/Dropland (the zone rules now put this wall time at '
        "03:00 UTC Friday 14 July 2028, not 02:00 UTC Friday 14 July 2028: run manage.py tzdata_check --apply)</div>"
    ) in client.get(url).content.decode()
    assert run("--apply")[0] == 0
    assert set_as in client.get(url).content.decode()
    window = reverse("admin:releasecal_milestone_change", args=[schedule["window"].pk])
    assert (
        '<div class="readonly">09:00 Thursday 1 June 2028 Test/Dropland; ends 17:00 Monday 5 June 2028 '
        "Test/Dropland</div>"
    ) in client.get(window).content.decode()


def test_a_proposal_confirmed_after_the_upgrade_grants_the_wall_time_read(under_old_rules, schedule, requester):
    from exceptions.services import proposed_decision_confirm, proposed_decision_create

    release, zone = schedule["freeze"].release, "Test/Dropland"
    kep = enhancement_upsert(number=4343, title="Another", owning_sig="node")
    tracking_set(release=release, enhancement=kep, stage="alpha")
    request = exception_request_submit(
        enhancement=kep, milestone=schedule["freeze"], requester=requester, fields=RequestFields(days=3)
    )
    proposal = proposed_decision_create(
        request=request,
        outcome="approved",
        source_text="Approved until 19:00 Sunday 16 July 2028.",
        granted_text="19:00 Sunday 16 July 2028",
        granted_until=wall("2028-07-16 19:00", zone),
        granted_zone=zone,
    )
    assert (proposal.granted_until, proposal.granted_wall) == (utc("2028-07-17 02:00"), dt.datetime(2028, 7, 16, 19))
    use_rules(under_old_rules.new)
    decision = proposed_decision_confirm(proposal=proposal, actor=release.team.get())
    decision.refresh_from_db()
    assert (decision.granted_until, decision.granted_wall) == (utc("2028-07-17 03:00"), dt.datetime(2028, 7, 16, 19))


def test_a_date_only_milestone_closes_at_the_end_of_its_day_under_the_new_rules(
    under_old_rules, kinds, release_team_member_dropland
):
    release = release_team_member_dropland.release
    freeze = milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs Freeze", on_date=dt.date(2028, 7, 13)
    )
    week = milestone_create(
        release=release, kind=kinds["event"], title="Review week", on_date=dt.date(2028, 1, 3),
        ends_on=dt.date(2028, 7, 20),
    )  # fmt: skip
    # End of 13 July 2028 under OLD: 00:00 PDT 14 July = 07:00 UTC; under NEW (PST): 08:00 UTC.
    assert freeze.closes_at == utc("2028-07-14 07:00")
    # A reminder a day before the docs freeze counts from that instant.
    rule(channel("email", "team", to=["release-team@example.com"]), offsets="1d", kinds=("docs-freeze",))
    deliveries_sync_all()
    reminder = Delivery.objects.get(milestone=freeze, offset="1d")
    assert reminder.due_at == utc("2028-07-13 07:00")
    use_rules(under_old_rules.new)
    code, out, err = run()
    assert code == 1
    lines = [line for line in out.splitlines() if "Docs Freeze" in line or "Review week" in line]
    # The review week is not a freeze: it closes at the end of its last day too (issue 29).
    assert lines == [
        f"milestone {freeze.pk} [1.99] Docs Freeze, closes_at (end of 2028-07-13): set to 00:00 Friday 14 July 2028 "
        "Test/Dropland; was 07:00 UTC Friday 14 July 2028, now end of Thursday 13 July 2028 PST "
        "(08:00 UTC Friday 14 July 2028)",
        f"milestone {week.pk} [1.99] Review week, closes_at (end of 2028-07-20): set to 00:00 Friday 21 July 2028 "
        "Test/Dropland; was 07:00 UTC Friday 21 July 2028, now end of Thursday 20 July 2028 PST "
        "(08:00 UTC Friday 21 July 2028)",
        f"milestone {week.pk} [1.99] Review week, passes_at (end of 2028-07-20): set to 00:00 Friday 21 July 2028 "
        "Test/Dropland; was 07:00 UTC Friday 21 July 2028, now end of Thursday 20 July 2028 PST "
        "(08:00 UTC Friday 21 July 2028)",
    ]
    code, out, err = run("--apply")
    assert code == 0, err
    freeze.refresh_from_db()
    week.refresh_from_db()
    assert (freeze.closes_at, week.closes_at, week.passes_at) == (
        utc("2028-07-14 08:00"),
        utc("2028-07-21 08:00"),
        utc("2028-07-21 08:00"),
    )
    assert AuditLog.objects.filter(object_id=str(freeze.pk), action="milestone.update").count() == 1
    reminder.refresh_from_db()
    assert (reminder.due_at, reminder.state) == (utc("2028-07-13 08:00"), Delivery.State.PENDING)
    # The day people were told is the same: no schedule-change notice.
    assert not ScheduleNotice.objects.filter(milestone=freeze).exists()
    code, out, err = run()
    assert code == 0


def test_reloading_the_zone_rules_reaches_the_feed_writers_words(tzdata_dirs):
    """feeds/ical.py remembers each deadline's words per instant and zone (issue 27):
    ``tz.zone_rules_reload`` empties that too, so a feed says what the new rules say."""
    old, new, _ = tzdata_dirs
    instant = utc("2028-07-14 02:00")
    use_rules(old)
    assert ical._render_deadline(instant, "Test/Dropland").startswith("19:00 PDT Thursday 13 July 2028")
    use_rules(new)
    assert ical._render_deadline(instant, "Test/Dropland").startswith("18:00 PST Thursday 13 July 2028")
