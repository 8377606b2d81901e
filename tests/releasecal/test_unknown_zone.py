"""A stored zone this tzdata cannot load (written before names were checked, or kept
from another tzdata release) is shown in UTC with a warning on every face, never a 500,
and ``check_services`` lists the row (issue 29)."""

from __future__ import annotations

import io

import icalendar
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from exceptions.models import Decision
from exceptions.services import exception_request_approve
from releasecal import tz
from releasecal.models import Milestone
from tests.slack_integration.test_slack_commands import all_text, relcal
from tests.support.slack import SIGNING_SECRET

MARS = "Mars/Olympus_Mons"
WARNING = f"zone {MARS} unknown to this tzdata; shown in UTC"


@pytest.fixture
def mars_freeze(code_freeze):
    """Code freeze, 02:00 UTC Wednesday 24 July 2024, its zone written past validation."""
    Milestone.objects.filter(pk=code_freeze.pk).update(zone=MARS)
    return Milestone.objects.get(pk=code_freeze.pk)


@pytest.fixture
def mars_grant(pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)
    Decision.objects.filter(request=pending_request).update(granted_zone=MARS)
    return pending_request


@pytest.fixture
def su_client(db):
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def test_the_core_renders_an_unknown_zone_in_utc_with_the_warning(mars_freeze):
    assert tz.render(mars_freeze.at, MARS) == f"02:00 UTC Wednesday 24 July 2024 ({WARNING})"
    assert tz.render_deadline(mars_freeze.at, MARS) == f"02:00 UTC Wednesday 24 July 2024 ({WARNING})"
    assert tz.shown_zone(MARS) == "UTC"
    assert tz.zone_warning("Europe/Berlin") == ""
    with pytest.raises(tz.InvalidZone):  # input is still refused
        tz.normalize_zone_name(MARS)


def test_the_release_page_shows_the_instant_in_utc_with_the_warning(client, mars_freeze):
    response = client.get("/releases/1.31/")
    assert response.status_code == 200
    assert WARNING in response.content.decode()


def test_the_kep_page_shows_a_grant_in_utc_with_the_warning(client, mars_grant):
    response = client.get("/kep/2400/")
    assert response.status_code == 200
    assert WARNING in response.content.decode()


def test_the_api_answers_200_with_the_warning(client, mars_freeze, mars_grant):
    response = client.get("/api/v1/milestones/")
    assert response.status_code == 200
    assert WARNING in response.content.decode()
    response = client.get(f"/api/v1/exceptions/{mars_grant.pk}/")
    assert response.status_code == 200
    assert WARNING in response.content.decode()


def test_slack_release_text_shows_the_warning(client, settings, mars_freeze):
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    assert WARNING in all_text(relcal(client, "release 1.31"))


def test_the_feed_shows_the_milestone_and_the_grant_in_utc_with_the_warning(client, mars_freeze, mars_grant):
    response = client.get("/calendar/kep/2400.ics")
    assert response.status_code == 200
    calendar = icalendar.Calendar.from_ical(response.content)
    events = {str(e["SUMMARY"]): e for e in calendar.walk("VEVENT")}
    freeze = events["[1.31] Code Freeze"]
    assert freeze.decoded("DTSTART") == mars_freeze.at
    assert WARNING in str(freeze["DESCRIPTION"])
    grant = next(e for s, e in events.items() if "KEP-2400" in s)
    assert WARNING in str(grant["DESCRIPTION"])


def test_the_admin_change_lists_and_forms_answer_200(su_client, mars_freeze, mars_grant):
    pages = [
        reverse("admin:releasecal_milestone_changelist"),
        reverse("admin:releasecal_milestone_change", args=[mars_freeze.pk]),
        reverse("admin:releasecal_release_change", args=[mars_freeze.release_id]),
        reverse("admin:exceptions_exceptionrequest_changelist"),
        reverse("admin:exceptions_exceptionrequest_change", args=[mars_grant.pk]),
        reverse("admin:releasecal_release_changelist"),
        "/admin/",
    ]
    for url in pages:
        response = su_client.get(url)
        assert response.status_code == 200, url


def test_check_services_lists_each_row_with_an_unknown_zone(mars_freeze, mars_grant):
    out = io.StringIO()
    call_command("check_services", stdout=out)
    decision = mars_grant.decision
    assert (
        "zones: WARNING 2 row(s) with a zone unknown to this tzdata, shown in UTC: "
        f"releasecal.Milestone {mars_freeze.pk} zone '{MARS}'; exceptions.Decision {decision.pk} zone '{MARS}'"
    ) in out.getvalue()


def test_check_services_says_none_when_every_zone_is_known(release):
    out = io.StringIO()
    call_command("check_services", stdout=out)
    assert "zones: none unknown to this tzdata" in out.getvalue()


def test_a_release_with_an_unknown_zone_answers_200_on_every_face(client, su_client, settings, release, kep):
    from releasecal.models import Release

    Release.objects.filter(pk=release.pk).update(zone=MARS)
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET
    for url in ("/releases/1.31/", "/releases/1.31/exceptions/", "/kep/2400/", "/api/v1/releases/1.31/"):
        response = client.get(url)
        assert response.status_code == 200, url
    assert client.get("/calendar/1.31.ics").status_code == 200
    assert su_client.get(reverse("admin:releasecal_release_change", args=[release.pk])).status_code == 200
    assert su_client.get(reverse("admin:releasecal_release_changelist")).status_code == 200
    relcal(client, "release 1.31")


def test_a_wall_time_in_an_unknown_zone_is_refused_as_input_and_shown_in_utc(mars_freeze):
    import datetime as dt

    wall = dt.datetime(2030, 7, 24, 19, 0)
    with pytest.raises(tz.InvalidZone, match="this tzdata cannot load it"):
        tz.localize(wall, MARS)  # input: reading it in UTC would move it by the zone's offset
    with pytest.raises(tz.InvalidZone):
        tz.parse_wall_time("2030-07-24 19:00", MARS)
    # What a stored row shows is its UTC reading, never a 500.
    assert tz.wall_time_input(mars_freeze.at, MARS) == "2024-07-24 02:00"
    assert tz.wall_readings(wall, MARS) == (wall.replace(tzinfo=dt.UTC),)
    assert tz.localize_lenient(wall, MARS) == wall.replace(tzinfo=dt.UTC)


def test_tzdata_check_leaves_a_deadline_in_an_unknown_zone_as_stored_and_names_it(release, kinds):
    import datetime as dt

    from django.core.management.base import CommandError

    from releasecal.services import milestone_create

    la = tz.parse_wall_time("2030-07-24 19:00", "America/Los_Angeles")
    freeze = milestone_create(release=release, kind=kinds["docs-freeze"], title="Docs Freeze", at=la)
    Milestone.objects.filter(pk=freeze.pk).update(zone=MARS)  # written past validation
    for args in ((), ("--apply",)):
        out, err = io.StringIO(), io.StringIO()
        with pytest.raises(CommandError) as raised:
            call_command("tzdata_check", *args, stdout=out, stderr=err)
        assert raised.value.returncode == 2
        line = f"milestone {freeze.pk} [1.31] Docs Freeze, at: zone '{MARS}' is unknown to this tzdata; left as stored"
        assert line + ", not checked" in err.getvalue()
        assert "1 future instant(s) not checked: their zone is unknown to" in str(raised.value)
        assert "moved" not in out.getvalue().replace("No future deadline moved", "")
    freeze.refresh_from_db()
    assert freeze.at == la == dt.datetime(2030, 7, 25, 2, 0, tzinfo=dt.UTC)  # not read as 19:00 UTC
