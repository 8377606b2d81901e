"""A feed never fails because one event has odd data (issue 11, "Bad input").

Rows written before the range check existed, or by SQL: a milestone at year 1 or 9999,
a grant at 9999, a KEP deleted under its tracking and its request (PostgreSQL checks
the foreign key only at commit; a restore with triggers disabled can leave it so).
Every feed kind still answers 200, icalendar and ical.js read it, the odd instant is
shown in UTC (``DTSTART:...Z``, no TZID our VTIMEZONE does not cover) and every other
event is there as usual."""

from __future__ import annotations

import datetime as dt
import json
import subprocess

import icalendar
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client

from exceptions.models import Decision
from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from feeds.services import feed_token_create
from releasecal.models import Enhancement, EnhancementOwner, Milestone
from releasecal.services import enhancement_upsert, milestone_create, tracking_set
from tests.feeds.test_ical_clients import node_binary, run_icaljs
from tests.feeds.test_ical_span import LIBICAL_CHECK, system_python_with_libical
from tests.support.paths import ROOT

YEAR_ONE = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
YEAR_9999 = dt.datetime(9999, 12, 31, 23, 0, tzinfo=dt.UTC)


def submit(enhancement, like):
    return exception_request_submit(
        enhancement=enhancement, milestone=like.milestone, requester=like.requester,
        fields=RequestFields(days=2, enhancement_name=enhancement.title, stage="beta", sig="node"),
        submitted_at=like.submitted_at,
    )  # fmt: skip


@pytest.fixture
def odd(release, kinds, kep, pending_request, release_team_member):
    owner = User.objects.create_user("odd-owner")
    EnhancementOwner.objects.filter(enhancement=kep).update(user=owner)
    release.leads.add(owner)
    exception_request_approve(request=pending_request, actor=release_team_member)
    first = milestone_create(
        release=release, kind=kinds["other"], title="Year one", at=dt.datetime(2024, 5, 1, tzinfo=dt.UTC)
    )
    last = milestone_create(release=release, kind=kinds["code-freeze"], title="Far freeze", on_date=dt.date(2024, 9, 1))
    Milestone.objects.filter(pk=first.pk).update(at=YEAR_ONE)
    Milestone.objects.filter(pk=last.pk).update(on_date=dt.date(9999, 12, 31))
    # A second KEP with an approved grant at year 9999 ...
    far = enhancement_upsert(number=2500, title="Far grant", owning_sig="node", participating_sigs=["node"], owners=[])
    tracking_set(release=release, enhancement=far, stage="beta", status="tracked")
    far_request = submit(far, pending_request)
    exception_request_approve(request=far_request, actor=release_team_member)
    Decision.objects.filter(request=far_request).update(granted_until=YEAR_9999, granted_zone="AoE")
    EnhancementOwner.objects.create(enhancement=far, user=owner, github="odd-owner")
    # ... and a third KEP, deleted under its tracking, owner row and request.
    gone = enhancement_upsert(
        number=2600, title="Deleted KEP", owning_sig="node", participating_sigs=["node"], owners=[]
    )
    tracking_set(release=release, enhancement=gone, stage="beta", status="tracked")
    submit(gone, pending_request)
    EnhancementOwner.objects.create(enhancement=gone, user=owner, github="odd-owner")
    # PostgreSQL checks the foreign keys at commit (deferred): the row is gone for the
    # rest of the test and put back before the test case checks its constraints.
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE gone_kep AS SELECT * FROM releasecal_enhancement WHERE id = %s", [gone.pk])
        cursor.execute("DELETE FROM releasecal_enhancement WHERE id = %s", [gone.pk])
    assert not Enhancement.objects.filter(number=2600).exists()
    token = feed_token_create(user=owner).token
    yield {
        "paths": [
            "/calendar/1.31.ics",
            "/calendar/1.31/sig/node.ics",
            "/calendar/kep/2400.ics",
            "/calendar/kep/2500.ics",
            "/calendar/all.ics?since=2020",
            f"/calendar/u/{token}.ics",
        ],
        "first": first,
        "last": last,
        "far_request": far_request,
    }  # fmt: skip
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO releasecal_enhancement SELECT * FROM gone_kep")
        cursor.execute("DROP TABLE gone_kep")


def test_every_feed_kind_answers_and_parses_with_odd_rows(odd, tmp_path):
    node = node_binary()
    for path in odd["paths"]:
        for query in ("", "?alarm=1d" if "?" not in path else "&alarm=1d"):
            response = Client().get(path + query)
            assert response.status_code == 200, (path, query, response.content[:300])
            calendar = icalendar.Calendar.from_ical(response.content)
            assert calendar.get_missing_tzids() == set(), path
            summaries = {str(e["SUMMARY"]) for e in calendar.walk("VEVENT")}
            assert "[1.31] Code Freeze" in summaries, path
            ics = tmp_path / "odd.ics"
            ics.write_bytes(response.content)
            parsed = run_icaljs(node, ics)
            assert parsed["events"], path


def test_a_year_one_milestone_is_shown_in_utc(odd):
    body = Client().get("/calendar/1.31.ics").content.decode().replace("\r\n ", "")
    uid = f"UID:releasecal-milestone-{odd['first'].pk}@releasecal.local\r\n"
    block = next(b for b in body.split("BEGIN:VEVENT") if uid in b)
    assert "DTSTART:00010101T000000Z\r\n" in block
    assert "When: 00:00 UTC Monday 1 January 1\\n" in block


def test_a_year_9999_date_and_grant_do_not_fail_the_feed(odd):
    body = Client().get("/calendar/kep/2500.ics").content.decode().replace("\r\n ", "")
    milestone_uid = f"UID:releasecal-milestone-{odd['last'].pk}@releasecal.local\r\n"
    block = next(b for b in body.split("BEGIN:VEVENT") if milestone_uid in b)
    assert "DTSTART;VALUE=DATE:99991231\r\n" in block
    extension_uid = f"UID:releasecal-extension-{odd['far_request'].pk}@releasecal.local\r\n"
    block = next(b for b in body.split("BEGIN:VEVENT") if extension_uid in b)
    assert "DTSTART:99991231T230000Z\r\n" in block


def test_the_deleted_kep_is_left_out_and_the_rest_is_there(odd):
    for path in odd["paths"]:
        text = Client().get(path).content.decode().replace("\r\n ", "")
        assert "KEP-2600" not in text, path
    assert Client().get("/calendar/kep/2600.ics").status_code == 404


def test_libical_finds_no_error_in_the_odd_feeds_with_and_without_alarms(odd, tmp_path):
    """VALARM, DURATION:P0D and UTC instants in year 1 and 9999 pass libical's checks."""
    python = system_python_with_libical()
    files = {}
    for index, path in enumerate(odd["paths"]):
        for query in ("", "&alarm=1d,2h" if "?" in path else "?alarm=1d,2h"):
            file = tmp_path / f"feed-{index}-{len(query)}.ics"
            file.write_bytes(Client().get(path + query).content)
            files[str(file)] = path + query
    result = subprocess.run([python, str(LIBICAL_CHECK), *files], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    found = {files[file]: errors for file, errors in json.loads(result.stdout).items()}
    assert len(found) == 2 * len(odd["paths"])
    assert {path: errors for path, errors in found.items() if errors} == {}
