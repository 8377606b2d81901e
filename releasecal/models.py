"""The schedule domain: releases, milestones, KEPs and their tracking, the audit log."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower

from releasecal import tz
from releasecal.defaults import DEFAULT_REQUEST_WINDOW_HOURS


def validate_zone(value: str) -> None:
    try:
        canonical = tz.normalize_zone_name(value)
    except tz.InvalidZone as exc:
        raise ValidationError(exc.message) from exc
    if canonical != value:
        raise ValidationError(f"Write the zone as {canonical!r}.")


# Release names are versions ("1.31", "2024.2", "v1.31-rc"), which SlugField refuses.
RELEASE_SLUG_VALIDATOR = RegexValidator(
    r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z", "Use letters, digits, dots, dashes and underscores, e.g. 1.31."
)


class ZoneField(models.CharField):
    """An IANA zone name or ``AoE``, validated by the time module."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("max_length", 64)
        kwargs.setdefault("validators", [validate_zone])
        super().__init__(*args, **kwargs)


class WallTimeField(models.Field):
    """A naive local date and time (``timestamp without time zone``): the wall clock a
    deadline was set to, kept beside its UTC instant and its zone so that a tzdata
    change of the zone's rules moves the instant, not the wall time
    (``releasecal.services.wall_time_record``, ``manage.py tzdata_check``)."""

    description = "Wall time (naive local date and time)"

    def db_type(self, connection):
        return "timestamp" if connection.vendor == "postgresql" else "datetime"

    def to_python(self, value):
        if value is None or isinstance(value, dt.datetime):
            if value is not None and value.tzinfo is not None:
                raise ValidationError("A wall time has no zone or offset.")
            return value
        try:
            return dt.datetime.fromisoformat(str(value))
        except ValueError as exc:
            raise ValidationError(f"{value!r} is not a date and time.") from exc

    def from_db_value(self, value, expression, connection):
        return self.to_python(value)

    def get_prep_value(self, value):
        value = self.to_python(super().get_prep_value(value))
        return value

    def get_db_prep_value(self, value, connection, prepared=False):
        value = value if prepared else self.get_prep_value(value)
        if value is None or connection.vendor == "postgresql":
            return value
        return value.isoformat(sep=" ")


class Release(models.Model):
    class Status(models.TextChoices):
        PLANNING = "planning", "Planning"
        ACTIVE = "active", "Active"
        RELEASED = "released", "Released"

    slug = models.CharField(
        max_length=32,
        unique=True,
        validators=[RELEASE_SLUG_VALIDATOR],
        help_text="Short name used in URLs, e.g. 1.31 (letters, digits, dots, dashes, underscores)",
    )
    name = models.CharField(max_length=200)
    zone = ZoneField(default="America/Los_Angeles", help_text="Native time zone of the schedule (IANA name or AoE)")
    start_date = models.DateField()
    ga_date = models.DateField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PLANNING)
    leads = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="led_releases")
    # The release team of this cycle (shadows, enhancements, docs, ...). With the leads,
    # they decide this release's exception requests; nobody else does. A new cycle
    # starts with an empty team: last cycle's team keeps no authority over it.
    team = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="release_teams",
        help_text="Who may decide this release's exception requests, beside its leads.",
    )
    # A role the release team records: the member who follows up the exception requests
    # (each request's liaison by default, the handbook's Enhancements Lead).
    enhancements_lead = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="A lead or team member: the liaison of each new exception request, unless changed",
    )
    links = models.JSONField(default=dict, blank=True, help_text='{"label": "https://..."}')

    # Exception policy (defaults from the Kubernetes process). The request window is a
    # per-kind setting in hours: each kind's ``request_window_hours`` (docs freeze 24 h,
    # the others 72 h), unless this release sets its own for that kind here.
    request_window_hours = models.JSONField(
        default=dict,
        blank=True,
        help_text='This release\'s own request window per kind, in hours after the freeze: {"docs-freeze": 48}; '
        "a kind not named here keeps the kind's default.",
    )
    exception_warn_days = models.PositiveSmallIntegerField(
        default=7, help_text="Requests for more days than this carry a warning (days, not weeks)."
    )
    hard_stop = models.DateTimeField(
        null=True,
        blank=True,
        help_text="No extension may end after this instant. Empty: the first rc milestone (rc.0 cut).",
    )
    # Announcing approvals (the 2026 process: approved exceptions are announced to the dev
    # list and the SIG's list). Off by default; notices.services writes the emails.
    announce_approvals = models.BooleanField(
        default=False,
        help_text="Email each approved exception (and each correction of an announced one) to the lists below.",
    )
    announce_dev_list = models.EmailField(
        blank=True, help_text="The project's dev list, e.g. dev@kubernetes.io. Empty: none."
    )
    announce_sig_list = models.BooleanField(
        default=True,
        help_text="Also to the mailing list of the KEP's owning SIG (stored by import_sigs from sigs.yaml).",
    )
    # hard_stop as a wall clock in ``zone``, as it was set (WallTimeField): recorded by
    # release_save, never edited by hand.
    hard_stop_wall = WallTimeField(
        null=True, blank=True, editable=False, help_text="hard_stop as set, on the wall clock of zone"
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-start_date"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ga_date__isnull=True) | Q(ga_date__gte=F("start_date")),
                name="release_ga_after_start",
            ),
            models.CheckConstraint(condition=Q(exception_warn_days__gte=1), name="release_warn_days_positive"),
        ]

    def __str__(self) -> str:
        return self.name or self.slug

    def request_window_hours_for(self, kind: MilestoneKind) -> int:
        """How many hours after a ``kind`` freeze closes a request may arrive in this
        release: this release's own setting for the kind, else the kind's default."""
        hours = (self.request_window_hours or {}).get(kind.slug)
        return hours if _valid_window_hours(hours) else kind.request_window_hours

    def clean(self) -> None:
        super().clean()
        windows = self.request_window_hours
        if not isinstance(windows, dict):
            raise ValidationError({"request_window_hours": 'Give the hours per kind, e.g. {"docs-freeze": 24}.'})
        for slug, hours in windows.items():
            if not _valid_window_hours(hours):
                raise ValidationError(
                    {
                        "request_window_hours": f"The window of {slug!r} must be a whole number of hours from 0 to "
                        f"{MAX_WINDOW_HOURS}, not {hours!r}."
                    }
                )


