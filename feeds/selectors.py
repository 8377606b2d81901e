"""Reads behind the calendar feeds: what each feed contains and the personal-token
lookup.

A feed is described by a ``FeedScope``: the releases whose milestones it shows and the
exception requests whose extension events it shows. Two reads use a scope:

- ``feed_missing_subject`` — whether the feed's subject (release, KEP, SIG) exists
  (one query each; a 404 otherwise).
- ``feed_build`` — a fixed number of queries whatever the number of events.

Freshness is not decided here: feeds are cached under the feed version, which database
triggers change on every write to a table a feed shows (feeds/triggers.py, feeds/cache.py).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, Exists, Max, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from exceptions.models import DecisionCorrection, ExceptionRequest, ExceptionRequestRevision
from exceptions.selectors import Deadline, request_deadlines
from feeds import ical, options
from feeds.models import FeedToken
from feeds.published import publish
from feeds.services import feed_token_hash
from people.selectors import enhancement_list_of_user
from releasecal import tz
from releasecal.errors import NotFound
from releasecal.models import AuditLog, Enhancement, Milestone, Release, Tracking
from releasecal.selectors import sig_q, tracking_out_of_milestone

logger = logging.getLogger(__name__)

# last_used_at is written at most this often per token, so a feed poll is not a write.
LAST_USED_RESOLUTION = dt.timedelta(hours=1)


@dataclass(frozen=True)
class ScopeQueries:
    """What a feed shows, as QuerySets (not run until the feed is built)."""

    releases: QuerySet[Release]
    requests: QuerySet[ExceptionRequest] | None
    # Each must hold at least one row, else the feed is a 404 with that message
    # (checked in this order when the feed is built; a 404 is never cached).
    subjects: list[tuple[QuerySet, str]] = field(default_factory=list)


@dataclass
class FeedScope:
    key: str  # identity in the cache key: "release:1.31", "user:17" (never a token)
    kind: str  # release, sig, kep, all, user
    filename: str
    private: bool
    # Made only when the feed is built or its subject checked: a feed answered from the
    # cache (a 304, a warm 200) builds no QuerySet. Building the SIG feed's four cost more
    # CPU than the rest of its 304 (issue 27).
    queries: Callable[[], ScopeQueries]
    sig: str = ""
    number: int | None = None
    user_label: str = ""
    # Options of the URL (feeds/options.py): part of the cache key.
    alarms: tuple[int, ...] = ()  # minutes before each timed deadline, largest first
    since: dt.date | None = None  # all.ics: releases with a milestone on or after this day

    @property
    def cache_key(self) -> str:
        """``key`` plus the options: each variant of a feed is cached on its own."""
        key = self.key
        if self.since is not None:
            key += f"|since={self.since.isoformat()}"
        if self.alarms:
            key += "|alarm=" + ",".join(str(m) for m in self.alarms)
        return key


# ------------------------------------------------------------------------ scopes


def feed_scope_release(*, slug: str) -> FeedScope:
    def queries() -> ScopeQueries:
        releases = Release.objects.filter(slug=slug)
        message = f"No release {slug!r}. Release feeds are at /calendar/<release>.ics."
        return ScopeQueries(releases=releases, requests=None, subjects=[(releases, message)])

    return FeedScope(
        key=f"release:{slug}", kind="release", filename=f"releasecal-{slug}.ics", private=False, queries=queries
    )


def feed_scope_sig(*, slug: str, sig: str) -> FeedScope:
    def queries() -> ScopeQueries:
        releases = Release.objects.filter(slug=slug)
        return ScopeQueries(
            releases=releases,
            requests=ExceptionRequest.objects.filter(release__slug=slug).filter(sig_q(sig, "enhancement__")),
            subjects=[
                (releases, f"No release {slug!r}."),
                (Enhancement.objects.filter(sig_q(sig)), f"No KEP belongs to SIG {sig!r}."),
            ],
        )

    return FeedScope(
        key=f"sig:{slug}:{sig}",
        kind="sig",
        filename=f"releasecal-{slug}-sig-{sig}.ics",
        private=False,
        queries=queries,
        sig=sig,
    )


def _out_of_milestone(kep_ids) -> QuerySet[Tracking]:
    """The tracking rows of these KEPs that put them out of a release (removed, deferred)."""
    return Tracking.objects.filter(enhancement__in=kep_ids, status__in=Tracking.OUT_OF_MILESTONE)


def feed_scope_kep(*, number: int) -> FeedScope:
    """A KEP's releases (tracked in, or with a request in) and its requests. A release it
    was removed from (or deferred out of) gives it no deadline: its milestones stay out."""

    def queries() -> ScopeQueries:
        in_kep = Q(tracking__enhancement__number=number) | Q(exception_requests__enhancement__number=number)
        out = _out_of_milestone(Enhancement.objects.filter(number=number).values("pk")).values("release_id")
        return ScopeQueries(
            releases=Release.objects.filter(pk__in=Release.objects.filter(in_kep).values("pk")).exclude(pk__in=out),
            requests=ExceptionRequest.objects.filter(enhancement__number=number),
            subjects=[(Enhancement.objects.filter(number=number), f"No KEP {number}.")],
        )

    return FeedScope(
        key=f"kep:{number}",
        kind="kep",
        filename=f"releasecal-kep-{number}.ics",
        private=False,
        queries=queries,
        number=number,
    )


def feed_scope_all(*, since: dt.date) -> FeedScope:
    """Every release with a milestone on or after ``since`` (a timed one from 00:00 UTC
    that day; by default today two years back, feeds/options.py)."""

    def queries() -> ScopeQueries:
        start = dt.datetime.combine(since, dt.time(), tzinfo=dt.UTC)
        recent = Milestone.objects.filter(
            Q(at__gte=start) | Q(ends_at__gte=start) | Q(on_date__gte=since) | Q(ends_on__gte=since)
        )
        return ScopeQueries(releases=Release.objects.filter(pk__in=recent.values("release_id")), requests=None)

    return FeedScope(key="all", kind="all", filename="releasecal-all.ics", private=False, queries=queries, since=since)


def feed_scope_user(*, user) -> FeedScope:
    """A user's KEPs (people.selectors: listed with their account as an owner, or naming
    one of their GitHub handles) and the releases they lead."""
    user_id, username = user.pk, user.get_username()

    def queries() -> ScopeQueries:
        kep_ids = enhancement_list_of_user(user=user).values("pk")
        # A KEP removed from (or deferred out of) a release does not bring that release in.
        in_kep = Tracking.objects.filter(enhancement__in=kep_ids).exclude(status__in=Tracking.OUT_OF_MILESTONE)
        untracked_requests = ExceptionRequest.objects.filter(enhancement__in=kep_ids).exclude(
            Exists(Tracking.objects.filter(release=OuterRef("release"), enhancement=OuterRef("enhancement")))
        )
        releases = Release.objects.filter(
            Q(pk__in=Release.objects.filter(leads__id=user_id).values("pk"))
            | Q(pk__in=in_kep.values("release_id"))
            | Q(pk__in=untracked_requests.values("release_id"))
        )
        return ScopeQueries(releases=releases, requests=ExceptionRequest.objects.filter(enhancement__in=kep_ids))

    return FeedScope(
        # The username is in the calendar's name: a new one is a new key. (The GitHub
        # handles that choose the KEPs are in people/, whose writes bump the version.)
        key=f"user:{user_id}:{hashlib.sha256(username.encode()).hexdigest()[:12]}",
        kind="user",
        filename="releasecal-my-feed.ics",
        private=True,
        queries=queries,
        user_label=username,
    )


def feed_missing_subject(scope: FeedScope) -> str:
    """The 404 message of the first subject that does not exist, or "" (one query each)."""
    for qs, message in scope.queries().subjects:
        if not qs.exists():
            return message
    return ""


# -------------------------------------------------------------------------- build


@dataclass(frozen=True)
class BuiltFeed:
    body: bytes
    last_modified: dt.datetime  # newest data timestamp, UTC
    event_count: int


def _calendar_name(
    scope: FeedScope, releases: list[Release], kep: Enhancement | None, out: list[Tracking] = ()
) -> tuple[str, str]:
    if scope.kind == "release" and releases:
        release = releases[0]
        return f"{release.name or release.slug} (releasecal)", f"Milestones of {release.name or release.slug}."
    if scope.kind == "sig" and releases:
        release = releases[0]
        return (
            f"SIG {scope.sig}, {release.name or release.slug} (releasecal)",
            f"Milestones of {release.name or release.slug} and the effective deadlines of SIG {scope.sig}'s KEPs.",
        )
    if scope.kind == "kep":
        title = f"KEP-{scope.number}" + (f": {kep.title}" if kep else "")
        said = "".join(f" {t.out_of_milestone_text()}" for t in out)
        return f"{title} (releasecal)", f"Milestones and effective deadlines of {title}.{said}"
    if scope.kind == "user":
        return (
            f"My KEPs and releases, {scope.user_label} (releasecal)",
            "The KEPs you own and the releases you lead.",
        )
    since = tz.render_date(scope.since) if scope.since else ""
    return (
        "All releases (releasecal)",
        f"Milestones of every release with a milestone on or after {since}; "
        "add ?since=YYYY to the address for older releases.",
    )


def _when(snapshot: dict) -> tuple[dt.datetime | None, dt.date | None]:
    at, on_date = snapshot.get("at"), snapshot.get("on_date")
    return (
        dt.datetime.fromisoformat(at) if at else None,
        dt.date.fromisoformat(on_date) if on_date else None,
    )


def milestone_moves(milestones: list[Milestone]) -> dict[int, tuple[ical.Move, ...]]:
    """Each milestone's earlier places, oldest first, from the audit log's before/after
    snapshots (services.milestone_save): one query for any number of milestones. A change
    that moved the instant (or date) counts; one that only edited other fields does not.
    A snapshot that cannot be read (written by hand) is passed over."""
    if not milestones:
        return {}
    rows = (
        AuditLog.objects.filter(
            object_type="releasecal.milestone",
            object_id__in=[str(m.pk) for m in milestones],
            action__in=("milestone.update", "milestone.cancel"),
        )
        .order_by("at", "id")
        .values_list("object_id", "at", "before", "after")
    )
    moves: dict[int, list[ical.Move]] = {}
    for object_id, changed_at, before, after in rows:
        try:
            was, now = _when(before or {}), _when(after or {})
        except (TypeError, ValueError, AttributeError):
            continue
        if was == now or was == (None, None):
            continue
        zone = (before or {}).get("zone") or "UTC"
        if not isinstance(zone, str) or not tz.is_valid_zone(zone):
            zone = "UTC"
        moves.setdefault(int(object_id), []).append(
            ical.Move(at=was[0], on_date=was[1], zone=zone, changed_at=changed_at)
        )
    return {pk: tuple(found) for pk, found in moves.items()}


def _all_feed_left_at(since: dt.date, *, released: list[int]) -> list[dt.datetime]:
    """When all.ics last lost a release, for Last-Modified: a client that revalidates with
    If-Modified-Since only must not get a 304 after a release left the feed, though no
    row the feed still shows changed. Two ways out: the two-year window passed its last
    milestone (it left at 00:00 UTC of the day after that milestone's day, two years on:
    the first day whose default cutoff is after it), or a milestone was moved before the
    cutoff (its ``updated_at``). One query."""
    left = Milestone.objects.exclude(release__in=released).aggregate(
        at=Max("at"), ends_at=Max("ends_at"), on_date=Max("on_date"), ends_on=Max("ends_on"), edited=Max("updated_at")
    )
    stamps = [left["edited"]] if left["edited"] else []
    days = [tz.to_utc(left[k]).date() for k in ("at", "ends_at") if left[k]]
    days += [left[k] for k in ("on_date", "ends_on") if left[k]]
    days = [d for d in days if d < since]
    if days:
        after = max(days) + dt.timedelta(days=1)
        try:
            gone = after.replace(year=after.year + options.DEFAULT_YEARS)
        except ValueError:  # 29 February: the cutoff reaches past it on 1 March
            gone = dt.date(after.year + options.DEFAULT_YEARS, 3, 1)
        if gone <= tz.utc_now().date():
            stamps.append(dt.datetime.combine(gone, dt.time(), tzinfo=dt.UTC))
    return stamps


def _guarded(make, row, **kwargs) -> ical.CalendarEvent | None:
    """One event, or None (logged with the row's id) when its stored data cannot make
    one: a feed never fails because of one odd row, whatever the writer trips on (an
    instant at the ends of ``datetime``, a field a migration left empty, a zone the
    running tzdata no longer has). Instants outside 1970-2099 that can be shown are shown
    in UTC by the writer itself (feeds/ical.py ``_shown_zone``)."""
    try:
        return make(row, **kwargs)
    except Exception:  # one row's data, whatever is wrong with it, never takes its feed down
        logger.exception("feed: %s #%s left out: its stored data cannot be written", type(row).__name__, row.pk)
        return None


def _request_deadlines_guarded(requests: list[ExceptionRequest]) -> dict[int, Deadline]:
    """``request_deadlines`` of all (one query), or, when one request's stored data
    trips it, of each alone: that request is left out (logged), the rest are there."""
    try:
        return request_deadlines(requests)
    except Exception:  # noqa: BLE001 - one request tripped it: find it (logged below), keep the rest
        deadlines: dict[int, Deadline] = {}
        for request in requests:
            try:
                deadlines.update(request_deadlines([request]))
            except Exception:
                logger.exception("feed: ExceptionRequest #%s left out: its deadline cannot be worked out", request.pk)
        return deadlines


def feed_build(scope: FeedScope) -> BuiltFeed:
    """Render the feed: 4 queries (releases, milestones, their moves, KEP) plus 4 when it
    has extension events (the requests, their releases, their freezes, the KEPs out of a
    release), 2 when some of them
    are approved (their releases' hard stops, for ``request_deadlines``) and 1 for all.ics
    (when it last lost a release), however many events."""
    host, site_url = settings.SITE_HOST, settings.SITE_URL
    queries = scope.queries()
    releases = list(queries.releases.order_by("start_date", "slug"))
    milestones = list(
        Milestone.objects.filter(release__in=[r.pk for r in releases])
        .select_related("release", "kind")
        .order_by("closes_at", "id")
    )
    kep = None
    out: list[Tracking] = []
    if scope.kind == "kep":
        kep = Enhancement.objects.filter(number=scope.number).first()
        out = tracking_out_of_milestone(enhancements=[kep]) if kep else []
    moves = milestone_moves(milestones)
    weeks: dict[int, int] = {}  # release id -> its schedule's highest week
    for m in milestones:
        if m.week is not None:
            weeks[m.release_id] = max(weeks.get(m.release_id, 0), m.week)
    events = []
    for m in milestones:
        event = _guarded(
            ical.milestone_event,
            m,
            host=host,
            site_url=site_url,
            moves=moves.get(m.pk, ()),
            weeks=weeks.get(m.release_id),
        )
        if event is not None:
            events.append(event)
    stamps = [r.updated_at for r in releases] + [m.updated_at for m in milestones]
    if scope.kind == "all" and scope.since is not None:
        stamps += _all_feed_left_at(scope.since, released=[r.pk for r in releases])
    if queries.requests is not None:
        revision_count = Subquery(
            ExceptionRequestRevision.objects.filter(request=OuterRef("pk"))
            .order_by()
            .values("request")
            .annotate(n=Coalesce(Count("pk"), 0))
            .values("n")
        )
        correction_count = Subquery(
            DecisionCorrection.objects.filter(request=OuterRef("pk"))
            .order_by()
            .values("request")
            .annotate(n=Coalesce(Count("pk"), 0))
            .values("n")
        )
        # The few releases and freezes the requests share are read once each (a prefetch
        # gives every request of a freeze the same row), not once per request in the join:
        # 300 requests of one freeze made 1,200 model instances more (issue 27).
        requests = list(
            queries.requests.select_related("enhancement", "decision", "also_milestone")
            .prefetch_related(
                "release", Prefetch("milestone", queryset=Milestone.objects.select_related("release", "kind"))
            )
            .annotate(revision_count=revision_count, correction_count=correction_count)
            .order_by("pk")
        )
        deadlines = _request_deadlines_guarded(requests)
        # A KEP removed from (or deferred out of) the release: its pending or granted
        # extension is no deadline of its own any more (a rejected or withdrawn one
        # stays, CANCELLED).
        left = (
            set(_out_of_milestone({r.enhancement_id for r in requests}).values_list("enhancement_id", "release_id"))
            if requests
            else set()
        )
        for request in requests:
            if request.state in ExceptionRequest.ACTIVE_STATES and (request.enhancement_id, request.release_id) in left:
                continue
            deadline = deadlines.get(request.pk)
            if deadline is None:
                continue
            event = _guarded(
                ical.extension_event,
                request,
                revisions=request.revision_count or 1,
                corrections=request.correction_count or 0,
                deadline=deadline,
                host=host,
                site_url=site_url,
            )
            if event is None:
                continue
            events.append(event)
            stamps.append(event.last_modified)
    events = publish(events)
    stamps += [event.last_modified for event in events]
    name, description = _calendar_name(scope, releases, kep, out)
    body = ical.calendar_bytes(name=name, description=description, events=events, alarms=scope.alarms)
    last_modified = max((tz.to_utc(s) for s in stamps), default=dt.datetime(2000, 1, 1, tzinfo=dt.UTC))
    return BuiltFeed(body=body, last_modified=last_modified.replace(microsecond=0), event_count=len(events))


# ------------------------------------------------------------------------- tokens


def feed_token_resolve(*, token: str) -> FeedToken:
    """The active token row for a plain token, or NotFound.

    The lookup is by SHA-256 (an indexed equality on a value the caller cannot steer),
    then confirmed with a constant-time compare; unknown, malformed and revoked tokens
    take the same path and raise the same error.
    """
    digest = feed_token_hash(token)
    row = FeedToken.objects.select_related("user").filter(token_hash=digest, revoked_at__isnull=True).first()
    stored = row.token_hash if row is not None else "0" * 64
    matches = hmac.compare_digest(stored, digest)  # always run: misses and hits cost the same
    if row is None or not matches or not row.user.is_active:
        raise NotFound("No feed at this address.")
    return row


def feed_token_touch(row: FeedToken) -> None:
    """Record use, at most once per LAST_USED_RESOLUTION (a conditional UPDATE)."""
    now = tz.utc_now()
    if row.last_used_at is not None and now - row.last_used_at < LAST_USED_RESOLUTION:
        return
    FeedToken.objects.filter(pk=row.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_RESOLUTION)
    ).update(last_used_at=now)


def feed_tokens_of(*, user) -> QuerySet[FeedToken]:
    return FeedToken.objects.filter(user=user).order_by("-created_at", "-id")
