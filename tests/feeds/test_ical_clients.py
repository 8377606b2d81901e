"""Real calendar clients read our feeds.

- ical.js (Mozilla's parser, inside Thunderbird; npm, pinned in package.json): every
  event of every kind of feed converts, through the feed's own VTIMEZONEs, to exactly
  the UTC instant the model and the REST API give, across DST changes and for AoE.
- khal (PyPI): imports a feed and lists local times in two other zones.

Locally these skip when node/ical.js or khal are missing; with CI=true they fail.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.contrib.auth.models import User
from django.test import Client

from exceptions.models import ExceptionRequest
from exceptions.services import (
    RequestFields,
    default_granted_until,
    exception_request_approve,
    exception_request_submit,
    exception_request_withdraw,
)
from feeds import ical
from feeds.services import feed_token_create
from releasecal import tz
from releasecal.models import EnhancementOwner, Milestone
from releasecal.services import enhancement_upsert, milestone_cancel, milestone_create, tracking_set
from tests.support.feeds_data import aoe_release
from tests.support.paths import ROOT

ICALJS_CHECK = ROOT / "tests" / "js" / "icaljs_check.mjs"


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required in CI (make test runs npm ci and installs khal into .venv)")
    pytest.skip(f"{what} is not installed")


def node_binary() -> str:
    node = shutil.which("node")
    if not node:
        _missing("node")
    if not (ROOT / "node_modules" / "ical.js" / "package.json").exists():
        _missing("ical.js (run `npm ci`)")
    return node


def khal_binary() -> str:
    candidate = Path(sys.executable).parent / "khal"
    khal = str(candidate) if candidate.exists() else shutil.which("khal")
    if not khal:
        _missing("khal")
    return khal


@pytest.fixture
def world(release, kinds, kep, pending_request, release_team_member, requester, code_freeze):
    """Two releases (LA with DST on both sides, AoE), approved/pending/withdrawn
    extensions, a cancelled milestone, date-only days and windows, and a personal
    token for the KEP's owner."""
    # Either side of the 2024 US DST changes (10 March, 3 November).
    milestone_create(
        release=release, kind=kinds["prr-freeze"], title="PRR Freeze",
        at=tz.parse_wall_time("2024-03-08 17:00", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs kickoff",
        at=tz.parse_wall_time("2024-03-11 09:00", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Retro",
        at=tz.parse_wall_time("2024-11-04 09:00", "America/Los_Angeles"),
        ends_at=tz.parse_wall_time("2024-11-04 10:30", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["docs-freeze"], title="Docs week",
        on_date=dt.date(2024, 7, 29), ends_on=dt.date(2024, 8, 2),
    )  # fmt: skip
    cancelled = milestone_create(
        release=release, kind=kinds["test-freeze"], title="Old test freeze",
        at=tz.parse_wall_time("2024-07-31 19:00", "America/Los_Angeles"),
    )  # fmt: skip
    milestone_cancel(milestone=cancelled)

    # Approved, granted in Berlin (CEST) for KEP 2400.
    exception_request_approve(
        request=pending_request, actor=release_team_member,
        granted_until=tz.parse_wall_time("2024-07-27 23:59", "Europe/Berlin"), granted_zone="Europe/Berlin",
    )  # fmt: skip
    # Pending and withdrawn on another KEP of the same SIG.
    other = enhancement_upsert(number=3000, title="Pending thing", owning_sig="node")
    tracking_set(release=release, enhancement=other, stage="alpha")
    enhancements_freeze = release.milestones.get(kind__slug="enhancements-freeze")
    pending = exception_request_submit(
        enhancement=other, milestone=code_freeze, requester=requester, fields=RequestFields(days=3),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=2),
    )  # fmt: skip
    withdrawn = exception_request_submit(
        enhancement=other, milestone=enhancements_freeze, requester=requester, fields=RequestFields(days=1),
        submitted_at=enhancements_freeze.deadline + dt.timedelta(hours=2),
    )  # fmt: skip
    exception_request_withdraw(request=withdrawn, actor=requester)

    # AoE release with an AoE extension for KEP 2400.
    aoe = aoe_release(kinds)
    aoe.team.add(release_team_member)  # deciding needs membership of the release's team
    tracking_set(release=aoe, enhancement=kep, stage="stable")
    aoe_freeze = aoe.milestones.get(kind__slug="code-freeze")
    aoe_request = exception_request_submit(
        enhancement=kep, milestone=aoe_freeze, requester=requester, fields=RequestFields(days=2),
        submitted_at=aoe_freeze.deadline + dt.timedelta(hours=1),
    )  # fmt: skip
    exception_request_approve(request=aoe_request, actor=release_team_member)

    owner = User.objects.create_user("kep-owner")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=owner)
    aoe.leads.add(owner)
    token = feed_token_create(user=owner).token
    return {"release": release, "aoe": aoe, "token": token, "pending": pending}


def feed_paths(world) -> list[str]:
    return [
        "/calendar/1.31.ics",
        "/calendar/1.35.ics",
        "/calendar/1.31/sig/node.ics",
        "/calendar/kep/2400.ics",
        "/calendar/kep/3000.ics",
        "/calendar/all.ics?since=2020",
        f"/calendar/u/{world['token']}.ics",
    ]


def expected_instants() -> dict[str, dict]:
    """What the model says for every UID: UTC start/end, or dates for all-day events."""
    host = "releasecal.local"
    expected: dict[str, dict] = {}
    for m in Milestone.objects.select_related("release"):
        if m.at is not None:
            expected[f"releasecal-milestone-{m.pk}@{host}"] = {
                "start": tz.isoformat_utc(m.at),
                "end": tz.isoformat_utc(m.ends_at) if m.ends_at else None,
                "zone": m.zone,
            }
        else:
            last = m.ends_on or m.on_date
            expected[f"releasecal-milestone-{m.pk}@{host}"] = {
                "start_date": m.on_date.isoformat(),
                "end_date": (last + dt.timedelta(days=1)).isoformat(),
            }
    for r in ExceptionRequest.objects.select_related("release", "milestone", "milestone__release", "decision"):
        if r.state == "approved":
            from exceptions.selectors import kep_effective_deadline

            deadline = kep_effective_deadline(enhancement=r.enhancement, milestone=r.milestone)
            instant, zone = deadline.instant, deadline.zone
        else:
            instant, zone = default_granted_until(r), r.release.zone
        uid = f"releasecal-extension-{r.pk}@{host}"
        expected[uid] = {"start": tz.isoformat_utc(instant), "end": None, "zone": zone}
    return expected


def api_instants() -> dict[str, str]:
    """The same instants as the REST API reports them (UTC, Z)."""
    client = Client()
    found: dict[str, str] = {}
    for slug in ("1.31", "1.35"):
        response = client.get(f"/api/v1/releases/{slug}/milestones/?limit=1000")
        assert response.status_code == 200, response.content
        for row in response.json()["results"]:
            if row["at"]:
                found[f"releasecal-milestone-{row['id']}@releasecal.local"] = row["at"]
    for r in ExceptionRequest.objects.all():
        row = Client().get(f"/api/v1/exceptions/{r.pk}/").json()
        value = row.get("effective_deadline") if r.state == "approved" else row.get("default_granted_until")
        if value:
            found[f"releasecal-extension-{r.pk}@releasecal.local"] = value
    return found


def run_icaljs(node: str, path: Path) -> dict:
    # A zone far from every feed zone: a time ical.js could not place would show.
    env = {**os.environ, "TZ": "Pacific/Kiritimati"}
    result = subprocess.run(
        [node, str(ICALJS_CHECK), str(path)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_icaljs_reads_every_feed_and_every_instant_matches_the_model_and_the_api(world, tmp_path):
    node = node_binary()
    expected = expected_instants()
    api = api_instants()
    assert len(api) >= 10
    checked: set[str] = set()
    for path in feed_paths(world):
        response = Client().get(path)
        assert response.status_code == 200, path
        ics = tmp_path / "feed.ics"
        ics.write_bytes(response.content)
        parsed = run_icaljs(node, ics)
        assert "method" not in parsed["props"]  # a published feed, not an iTIP message
        assert parsed["props"]["refresh-interval"] == "PT1H"
        assert len(parsed["timezones"]) == len(set(parsed["timezones"]))
        assert parsed["events"], path
        for event in parsed["events"]:
            uid = event["uid"]
            want = expected[uid]
            if "start_date" in want:
                assert event["start"] == {"date": want["start_date"], "tzid": None}, (path, uid)
                assert event["end"] == {"date": want["end_date"], "tzid": None}, (path, uid)
            else:
                assert event["start"]["utc"] == want["start"], (path, uid, event)
                assert event["start"]["tzid"] == tz.iana_name(want["zone"]), (path, uid)
                # A window ends at its end; a deadline is a point in time (DURATION:P0D).
                assert event["end"]["utc"] == (want["end"] or want["start"]), (path, uid)
                if uid in api:
                    assert event["start"]["utc"] == api[uid], (path, uid)
            checked.add(uid)
    # Every milestone and extension was seen by the client in some feed.
    assert checked == set(expected)


def test_icaljs_sees_dst_on_both_sides_and_aoe(world, tmp_path):
    node = node_binary()
    ics = tmp_path / "all.ics"
    ics.write_bytes(Client().get("/calendar/all.ics?since=2020").content)
    by_summary = {e["summary"]: e for e in run_icaljs(node, ics)["events"]}
    # 17:00 PST (UTC-8) before the March change, 09:00 PDT (UTC-7) after it.
    assert by_summary["[1.31] PRR Freeze"]["start"]["utc"] == "2024-03-09T01:00:00Z"
    assert by_summary["[1.31] Docs kickoff"]["start"]["utc"] == "2024-03-11T16:00:00Z"
    # Back on PST after the November change.
    assert by_summary["[1.31] Retro"]["start"]["utc"] == "2024-11-04T17:00:00Z"
    # End of day 6 November AoE is 12:00 UTC on 7 November.
    aoe = by_summary["[1.35] Code Freeze (end of Thursday 6 November 2025 AoE)"]
    assert aoe["start"] == {"utc": "2025-11-07T12:00:00Z", "tzid": "Etc/GMT+12", "local": "2025-11-07T00:00:00"}
    cancelled = by_summary["[1.31] Old test freeze (cancelled)"]
    assert cancelled["status"] == "CANCELLED"
    assert cancelled["sequence"] == 1 + ical.SEQUENCE_FORMAT


def khal_config(root: Path, zone: str) -> Path:
    (root / "cal").mkdir(parents=True)
    config = root / "config"
    config.write_text(
        "[calendars]\n[[feed]]\n"
        f"path = {root / 'cal'}\ntype = calendar\n"
        f"[sqlite]\npath = {root / 'khal.db'}\n"
        "[locale]\n"
        "timeformat = %H:%M\ndateformat = %Y-%m-%d\nlongdateformat = %Y-%m-%d\n"
        "datetimeformat = %Y-%m-%d %H:%M\nlongdatetimeformat = %Y-%m-%d %H:%M\n"
        f"local_timezone = {zone}\ndefault_timezone = {zone}\n"
        "[default]\ndefault_calendar = feed\n"
    )
    return config


def khal_events(khal: str, ics: Path, root: Path, zone: str) -> dict[str, dict]:
    config = khal_config(root, zone)
    env = {
        **os.environ,
        "TZ": zone,
        "LC_ALL": "C.UTF-8",
        "XDG_CONFIG_HOME": str(root / "xdg-config"),
        "XDG_DATA_HOME": str(root / "xdg-data"),
    }
    run = [khal, "-c", str(config)]
    imported = subprocess.run(
        [*run, "import", "--batch", str(ics)], capture_output=True, text=True, env=env, timeout=120
    )
    assert imported.returncode == 0, imported.stderr
    fields = ["--json", "uid", "--json", "start", "--json", "end"]
    listed = subprocess.run(
        [*run, "list", "--once", "--day-format", "", *fields, "2023-01-01", "2027-01-01"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    found: dict[str, dict] = {}
    for line in listed.stdout.splitlines():
        line = line.strip()
        if line.startswith("["):
            for item in json.loads(line):
                found[item["uid"]] = item
    return found


@pytest.mark.parametrize("zone", ["Asia/Tokyo", "Europe/Berlin"])
def test_khal_lists_the_local_times_of_the_feed_in_another_zone(world, tmp_path, zone):
    khal = khal_binary()
    ics = tmp_path / "kep.ics"
    ics.write_bytes(Client().get("/calendar/kep/2400.ics").content)
    listed = khal_events(khal, ics, tmp_path / "khal", zone)
    expected = expected_instants()
    assert listed, "khal listed nothing"
    timed = 0
    for uid, item in listed.items():
        want = expected[uid]
        if "start_date" in want:
            assert item["start"] == want["start_date"], uid
            continue
        start = dt.datetime.fromisoformat(want["start"].replace("Z", "+00:00"))
        # The model's instant on the reader's clock, by zoneinfo alone (not releasecal.tz).
        assert item["start"] == start.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M"), (zone, uid, item)
        if want["end"]:
            end = dt.datetime.fromisoformat(want["end"].replace("Z", "+00:00"))
            assert item["end"] == end.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M"), (zone, uid, item)
        else:  # a deadline is a point in time (DURATION:P0D): khal ends it where it starts
            assert item["end"] == item["start"], (zone, uid, item)
        timed += 1
    assert timed >= 5
    # The Berlin-granted extension and the AoE one are among what khal shows.
    extension_uids = {u for u in listed if u.startswith("releasecal-extension-")}
    assert len(extension_uids) == 2