# A request window longer than a release cycle is a typo.
MAX_WINDOW_HOURS = 24 * 366


def _valid_window_hours(hours) -> bool:
    return isinstance(hours, int) and not isinstance(hours, bool) and 0 <= hours <= MAX_WINDOW_HOURS


class MilestoneKind(models.Model):
    slug = models.SlugField(max_length=48, unique=True)
    name = models.CharField(max_length=100)
    allows_exceptions = models.BooleanField(default=False, help_text="May an exception extend this deadline?")
    is_freeze = models.BooleanField(default=False)
    ordering = models.PositiveSmallIntegerField(default=100)
    request_window_hours = models.PositiveSmallIntegerField(
        default=DEFAULT_REQUEST_WINDOW_HOURS,
        db_default=DEFAULT_REQUEST_WINDOW_HOURS,
        help_text="A request for an exception may arrive at most this many hours after the freeze closes "
        "(a release may set its own)",
    )

    class Meta:
        ordering = ["ordering", "slug"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        super().save(*args, **kwargs)
        # Whether the kind is a freeze decides when its multi-day date-only milestones
        # close (milestone_closes_at): keep their stored closes_at right.
        rows = list(self.milestones.filter(at__isnull=True, ends_on__isnull=False).select_related("kind"))
        for milestone in rows:
            milestone.kind = self
            milestone.set_closing()
        if rows:
            Milestone.objects.bulk_update(rows, ["closes_at"])


# What decides when a milestone closes and passes: a change of any of these recomputes
# ``Milestone.closes_at`` and ``Milestone.passes_at`` (the kind says whether it is a
# freeze, which decides when a multi-day one closes).
TIMING_FIELDS = ("at", "on_date", "ends_at", "ends_on", "zone", "kind")

# What the stored instants hold where a milestone closes after what ``datetime`` holds
# (the end of 31 December 9999): it sorts last and never passes.
LAST_INSTANT = dt.datetime.max.replace(tzinfo=dt.UTC)


def milestone_closes_at(
    *, at: dt.datetime | None, on_date: dt.date | None, ends_on: dt.date | None, is_freeze: bool, zone: str
) -> dt.datetime:
    """When a milestone closes, the one definition every face sorts and filters by (the
    API's ``deadline``, the feeds' "Ends:", reminders): a timed milestone at ``at``; a
    date-only one at the end of its day in its own zone (end of 10 December 2026 AoE is
    11 December 12:00 UTC). A multi-day date-only one (``ends_on``) that is not a freeze
    (a conference 1-4 April, a window of dates) closes at the end of its last day; a
    freeze closes at the end of its first day, when the freeze begins: request windows
    and default grants count from that. OverflowError for a day whose end ``datetime``
    cannot hold (31 December 9999), as ``tz.end_of_day``."""
    if at is not None:
        return at
    return tz.end_of_day(milestone_closing_day(on_date=on_date, ends_on=ends_on, is_freeze=is_freeze), zone)


def milestone_closing_day(*, on_date: dt.date, ends_on: dt.date | None, is_freeze: bool) -> dt.date:
    """The day at whose end a date-only milestone closes (see :func:`milestone_closes_at`)."""
    return ends_on if ends_on is not None and not is_freeze else on_date


def milestone_passes_at(
    *,
    at: dt.datetime | None,
    on_date: dt.date | None,
    ends_at: dt.datetime | None,
    ends_on: dt.date | None,
    zone: str,
) -> dt.datetime:
    """When a milestone is over: a window (code freeze → thaw) is in effect until
    ``ends_at``, or the end of ``ends_on`` in its zone; any other milestone is over when
    it closes. Until then it is upcoming (or in effect)."""
    if ends_at is not None:
        return ends_at
    if ends_on is not None:
        return tz.end_of_day(ends_on, zone)
    return milestone_closes_at(at=at, on_date=on_date, ends_on=None, is_freeze=False, zone=zone)


class MilestoneQuerySet(models.QuerySet):
    """Keeps the stored ``closes_at`` and ``passes_at`` right on the paths that skip
    ``Milestone.save()``: ``bulk_create``, ``bulk_update`` and ``update``."""

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        for milestone in objs:
            milestone.set_closing()
        return super().bulk_create(objs, *args, **kwargs)

    def bulk_update(self, objs, fields, *args, **kwargs):
        # Django's bulk_update writes through update(), which recomputes the rows.
        objs = list(objs)
        if set(fields) & set(TIMING_FIELDS):
            for milestone in objs:
                milestone.set_closing()
        return super().bulk_update(objs, fields, *args, **kwargs)

    def update(self, **kwargs):
        if not set(kwargs) & {*TIMING_FIELDS, "kind_id"}:
            return super().update(**kwargs)
        pks = list(self.values_list("pk", flat=True))
        count = super().update(**kwargs)
        rows = list(
            Milestone.objects.filter(pk__in=pks).select_related("kind").only("pk", *TIMING_FIELDS, "kind__is_freeze")
        )
        for milestone in rows:
            milestone.set_closing()
        Milestone.objects.bulk_update(rows, ["closes_at", "passes_at"])
        return count


class Milestone(models.Model):
    """A deadline: an instant in a native zone, or a date; optionally a window.

    ``closes_at`` and ``passes_at`` are stored (and indexed) so that every face sorts
    and filters milestones in SQL alike on SQLite and PostgreSQL: computing "end of the
    day in the row's own zone" inside a query would need per-row zone arithmetic that
    SQLite does not have. ``save()`` and ``MilestoneQuerySet`` keep them right.
    """

    # Fields a calendar client shows: changing any of them bumps ``sequence``.
    CALENDAR_FIELDS = (
        "kind_id",
        "kind_label",
        "title",
        "at",
        "on_date",
        "ends_at",
        "ends_on",
        "zone",
        "description",
        "link",
        "cancelled",
        "week",
    )

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="milestones")
    kind = models.ForeignKey(MilestoneKind, on_delete=models.PROTECT, related_name="milestones")
    kind_label = models.CharField(
        max_length=100,
        blank=True,
        help_text="What this release's schedule calls the kind when that differs from the kind's name "
        "(v1.38's 'KEP Readiness Deadline' for the PRR freeze); empty: the kind's own name",
    )
    title = models.CharField(max_length=200)
    at = models.DateTimeField(null=True, blank=True, help_text="The instant (stored in UTC)")
    on_date = models.DateField(null=True, blank=True, help_text="For date-only milestones")
    ends_at = models.DateTimeField(null=True, blank=True, help_text="End of a window (timed)")
    ends_on = models.DateField(null=True, blank=True, help_text="Last day of a window (date-only, inclusive)")
    zone = ZoneField()
    # ``at`` and ``ends_at`` as wall clocks in ``zone``, as they were set (see
    # WallTimeField): recorded by milestone_save, never edited by hand.
    at_wall = WallTimeField(null=True, blank=True, editable=False, help_text="at as set, on the wall clock of zone")
    ends_at_wall = WallTimeField(
        null=True, blank=True, editable=False, help_text="ends_at as set, on the wall clock of zone"
    )
    description = models.TextField(blank=True)
    link = models.URLField(blank=True, max_length=500)
    sequence = models.PositiveIntegerField(default=0)
    cancelled = models.BooleanField(default=False)
    week = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Week of the release cycle, as the schedule's Week column says ('week 5'); empty when it has none.",
    )
    closes_at = models.DateTimeField(
        editable=False,
        db_index=True,
        help_text="When it closes: at, or the end of on_date in zone (kept by save; the sort key)",
    )
    passes_at = models.DateTimeField(
        editable=False,
        db_index=True,
        help_text="When it is over: a window's end, else closes_at (kept by save; upcoming until then)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MilestoneQuerySet.as_manager()

    class Meta:
        ordering = ["release", "closes_at", "id"]
        indexes = [models.Index(fields=["release", "kind"]), models.Index(fields=["at"])]
        constraints = [
            models.CheckConstraint(
                condition=(Q(at__isnull=False, on_date__isnull=True) | Q(at__isnull=True, on_date__isnull=False)),
                name="milestone_instant_xor_date",
            ),
            models.CheckConstraint(
                condition=Q(ends_at__isnull=True) | Q(at__isnull=False, ends_at__gt=F("at")),
                name="milestone_timed_window_ends_after_start",
            ),
            models.CheckConstraint(
                condition=Q(ends_on__isnull=True) | Q(on_date__isnull=False, ends_on__gte=F("on_date")),
                name="milestone_dated_window_ends_after_start",
            ),
        ]

    def __str__(self) -> str:
        return f"[{self.release.slug}] {self.title}"

    def save(self, *args, **kwargs):
        self.set_closing()
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and set(update_fields) & {*TIMING_FIELDS, "kind_id"}:
            closing = [f for f in ("closes_at", "passes_at") if f not in update_fields]
            kwargs["update_fields"] = [*update_fields, *closing]
        super().save(*args, **kwargs)

    @property
    def kind_name(self) -> str:
        """The kind's name as this release calls it: ``kind_label``, else the kind's own name."""
        return self.kind_label or self.kind.name

    @property
    def is_all_day(self) -> bool:
        return self.at is None

    @property
    def deadline(self) -> dt.datetime:
        """The instant that counts as the deadline: when it closes (:func:`milestone_closes_at`),
        from the fields as they are now (also before a save)."""
        return milestone_closes_at(**self._closing())

    @property
    def closing_day(self) -> dt.date | None:
        """The day at whose end a date-only milestone closes; None for a timed one."""
        if self.at is not None:
            return None
        closing = self._closing()
        return milestone_closing_day(on_date=self.on_date, ends_on=self.ends_on, is_freeze=closing["is_freeze"])

    def _closing(self) -> dict:
        """The arguments of :func:`milestone_closes_at` for this row. The kind is read
        only for a multi-day date-only milestone (the one case it decides), so a list
        that did not load the kinds makes no query per row for the others."""
        multi_day = self.at is None and self.ends_on is not None
        return {
            "at": self.at,
            "on_date": self.on_date,
            "ends_on": self.ends_on,
            "is_freeze": multi_day and self.kind.is_freeze,
            "zone": self.zone,
        }

    @property
    def is_window(self) -> bool:
        return self.ends_at is not None or self.ends_on is not None

    def set_closing(self) -> None:
        """Compute the stored ``closes_at`` and ``passes_at`` from the timing fields."""
        if self.at is None and self.on_date is None:
            return  # refused by the check constraint (and clean) anyway
        try:
            self.closes_at = milestone_closes_at(**self._closing())
        except OverflowError:
            self.closes_at = LAST_INSTANT
        try:
            self.passes_at = milestone_passes_at(
                at=self.at, on_date=self.on_date, ends_at=self.ends_at, ends_on=self.ends_on, zone=self.zone
            )
        except OverflowError:
            self.passes_at = LAST_INSTANT

    def state_at(self, now: dt.datetime) -> str:
        """Where the milestone stands at ``now``, the one reading every face shows, from
        the stored instants the lists sort and filter by: ``cancelled``; a window (code
        freeze → thaw) is ``upcoming`` until it starts, ``in_effect`` until it ends
        (``passes_at``) and ``closed`` after; any other milestone is ``upcoming`` until it
        closes (``closes_at``) and ``passed`` after. Each at the instant exactly."""
        if self.cancelled:
            return "cancelled"
        if self.closes_at is None or self.passes_at is None:
            self.set_closing()  # not saved yet
        if not self.is_window:
            return "upcoming" if now < self.closes_at else "passed"
        if now < self.starts:
            return "upcoming"
        return "in_effect" if now < self.passes_at else "closed"

    @property
    def starts(self) -> dt.datetime:
        """The first instant of the milestone (where a window starts, a timeline places it)."""
        if self.at is not None:
            return self.at
        return tz.start_of_day(self.on_date, self.zone)

    def display(self) -> str:
        if self.at is not None:
            text = tz.render_deadline(self.at, self.zone)
            if self.ends_at:
                text += " → " + tz.render(self.ends_at, self.zone)
            return text
        text = tz.render_date(self.on_date)
        if self.ends_on:
            text += " → " + tz.render_date(self.ends_on)
        return text

    def clean(self) -> None:
        if (self.at is None) == (self.on_date is None):
            raise ValidationError("Give either a time (instant) or a date, not both.")
        if self.ends_at and (self.at is None or self.ends_at <= self.at):
            raise ValidationError({"ends_at": "The window must end after it starts."})
        if self.ends_on and (self.on_date is None or self.ends_on < self.on_date):
            raise ValidationError({"ends_on": "The window must end on or after its first day."})


class Enhancement(models.Model):
    """A KEP. What its kep.yaml in kubernetes/enhancements says is kept as it says it
    (``manage.py import_keps``): the KEP's status, its stage, the release it last moved
    in and the release of each stage, and (in ``people``) its authors, approvers,
    reviewers and PRR approvers."""

    class KepStatus(models.TextChoices):
        # kubernetes/enhancements api/proposal.go: ValidStatuses
        PROVISIONAL = "provisional", "Provisional"
        IMPLEMENTABLE = "implementable", "Implementable"
        IMPLEMENTED = "implemented", "Implemented"
        DEFERRED = "deferred", "Deferred"
        REJECTED = "rejected", "Rejected"
        WITHDRAWN = "withdrawn", "Withdrawn"
        REPLACED = "replaced", "Replaced"

    class KepStage(models.TextChoices):
        # kubernetes/enhancements api/proposal.go: ValidStages
        ALPHA = "alpha", "Alpha"
        BETA = "beta", "Beta"
        STABLE = "stable", "Stable"
        DEPRECATED = "deprecated", "Deprecated"
        DISABLED = "disabled", "Disabled"
        REMOVED = "removed", "Removed"

    MAX_NUMBER = 2_147_483_647  # what ``number`` holds (a PostgreSQL integer)

    number = models.PositiveIntegerField(unique=True)
    title = models.CharField(max_length=300)
    owning_sig = models.SlugField(max_length=64, db_index=True)
    participating_sigs = models.JSONField(default=list, blank=True)
    issue_url = models.URLField(blank=True, max_length=500)
    kep_status = models.CharField(
        max_length=16, choices=KepStatus.choices, blank=True, help_text="The kep.yaml status (empty: not recorded)"
    )
    kep_stage = models.CharField(
        max_length=16, choices=KepStage.choices, blank=True, help_text="The kep.yaml stage: the one it works toward"
    )
    latest_milestone = models.CharField(
        max_length=32, blank=True, help_text="The kep.yaml latest-milestone, as a release slug (1.34)"
    )
    stage_milestones = models.JSONField(
        default=dict, blank=True, help_text='The kep.yaml milestone per stage: {"alpha": "1.31", "beta": "1.32"}'
    )
    kep_path = models.CharField(
        max_length=300, blank=True, help_text="Where its kep.yaml is under keps/: sig-node/2400-node-swap/kep.yaml"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["number"]

    def __str__(self) -> str:
        return f"KEP-{self.number}: {self.title}"


class EnhancementOwner(models.Model):
    """Who a KEP's reminders, notices and decisions go to, and who may act for it: its
    kep.yaml authors (added by import_keps, kept when kep.yaml drops them) and anyone
    added in the admin. One row per GitHub handle in any case (``@Alice`` is ``alice``)."""

    enhancement = models.ForeignKey(Enhancement, on_delete=models.CASCADE, related_name="owners")
    github = models.CharField(max_length=64, blank=True)
    email = models.EmailField(blank=True)
    slack_id = models.CharField(max_length=32, blank=True)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="owned_keps"
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                F("enhancement"), Lower("github"), condition=~Q(github=""), name="one_owner_row_per_github_any_case"
            )
        ]
        indexes = [models.Index(Lower("github"), name="owner_github_any_case")]

    def __str__(self) -> str:
        return self.github or self.email or self.slack_id or "owner"


