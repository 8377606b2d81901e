"""The release lead's cockpit on the admin's front page (issue 16, items 2 and 4).

A release-team member lands on what needs them now; anyone else keeps Django's index.
Deciding from the cockpit goes through the same admin views, services and checks.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from exceptions.models import Decision, ExceptionRequest, SignOff
from exceptions.services import RequestFields, exception_request_submit
from releasecal.services import enhancement_upsert, tracking_set
from tests.pages.test_pages_browser import SHOTS, _migrated_rows, browser, migrated_rows  # noqa: F401 (fixtures)

UTC = dt.UTC


@pytest.fixture
def lead_user(release_team_member):
    release_team_member.is_staff = True
    release_team_member.save()
    return release_team_member


@pytest.fixture
def lead_client(lead_user) -> Client:
    client = Client()
    client.force_login(lead_user)
    return client


def _file(release, code_freeze, number: int, *, hours_after: int = 1) -> ExceptionRequest:
    kep = enhancement_upsert(number=number, title=f"KEP {number}", owning_sig="node")
    tracking_set(release=release, enhancement=kep, stage="beta")
    return exception_request_submit(
        enhancement=kep,
        milestone=code_freeze,
        requester_name=f"Author {number}",
        fields=RequestFields(days=2, stage="beta", sig="node"),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=hours_after),
    )


def test_a_release_team_member_lands_on_the_cockpit(lead_client, pending_request, requester):
    SignOff.objects.create(
        request=pending_request,
        author=requester,
        author_label="dchen",
        role="SIG Node lead",
        at=pending_request.submitted_at,
    )
    body = lead_client.get("/admin/").content.decode()
    assert "What needs the release team now" in body
    assert f'data-request="{pending_request.pk}"' in body
    assert "Requests waiting for a decision (1)" in body
    # The code freeze was 19:00 PDT Tuesday 23 July 2024; the window is 3 days after it.
    assert "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)" in body
    assert "+1 dchen (SIG Node lead)" in body
    assert "SIG node lead signed" in body
    assert f"/admin/exceptions/exceptionrequest/{pending_request.pk}/approve/" in body
    # Waited: from 20:00 PDT 23 July 2024 to now, in days.
    assert " days " in body


def test_a_request_filed_after_its_window_carries_the_policy_warning(lead_client, release, code_freeze):
    late = _file(release, code_freeze, 4200, hours_after=1)
    ExceptionRequest.objects.filter(pk=late.pk).update(submitted_at=code_freeze.deadline + dt.timedelta(days=4))
    body = lead_client.get("/admin/").content.decode()
    assert "Filed after the window (policy warning)" in body


def test_anyone_else_keeps_the_normal_index(client, staff, pending_request):
    client.force_login(staff)
    body = client.get("/admin/").content.decode()
    assert "What needs the release team now" not in body
    assert "Site administration" in body or "Release calendar" in body


def test_the_cockpit_runs_a_fixed_number_of_queries(lead_client, release, code_freeze):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert lead_client.get("/admin/").status_code == 200
        return len(queries)

    _file(release, code_freeze, 5000)
    few = count()
    for number in range(5001, 5030):
        _file(release, code_freeze, number)
    assert count() == few


def test_approving_from_the_cockpit_uses_the_same_view_and_the_request_leaves_the_list(
    lead_client, lead_user, pending_request
):
    approve = f"/admin/exceptions/exceptionrequest/{pending_request.pk}/approve/"
    page = lead_client.get(approve)
    assert page.status_code == 200
    form = page.context["items"][0]["form"]
    response = lead_client.post(approve, {"granted_day": form["granted_day"].value(), "zone": "", "note": "ok"})
    assert response.status_code == 302
    decision = Decision.objects.get(request=pending_request)
    assert decision.decided_by == lead_user
    assert decision.granted_until == dt.datetime(2024, 7, 26, 7, 0, tzinfo=UTC)
    body = lead_client.get("/admin/").content.decode()
    assert "Requests waiting for a decision (0)" in body
    assert f'data-request="{pending_request.pk}"' not in body


def test_a_post_without_csrf_token_decides_nothing(lead_user, pending_request):
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead_user)
    response = client.post(f"/admin/exceptions/exceptionrequest/{pending_request.pk}/approve/", {"note": "x"})
    assert response.status_code == 403
    assert not Decision.objects.exists()


def test_the_requester_cannot_decide_from_the_cockpit_either(pending_request, requester):
    from django.contrib.auth.models import Group

    requester.is_staff = True
    requester.save()
    requester.groups.add(Group.objects.get(name="Release Team"))
    client = Client()
    client.force_login(requester)
    approve = f"/admin/exceptions/exceptionrequest/{pending_request.pk}/approve/"
    form = client.get(approve).context["items"][0]["form"]
    client.post(approve, {"granted_day": form["granted_day"].value(), "zone": "", "note": "mine"})
    assert not Decision.objects.exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_lead_approves_from_the_cockpit_in_a_browser(browser, live_server, migrated_rows, release, code_freeze):  # noqa: F811
    from django.contrib.auth.models import Group, User

    _migrated_rows()
    lead = User.objects.create_user("cockpit-lead", "lead@example.com", "pw-cockpit-1", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    release.team.add(lead)  # deciding is per release (issue 13)
    request = _file(release, code_freeze, 6100)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for label, width in (("phone", 390), ("desktop", 1280)):
        context = browser.new_context(viewport={"width": width, "height": 900}, locale="en-US")
        page = context.new_page()
        page.goto(f"{live_server.url}/admin/login/?next=/admin/")
        page.fill("#id_username", "cockpit-lead")
        page.fill("#id_password", "pw-cockpit-1")
        page.click("input[type=submit]")
        page.wait_for_load_state()
        assert page.locator("#cockpit").count() == 1, (page.url, page.content()[:3000])
        row = page.locator(f'tr[data-request="{request.pk}"]')
        assert row.count() == 1
        page.screenshot(path=str(SHOTS / f"cockpit-{label}.png"), full_page=True)
        if label == "desktop":
            row.locator("a.approve").click()
            page.wait_for_selector("input[name=granted_day]")
            page.click("input[type=submit][name=_submit]")
            page.wait_for_load_state()
            page.goto(f"{live_server.url}/admin/")
            page.wait_for_selector("#cockpit")
            assert page.locator(f'tr[data-request="{request.pk}"]').count() == 0
        context.close()
    assert Decision.objects.get(request=request).decided_by == lead


@pytest.fixture
def failed_delivery(code_freeze):
    from reminders.models import Delivery
    from tests.support.reminders_helpers import channel

    return Delivery.objects.create(
        channel=channel("email", "team", to=["team@example.com"]),
        milestone=code_freeze,
        offset="3d",
        deadline_at=code_freeze.deadline,
        deadline_zone=code_freeze.zone,
        due_at=code_freeze.deadline - dt.timedelta(days=3),
        state=Delivery.State.FAILED,
        attempts=5,
        last_error="SMTP 554 relay refused",
    )


def test_a_release_team_member_retries_a_failed_reminder_from_the_cockpit(
    lead_client, failed_delivery, django_capture_on_commit_callbacks
):
    body = lead_client.get("/admin/").content.decode()
    assert "Reminders missed or failed in the last 7 days (1)" in body
    assert "SMTP 554 relay refused" in body
    assert '<button type="submit" class="button">Retry</button>' in body
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = lead_client.post(
            "/admin/reminders/delivery/", {"action": "retry", "_selected_action": [failed_delivery.pk]}
        )
    assert response.status_code == 302
    failed_delivery.refresh_from_db()
    assert failed_delivery.state == "pending"
    assert failed_delivery.send_late is True  # its time has long passed
    assert len(callbacks) == 1  # the send task, queued once the retry is committed


def test_a_plain_staff_user_cannot_retry_a_delivery(client, staff, failed_delivery):
    from django.contrib.auth.models import Permission

    client.force_login(staff)
    retry = {"action": "retry", "_selected_action": [failed_delivery.pk]}
    assert client.post("/admin/reminders/delivery/", retry).status_code == 403
    # Allowed to read the ledger is not allowed to send again.
    staff.user_permissions.add(Permission.objects.get(codename="view_delivery"))
    client.force_login(staff)
    assert client.get("/admin/reminders/delivery/").status_code == 200
    client.post("/admin/reminders/delivery/", retry)
    failed_delivery.refresh_from_db()
    assert failed_delivery.state == "failed"
