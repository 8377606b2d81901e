"""The schedule pages in a real browser: Debian's headless Chromium driven by Playwright.

Each page is loaded with the browser's zone set to Asia/Tokyo and to America/New_York.
The script puts the detected zone in the URL (``?tz=``) and the server renders the
reader's column, so every shown local time must be, letter for letter, the API's
``x_viewer`` display for the same zone and ``tz.render_in_zone`` of the UTC instant the
page embeds (JST in Tokyo, EST in New York in December). Screenshots at desktop and
phone widths go to ``test-artifacts/screenshots/``.

Without the browser these tests skip locally and fail under ``CI=true``.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings

from pages.views import TZ_COOKIE
from releasecal import tz
from releasecal.models import Milestone, Release
from releasecal.services import groups_ensure, milestone_kinds_ensure
from tests.pages.test_pages import FIXED_NOW, build_cycle

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ZONES = ["Asia/Tokyo", "America/New_York"]
WIDTHS = {"desktop": 1280, "phone": 390}
SHOTS = Path(settings.BASE_DIR) / "test-artifacts" / "screenshots"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _unavailable(reason: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the browser tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed")
    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests
    # make between page loads are still plain synchronous code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        try:
            instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        except PlaywrightError as exc:  # the binary exists but cannot start here
            playwright.stop()
            _unavailable(f"Chromium did not start: {exc}")
        yield instance
        instance.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def _migrated_rows() -> None:
    milestone_kinds_ensure()
    groups_ensure()


@pytest.fixture(scope="module")
def migrated_rows(django_db_setup, django_db_blocker):
    """Live-server tests are transactional: the database is flushed after each one,
    taking the milestone kinds and groups the migrations made. Put them back before each
    test and after the last one, for the tests that run later."""
    yield
    with django_db_blocker.unblock():
        _migrated_rows()


@pytest.fixture
def cycle(db, migrated_rows) -> Release:
    _migrated_rows()
    return build_cycle()


@pytest.fixture
def fixed_cycle(db, migrated_rows, monkeypatch) -> Release:
    """The cycle around Monday 30 November 2026 18:00 UTC, and the server's now there too
    (the live server runs in this process), for literal expected text. Its first timed
    milestone is the PRR freeze, 19:00 PST Thursday 5 November 2026."""
    _migrated_rows()
    monkeypatch.setattr(tz, "utc_now", lambda: FIXED_NOW)
    return build_cycle(now=FIXED_NOW)


# The PRR freeze of fixed_cycle as each column and zone shows it.
PRR_FREEZE = {
    "native": "19:00 PST Thursday 5 November 2026",
    "UTC": "03:00 UTC Friday 6 November 2026",
    "Asia/Tokyo": "12:00 JST Friday 6 November 2026",
    "America/New_York": "22:00 EST Thursday 5 November 2026",
}


def _context(browser, zone: str, width: int = 1280, **kwargs):
    return browser.new_context(viewport={"width": width, "height": 900}, timezone_id=zone, locale="en-US", **kwargs)


def _open(context, url: str):
    """Load ``url`` and wait for the page that shows a reader's zone: the server's own
    redirect (remembered zone) or the script's navigation to ``?tz=`` happens first."""
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.first_response = page.goto(url)
    page.wait_for_selector("body[data-applied-zone]", state="attached", timeout=10_000)
    page.wait_for_load_state("load")
    page.errors = errors
    return page


def _url_zone(page) -> str:
    return page.evaluate("new URL(location.href).searchParams.get('tz')")


def _cookie_zone(context) -> str | None:
    values = [c["value"].strip('"') for c in context.cookies() if c["name"] == TZ_COOKIE]
    return values[0] if values else None


def _shown_times(page) -> list[tuple[str, str]]:
    """(datetime attribute, text) of every visible reader's-zone time on the page."""
    return page.eval_on_selector_all(
        "time[data-viewer]",
        "els => els.filter(e => e.offsetParent !== null).map(e => [e.getAttribute('datetime'), e.textContent.trim()])",
    )


