"""Public schedule pages: active releases, one release's cycle, its exceptions, one KEP.

Views only parse input (slug, number, ``?tz=``, filters), call selectors and hand
ready-made strings to templates. Every time label, the reader's zone included, comes from
``releasecal.tz``: the reader's zone is always in the URL as ``?tz=`` and rendered here
(a remembered zone is redirected to it; the script only detects the browser's zone and
navigates). Each page runs a fixed number of queries whatever the data size.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from functools import lru_cache, wraps
from urllib.parse import quote, urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.cache import patch_cache_control, patch_vary_headers
from django.views.decorators.http import require_http_methods, require_POST

from exceptions.models import ExceptionRequest
from exceptions.selectors import effective_deadlines
from exceptions.services import exception_request_amend, exception_request_submit
from feeds.selectors import feed_tokens_of
from feeds.services import feed_token_create, feed_token_rotate
from pages.forms import FileRequestForm, RequestForm, amend_initial
from pages.timeline import timeline_layout, timeline_render
from people.selectors import user_names_enhancement
from releasecal import selectors, tz
from releasecal.errors import DomainError, NotFound
from releasecal.models import Enhancement, Milestone, Release, Tracking

TZ_COOKIE = "releasecal_tz"
TZ_COOKIE_AGE = 365 * 24 * 3600
COMMON_ZONES = (
    "America/Los_Angeles",
    "America/New_York",
    "America/Sao_Paulo",
    "Europe/London",
    "Europe/Berlin",
    "Asia/Kolkata",
    "Asia/Shanghai",
    "Asia/Tokyo",
    "Australia/Sydney",
    "UTC",
    "AoE",
)


# ------------------------------------------------------------------ time labels


@dataclass(frozen=True)
class When:
    """One deadline as the pages show it: in its own zone, UTC, AoE and the viewer's."""

    iso: str
    native: str
    utc: str
    aoe: str
    viewer: str
    all_day: bool = False


def when_instant(instant: dt.datetime, zone: str, viewer: str | None, *, deadline: bool = False) -> When:
    """``deadline``: worded as people say deadlines (``tz.render_deadline_in_zone``: a
    day's first instant is the end of the day before); other instants keep their clock."""
    shown = tz.render_deadline_in_zone if deadline else tz.render_in_zone
    return When(
        iso=tz.isoformat_utc(instant),
        native=shown(instant, zone),
        utc=tz.render_in_zone(instant, "UTC"),
        aoe=shown(instant, tz.AOE),
        viewer=shown(instant, viewer) if viewer else "",
    )


def when_date(day: dt.date) -> When:
    """A date-only milestone is the same calendar day for everyone (an all-day event)."""
    text = tz.render_date(day)
    return When(iso=day.isoformat(), native=text, utc=text, aoe=text, viewer=text, all_day=True)


def milestone_whens(milestone: Milestone, viewer: str | None) -> tuple[When, When | None]:
    if milestone.at is not None:
        start = when_instant(milestone.at, milestone.zone, viewer, deadline=True)
        end = when_instant(milestone.ends_at, milestone.zone, viewer) if milestone.ends_at else None
        return start, end
    return when_date(milestone.on_date), (when_date(milestone.ends_on) if milestone.ends_on else None)


@dataclass(frozen=True)
class ViewerZone:
    zone: str | None
    error: str = ""
    requested: str = ""
    from_url: bool = False


def viewer_zone(request: HttpRequest) -> ViewerZone:
    """The reader's zone: ``?tz=`` first, then the remembered cookie (the page views
    redirect that to ``?tz=``, see ``zone_in_url``), else unknown (the browser detects it
    and navigates to ``?tz=``). A bad ``?tz=`` is reported, never raised; a bad cookie is
    ignored."""
    raw = request.GET.get("tz")
    if raw is not None and raw.strip():
        try:
            return ViewerZone(zone=tz.normalize_zone_name(raw), requested=raw, from_url=True)
        except tz.InvalidZone as exc:
            return ViewerZone(zone=None, error=exc.message, requested=raw)
    cookie = request.COOKIES.get(TZ_COOKIE, "")
    if cookie and tz.is_valid_zone(cookie):
        return ViewerZone(zone=tz.normalize_zone_name(cookie))
    return ViewerZone(zone=None)


