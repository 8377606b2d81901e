"""Deciding in the admin, in Debian's headless Chromium driven by Playwright (issue 24,
items 4 and 5): a release lead clicks Confirm and Dismiss of a decision read from email
on the request page, approves on a form whose labels stand apart from their values, and
corrects a wrong grant with its reason (DecisionCorrection), the page then showing the corrected one.

Without the browser these tests skip locally and fail under ``CI=true``. About 15 s.
"""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.models import Decision, ProposedDecision
from releasecal.services import enhancement_upsert, tracking_set
from tests.exceptions.test_admin_decide import _propose
from tests.pages.test_pages_browser import SHOTS, _migrated_rows, browser, migrated_rows  # noqa: F401 (fixtures)

UTC = dt.UTC
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def signed_in(browser, live_server, migrated_rows, decider):  # noqa: F811
    _migrated_rows()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", decider.username)
    page.fill("#id_password", "pw-rel-lead-1")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    yield page
    context.close()


def _second_request(release):
    from exceptions.services import RequestFields, exception_request_submit

    kep = enhancement_upsert(number=4330, title="Compatibility versions", owning_sig="architecture")
    tracking_set(release=release, enhancement=kep, stage="alpha", status="tracked")
    return exception_request_submit(
        enhancement=kep,
        milestone=release.milestones.get(kind__slug="code-freeze"),
        requester_name="Siyuan Zhang",
        requester_email="siyuan@example.com",
        submitted_at=dt.datetime(2026, 11, 30, 10, 0, tzinfo=UTC),
        fields=RequestFields(days=3),
    )


def test_a_lead_confirms_and_dismisses_decisions_read_from_email_on_the_request_page(
    signed_in,
    live_server,
    aoe_release,
    request_1880,
    decider,
):
    page = signed_in
    confirmed = _propose(request_1880)
    other = _second_request(aoe_release)
    dismissed = _propose(other, outcome="rejected")

    page.goto(f"{live_server.url}/admin/exceptions/exceptionrequest/{request_1880.pk}/change/")
    page.click("button.rc-confirm")
    page.wait_for_url(lambda url: url.endswith(f"/exceptionrequest/{request_1880.pk}/change/"))
    assert page.locator(".messagelist .success").inner_text() == (
        f"Proposal #{confirmed.pk} confirmed: Exception #{request_1880.pk} for KEP-1880 (Code Freeze)."
    )
    assert page.locator("#rc-decision").inner_text().splitlines()[:3] == [
        "Decision",
        "Outcome",
        "Approved",
    ]
    decision = Decision.objects.get(request=request_1880)
    assert (decision.outcome, decision.decided_by_id) == ("approved", decider.pk)

    page.goto(f"{live_server.url}/admin/exceptions/exceptionrequest/{other.pk}/change/")
    page.click("button.rc-dismiss")
    page.wait_for_url(lambda url: url.endswith(f"/exceptionrequest/{other.pk}/change/"))
    assert page.locator(".messagelist .success").inner_text() == (
        f"Proposal #{dismissed.pk} dismissed: Exception #{other.pk} for KEP-4330 (Code Freeze)."
    )
    assert page.locator("button.rc-dismiss").count() == 0
    assert ProposedDecision.objects.get(pk=dismissed.pk).state == "dismissed"
    other.refresh_from_db()
    assert other.state == "pending"


def _overlaps(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and (a["y"] < b["y"] + b["height"] and b["y"] < a["y"] + a["height"])
    )


@pytest.mark.parametrize("width", [1280, 390])
def test_the_approve_forms_labels_stand_apart_from_their_values_and_the_default_is_approved(
    signed_in,
    live_server,
    request_1880,
    width,
):
    page = signed_in
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/admin/exceptions/exceptionrequest/{request_1880.pk}/approve/")
    rows = page.locator(".rc-fact")
    assert rows.count() == 14
    for index in range(rows.count()):
        row = rows.nth(index)
        label, value = row.locator("label").bounding_box(), row.locator(".readonly").bounding_box()
        assert not _overlaps(label, value), (row.inner_text(), label, value)
        if width == 1280:  # side by side: the value starts right of the label, on its line
            assert value["x"] >= label["x"] + label["width"], (row.inner_text(), label, value)
            assert abs(value["y"] - label["y"]) < 10, (row.inner_text(), label, value)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"approve-form-{width}.png"), full_page=True)
    assert page.input_value("input[name=granted_day]") == "2026-12-13"
    assert page.input_value("input[name=granted_time]") == ""
    assert page.locator(".rc-default").inner_text() == (
        "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)"
    )
    if width == 1280:
        page.click("input[type=submit][value='Approve']")
        page.wait_for_url(lambda url: url.endswith(f"/exceptionrequest/{request_1880.pk}/change/"))
        assert page.locator(".messagelist .success").inner_text() == (
            f"Approved Exception #{request_1880.pk} for KEP-1880 (Code Freeze): granted until "
            "end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)."
        )


def test_a_lead_corrects_a_wrong_grant_with_its_reason_and_the_page_shows_the_corrected_one(
    signed_in, live_server, request_1880, decider
):
    from exceptions.models import DecisionCorrection
    from exceptions.services import exception_request_approve

    exception_request_approve(request=request_1880, actor=decider)  # end of Sunday 13 December AoE, by default
    page = signed_in
    page.goto(f"{live_server.url}/admin/exceptions/exceptionrequest/{request_1880.pk}/change/")
    page.click("a.rc-correct")
    page.wait_for_url(lambda url: url.endswith(f"/exceptionrequest/{request_1880.pk}/correct/"))
    assert page.input_value("input[name=granted_day]") == "2026-12-13"  # the grant in force, in its words
    page.fill("input[name=granted_day]", "2026-12-12")
    page.fill("input[name=granted_time]", "18:00")
    page.fill("textarea[name=reason]", "Clerical error: the team granted until 18:00 AoE Saturday.")
    page.click("input[type=submit]")
    page.wait_for_url(lambda url: url.endswith(f"/exceptionrequest/{request_1880.pk}/change/"))
    assert page.locator(".messagelist .success").inner_text() == (
        f"Corrected the decision on Exception #{request_1880.pk} for KEP-1880 (Code Freeze); the correction is "
        "kept in its history."
    )
    granted = page.locator("#rc-decision .form-row", has_text="Granted until").locator("strong")
    assert granted.inner_text() == "18:00 AoE Saturday 12 December 2026 (06:00 UTC Sunday 13 December 2026)"
    (row,) = page.locator("#rc-corrections tbody tr").all()
    cells = row.locator("td").all_inner_texts()
    assert cells[3:] == [
        "Corrected",
        "approved, granted until end of Sunday 13 December 2026 AoE (12:00 UTC Monday 14 December 2026)",
        "approved, granted until 18:00 AoE Saturday 12 December 2026 (06:00 UTC Sunday 13 December 2026)",
        "Clerical error: the team granted until 18:00 AoE Saturday.",
    ]
    correction = DecisionCorrection.objects.get(request=request_1880)
    assert (correction.corrected_by_id, correction.reason) == (
        decider.pk, "Clerical error: the team granted until 18:00 AoE Saturday.",
    )  # fmt: skip