class EnhancementPerson(models.Model):
    """A person a KEP's kep.yaml names, by GitHub handle, as it names them: replaced
    whole on every import_keps. The PRR approver is per stage, from
    ``keps/prod-readiness/<sig>/<number>.yaml``."""

    class Role(models.TextChoices):
        AUTHOR = "author", "Author"
        APPROVER = "approver", "Approver"
        REVIEWER = "reviewer", "Reviewer"
        PRR_APPROVER = "prr_approver", "PRR approver"

    enhancement = models.ForeignKey(Enhancement, on_delete=models.CASCADE, related_name="people")
    github = models.CharField(max_length=39, help_text="GitHub handle, as kep.yaml spells it, without the @")
    role = models.CharField(max_length=16, choices=Role.choices)
    stage = models.CharField(
        max_length=16,
        choices=Enhancement.KepStage.choices,
        blank=True,
        help_text="For a PRR approver: the stage approved",
    )
    position = models.PositiveSmallIntegerField(default=0, help_text="Order in the kep.yaml list")

    class Meta:
        ordering = ["enhancement", "role", "stage", "position"]
        constraints = [
            models.UniqueConstraint(
                F("enhancement"), F("role"), F("stage"), Lower("github"), name="one_person_row_per_role_any_case"
            ),
            models.CheckConstraint(
                condition=Q(role="prr_approver", stage__gt="") | (~Q(role="prr_approver") & Q(stage="")),
                name="person_stage_only_for_prr_approvers",
            ),
        ]
        indexes = [models.Index(Lower("github"), name="person_github_any_case")]

    def __str__(self) -> str:
        stage = f" ({self.stage})" if self.stage else ""
        return f"@{self.github}: {self.get_role_display()}{stage} of KEP-{self.enhancement.number}"


