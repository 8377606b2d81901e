"""Public schedule pages: content, time labels, ?tz=, filters, 404s, query counts."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from urllib.parse import quote

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from exceptions.services import (
    RequestFields,
    exception_request_approve,
    exception_request_reject,
    exception_request_signoff,
    exception_request_submit,
)
from releasecal import tz
from releasecal.models import Milestone, MilestoneKind, Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set

LA = "America/Los_Angeles"


# ------------------------------------------------------------------- demo cycle


def _at(day: dt.date, clock: str, zone: str = LA) -> dt.datetime:
    return tz.parse_wall_time(f"{day.isoformat()} {clock}", zone)


FIXED_NOW = dt.datetime(2026, 11, 30, 18, 0, tzinfo=dt.UTC)  # a Monday: fixed dates for literal text


def build_cycle(*, now: dt.datetime | None = None, slug: str = "1.35") -> Release:
    """A Kubernetes-shaped cycle around ``now``: some deadlines passed, code freeze ahead,
    KEPs with an approved, a rejected and a pending exception."""
    now = now or tz.utc_now()
    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    today = tz.local_date(now, LA)
    start = today - dt.timedelta(days=today.weekday()) - dt.timedelta(weeks=7)
    release = Release.objects.create(
        slug=slug,
        name=f"Kubernetes v{slug}",
        zone=LA,
        start_date=start,
        ga_date=start + dt.timedelta(weeks=16, days=2),
        status=Release.Status.ACTIVE,
        links={"Release team": "https://example.com/sig-release"},
    )

    def add(kind: str, title: str, **when) -> Milestone:
        return milestone_create(release=release, kind=kinds[kind], title=title, **when)

    add("release-start", "Start of release cycle", on_date=start)
    add("prr-freeze", "Production Readiness Freeze", at=_at(start + dt.timedelta(weeks=3, days=3), "19:00"))
    enh = add("enhancements-freeze", "Enhancements Freeze", at=_at(start + dt.timedelta(weeks=4, days=3), "19:00"))
    add("alpha", f"{slug}.0-alpha.3 released", on_date=start + dt.timedelta(weeks=6, days=1))
    add("feature-blog-freeze", "Feature blog freeze", at=_at(start + dt.timedelta(weeks=8, days=3), "19:00"))
    code = add(
        "code-freeze",
        "Code Freeze",
        at=_at(start + dt.timedelta(weeks=10, days=3), "19:00"),
        ends_at=_at(start + dt.timedelta(weeks=14, days=2), "19:00"),
    )
    add(
        "docs-freeze",
        "Docs Freeze",
        at=tz.end_of_day(start + dt.timedelta(weeks=12, days=1), tz.AOE),
        zone=tz.AOE,
    )
    add("test-freeze", "Test Freeze", at=_at(start + dt.timedelta(weeks=13, days=3), "19:00"))
    add("rc", f"{slug}.0-rc.0 released", at=_at(start + dt.timedelta(weeks=13, days=1), "10:00"))
    add("ga", f"v{slug} released", on_date=release.ga_date)

    lead = User.objects.filter(username="pages-lead").first() or User.objects.create_user("pages-lead")
    lead.groups.add(*Group.objects.filter(name="Release Team"))
    release.team.add(lead)
    keps = [
        (2400, "Node memory swap support", "node"),
        (3000, "Dynamic resource allocation", "node"),
        (4100, "Gateway API conformance", "network"),
        (1880, "Multiple service CIDRs", "network"),
    ]
    enhancements = []
    for number, title, sig in keps:
        enhancement = enhancement_upsert(
            number=number, title=title, owning_sig=sig, participating_sigs=[sig], owners=[{"github": f"owner{number}"}]
        )
        tracking_set(release=release, enhancement=enhancement, stage="beta", status="tracked")
        enhancements.append(enhancement)

    approved = exception_request_submit(
        enhancement=enhancements[0],
        milestone=enh,
        requester_name="owner2400",
        fields=RequestFields(days=2, enhancement_name="Node memory swap support", stage="beta", sig="node"),
        submitted_at=enh.deadline + dt.timedelta(hours=3),
    )
    exception_request_signoff(request=approved, author_label="sig-node lead", role="SIG Node lead")
    exception_request_approve(request=approved, actor=lead, note="Reviews are already in flight.")
    rejected = exception_request_submit(
        enhancement=enhancements[2],
        milestone=enh,
        requester_name="owner4100",
        fields=RequestFields(days=9, sig="network"),
        submitted_at=enh.deadline + dt.timedelta(days=1),
    )
    exception_request_reject(request=rejected, actor=lead, note="Too late in the cycle.")
    if code.deadline > now:
        exception_request_submit(
            enhancement=enhancements[1],
            milestone=code,
            requester_name="owner3000",
            fields=RequestFields(days=3, sig="node"),
            submitted_at=now - dt.timedelta(hours=1),
        )
    return release


def grow(release: Release, n: int) -> None:
    """Add ``n`` more milestones, KEPs and exception decisions to ``release``."""
    kinds = {k.slug: k for k in MilestoneKind.objects.all()}
    lead = User.objects.get(username="pages-lead")
    base = tz.start_of_day(release.start_date, LA)
    for i in range(n):
        milestone = milestone_create(
            release=release,
            kind=kinds["enhancements-freeze"] if i % 2 else kinds["event"],
            title=f"Extra milestone {i}",
            at=base + dt.timedelta(days=2, hours=i),
        )
        enhancement = enhancement_upsert(number=9000 + i, title=f"Extra KEP {i}", owning_sig=f"sig{i % 3}")
        tracking_set(release=release, enhancement=enhancement, stage="alpha", status="tracked")
        if i % 2:
            req = exception_request_submit(
                enhancement=enhancement,
                milestone=milestone,
                requester_name=f"r{i}",
                fields=RequestFields(days=1 + i % 4),
                submitted_at=milestone.deadline + dt.timedelta(hours=1),
            )
            exception_request_approve(request=req, actor=lead)


def _text(response) -> str:
    return response.content.decode()


# ------------------------------------------------------------------------ home


@pytest.mark.django_db
def test_home_lists_active_releases_with_next_deadline_and_countdown(client, monkeypatch):
    monkeypatch.setattr(tz, "utc_now", lambda: FIXED_NOW)
    build_cycle(now=FIXED_NOW)
    Release.objects.create(slug="1.20", name="Kubernetes v1.20", start_date=dt.date(2020, 9, 1), status="released")
    response = client.get("/")
    assert response.status_code == 200
    html = _text(response)
    assert "Kubernetes v1.35" in html
    assert "Kubernetes v1.20" not in html  # released ones are not "active"
    # Monday 30 November 2026 10:00 PST: the alpha (24 November) has passed, the
    # feature blog freeze (Thursday 10 December 19:00 PST) is next.
    assert '<p class="next-title">Feature blog freeze</p>' in html
    assert 'data-countdown="2026-12-11T03:00:00Z"' in html
    assert 'class="when-native">19:00 PST Thursday 10 December 2026</time>' in html
    assert '<time datetime="2026-12-11T03:00:00Z">03:00 UTC Friday 11 December 2026</time>' in html
    assert (
        '<span class="then-name">Code Freeze</span> '
        '<time datetime="2026-12-25T03:00:00Z" class="then-when">19:00 PST Thursday 24 December 2026</time>'
    ) in html
    timer = re.search(r'role="timer"[^>]*>([^<]*)<', html)
    assert timer is not None
    assert timer.group(1).strip() == "in 10 days 9 hours"


@pytest.mark.django_db
def test_home_says_so_when_nothing_is_active(client):
    response = client.get("/")
    assert response.status_code == 200
    assert "No release is active" in _text(response)


# ---------------------------------------------------------------- release page


@pytest.mark.django_db
def test_release_page_shows_every_milestone_in_native_utc_and_aoe(client, release):
    response = client.get("/releases/1.31/")
    assert response.status_code == 200
    html = _text(response)
    freeze = release.milestones.get(kind__slug="code-freeze")
    assert "19:00 PDT Tuesday 23 July 2024" in html
    assert "02:00 UTC Wednesday 24 July 2024" in html
    assert "14:00 AoE Tuesday 23 July 2024" in html
    assert freeze.at == dt.datetime(2024, 7, 24, 2, 0, tzinfo=dt.UTC)
    assert '<time datetime="2024-07-24T02:00:00Z">' in html
    # The window's end, and the date-only GA as an all-day date.
    assert "19:00 PDT Wednesday 7 August 2024" in html
    assert "Tuesday 13 August 2024" in html
    assert "all day" in html


@pytest.mark.django_db
def test_release_page_draws_the_cycle_as_svg_with_weeks_freezes_windows_and_now(client, release):
    html = _text(client.get("/releases/1.31/"))
    svg = html[html.index('<svg class="timeline"') : html.index("</svg>", html.index('<svg class="timeline"'))]
    assert 'role="img"' in svg
    assert "Timeline of Kubernetes v1.31" in svg
    assert ">W1<" in svg
    assert ">W14<" in svg
    assert 'class="tl-item tl-freeze' in svg  # enhancements freeze: a line
    assert 'class="tl-band"' in svg  # code freeze to thaw: a band
    assert 'class="tl-item tl-event' in svg  # rc.0, GA
    # 1.31 is long over: "now" is outside the cycle and not drawn.
    assert "tl-now" not in svg


@pytest.mark.django_db
def test_the_timeline_marks_now_inside_a_running_cycle(client):
    build_cycle()
    html = _text(client.get("/releases/1.35/"))
    assert 'class="tl-now"' in html
    assert "tl-past" in html


@pytest.mark.django_db
def test_release_page_renders_the_viewer_column_on_the_server_with_tz(client, release):
    response = client.get("/releases/1.31/?tz=Asia/Tokyo")
    assert response.status_code == 200
    html = _text(response)
    assert "11:00 JST Wednesday 24 July 2024" in html
    assert "11:00 JST Wednesday 24 July 2024" in html
    assert 'data-viewer-zone="Asia/Tokyo"' in html
    assert "releasecal_tz" not in response.cookies  # a shared link does not overwrite a reader's choice


@pytest.mark.django_db
def test_release_page_hides_the_viewer_column_until_the_zone_is_known(client, release):
    html = _text(client.get("/releases/1.31/"))
    assert re.search(r'<th scope="col" data-viewer-slot hidden>', html)
    assert 'data-viewer-zone=""' in html


@pytest.mark.django_db
def test_the_zone_form_remembers_the_choice_in_a_cookie_and_cleans_the_url(client, release):
    response = client.get("/releases/1.31/", {"remember": "1", "tz": "europe/berlin"})
    assert response.status_code == 302
    assert response["Location"] == "/releases/1.31/?tz=Europe/Berlin"
    assert response.cookies["releasecal_tz"].value == "Europe/Berlin"
    page = client.get(response["Location"])
    assert "04:00 CEST Wednesday 24 July 2024" in _text(page)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/", "/?tz=Asia/Tokyo"),
        ("/releases/1.31/", "/releases/1.31/?tz=Asia/Tokyo"),
        (
            "/releases/1.31/exceptions/?sig=node&state=pending",
            "/releases/1.31/exceptions/?sig=node&state=pending&tz=Asia/Tokyo",
        ),
        ("/kep/2400/?remember=1", "/kep/2400/?tz=Asia/Tokyo"),
    ],
)
def test_a_remembered_zone_is_redirected_into_the_url(client, django_assert_num_queries, release, kep, path, expected):
    client.cookies["releasecal_tz"] = "Asia/Tokyo"
    with django_assert_num_queries(0):  # decided before any page work
        response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == expected
    assert "Cookie" in response["Vary"]
    assert "private" in response["Cache-Control"]
    page = client.get(expected)  # the URL's zone wins: no second redirect
    assert page.status_code == 200
    assert 'data-viewer-zone="Asia/Tokyo"' in _text(page)
    assert "releasecal_tz" not in page.cookies


@pytest.mark.django_db
def test_tz_in_the_url_wins_over_the_cookie_without_a_redirect(client, release):
    client.cookies["releasecal_tz"] = "Asia/Tokyo"
    response = client.get("/releases/1.31/?tz=America/New_York")
    assert response.status_code == 200
    assert 'data-viewer-zone="America/New_York"' in _text(response)
    assert "releasecal_tz" not in response.cookies  # a shared link does not overwrite the choice


@pytest.mark.django_db
def test_a_bad_tz_with_remember_sets_no_cookie_and_does_not_redirect(client, release):
    response = client.get("/releases/1.31/", {"remember": "1", "tz": "Moon/Base"})
    assert response.status_code == 400
    assert "releasecal_tz" not in response.cookies


@pytest.mark.django_db
def test_a_zone_is_accepted_in_any_case_and_aoe_by_name(client, release):
    assert 'data-viewer-zone="Asia/Kolkata"' in _text(client.get("/releases/1.31/?tz=asia/kolkata"))
    assert 'data-viewer-zone="AoE"' in _text(client.get("/releases/1.31/?tz=aoe"))


@pytest.mark.django_db
# A NUL anywhere in the address is refused before any view (config.middleware; tested in
# tests/config/test_anonymous_bad_input.py), so "PST8PDT\x00" never reaches the page.
@pytest.mark.parametrize("bad", ["Mars/Olympus_Mons", "../../etc/passwd", "<script>"])
def test_it_rejects_an_unknown_tz_with_a_clear_message_not_a_500(client, release, bad):
    response = client.get("/releases/1.31/", {"tz": bad})
    assert response.status_code == 400
    html = _text(response)
    assert "That time zone was not recognised" in html
    assert "Unknown time zone" in html
    assert "<script>" not in html.split("<body", 1)[1].replace("<script src=", "")
    # The schedule is still there in native zone and UTC.
    assert "19:00 PDT Tuesday 23 July 2024" in html
    assert "02:00 UTC Wednesday 24 July 2024" in html


@pytest.mark.django_db
@pytest.mark.parametrize("cookie", ["Nowhere/Atlantis", "Asia%2FTokyo", ""])
def test_a_bad_cookie_zone_is_ignored_and_never_redirected_to(client, release, cookie):
    client.cookies["releasecal_tz"] = cookie
    for path in ("/", "/releases/1.31/", "/releases/1.31/exceptions/"):
        response = client.get(path)
        assert response.status_code == 200, path  # no redirect, so no loop
        assert "Location" not in response
        assert 'data-viewer-zone=""' in _text(response)


@pytest.mark.django_db
def test_release_page_marks_state_with_text_not_colour_alone(client):
    build_cycle()
    html = _text(client.get("/releases/1.35/"))
    assert "Passed" in html
    assert "▶</span> Next" in html


@pytest.mark.django_db
def test_a_cancelled_milestone_says_cancelled(client, release):
    rc = release.milestones.get(kind__slug="rc")
    rc.cancelled = True
    rc.save()
    assert "Cancelled" in _text(client.get("/releases/1.31/"))


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path",
    ["/releases/9.99/", "/releases/9.99/exceptions/", "/kep/999999/", "/kep/not-a-number/", "/nowhere/"],
)
def test_unknown_release_or_kep_gives_a_friendly_404(client, db, path):
    response = client.get(path)
    assert response.status_code == 404
    html = _text(response)
    assert "Not found" in html
    assert "See the active releases" in html


@pytest.mark.django_db
def test_the_404_names_what_was_missing(client):
    assert "There is no release called “9.99”" in _text(client.get("/releases/9.99/"))
    assert "KEP-424242 is not tracked here" in _text(client.get("/kep/424242/"))


# ------------------------------------------------------------------ subscribe


@pytest.mark.django_db
def test_every_page_offers_webcal_https_and_google_for_its_feed(client, release, kep, pending_request):
    expectations = {
        "/": "/calendar/all.ics",
        "/releases/1.31/": "/calendar/1.31.ics",
        "/releases/1.31/exceptions/": "/calendar/1.31.ics",
        "/releases/1.31/exceptions/?sig=node": "/calendar/1.31/sig/node.ics",
        "/kep/2400/": "/calendar/kep/2400.ics",
    }
    for page, feed in expectations.items():
        html = _text(client.get(page))
        https = f"http://testserver{feed}"
        webcal = f"webcal://testserver{feed}"
        assert f'href="{webcal}"' in html, page
        assert f'value="{https}"' in html, page
        google = "https://calendar.google.com/calendar/render?cid=" + quote(webcal, safe="")
        assert f'href="{google}"' in html, page
        assert 'data-copy="' in html, page


@pytest.mark.django_db
def test_every_page_offers_outlook_com_beside_webcal_and_google(client, release, kep, pending_request):
    # Outlook.com's "subscribe from web" page takes the https address and a name.
    expectations = {
        "/": '<a class="btn" href="https://outlook.live.com/calendar/0/addfromweb?'
        'url=http%3A%2F%2Ftestserver%2Fcalendar%2Fall.ics&amp;name=Every+active+release" '
        'rel="noopener" data-feed-outlook>Add to Outlook.com</a>',
        "/releases/1.31/": '<a class="btn" href="https://outlook.live.com/calendar/0/addfromweb?'
        'url=http%3A%2F%2Ftestserver%2Fcalendar%2F1.31.ics&amp;name=Kubernetes+v1.31+schedule" '
        'rel="noopener" data-feed-outlook>Add to Outlook.com</a>',
        "/kep/2400/": '<a class="btn" href="https://outlook.live.com/calendar/0/addfromweb?'
        'url=http%3A%2F%2Ftestserver%2Fcalendar%2Fkep%2F2400.ics&amp;name=KEP-2400" '
        'rel="noopener" data-feed-outlook>Add to Outlook.com</a>',
    }
    for page, link in expectations.items():
        assert link in _text(client.get(page)), page


@pytest.mark.django_db
def test_every_feed_block_says_how_to_add_alarms_and_all_ics_how_to_go_back_further(client, release, kep):
    html = _text(client.get("/releases/1.31/"))
    assert (
        "Reminders: add <code>?alarm=1d</code> to the feed URL "
        "(<code>http://testserver/calendar/1.31.ics?alarm=1d</code>) for an alert a day before each timed "
        "deadline; <code>2h</code>, <code>30m</code> or up to three, like <code>?alarm=1d,2h</code>, work too.</p>"
    ) in html
    assert "?since=2020" not in html
    home = _text(client.get("/"))
    assert (
        "work too. This feed holds the releases of the last two years; add <code>?since=2020</code> for older ones.</p>"
    ) in home
    # What the page says works: the feed with ?alarm=1d answers with alarms.
    assert b"TRIGGER:-P1D" in client.get("/calendar/1.31.ics?alarm=1d").content


@pytest.mark.django_db
def test_release_page_links_each_tracked_sigs_feed(client, release, kep):
    assert 'href="webcal://testserver/calendar/1.31/sig/node.ics"' in _text(client.get("/releases/1.31/"))


@pytest.mark.django_db
def test_a_logged_in_user_is_offered_a_personal_feed(client, release, requester):
    assert "Create my personal feed" not in _text(client.get("/releases/1.31/"))
    client.force_login(requester)
    html = _text(client.get("/releases/1.31/"))
    assert "Create my personal feed" in html
    assert 'action="/me/feed/"' in html


@pytest.mark.django_db
def test_the_personal_feed_address_is_issued_once_and_a_new_one_replaces_it(client, release, requester):
    client.force_login(requester)
    response = client.post("/me/feed/")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = _text(response)
    first = re.search(r'value="(http://testserver/calendar/u/[-\w]+\.ics)"', html)[1]
    assert f'href="{first.replace("http://", "webcal://")}"' in html
    assert client.get(first.removeprefix("http://testserver")).status_code == 200
    # The pages now say a feed exists without showing its address.
    page = _text(client.get("/releases/1.31/"))
    assert "Get a new personal feed address" in page
    assert "/calendar/u/" not in page
    second = re.search(r'value="(http://testserver/calendar/u/[-\w]+\.ics)"', _text(client.post("/me/feed/")))[1]
    assert second != first
    assert client.get(first.removeprefix("http://testserver")).status_code == 404
    assert client.get(second.removeprefix("http://testserver")).status_code == 200


@pytest.mark.django_db
def test_the_personal_feed_page_needs_a_login(client):
    response = client.post("/me/feed/")
    assert response.status_code == 302
    assert "/login/" in response["Location"]


# ------------------------------------------------------------------ exceptions


@pytest.mark.django_db
def test_exceptions_page_shows_requests_decisions_and_granted_deadlines(client):
    release = build_cycle(now=FIXED_NOW)
    response = client.get(f"/releases/{release.slug}/exceptions/")
    assert response.status_code == 200
    html = _text(response)
    from exceptions.models import ExceptionRequest

    approved = ExceptionRequest.objects.get(state="approved", release=release)
    assert approved.decision.granted_until == dt.datetime(2026, 11, 15, 8, 0, tzinfo=dt.UTC)
    # A grant at 00:00 is worded as the end of the day before (deadline wording).
    assert "end of Saturday 14 November 2026 PST" in html
    assert "08:00 UTC Sunday 15 November 2026" in html
    assert "✔</span> Approved" in html
    assert "✖</span> Rejected" in html
    assert "Too late in the cycle." in html
    assert "+1 sign-off" in html
    assert "KEP-2400" in html
    assert "KEP-4100" in html


@pytest.mark.django_db
def test_exceptions_page_filters_by_sig_and_state(client):
    release = build_cycle()
    url = f"/releases/{release.slug}/exceptions/"
    node = _text(client.get(url, {"sig": "node"}))
    assert "KEP-2400" in node
    assert "KEP-4100" not in node
    rejected = _text(client.get(url, {"state": "rejected"}))
    assert "KEP-4100" in rejected
    assert "KEP-2400" not in rejected
    both = _text(client.get(url, {"state": "approved", "sig": "network"}))
    assert "No exception requests match." in both
    assert '<option value="network" selected>' in both


@pytest.mark.django_db
def test_exceptions_page_rejects_an_unknown_state_clearly(client, release):
    response = client.get("/releases/1.31/exceptions/", {"state": "maybe"})
    assert response.status_code == 400
    assert "Unknown state “maybe”" in _text(response)


# ------------------------------------------------------------------------ KEP


@pytest.mark.django_db
def test_kep_page_shows_effective_deadlines_with_the_extension(client):
    release = build_cycle(now=FIXED_NOW)
    from exceptions.models import ExceptionRequest

    approved = ExceptionRequest.objects.get(state="approved", release=release, enhancement__number=2400)
    freeze = approved.milestone
    response = client.get("/kep/2400/?tz=America/New_York")
    assert response.status_code == 200
    html = _text(response)
    assert approved.decision.granted_until == dt.datetime(2026, 11, 15, 8, 0, tzinfo=dt.UTC)
    assert "end of Saturday 14 November 2026 PST" in html
    assert "03:00 EST Sunday 15 November 2026" in html  # the reader's zone: not midnight there
    assert f"Extended by exception #{approved.pk}" in html
    assert freeze.deadline == dt.datetime(2026, 11, 13, 3, 0, tzinfo=dt.UTC)
    assert '<del><time datetime="2026-11-13T03:00:00Z">' in html
    assert "Exception history" in html
    assert "Reviews are already in flight." in html
    # A KEP without an extension keeps the release's own deadline.
    other = _text(client.get("/kep/1880/"))
    assert "19:00 PST Thursday 12 November 2026" in other
    assert "Extended by exception" not in other


@pytest.mark.django_db
def test_a_kep_tracked_nowhere_still_has_a_page(client, db):
    enhancement_upsert(number=77, title="Lonely KEP", owning_sig="apps")
    response = client.get("/kep/77/")
    assert response.status_code == 200
    assert "not tracked in any release yet" in _text(response)


# -------------------------------------------------------------- query counts


def _queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(ctx.captured_queries)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url", ["/", "/releases/1.35/", "/releases/1.35/exceptions/", "/kep/2400/", "/releases/1.35/?tz=Asia/Tokyo"]
)
@pytest.mark.parametrize("logged_in", [False, True])
def test_pages_run_a_constant_number_of_queries(client, django_assert_num_queries, requester, url, logged_in):
    release = build_cycle()
    if logged_in:
        client.force_login(requester)
    small = _queries(client, url)
    grow(release, 30)
    for number in range(9000, 9030):
        # The KEP page grows through its tracked releases and exception history.
        enhancement = release.tracking.get(enhancement__number=number).enhancement
        enhancement.owners.create(github=f"extra{number}")
    with django_assert_num_queries(small):
        response = client.get(url)
    assert response.status_code == 200
    # Signed in, the KEP page also asks whether the KEP names the reader (its request form).
    assert small <= (12 if logged_in else 8)


@pytest.mark.django_db
def test_kep_page_queries_do_not_grow_with_history(client, django_assert_num_queries):
    release = build_cycle()
    grow(release, 3)
    small = _queries(client, "/kep/9001/")
    later = Release.objects.create(slug="1.36", name="v1.36", zone=LA, start_date=release.start_date)
    for i in range(5):
        milestone_create(
            release=later,
            kind=MilestoneKind.objects.get(slug="code-freeze"),
            title=f"Later {i}",
            at=tz.start_of_day(release.start_date, LA) + dt.timedelta(days=i),
        )
    tracking_set(release=later, enhancement=release.tracking.get(enhancement__number=9001).enhancement, stage="beta")
    with django_assert_num_queries(small):
        client.get("/kep/9001/")


# -------------------------------------------------------------------- timeline


@pytest.mark.django_db
def test_timeline_labels_never_overlap_within_a_lane():
    from pages.timeline import CHAR_WIDTH, CHAR_WIDTH_PAST, timeline_layout

    release = build_cycle()
    grow(release, 12)  # a dozen milestones within hours of each other
    layout = timeline_layout(release=release, milestones=list(release.milestones.select_related("kind")))
    lanes: dict[int, list[tuple[float, float]]] = {}
    for item in layout.items:
        width = len(item.milestone.title) * (CHAR_WIDTH_PAST if item.past else CHAR_WIDTH)
        start = item.label_x if item.anchor == "start" else item.label_x - width
        lanes.setdefault(item.lane, []).append((min(start, item.x), max(start + width, item.x_end or item.x)))
        assert 0 <= item.x <= layout.width
        assert start >= 0
        assert start + width <= layout.width
    assert len(lanes) > 1
    for spans in lanes.values():
        spans.sort()
        for (_, end), (begin, _) in itertools.pairwise(spans):
            assert end < begin
    assert layout.height > 62 + 26 * (len(lanes) - 1)
