"""Reads of the schedule domain (effective deadlines, which need exception grants, are
in ``exceptions.selectors``)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection

from django.apps import apps
from django.db.models import Q, QuerySet
from django.db.models.functions import Lower

from releasecal import tz
from releasecal.errors import NotFound
from releasecal.models import (
    Enhancement,
    EnhancementOwner,
    EnhancementPerson,
    Milestone,
    Release,
    SigLead,
    Tracking,
    ZoneField,
)


def release_get(*, slug: str) -> Release:
    try:
        return Release.objects.get(slug=slug)
    except Release.DoesNotExist:
        raise NotFound(f"No release {slug!r}.", extra={"release": slug}) from None


def release_list_active() -> QuerySet[Release]:
    return Release.objects.filter(status__in=[Release.Status.ACTIVE, Release.Status.PLANNING]).order_by("start_date")


def release_hard_stop(release: Release) -> dt.datetime | None:
    """The last instant an extension may reach: the release's hard stop, else its first rc."""
    if release.hard_stop:
        return release.hard_stop
    rc = release.milestones.filter(kind__slug="rc", cancelled=False).order_by("closes_at", "id").first()
    if rc is None:
        return None
    return rc.starts


def milestone_list(
    *, release: Release | None = None, kind: str | None = None, upcoming: bool = False, now: dt.datetime | None = None
) -> QuerySet[Milestone]:
    """Milestones in the one order every face shows them: by when they close
    (``Milestone.closes_at``: a timed one at ``at``, a date-only one at the end of its day
    in its own zone), the same on SQLite and PostgreSQL. ``upcoming``: not cancelled and
    not yet over at ``now`` (a window stays while in effect); a milestone leaves at the
    instant it closes (or, a window, ends) exactly."""
    qs = Milestone.objects.select_related("release", "kind")
    if release is not None:
        qs = qs.filter(release=release)
    if kind:
        qs = qs.filter(kind__slug=kind)
    if upcoming:
        qs = qs.filter(passes_at__gt=now or tz.utc_now(), cancelled=False)
    return qs.order_by("closes_at", "id")


def milestone_list_next(*, releases: Collection[Release], now: dt.datetime | None = None) -> QuerySet[Milestone]:
    """The deadlines of ``releases`` still to close at ``now``, soonest first: what every
    "next deadlines" list shows (the cockpit, the home page; ``deadlines_next`` reads the
    same instants with grants applied). A window already in effect has closed: it stays
    in ``milestone_list(upcoming=True)`` until it ends, not here."""
    now = now or tz.utc_now()
    return milestone_list(upcoming=True, now=now).filter(release__in=releases, closes_at__gt=now)


def sig_q(sig: str, prefix: str = "") -> Q:
    """KEPs a SIG owns or participates in; ``prefix`` reaches them through a relation
    (``"enhancement__"`` from a request).

    participating_sigs is a JSON list; matching its text for '"<sig>"' works on SQLite
    and PostgreSQL alike (JSON containment does not exist on SQLite).
    """
    return Q(**{f"{prefix}owning_sig": sig}) | Q(**{f"{prefix}participating_sigs__icontains": f'"{sig}"'})


def release_team_includes(release: Release, user) -> bool:
    """Is ``user`` on this release's team (its leads or its team, kept per release in
    the admin)? Only an active, signed-in user can be."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return release.leads.filter(pk=user.pk).exists() or release.team.filter(pk=user.pk).exists()


def release_liaison_default(release: Release):
    """Who follows up a new exception request of ``release`` (its liaison): its
    Enhancements Lead when that is on its team, else its first lead; None for a release
    with neither."""
    lead = release.enhancements_lead
    if lead is not None and release_team_includes(release, lead):
        return lead
    return release.leads.filter(is_active=True).order_by("pk").first()


def sig_leaderships_of(user, sigs: list[str]) -> list[SigLead]:
    """The SIG lead rows linking ``user`` to any of ``sigs`` (labels, ``sig-`` prefix or not)."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return []
    labels = {sig.strip().lower().removeprefix("sig-") for sig in sigs if sig and sig.strip()}
    return list(SigLead.objects.filter(user=user, sig__in=labels).order_by("sig", "role"))


# Who a KEP names, for enhancement_list_naming: its owners (EnhancementOwner) and what its
# kep.yaml says (EnhancementPerson.Role).
NAMING_ROLES = ("owner", *EnhancementPerson.Role.values)


def github_handle(text: str) -> str:
    """A GitHub handle as people write it (``@Alice``, `` alice ``) for matching: without
    the @ and the blanks. Handles are compared in any case (``__iexact``)."""
    return (text or "").strip().removeprefix("@").strip()