def zone_url(request: HttpRequest, zone: str) -> str:
    """This page with ``?tz=<zone>``: other parameters kept, ``remember`` dropped, and the
    "/" of ``Asia/Tokyo`` left readable."""
    params = request.GET.copy()
    params.pop("remember", None)
    params["tz"] = zone
    return f"{request.path}?{params.urlencode(safe='/')}"


def zone_in_url(view):
    """Keep the reader's zone in the URL, so the server renders every label.

    - No ``?tz=`` but a valid ``releasecal_tz`` cookie: 302 to the same URL with ``?tz=``.
    - ``?tz=<valid>&remember=1`` (the zone form): set the cookie and 302 to the clean URL.
    A bad cookie is ignored and a bad ``?tz=`` is rendered with a 400, so neither loops.
    """

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        zone = viewer_zone(request)
        remember = zone.from_url and bool(request.GET.get("remember"))
        if zone.zone and (remember or not zone.from_url):
            response = HttpResponseRedirect(zone_url(request, zone.zone))
            if remember:
                response.set_cookie(TZ_COOKIE, zone.zone, max_age=TZ_COOKIE_AGE, samesite="Lax")
            patch_cache_control(response, private=True, no_cache=True)
        else:
            response = view(request, *args, **kwargs)
        if not zone.from_url:
            patch_vary_headers(response, ("Cookie",))  # the cookie decides whether to redirect
        return response

    return wrapped


# -------------------------------------------------------------------- subscribe


@dataclass(frozen=True)
class Feed:
    label: str
    https: str
    webcal: str
    google: str
    outlook: str
    slug: str

    @property
    def with_alarm(self) -> str:
        """The feed with a reminder a day before each timed deadline (feeds/options.py)."""
        return self.https + "?alarm=1d"


def feed_for(request: HttpRequest, path: str, label: str, slug: str) -> Feed:
    https = request.build_absolute_uri(path)
    webcal = "webcal://" + https.split("://", 1)[1]
    google = "https://calendar.google.com/calendar/render?" + urlencode({"cid": webcal})
    # Outlook.com's "Subscribe from web" page, filled in: it takes the https address.
    outlook = "https://outlook.live.com/calendar/0/addfromweb?" + urlencode({"url": https, "name": label})
    return Feed(label=label, https=https, webcal=webcal, google=google, outlook=outlook, slug=slug)


def personal_feed(request: HttpRequest) -> dict | None:
    """What the subscribe block offers a logged-in user: their own feed (the KEPs they own
    and the releases they lead). Only a hash of a feed token is stored, so its address is
    shown once, on the page that issues it; here we only say whether one exists."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    return {"has_token": feed_tokens_of(user=user).filter(revoked_at__isnull=True).exists()}


@login_required
@require_http_methods(["GET", "POST"])
def my_feed(request: HttpRequest) -> HttpResponse:
    """Issue (or replace) the user's personal feed address and show it, once."""
    active = list(feed_tokens_of(user=request.user).filter(revoked_at__isnull=True)[:1])
    issued = None
    if request.method == "POST":
        if active:
            issued = feed_token_rotate(feed_token=active[0], actor=request.user)
        else:
            issued = feed_token_create(user=request.user, label="Created on the schedule pages", actor=request.user)
    feed = None
    if issued is not None:
        feed = feed_for(request, f"/calendar/u/{issued.token}.ics", "Your KEPs and releases", "personal")
    response = _render(
        request,
        "pages/my_feed.html",
        {"issued": feed, "had_token": bool(active), "personal": None, "feeds": [feed] if feed else []},
    )
    response["Cache-Control"] = "no-store"
    return response