def _instant(iso: str) -> dt.datetime:
    return dt.datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _split(text: str) -> tuple[str, str, str]:
    """ "19:00 EST Friday 4 December 2026" -> ("19:00", "EST", "Friday 4 December 2026")."""
    clock, label, day = text.split(" ", 2)
    return clock, label, day


EXPECTED_LABELS = {"Asia/Tokyo": ("JST", "JST"), "America/New_York": ("EST", "EDT")}


def _check_local(text: str, iso: str, zone: str) -> None:
    """The shown text is exactly the time module's rendering of ``iso`` in ``zone``, and
    its clock and label agree with zoneinfo on its own (JST; EST in winter, EDT in summer)."""
    instant = _instant(iso)
    assert text == tz.render_in_zone(instant, zone), (text, iso, zone)
    clock, label, _day = _split(text)
    local = instant.astimezone(ZoneInfo(zone))
    assert clock == local.strftime("%H:%M")
    if zone in EXPECTED_LABELS:
        standard, summer = EXPECTED_LABELS[zone]
        assert label == (summer if local.dst() else standard), (text, zone)


def _api_text(local_time: dict) -> str:
    """The API's ``x_viewer.display`` without its UTC parenthesis: what the page shows."""
    return local_time["display"].split(" (", 1)[0]