def enhancement_list_naming(*, handle: str, roles: Collection[str] | None = None) -> QuerySet[Enhancement]:
    """The KEPs that name GitHub ``handle``, in any case, with or without its @: as an
    owner, or in their kep.yaml as author, approver, reviewer or PRR approver; ``roles``
    (of ``NAMING_ROLES``) narrows it, e.g. ``("owner", "author")`` for "my KEPs"."""
    handle = github_handle(handle)
    roles = NAMING_ROLES if roles is None else tuple(roles)
    unknown = sorted(set(roles) - set(NAMING_ROLES))
    if unknown:
        raise ValueError(f"roles {unknown} are none of {', '.join(NAMING_ROLES)}")
    if not handle:
        return Enhancement.objects.none()
    matches = Q()
    if "owner" in roles:
        matches |= Q(owners__github__iexact=handle)
    people = [role for role in roles if role != "owner"]
    if people:
        matches |= Q(people__github__iexact=handle, people__role__in=people)
    if not matches:
        return Enhancement.objects.none()
    numbers = Enhancement.objects.filter(matches).values("pk")
    return Enhancement.objects.filter(pk__in=numbers).order_by("number")


def enhancement_list_naming_any(*, handles: QuerySet, roles: Collection[str] | None = None) -> QuerySet[Enhancement]:
    """:func:`enhancement_list_naming` for many handles at once: ``handles`` is a query of
    lower-cased handles (one column), read in the same query as the KEPs (people.selectors:
    the handles an account signed in with)."""
    roles = NAMING_ROLES if roles is None else tuple(roles)
    unknown = sorted(set(roles) - set(NAMING_ROLES))
    if unknown:
        raise ValueError(f"roles {unknown} are none of {', '.join(NAMING_ROLES)}")
    matches = Q(pk__in=[])
    if "owner" in roles:
        owners = EnhancementOwner.objects.annotate(lowered=Lower("github")).filter(lowered__in=handles)
        matches |= Q(pk__in=owners.values("enhancement_id"))
    people = [role for role in roles if role != "owner"]
    if people:
        named = EnhancementPerson.objects.annotate(lowered=Lower("github")).filter(lowered__in=handles, role__in=people)
        matches |= Q(pk__in=named.values("enhancement_id"))
    return Enhancement.objects.filter(matches).order_by("number")


def tracking_in_open_releases(enhancements) -> list[Tracking]:
    """Every tracking row of these KEPs in a release not yet released, with its KEP,
    release and missed freeze, ordered as ``tracking_out_of_milestone``: one query that
    gives both the releases a KEP's deadlines come from and the KEPs out of their
    milestone (issue 27: deadlines/next/?kep= read them in two)."""
    rows = Tracking.objects.filter(enhancement__in=enhancements).exclude(release__status=Release.Status.RELEASED)
    rows = rows.select_related("enhancement", "release", "missed_freeze")
    return list(rows.order_by("release__start_date", "release__slug", "enhancement__number"))


def tracking_out_of_milestone(*, enhancements=None, releases=None) -> list[Tracking]:
    """The tracking rows of KEPs out of a release's milestone (removed from it, or
    deferred by their SIG): none of that release's deadlines is theirs, and every face
    says ``Tracking.out_of_milestone_text()`` instead. Oldest release first."""
    rows = Tracking.objects.filter(status__in=Tracking.OUT_OF_MILESTONE).select_related(
        "enhancement", "release", "missed_freeze"
    )
    if enhancements is not None:
        rows = rows.filter(enhancement__in=enhancements)
    if releases is not None:
        rows = rows.filter(release__in=releases)
    return list(rows.order_by("release__start_date", "release__slug", "enhancement__number"))


# ------------------------------------------------------------------ unknown zones
# Rows holding a zone this tzdata cannot load: written before zone names were checked,
# or kept from a tzdata release that had a zone this one lacks. Their instants are shown
# in UTC with a warning (``tz.zone_warning``); ``manage.py check_services`` lists them so
# someone sets a real zone.


def unknown_zone_rows() -> list[tuple[str, object, str]]:
    """(model label, primary key, zone) of every row whose ZoneField this tzdata lacks."""
    found = []
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if not isinstance(field, ZoneField):
                continue
            names = model.objects.exclude(**{field.name: ""}).values_list(field.name, flat=True).distinct()
            unknown = [name for name in names if not tz.is_known_zone(name)]
            if not unknown:
                continue
            rows = model.objects.filter(**{f"{field.name}__in": unknown}).order_by("pk")
            found.extend((model._meta.label, pk, zone) for pk, zone in rows.values_list("pk", field.name))
    return found


def unknown_zones_report() -> str:
    """check_services' line: ``none unknown`` or each row, ``releasecal.Milestone 7 zone 'Mars/Olympus_Mons'``."""
    rows = unknown_zone_rows()
    if not rows:
        return "none unknown to this tzdata"
    listed = "; ".join(f"{label} {pk} zone {zone!r}" for label, pk, zone in rows)
    return f"WARNING {len(rows)} row(s) with a zone unknown to this tzdata, shown in UTC: {listed}"
