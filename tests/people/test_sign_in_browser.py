"""Sign in with GitHub in a real browser (Debian's Chromium, Playwright) against the
fake GitHub, land on "My KEPs", open your KEP and file a request from its page; the
release lead signs in with their releasecal account and rejects it in the cockpit, and
the handbook's removal comment for the KEP's issue is listed to post, once (issue 26's
done-when; the release's comment setting starts as "list").

The fake listens on the socket tests/settings.py reserved (GITHUB_URL); the live server
is the OAuth app's callback. Without Chromium: skipped locally, a failure under CI=true.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User

from exceptions.models import ExceptionRequest
from github.models import IssueComment
from releasecal import tz
from releasecal.models import Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set
from tests import settings as test_settings
from tests.pages.test_pages_browser import SHOTS, _migrated_rows, browser, migrated_rows  # noqa: F401 (fixtures)
from tests.support.github_oauth import CALLBACK_PATH

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def open_freeze(migrated_rows, kinds):  # noqa: F811 (the fixture imported above)
    _migrated_rows()
    now = tz.utc_now()
    release = Release.objects.create(
        slug="1.99", name="Kubernetes v1.99", zone="America/Los_Angeles",
        start_date=(now - dt.timedelta(days=60)).date(), ga_date=(now + dt.timedelta(days=30)).date(),
        status=Release.Status.ACTIVE,
    )  # fmt: skip
    freeze = milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze", at=now - dt.timedelta(hours=20)
    )
    milestone_create(release=release, kind=kinds["rc"], title="rc.0", at=now + dt.timedelta(days=20))
    kep = enhancement_upsert(
        number=1880, title="Multiple Service CIDRs", owning_sig="network", owners=[{"github": "AOjea"}]
    )
    tracking_set(release=release, enhancement=kep, stage="beta", status="tracked")
    return freeze


def test_sign_in_with_github_land_on_my_keps_and_file_a_request(browser, live_server, fake_github, open_freeze):  # noqa: F811
    fake_github.oauth_app(
        test_settings.GITHUB_TEST_CLIENT_ID, test_settings.GITHUB_TEST_CLIENT_SECRET, live_server.url + CALLBACK_PATH
    )
    fake_github.sign_in("aojea", name="Antonio Ojea", email="aojea@example.com")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    failed: list[str] = []  # every answer of 400 or more (a browser asks for /favicon.ico: none is served)
    page.on(
        "response",
        lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 and "favicon" not in r.url else None,
    )
    try:
        page.goto(f"{live_server.url}/")
        page.click(".site-nav >> text=Log in")
        page.wait_for_selector("#github-sign-in")
        assert page.locator("#login-staff").is_visible()
        assert "/relcal link" in page.locator("#login-slack ~ p").inner_text()
        page.click("#github-sign-in")  # POST, then GitHub's authorize page, then the callback
        page.wait_for_url(f"{live_server.url}/me/", timeout=20_000)
        assert page.locator(".eyebrow").first.text_content() == "Signed in as @aojea on GitHub"
        assert page.locator("[data-kep='1880'] a").inner_text() == "KEP-1880: Multiple Service CIDRs"
        page.click("[data-kep='1880'] a")
        page.wait_for_selector("#file-request")
        page.select_option("#id_milestone", str(open_freeze.pk))
        page.fill("#id_days", "4")
        page.fill("#id_reason", "The API review needs four more days.")
        page.fill("#id_pr_urls", "https://github.com/kubernetes/kubernetes/pull/128000")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "kep-request-form.png"), full_page=True)
        page.click("#file-request button[type=submit]")
        page.wait_for_selector(".notice-ok")
        notice = page.locator(".notice-ok").first.inner_text()
    finally:
        context.close()
    created = ExceptionRequest.objects.get()
    assert notice == f"Request #{created.pk} is filed: the release team decides it."
    lead = User.objects.create_user("lead", "lead@example.com", "lead-password-1", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    created.release.leads.add(lead)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
    page = context.new_page()
    page.on(
        "response",
        lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 and "favicon" not in r.url else None,
    )
    try:
        page.goto(f"{live_server.url}/login/?next=/admin/exceptions/exceptionrequest/{created.pk}/change/")
        page.fill("#id_username", "lead")
        page.fill("#id_password", "lead-password-1")
        page.click("input[type=submit][value='Sign in']")
        page.wait_for_url(f"**/admin/exceptions/exceptionrequest/{created.pk}/change/")
        page.goto(f"{live_server.url}/admin/exceptions/exceptionrequest/{created.pk}/reject/")
        page.fill("#id_note", "Four days would cut into the release candidate.")
        page.click("input[name=_submit][value=Reject]")
        page.wait_for_selector(".messagelist")
        message = page.locator(".messagelist").inner_text()
        page.goto(f"{live_server.url}/admin/github_board/issuecomment/to-post/")
        listed = page.locator("body").inner_text()
        page.reload()  # a second look (or a replayed event) lists it no second time
    finally:
        context.close()
    assert f"Rejected {created}." in message
    created.refresh_from_db()
    assert created.state == "rejected"
    comment = IssueComment.objects.get(kep=1880)
    assert (comment.event, comment.state, comment.repository, comment.issue_number) == (
        "rejected", "listed", "kubernetes/enhancements", 1880,
    )  # fmt: skip
    assert comment.body == (
        "Hello @AOjea 👋, v1.99 Enhancements team here.\n\n"
        "The exception request for KEP-1880 (Code Freeze) was rejected by the release team, so this enhancement "
        "is removed from the v1.99 milestone. If you still wish to progress it, it can be opted in for a later "
        "release (the `lead-opted-in` label and that release's milestone, set by a SIG lead).\n\n"
        "/remove-label tracked/yes\n/label tracked/no\n/milestone clear\n"
    )
    assert "The exception request for KEP-1880 (Code Freeze) was rejected by the release team" in listed
    assert IssueComment.objects.count() == 1
    assert created.requester.username == "aojea"
    assert created.days == 4
    assert created.current.pr_urls == ["https://github.com/kubernetes/kubernetes/pull/128000"]
    assert [r.path for r in fake_github.requests] == [
        "/login/oauth/authorize",
        "/login/oauth/access_token",
        "/user",
        "/user/emails",
    ]
    assert not fake_github.fake_bugs
    assert failed == []