def _shoot(page, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# --------------------------------------------------------------- reader's zone


@pytest.mark.parametrize("zone", ZONES)
def test_release_page_shows_local_times_matching_the_api_and_the_model(browser, live_server, fixed_cycle, zone):
    cycle = fixed_cycle
    context = _context(browser, zone)
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/")
    assert page.errors == []
    # First visit: no ?tz=, no cookie. The script detected the zone, remembered it and
    # put it in the URL; the server rendered the column.
    assert page.first_response.status == 200
    assert page.first_response.request.redirected_from is None
    assert page.url == f"{live_server.url}/releases/{cycle.slug}/?tz={zone}"
    assert page.get_attribute("body", "data-applied-zone") == zone
    assert _cookie_zone(context) == zone
    assert page.evaluate("localStorage.getItem('releasecal.tz')") == zone
    assert page.is_visible("th[data-viewer-slot]")
    assert zone in page.inner_text("th[data-viewer-slot]")

    shown = _shown_times(page)
    for iso, text in shown:
        _check_local(text, iso, zone)
    labels = {_split(text)[1] for _, text in shown}
    assert labels <= set(EXPECTED_LABELS[zone]), labels
    # Which of EST/EDT depends on the season of each instant (checked one by one above).
    assert zone != "Asia/Tokyo" or labels == {"JST"}, labels

    # Every timed milestone (start and end of windows) is shown at its model instant.
    expected = set()
    for milestone in Milestone.objects.filter(release=cycle):
        if milestone.at is not None:
            expected.add(tz.isoformat_utc(milestone.at))
            if milestone.ends_at:
                expected.add(tz.isoformat_utc(milestone.ends_at))
    assert {iso for iso, _ in shown} == expected

    # ...and, letter for letter, as the API's x_viewer for the same zone says.
    api = context.request.get(f"{live_server.url}/api/v1/releases/{cycle.slug}/milestones/", params={"tz": zone})
    assert api.ok, api.status
    body = api.json()
    items = body["results"] if isinstance(body, dict) else body
    timed = [item for item in items if item["at"]]
    assert len(timed) == len([m for m in Milestone.objects.filter(release=cycle) if m.at])
    for item in timed:
        cell = page.locator(f"tr[data-milestone='{item['id']}'] td.t-viewer time[data-viewer]").first
        assert cell.get_attribute("datetime") == item["at"]
        assert cell.inner_text() == _api_text(item["at_viewer"])
        assert _split(cell.inner_text())[1] == item["at_viewer"]["abbreviation"]
    # The first timed milestone, letter for letter, in every column.
    first = Milestone.objects.filter(release=cycle, at__isnull=False).order_by("at").first()
    assert first.title == "Production Readiness Freeze"
    row = f"tr[data-milestone='{first.pk}']"
    assert PRR_FREEZE["native"] in page.inner_text(f"{row} td.t-native")
    assert PRR_FREEZE["UTC"] in page.inner_text(f"{row} td.t-utc")
    assert page.inner_text(f"{row} td.t-viewer time[data-viewer]") == PRR_FREEZE[zone]
    context.close()


@pytest.mark.parametrize("zone", ZONES)
def test_every_page_shows_the_browser_zone_from_the_server_and_is_screenshotted(browser, live_server, cycle, zone):
    pages = {
        "home": "/",
        "release": f"/releases/{cycle.slug}/",
        "exceptions": f"/releases/{cycle.slug}/exceptions/?state=approved",
        "kep": "/kep/2400/",
    }
    saved = []
    for width_name, width in WIDTHS.items():
        context = _context(browser, zone, width=width)
        for name, path in pages.items():
            page = _open(context, live_server.url + path)
            assert page.errors == [], (path, page.errors)
            assert _url_zone(page) == zone, page.url
            assert f"tz={zone}" in page.url  # "/" kept readable
            if "?" in path:
                assert "state=approved" in page.url  # other parameters kept
            shown = _shown_times(page)
            assert shown, path
            for iso, text in shown:
                _check_local(text, iso, zone)
            # Nothing spills sideways on a phone (the timeline scrolls inside its own box).
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            assert overflow <= 0, (path, width_name, overflow)
            saved.append(_shoot(page, f"{name}-{zone.replace('/', '_')}-{width_name}"))
            page.close()
        context.close()
    assert all(path.stat().st_size > 10_000 for path in saved)


@pytest.mark.parametrize("zone", ZONES)
def test_kep_page_effective_deadlines_match_the_api(browser, live_server, cycle, zone):
    context = _context(browser, zone)
    page = _open(context, f"{live_server.url}/kep/2400/")
    assert _url_zone(page) == zone
    api = context.request.get(f"{live_server.url}/api/v1/enhancements/2400/", params={"tz": zone})
    assert api.ok, api.status
    granted = [r for r in api.json()["exception_requests"] if r.get("granted_until")]
    assert len(granted) == 1
    iso = granted[0]["granted_until"]
    cells = page.locator(f"tr.extended time[data-viewer][datetime='{iso}']")
    assert cells.count() == 1
    assert cells.first.inner_text() == _api_text(granted[0]["granted_until_viewer"])
    _check_local(cells.first.inner_text(), iso, zone)
    assert "Extended by exception" in page.inner_text("tr.extended")
    context.close()


@pytest.mark.parametrize("zone", ["Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "Europe/London"])
def test_other_browser_zones_read_exactly_as_the_server_writes_them(browser, live_server, cycle, zone):
    context = _context(browser, zone)
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/")
    # Chromium may name a zone by its older alias; the server accepts both.
    assert _url_zone(page) in {zone, {"Asia/Kolkata": "Asia/Calcutta"}.get(zone)}
    shown = _shown_times(page)
    assert shown
    for iso, text in shown:
        assert text == tz.render_in_zone(_instant(iso), zone)
    context.close()


# ------------------------------------------------------------ choosing a zone


def test_tz_in_the_url_is_rendered_by_the_server_and_kept(browser, live_server, cycle):
    context = _context(browser, "Asia/Tokyo")
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/?tz=Europe/Berlin")
    assert page.get_attribute("body", "data-applied-zone") == "Europe/Berlin"
    for iso, text in _shown_times(page):
        assert text == tz.render_in_zone(_instant(iso), "Europe/Berlin")  # the server's own labels (CET)
    assert page.url.endswith("?tz=Europe/Berlin")
    assert _cookie_zone(context) is None  # a shared link is not remembered
    context.close()


def test_a_remembered_zone_is_redirected_into_the_url_by_the_server(browser, live_server, cycle):
    context = _context(browser, "Asia/Tokyo")
    context.add_cookies([{"name": TZ_COOKIE, "value": "America/New_York", "url": live_server.url}])
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/?x=1")
    redirect = page.first_response.request.redirected_from
    assert redirect is not None
    assert redirect.url == f"{live_server.url}/releases/{cycle.slug}/?x=1"
    assert redirect.response().status == 302
    assert page.url == f"{live_server.url}/releases/{cycle.slug}/?x=1&tz=America/New_York"
    for iso, text in _shown_times(page):
        _check_local(text, iso, "America/New_York")  # the remembered zone, not the browser's
    context.close()


def test_a_bad_cookie_is_ignored_and_replaced_without_a_redirect_loop(browser, live_server, cycle):
    context = _context(browser, "Asia/Tokyo")
    context.add_cookies([{"name": TZ_COOKIE, "value": "Nowhere/Atlantis", "url": live_server.url}])
    context.add_init_script("localStorage.setItem('releasecal.tz', 'Nowhere/Atlantis')")
    page = context.new_page()
    navigations: list[str] = []
    page.on("framenavigated", lambda frame: frame == page.main_frame and navigations.append(frame.url))
    response = page.goto(f"{live_server.url}/releases/{cycle.slug}/")
    assert response.status == 200
    assert response.request.redirected_from is None
    page.wait_for_selector("body[data-applied-zone]", state="attached", timeout=10_000)
    # The script sets data-applied-zone only on its branch that does not navigate, and
    # the server answered this page with 200: no further navigation can come.
    assert navigations == [f"{live_server.url}/releases/{cycle.slug}/", page.url]
    assert page.url.endswith("?tz=Asia/Tokyo")
    assert _cookie_zone(context) == "Asia/Tokyo"
    for iso, text in _shown_times(page):
        _check_local(text, iso, "Asia/Tokyo")
    context.close()


def test_a_chosen_zone_is_rendered_remembered_and_put_in_the_url(browser, live_server, cycle):
    context = _context(browser, "America/New_York")
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/")
    page.fill("#tz-input", "asia/kolkata")
    with page.expect_navigation():
        page.press("#tz-input", "Enter")  # a plain GET form; the server sets the cookie
    page.wait_for_selector("body[data-applied-zone='Asia/Kolkata']", state="attached")
    assert page.url == f"{live_server.url}/releases/{cycle.slug}/?tz=Asia/Kolkata"
    for iso, text in _shown_times(page):
        assert text == tz.render_in_zone(_instant(iso), "Asia/Kolkata")  # IST
    assert _cookie_zone(context) == "Asia/Kolkata"
    assert page.evaluate("localStorage.getItem('releasecal.tz')") == "Asia/Kolkata"
    # Another page, no ?tz=: the server redirects to the remembered zone.
    other = _open(context, f"{live_server.url}/kep/2400/")
    assert other.first_response.request.redirected_from is not None
    assert other.url.endswith("/kep/2400/?tz=Asia/Kolkata")
    # "Use my browser's zone" switches back to the detected zone and remembers it.
    with other.expect_navigation():
        other.click("[data-zone-detect]")
    other.wait_for_selector("body[data-applied-zone='America/New_York']", state="attached")
    assert other.url.endswith("/kep/2400/?tz=America/New_York")
    assert _cookie_zone(context) == "America/New_York"
    assert other.evaluate("localStorage.getItem('releasecal.tz')") == "America/New_York"
    for iso, text in _shown_times(other):
        _check_local(text, iso, "America/New_York")
    context.close()


def test_a_bad_tz_shows_a_message_and_the_schedule(browser, live_server, cycle):
    context = _context(browser, "Asia/Tokyo")
    page = context.new_page()
    response = page.goto(f"{live_server.url}/releases/{cycle.slug}/?tz=Moon/Base")
    assert response.status == 400
    assert "That time zone was not recognised" in page.inner_text("[role=alert]")
    # The script has run (it shows the "use my browser's zone" button after deciding
    # about the URL), and any navigation it had started would have shown on the network.
    page.wait_for_selector("[data-zone-detect]", state="visible", timeout=10_000)
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("?tz=Moon/Base")  # the script leaves the reader's URL alone
    assert page.is_visible("td.t-native")
    assert not page.is_visible("th[data-viewer-slot]")
    context.close()


# ------------------------------------------------------------- without script


def test_without_javascript_times_show_in_native_zone_and_utc(browser, live_server, fixed_cycle):
    cycle = fixed_cycle
    context = _context(browser, "Asia/Tokyo", java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live_server.url}/releases/{cycle.slug}/")
    assert not page.is_visible("th[data-viewer-slot]")
    first = Milestone.objects.filter(release=cycle, at__isnull=False).order_by("at").first()
    row = f"tr[data-milestone='{first.pk}']"
    assert PRR_FREEZE["native"] in page.inner_text(f"{row} td.t-native")
    assert PRR_FREEZE["UTC"] in page.inner_text(f"{row} td.t-utc")
    assert page.is_visible("input.copy-input")  # the feed URL is still there to select
    assert page.url == f"{live_server.url}/releases/{cycle.slug}/"  # nothing navigates
    assert not page.is_visible("button.copy-btn")
    _shoot(page, "release-nojs-desktop")
    # With ?tz= the server adds the reader's column, script or not.
    page.goto(f"{live_server.url}/releases/{cycle.slug}/?tz=Asia/Tokyo")
    assert page.is_visible("th[data-viewer-slot]")
    assert page.inner_text(f"{row} td.t-viewer") == PRR_FREEZE["Asia/Tokyo"]
    home = context.new_page()
    home.goto(f"{live_server.url}/")
    assert home.inner_text("[role=timer]") == "in 10 days 9 hours"  # the server's words, no script to tick
    context.close()


# ------------------------------------------------------------- interactions


def test_the_countdown_ticks(browser, live_server, cycle):
    context = _context(browser, "America/New_York")
    page = _open(context, f"{live_server.url}/")
    timer = page.locator("[role=timer]").first
    before = timer.inner_text()
    # It shows seconds and ticks every second: wait for the text to change.
    page.wait_for_function("([el, before]) => el.textContent !== before", arg=[timer.element_handle(), before])
    assert timer.inner_text().startswith("in ")
    context.close()


def test_the_copy_button_copies_the_feed_url(browser, live_server, cycle):
    context = _context(browser, "America/New_York", permissions=["clipboard-read", "clipboard-write"])
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/")
    page.click("button.copy-btn >> nth=0")
    # A function, not an expression: Playwright polls an expression with eval(), which the
    # page's CSP (no 'unsafe-eval') refuses once the first check finds it false.
    page.wait_for_function("() => document.querySelector('.copy-status').textContent.length > 0")
    assert page.evaluate("navigator.clipboard.readText()") == f"{live_server.url}/calendar/{cycle.slug}.ics"
    context.close()


def test_the_page_is_keyboard_reachable_with_a_visible_focus(browser, live_server, cycle):
    context = _context(browser, "America/New_York")
    page = _open(context, f"{live_server.url}/releases/{cycle.slug}/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
    assert outline == "solid"
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#content"
    context.close()


@pytest.mark.django_db(transaction=True)
def test_pages_admin_and_api_docs_work_under_the_content_security_policy(browser, live_server, cycle):
    """Issue 13 item 14: a CSP with no inline scripts; Chromium reports every violation on
    the console. Swagger UI comes from our static files (drf-spectacular-sidecar)."""
    from django.contrib.auth.models import User

    User.objects.create_superuser("csp-admin", "csp@example.com", "pw-csp-1")
    context = _context(browser, "Europe/Berlin")
    page = context.new_page()
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    response = page.goto(f"{live_server.url}/releases/{cycle.slug}/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "unsafe-inline" not in response.headers["content-security-policy"].split("script-src", 1)[1].split(";")[0]
    page.wait_for_selector("body[data-applied-zone]", state="attached", timeout=10_000)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title", timeout=15_000)  # rendered: its scripts ran
    page.goto(f"{live_server.url}/admin/login/?next=/admin/")
    page.fill("#id_username", "csp-admin")
    page.fill("#id_password", "pw-csp-1")
    page.click("input[type=submit]")
    page.wait_for_load_state()
    page.goto(f"{live_server.url}/admin/releasecal/release/{cycle.pk}/change/")
    page.wait_for_selector("#release_form", timeout=10_000)
    context.close()
    assert violations == []
    assert all(url.startswith(live_server.url) for url in requests), [u for u in requests if live_server.url not in u]
