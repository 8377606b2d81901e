"""Setting up a cycle in the browser alone (issue 24), in Debian's headless Chromium
driven by Playwright: a release lead pastes the v1.36 README, reads the dry run and its
warning, applies it, then makes v1.37 from v1.36 eighteen weeks later without its team
(v1.37 did start on Monday 18 May 2026), and the cockpit warns that v1.37 has no team.

Without the browser these tests skip locally and fail under ``CI=true``.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from releasecal.models import Release
from tests.pages.test_pages_browser import SHOTS, _migrated_rows, browser, migrated_rows  # noqa: F401 (fixtures)
from tests.support.paths import SHARED_DATA

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

README_136 = SHARED_DATA / "k8s-readmes" / "release-1.36.md"


@pytest.fixture
def lead_page(browser, live_server, migrated_rows):  # noqa: F811
    _migrated_rows()
    lead = User.objects.create_user("cycle-lead", "cycle-lead@example.com", "pw-cycle-lead-1", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", lead.username)
    page.fill("#id_password", "pw-cycle-lead-1")
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_server.url}/admin/")
    yield page, lead
    context.close()


def test_a_lead_imports_a_readme_then_copies_the_cycle_shifted(lead_page, live_server):
    page, lead = lead_page
    page.goto(f"{live_server.url}/admin/releasecal/release/")
    page.click("#cycle-setup-link")
    page.wait_for_url(f"{live_server.url}/admin/releasecal/release/setup/")

    page.fill("#id_readme-readme_text", README_136.read_text())
    page.click("#readme-preview-button")
    preview = page.locator("#readme-preview")
    preview.wait_for()
    summary = preview.locator("p strong").inner_text()
    assert summary.startswith("Dry run, nothing saved: k8s-readme schedule for 1.36 (created release 1.36): ")
    assert summary.endswith(", 1 warnings.")
    assert preview.locator("h3").inner_text() == "Warnings (1)"
    assert (
        preview.locator(".readme-warnings li")
        .inner_text()
        .startswith("1.36 row 15 'Begin Feature blog freeze - Open placeholder PRs': summary and table disagree: ")
    )
    assert not Release.objects.filter(slug="1.36").exists()

    page.click("#readme-apply-button")
    page.wait_for_url(lambda url: url.endswith("/change/"))
    release = Release.objects.get(slug="1.36")
    applied = summary.removeprefix("Dry run, nothing saved: ")
    # The admin shows messages through capfirst.
    assert page.locator(".messagelist .success").text_content() == applied[0].upper() + applied[1:]
    release.leads.add(lead)
    count = release.milestones.count()
    assert count > 10

    page.goto(f"{live_server.url}/admin/releasecal/release/setup/")
    page.select_option("#id_cycle-source", label=str(release))
    page.fill("#id_cycle-slug", "1.37")
    page.fill("#id_cycle-weeks", "18")
    page.uncheck("#id_cycle-copy_team")
    page.click("#cycle-preview-button")
    page.locator("#cycle-milestones").wait_for()
    assert page.locator("#cycle-milestones tbody tr").count() == count
    assert (
        page.locator("#cycle-preview p")
        .inner_text()
        .startswith("1.37 from 1.36, 18 weeks later: starts Monday 18 May 2026")
    )
    assert page.locator("#cycle-problems").count() == 0

    page.click("#cycle-apply-button")
    page.wait_for_url(lambda url: url.endswith("/change/"))
    new = Release.objects.get(slug="1.37")
    assert page.locator(".messagelist .success").text_content() == (
        f"Release 1.37 created from 1.36, 18 weeks later: {count} milestones; "
        "no team yet (add the leads and the team below)."
    )
    assert new.milestones.count() == count
    assert (new.leads.count(), new.team.count()) == (0, 0)

    page.goto(f"{live_server.url}/admin/")
    warning = page.locator('.setup-warning[data-release="1.37"] .warn')
    assert warning.inner_text() == "1.37: no team, no reminder rules, no reminder channels"
    page.screenshot(path=str(SHOTS / "cycle-setup-cockpit.png"), full_page=True)