# ------------------------------------------------------------------------ pages


@tz.rules_cache_register
@lru_cache(maxsize=1)
def _zone_options() -> tuple[str, ...]:
    rest = [value for value, _ in tz.zone_choices() if value not in COMMON_ZONES]
    return (*COMMON_ZONES, *rest)


def _render(request: HttpRequest, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    zone: ViewerZone = context.setdefault("viewer", viewer_zone(request))
    context.setdefault("personal", personal_feed(request))
    context.setdefault("zone_options", _zone_options())
    context.setdefault(
        "keep_params", [(k, v) for k, v in request.GET.items() if k not in {"tz", "remember"} and v.strip()]
    )
    if zone.error and status == 200:
        status = 400
    return render(request, template, context, status=status)


def not_found(request: HttpRequest, message: str) -> HttpResponse:
    return render(request, "404.html", {"exception": message, "friendly": True}, status=404)


@zone_in_url
def home(request: HttpRequest) -> HttpResponse:
    zone = viewer_zone(request)
    now = tz.utc_now()
    releases = list(
        selectors.release_list_active().annotate(
            pending_exceptions=Count("exception_requests", filter=Q(exception_requests__state="pending"))
        )
    )
    upcoming: dict[int, list[Milestone]] = {r.pk: [] for r in releases}
    if releases:
        for milestone in selectors.milestone_list_next(releases=releases, now=now):
            upcoming[milestone.release_id].append(milestone)
    cards = []
    for release in releases:
        soon = upcoming[release.pk]
        nxt = soon[0] if soon else None
        # A freeze counts down to its deadline; a release day or event to when it begins.
        target = (nxt.deadline if nxt.kind.is_freeze or nxt.at is not None else nxt.starts) if nxt else None
        cards.append(
            {
                "release": release,
                "next": nxt,
                "next_when": milestone_whens(nxt, zone.zone)[0] if nxt else None,
                "countdown": tz.duration_text(target - now, ticking=True) if target else "",
                "countdown_iso": tz.isoformat_utc(target) if target else "",
                "then": [(m, milestone_whens(m, zone.zone)[0]) for m in soon[1:4]],
                "feed": feed_for(request, f"/calendar/{release.slug}.ics", f"{release.name} schedule", release.slug),
                "zone_label": release.zone,
            }
        )
    return _render(
        request,
        "pages/home.html",
        {
            "viewer": zone,
            "cards": cards,
            "feeds": [feed_for(request, "/calendar/all.ics", "Every active release", "all")],
        },
    )


@dataclass
class Row:
    milestone: Milestone
    start: When
    end: When | None
    state: str  # "past", "ongoing", "closed", "next", "upcoming", "cancelled"
    granted: int


# Milestone.state_at as the page's row classes name it.
PAGE_STATES = {
    "cancelled": "cancelled",
    "passed": "past",
    "closed": "closed",
    "in_effect": "ongoing",
    "upcoming": "upcoming",
}


@zone_in_url
def release_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        release = selectors.release_get(slug=slug)
    except NotFound:
        return not_found(request, f"There is no release called “{slug}”.")
    zone = viewer_zone(request)
    now = tz.utc_now()
    milestones = selectors.milestone_list(release=release).annotate(
        granted=Count("exception_requests", filter=Q(exception_requests__state="approved"))
    )
    rows: list[Row] = []
    next_found = False
    for milestone in milestones:
        start, end = milestone_whens(milestone, zone.zone)
        state = PAGE_STATES[milestone.state_at(now)]
        if state == "upcoming" and not next_found:
            state, next_found = "next", True
        rows.append(Row(milestone=milestone, start=start, end=end, state=state, granted=milestone.granted))
    sigs = sorted(
        set(
            Enhancement.objects.filter(tracking__release=release)
            .exclude(tracking__status=Tracking.Status.DEFERRED)
            .values_list("owning_sig", flat=True)
        )
    )
    feeds = [feed_for(request, f"/calendar/{release.slug}.ics", f"{release.name} schedule", release.slug)]
    layout = timeline_layout(release=release, milestones=milestones, now=now)
    return _render(
        request,
        "pages/release.html",
        {
            "viewer": zone,
            "release": release,
            "rows": rows,
            "timeline": timeline_render(layout),
            "timeline_has_now": layout.now_x is not None,
            "feeds": feeds,
            "sig_feeds": [
                feed_for(request, f"/calendar/{release.slug}/sig/{quote(sig)}.ics", f"SIG {sig}", f"sig-{sig}")
                for sig in sigs
            ],
            "start_date": tz.render_date(release.start_date),
            "ga_date": tz.render_date(release.ga_date) if release.ga_date else "",
        },
    )


STATE_ICONS = {"pending": "○", "approved": "✔", "rejected": "✖", "withdrawn": "↩"}


def _request_rows(requests, viewer: str | None) -> list[dict]:
    rows = []
    for req in requests:
        decision = getattr(req, "decision", None)
        granted = None
        if decision is not None and decision.granted_until:
            granted = when_instant(decision.granted_until, decision.granted_zone, viewer, deadline=True)
        rows.append(
            {
                "request": req,
                "icon": STATE_ICONS.get(req.state, ""),
                "submitted": when_instant(req.submitted_at, req.release.zone, viewer),
                "freeze": when_instant(req.milestone.deadline, req.milestone.zone, viewer, deadline=True),
                "decision": decision,
                "decided": when_instant(decision.decided_at, req.release.zone, viewer) if decision else None,
                "granted": granted,
                # An approval read from exceptions.yaml, which never records the deadline.
                "grant_unrecorded": decision is not None and decision.outcome == "approved" and not granted,
            }
        )
    return rows


def _requests_queryset():
    return (
        ExceptionRequest.objects.select_related("release", "enhancement", "milestone", "milestone__kind", "decision")
        .annotate(signoff_count=Count("signoffs", distinct=True), revision_count=Count("revisions", distinct=True))
        .order_by("-submitted_at", "-id")
    )


@zone_in_url
def release_exceptions(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        release = selectors.release_get(slug=slug)
    except NotFound:
        return not_found(request, f"There is no release called “{slug}”.")
    zone = viewer_zone(request)
    sig = request.GET.get("sig", "").strip()
    state = request.GET.get("state", "").strip()
    states = ExceptionRequest.State
    problems = []
    if state and state not in states.values:
        problems.append(f"Unknown state “{state}”: choose one of {', '.join(states.values)}.")
        state = ""
    all_sigs = sorted(
        set(ExceptionRequest.objects.filter(release=release).values_list("enhancement__owning_sig", flat=True))
    )
    requests = _requests_queryset().filter(release=release)
    if sig:
        requests = requests.filter(enhancement__owning_sig=sig)
    if state:
        requests = requests.filter(state=state)
    rows = _request_rows(requests, zone.zone)
    counts = dict.fromkeys(states.values, 0)
    for row in rows:
        counts[row["request"].state] += 1
    feeds = [feed_for(request, f"/calendar/{release.slug}.ics", f"{release.name} schedule", release.slug)]
    if sig:
        feeds.insert(
            0,
            feed_for(
                request, f"/calendar/{release.slug}/sig/{quote(sig)}.ics", f"SIG {sig} in {release.name}", f"sig-{sig}"
            ),
        )
    return _render(
        request,
        "pages/exceptions.html",
        {
            "viewer": zone,
            "release": release,
            "rows": rows,
            "sig": sig,
            "state": state,
            "sigs": all_sigs,
            "states": states.choices,
            "counts": [(label, counts[value]) for value, label in states.choices],
            "problems": problems,
            "feeds": feeds,
            "filtered": bool(sig or state),
        },
        status=400 if problems else 200,
    )


# -------------------------------------------------------------- the KEP page


def _extendable(enhancement: Enhancement):
    """The deadlines an owner may ask to extend from the KEP page: of the releases that
    track the KEP and are not released, not cancelled, of a kind exceptions may extend.
    A closed request window is refused by the service, with its message (as the API)."""
    return (
        Milestone.objects.filter(
            release__tracking__enhancement=enhancement, cancelled=False, kind__allows_exceptions=True
        )
        .exclude(release__status=Release.Status.RELEASED)
        .select_related("release", "kind")
        .order_by("closes_at", "pk")
    )


def _request_forms(request: HttpRequest, enhancement: Enhancement, *, file_form=None, amend_forms=None) -> dict:
    """What the KEP page offers the reader for requests: for one of its owners (people's
    "my KEPs"), a form to file one and a form to amend each of their pending ones."""
    user = request.user
    if not user.is_authenticated:
        return {"requests_sign_in": f"{settings.LOGIN_URL}?{urlencode({'next': request.path})}"}
    if not user_names_enhancement(user=user, enhancement=enhancement):
        return {"requests_not_named": True}
    mine = list(
        ExceptionRequest.objects.filter(enhancement=enhancement, requester=user, state=ExceptionRequest.State.PENDING)
        .select_related("milestone", "release")
        .prefetch_related("revisions")
        .order_by("submitted_at")
    )
    amend_forms = amend_forms or {}
    return {
        "file_form": file_form or FileRequestForm(milestones=_extendable(enhancement)),
        "my_pending": [
            (
                pending,
                amend_forms.get(pending.pk)
                or RequestForm(initial=amend_initial(pending.current), prefix=f"r{pending.pk}"),
            )
            for pending in mine
        ],
    }


def _kep_page(
    request: HttpRequest, enhancement: Enhancement, *, status: int = 200, problem: str = "", **forms
) -> HttpResponse:
    zone = viewer_zone(request)
    trackings = list(
        Tracking.objects.filter(enhancement=enhancement)
        .select_related("release", "enhancement", "missed_freeze")
        .order_by("-release__start_date")
    )
    releases = [t.release for t in trackings]
    milestones = list(
        Milestone.objects.filter(release__in=releases, cancelled=False)
        .select_related("release", "kind")
        .order_by("closes_at", "id")
    )
    deadlines = effective_deadlines(milestones=milestones, enhancements=[enhancement])
    by_release: dict[int, list[dict]] = {r.pk: [] for r in releases}
    now = tz.utc_now()
    for milestone in milestones:
        deadline = deadlines[(enhancement.pk, milestone.pk)]
        if milestone.at is None and not deadline.is_extension:
            effective = when_date(milestone.on_date)
        else:
            effective = when_instant(deadline.instant, deadline.zone, zone.zone, deadline=True)
        by_release[milestone.release_id].append(
            {
                "milestone": milestone,
                "deadline": deadline,
                "when": effective,
                "original": milestone_whens(milestone, zone.zone)[0] if deadline.is_extension else None,
                "past": deadline.instant <= now,
            }
        )
    # Removed from (or deferred out of) a release: none of its deadlines is the KEP's.
    sections = [
        {
            "tracking": t,
            "release": t.release,
            "rows": [] if t.out_of_milestone else by_release[t.release.pk],
            "out_text": t.out_of_milestone_text(),
        }
        for t in trackings
    ]
    history = _request_rows(_requests_queryset().filter(enhancement=enhancement), zone.zone)
    feeds = [feed_for(request, f"/calendar/kep/{enhancement.number}.ics", f"KEP-{enhancement.number}", "kep")]
    return _render(
        request,
        "pages/kep.html",
        {
            "viewer": zone,
            "kep": enhancement,
            "owners": list(enhancement.owners.all()),
            "sections": sections,
            "history": history,
            "feeds": feeds,
            "sigs": [enhancement.owning_sig]
            + [s for s in enhancement.participating_sigs or [] if s != enhancement.owning_sig],
            "request_problem": problem,
            **_request_forms(request, enhancement, **forms),
        },
        status=status,
    )


@zone_in_url
def kep_detail(request: HttpRequest, number: int) -> HttpResponse:
    enhancement = Enhancement.objects.filter(number=number).prefetch_related("owners").first()
    if enhancement is None:
        return not_found(request, f"KEP-{number} is not tracked here.")
    return _kep_page(request, enhancement)


def _owned_kep(request: HttpRequest, number: int) -> tuple[Enhancement | None, HttpResponse | None]:
    enhancement = Enhancement.objects.filter(number=number).prefetch_related("owners").first()
    if enhancement is None:
        return None, not_found(request, f"KEP-{number} is not tracked here.")
    if not user_names_enhancement(user=request.user, enhancement=enhancement):
        return None, _kep_page(
            request,
            enhancement,
            status=403,
            problem=f"KEP-{enhancement.number} does not name you (as an owner or a kep.yaml author), so you cannot "
            "file or amend its requests here. Ask the release team, or file it through them.",
        )
    return enhancement, None


def _fields_of(form: RequestForm, enhancement: Enhancement):
    return form.fields_for(
        enhancement_name=enhancement.title, sig=enhancement.owning_sig, issue_url=enhancement.issue_url
    )


@login_required
@require_POST
def kep_request_file(request: HttpRequest, number: int) -> HttpResponse:
    """File an exception request for one of your KEPs (exceptions.services, as the API)."""
    enhancement, refusal = _owned_kep(request, number)
    if refusal is not None:
        return refusal
    form = FileRequestForm(request.POST, milestones=_extendable(enhancement))
    if not form.is_valid():
        return _kep_page(request, enhancement, status=400, file_form=form)
    try:
        created = exception_request_submit(
            enhancement=enhancement,
            milestone=form.cleaned_data["milestone"],
            also_milestone=form.cleaned_data.get("also_milestone"),
            fields=_fields_of(form, enhancement),
            requester=request.user,
            entered_by=request.user,
        )
    except DomainError as exc:
        return _kep_page(request, enhancement, status=exc.status_code, file_form=form, problem=exc.message)
    messages.success(request, f"Request #{created.pk} is filed: the release team decides it.")
    return HttpResponseRedirect(f"/kep/{enhancement.number}/#requests")


@login_required
@require_POST
def kep_request_amend(request: HttpRequest, number: int, request_id: int) -> HttpResponse:
    """Amend your own pending request (a new version; every version is kept)."""
    enhancement, refusal = _owned_kep(request, number)
    if refusal is not None:
        return refusal
    pending = ExceptionRequest.objects.filter(pk=request_id, enhancement=enhancement).first()
    if pending is None:
        return not_found(request, f"KEP-{number} has no request #{request_id}.")
    if pending.requester_id != request.user.pk:
        return _kep_page(
            request,
            enhancement,
            status=403,
            problem=f"Request #{pending.pk} is not yours: only its requester amends it here.",
        )
    form = RequestForm(request.POST, prefix=f"r{pending.pk}")
    if not form.is_valid():
        return _kep_page(request, enhancement, status=400, amend_forms={pending.pk: form})
    try:
        exception_request_amend(
            request=pending, fields=_fields_of(form, enhancement), actor=request.user, entered_by=request.user
        )
    except DomainError as exc:
        return _kep_page(
            request, enhancement, status=exc.status_code, amend_forms={pending.pk: form}, problem=exc.message
        )
    messages.success(request, f"Request #{pending.pk} is amended.")
    return HttpResponseRedirect(f"/kep/{enhancement.number}/#requests")