class Tracking(models.Model):
    """A KEP's place in one release."""

    class Stage(models.TextChoices):
        ALPHA = "alpha", "Alpha"
        BETA = "beta", "Beta"
        STABLE = "stable", "Stable"
        DEPRECATION = "deprecation", "Deprecation"

    class Status(models.TextChoices):
        TRACKED = "tracked", "Tracked"
        AT_RISK = "at_risk", "At risk"
        EXCEPTION_PENDING = "exception_pending", "Exception pending"
        EXCEPTION_APPROVED = "exception_approved", "Exception approved"
        REMOVED = "removed_from_milestone", "Removed from milestone"
        DEFERRED = "deferred", "Deferred"

    # Out of the release: none of its deadlines are the KEP's own (every face shows the
    # status instead of deadlines).
    OUT_OF_MILESTONE = (Status.REMOVED, Status.DEFERRED)

    release = models.ForeignKey(Release, on_delete=models.CASCADE, related_name="tracking")
    enhancement = models.ForeignKey(Enhancement, on_delete=models.CASCADE, related_name="tracking")
    stage = models.CharField(max_length=16, choices=Stage.choices)
    status = models.CharField(max_length=32, choices=Status.choices, default=Status.TRACKED)
    pr_urls = models.JSONField(default=list, blank=True)
    # The freeze a KEP removed from the milestone missed: the one freeze it may still ask
    # an exception for (the handbook: removed at a freeze, it gets back in only through
    # that freeze's exception). Kept by save(): set on removal, cleared when it is back.
    missed_freeze = models.ForeignKey(
        Milestone,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Removed from milestone: the freeze it missed (set on removal: the latest freeze that had closed)",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["release", "enhancement__number"]
        constraints = [
            models.UniqueConstraint(fields=["release", "enhancement"], name="one_tracking_per_release"),
            models.CheckConstraint(
                condition=Q(status="removed_from_milestone") | Q(missed_freeze__isnull=True),
                name="missed_freeze_only_when_removed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.enhancement} in {self.release.slug}"

    def save(self, *args, **kwargs):
        # The missed freeze goes with the status, whichever path writes it (the services,
        # the admin, an import): set when the KEP is removed, cleared when it is back.
        if self.status != self.Status.REMOVED:
            self.missed_freeze = None
        elif self.missed_freeze_id is None:
            self.missed_freeze = freeze_missed_by(self.release, tz.utc_now())
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "status" in update_fields and "missed_freeze" not in update_fields:
            kwargs["update_fields"] = [*update_fields, "missed_freeze"]
        super().save(*args, **kwargs)

    @property
    def out_of_milestone(self) -> bool:
        return self.status in self.OUT_OF_MILESTONE

    def out_of_milestone_text(self) -> str:
        """What every face says instead of the KEP's deadlines in this release ("" when
        it is in the release): "KEP-1880 was removed from the 1.36 milestone (it missed
        Code Freeze): no 1.36 deadline is its own."."""
        label, slug = f"KEP-{self.enhancement.number}", self.release.slug
        if self.status == self.Status.DEFERRED:
            return f"{label} was deferred to a later release by its SIG: no {slug} deadline is its own."
        if self.status != self.Status.REMOVED:
            return ""
        missed = f" (it missed {self.missed_freeze.title})" if self.missed_freeze_id else ""
        return f"{label} was removed from the {slug} milestone{missed}: no {slug} deadline is its own."


def freeze_missed_by(release: Release, at: dt.datetime) -> Milestone | None:
    """The freeze a KEP removed from ``release``'s milestone at ``at`` missed: the latest
    freeze (a milestone whose kind allows exceptions, not cancelled) that had closed by
    then, or the release's first freeze when none had (removed ahead of the freeze it
    was about to miss). None for a release without freezes."""
    freezes = sorted(
        Milestone.objects.filter(release=release, kind__allows_exceptions=True, cancelled=False).select_related(
            "release"
        ),
        key=lambda m: (m.deadline, m.pk),
    )
    closed = [m for m in freezes if m.deadline <= at]
    if closed:
        return closed[-1]
    return freezes[0] if freezes else None


class AuditLog(models.Model):
    """One immutable row per change: who, when, what, before, after."""

    at = models.DateTimeField(db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=200, blank=True, help_text="Who, also when not a user (an email, Slack)")
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    object_label = models.CharField(max_length=300, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M}Z {self.action} {self.object_type}#{self.object_id}"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValidationError("Audit log rows are immutable.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValidationError("Audit log rows are immutable.")


class SigContact(models.Model):
    """A SIG's mailing list, as kubernetes/community's sigs.yaml gives it under
    ``contact: mailing_list:`` (``manage.py import_sigs``), editable in the admin. The file
    gives a web address; ``mailing_list`` is the list's email address, derived from it
    only where the address follows from the URL exactly (``releasecal.importers.sigs``)."""

    sig = models.SlugField(max_length=64, unique=True, help_text="The SIG's label, as on KEPs: node, release")
    name = models.CharField(max_length=200, blank=True)
    mailing_list_url = models.URLField(max_length=500, blank=True, help_text="As sigs.yaml gives it")
    mailing_list = models.EmailField(blank=True, help_text="The list's address (approvals are announced to it)")

    class Meta:
        ordering = ["sig"]

    def __str__(self) -> str:
        return f"SIG {self.sig}: {self.mailing_list or self.mailing_list_url or 'no list'}"


class SigLead(models.Model):
    """A chair or technical lead of a SIG, as kubernetes/community's sigs.yaml lists
    them (``manage.py import_sigs``), editable in the admin. A linked user may sign off
    exception requests of KEPs the SIG owns or takes part in."""

    class Role(models.TextChoices):
        CHAIR = "chair", "Chair"
        TECH_LEAD = "tech_lead", "Technical lead"

    sig = models.SlugField(max_length=64, db_index=True, help_text="The SIG's label, as on KEPs: node, release")
    github = models.CharField(max_length=64, help_text="GitHub handle")
    name = models.CharField(max_length=200, blank=True)
    email = models.EmailField(blank=True)
    role = models.CharField(max_length=16, choices=Role.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="sig_leaderships",
        help_text="The releasecal user (linked on import when a username or email matches)",
    )

    class Meta:
        ordering = ["sig", "role", "github"]
        constraints = [models.UniqueConstraint(fields=["sig", "github", "role"], name="one_row_per_sig_lead_role")]

    def __str__(self) -> str:
        return f"{self.github} ({self.get_role_display()}, SIG {self.sig})"
