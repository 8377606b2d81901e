"""REST API of the schedule: releases, milestones, KEPs and the next deadlines.

One view per operation with nested output serializers; reads go through
``releasecal.selectors``. Every instant comes as ``x``, ``x_local`` and (with ``?tz=``)
``x_viewer`` (see ``api.common``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import django_filters
from django.db.models import DateTimeField, Prefetch, Q
from django.db.models.functions import Cast, Coalesce
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer
from rest_framework import generics, serializers
from rest_framework.filters import OrderingFilter
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.common import (
    TZ_PARAMETER,
    StrictBooleanFilter,
    TimeAwareOutputSerializer,
    add_instant,
    error_responses,
    int_or_none,
    serializer_context,
    text_or_none,
    viewer_zone,
)
from releasecal import selectors, tz
from releasecal.errors import NotFound, ValidationFailed
from releasecal.models import Enhancement, EnhancementOwner, Milestone, Release, Tracking


class TimeAwareListView(generics.ListAPIView):
    """A list view whose serializers see the viewer's zone (``?tz=``)."""

    permission_classes = [AllowAny]

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "viewer_zone": viewer_zone(self.request)}

    def list(self, request, *args, **kwargs):
        viewer_zone(request)  # a bad zone is a 400 before any query runs
        return super().list(request, *args, **kwargs)


# ------------------------------------------------------------------- milestones


def chronological(queryset):
    """Timed and date-only milestones interleaved by when they start (SQL, so it pages)."""
    return queryset.annotate(starts_key=Coalesce("at", Cast("on_date", DateTimeField()))).order_by("starts_key", "id")


class MilestoneOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {
        "at": ("at", "zone"),
        "ends_at": ("ends_at", "zone"),
        "deadline": ("deadline", "zone"),
    }

    id = serializers.IntegerField()
    release = serializers.CharField(source="release.slug")
    kind = serializers.CharField(source="kind.slug")
    kind_name = serializers.CharField(source="kind.name")
    allows_exceptions = serializers.BooleanField(source="kind.allows_exceptions")
    title = serializers.CharField()
    zone = serializers.CharField(help_text="The native zone the milestone was set in")
    on_date = serializers.DateField(allow_null=True, help_text="For date-only milestones")
    ends_on = serializers.DateField(allow_null=True, help_text="Last day of a date-only window")
    is_all_day = serializers.BooleanField()
    display = serializers.CharField()
    description = serializers.CharField()
    link = serializers.CharField()
    sequence = serializers.IntegerField()
    cancelled = serializers.BooleanField()


class MilestoneFilter(django_filters.FilterSet):
    release = django_filters.CharFilter(field_name="release__slug", help_text="Release slug, e.g. 1.31")
    kind = django_filters.CharFilter(field_name="kind__slug", help_text="Milestone kind, e.g. code-freeze")
    upcoming = StrictBooleanFilter(method="filter_upcoming", help_text="Only milestones not yet passed")
    cancelled = StrictBooleanFilter()

    class Meta:
        model = Milestone
        fields = ["release", "kind", "upcoming", "cancelled"]

    def filter_upcoming(self, queryset, name, value):
        if value is None:
            return queryset
        upcoming = selectors.milestone_list(upcoming=True).values("pk")
        return queryset.filter(pk__in=upcoming) if value else queryset.exclude(pk__in=upcoming)


class MilestoneListApi(TimeAwareListView):
    """Milestones of every release, filterable by release, kind and upcoming."""

    serializer_class = MilestoneOutputSerializer
    filterset_class = MilestoneFilter
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend, OrderingFilter]
    ordering_fields = ["starts_key", "at", "on_date", "id", "title"]

    def get_queryset(self):
        return chronological(selectors.milestone_list())

    @extend_schema(
        parameters=[TZ_PARAMETER], responses={200: MilestoneOutputSerializer(many=True)} | error_responses(400)
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ReleaseMilestoneFilter(MilestoneFilter):
    class Meta:
        model = Milestone
        fields = ["kind", "upcoming", "cancelled"]


class ReleaseMilestoneListApi(MilestoneListApi):
    """The milestones of one release."""

    filterset_class = ReleaseMilestoneFilter

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Milestone.objects.none()
        return chronological(selectors.milestone_list(release=selectors.release_get(slug=self.kwargs["slug"])))

    @extend_schema(
        parameters=[TZ_PARAMETER], responses={200: MilestoneOutputSerializer(many=True)} | error_responses(400, 404)
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


# --------------------------------------------------------------------- releases


class ReleaseOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {"hard_stop": ("hard_stop", "zone")}

    slug = serializers.CharField()
    name = serializers.CharField()
    zone = serializers.CharField(help_text="Native time zone of the schedule")
    status = serializers.CharField()
    start_date = serializers.DateField()
    ga_date = serializers.DateField(allow_null=True)
    links = serializers.DictField(child=serializers.CharField())
    exception_window_days = serializers.IntegerField()
    exception_warn_days = serializers.IntegerField()


class ReleaseFilter(django_filters.FilterSet):
    class Meta:
        model = Release
        fields = ["status"]


class ReleaseListApi(TimeAwareListView):
    serializer_class = ReleaseOutputSerializer
    filterset_class = ReleaseFilter
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend, OrderingFilter]
    ordering_fields = ["start_date", "slug", "ga_date"]

    def get_queryset(self):
        return Release.objects.order_by("-start_date", "slug")

    @extend_schema(
        parameters=[TZ_PARAMETER], responses={200: ReleaseOutputSerializer(many=True)} | error_responses(400)
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ReleaseDetailApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema_serializer(component_name="ReleaseDetailOutput")
    class OutputSerializer(ReleaseOutputSerializer):
        milestones = MilestoneOutputSerializer(many=True, source="milestone_rows")

    @extend_schema(parameters=[TZ_PARAMETER], responses={200: OutputSerializer} | error_responses(400, 404))
    def get(self, request: Request, slug: str) -> Response:
        context = serializer_context(request)
        release = selectors.release_get(slug=slug)
        release.milestone_rows = list(chronological(selectors.milestone_list(release=release)))
        return Response(self.OutputSerializer(release, context=context).data)


# ------------------------------------------------------------------ enhancements


class OwnerOutputSerializer(serializers.Serializer):
    github = serializers.CharField()
    slack_id = serializers.CharField()


class TrackingOutputSerializer(serializers.Serializer):
    release = serializers.CharField(source="release.slug")
    stage = serializers.CharField()
    status = serializers.CharField()
    pr_urls = serializers.ListField(child=serializers.CharField())


class EnhancementOutputSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    owning_sig = serializers.CharField()
    participating_sigs = serializers.ListField(child=serializers.CharField())
    issue_url = serializers.CharField()
    owners = OwnerOutputSerializer(many=True, source="owners.all")
    tracking = TrackingOutputSerializer(many=True, source="tracking.all")


def enhancement_queryset():
    return Enhancement.objects.prefetch_related(
        Prefetch("owners", queryset=EnhancementOwner.objects.order_by("id")),
        Prefetch("tracking", queryset=Tracking.objects.select_related("release").order_by("release__start_date")),
    )


def sig_q(sig: str) -> Q:
    """KEPs a SIG owns or participates in (a JSON list, matched as its text)."""
    return Q(owning_sig=sig) | Q(participating_sigs__icontains=f'"{sig}"')


class EnhancementFilter(django_filters.FilterSet):
    release = django_filters.CharFilter(method="filter_release", help_text="Tracked in this release (slug)")
    sig = django_filters.CharFilter(method="filter_sig", help_text="Owned by or participating SIG, e.g. node")

    class Meta:
        model = Enhancement
        fields = ["release", "sig"]

    def filter_release(self, queryset, name, value):
        return queryset.filter(pk__in=Tracking.objects.filter(release__slug=value).values("enhancement_id"))

    def filter_sig(self, queryset, name, value):
        return queryset.filter(sig_q(value))


class EnhancementListApi(TimeAwareListView):
    serializer_class = EnhancementOutputSerializer
    filterset_class = EnhancementFilter
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend, OrderingFilter]
    ordering_fields = ["number", "title", "owning_sig"]

    def get_queryset(self):
        return enhancement_queryset().order_by("number")

    @extend_schema(responses={200: EnhancementOutputSerializer(many=True)} | error_responses(400))
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class ExceptionSummarySerializer(TimeAwareOutputSerializer):
    instant_fields = {"granted_until": ("decision.granted_until", "decision.granted_zone")}

    id = serializers.IntegerField()
    release = serializers.CharField(source="release.slug")
    milestone = serializers.CharField(source="milestone.title")
    state = serializers.CharField()
    days = serializers.IntegerField()


class EnhancementDetailApi(APIView):
    permission_classes = [AllowAny]

    @extend_schema_serializer(component_name="EnhancementDetailOutput")
    class OutputSerializer(EnhancementOutputSerializer):
        exception_requests = ExceptionSummarySerializer(many=True, source="exception_rows")

    @extend_schema(parameters=[TZ_PARAMETER], responses={200: OutputSerializer} | error_responses(400, 404))
    def get(self, request: Request, number: int) -> Response:
        context = serializer_context(request)
        enhancement = _enhancement_get(number)
        enhancement.exception_rows = list(
            enhancement.exception_requests.select_related("release", "milestone", "decision").order_by("submitted_at")
        )
        return Response(self.OutputSerializer(enhancement, context=context).data)


def _enhancement_get(number, queryset=None) -> Enhancement:
    queryset = enhancement_queryset() if queryset is None else queryset
    enhancement = queryset.filter(number=number).first()
    if enhancement is None:
        raise NotFound(f"No KEP {number} is known.", extra={"kep": number})
    return enhancement


# --------------------------------------------------------------------- deadlines


@dataclass
class NextDeadline:
    """One upcoming deadline and the KEPs it applies to (empty: the whole release)."""

    milestone: Milestone
    instant: dt.datetime
    zone: str
    source: str
    original: dt.datetime
    exception_id: int | None = None
    keps: list[int] = field(default_factory=list)

    @property
    def is_extension(self) -> bool:
        return self.source == "exception"

    def display(self) -> str:
        if not self.is_extension and self.milestone.is_all_day:
            # "Monday 30 November 2026 (all day; ends 00:00 AoE Tuesday 1 December 2026 (...))"
            return f"{self.milestone.display()} (all day; ends {tz.render(self.instant, self.zone)})"
        return tz.render(self.instant, self.zone)


def deadlines_next(
    *,
    releases: list[Release],
    enhancements: list[Enhancement] | None,
    now: dt.datetime,
    limit: int,
) -> list[NextDeadline]:
    """The upcoming deadlines, soonest first, with granted extensions applied.

    Without KEPs: the releases' own deadlines. With KEPs: each KEP's effective deadline
    per milestone; KEPs sharing one instant for a milestone share one row.
    """
    milestones = [m for release in releases for m in selectors.milestone_list(release=release).filter(cancelled=False)]
    rows: dict[tuple[int, dt.datetime, int | None], NextDeadline] = {}
    if enhancements is None:
        for milestone in milestones:
            rows[(milestone.pk, milestone.deadline, None)] = NextDeadline(
                milestone=milestone,
                instant=milestone.deadline,
                zone=milestone.zone,
                source="milestone",
                original=milestone.deadline,
            )
    else:
        effective = selectors.effective_deadlines(milestones=milestones, enhancements=enhancements)
        numbers = {e.pk: e.number for e in enhancements}
        for (enhancement_id, _), deadline in sorted(effective.items(), key=lambda item: numbers[item[0][0]]):
            key = (deadline.milestone.pk, deadline.instant, deadline.exception_id)
            row = rows.setdefault(
                key,
                NextDeadline(
                    milestone=deadline.milestone,
                    instant=deadline.instant,
                    zone=deadline.zone,
                    source=deadline.source,
                    original=deadline.original,
                    exception_id=deadline.exception_id,
                ),
            )
            row.keps.append(numbers[enhancement_id])
    upcoming = [row for row in rows.values() if row.instant >= now]
    upcoming.sort(key=lambda row: (row.instant, row.milestone.pk))
    return upcoming[:limit]


class DeadlineOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {"deadline": ("instant", "zone"), "original_deadline": ("original", "milestone.zone")}

    milestone_id = serializers.IntegerField(source="milestone.pk")
    release = serializers.CharField(source="milestone.release.slug")
    kind = serializers.CharField(source="milestone.kind.slug")
    title = serializers.CharField(source="milestone.title")
    zone = serializers.CharField()
    display = serializers.CharField()
    source = serializers.ChoiceField(
        choices=["milestone", "exception"], help_text="exception: a granted extension applies"
    )
    exception_id = serializers.IntegerField(allow_null=True)
    keps = serializers.ListField(child=serializers.IntegerField(), help_text="KEPs this applies to; empty: all")

    def to_representation(self, row: NextDeadline):
        # Hand-written for speed: exactly what the declared fields (the OpenAPI schema)
        # would write; tests/test_api_fast_output.py compares it with DRF's generic path.
        milestone = row.milestone
        viewer = self.context.get("viewer_zone")
        data = {
            "milestone_id": int_or_none(milestone.pk),
            "release": text_or_none(milestone.release.slug),
            "kind": text_or_none(milestone.kind.slug),
            "title": text_or_none(milestone.title),
            "zone": text_or_none(row.zone),
            "display": text_or_none(row.display()),
            "source": row.source if row.source in ("", None) else _SOURCES.get(str(row.source), row.source),
            "exception_id": int_or_none(row.exception_id),
            "keps": None if row.keps is None else [int_or_none(number) for number in row.keps],
        }
        add_instant(data, "deadline", row.instant, row.zone, viewer)
        add_instant(data, "original_deadline", row.original, milestone.zone, viewer)
        return data


_SOURCES = {"milestone": "milestone", "exception": "exception"}


class DeadlineNextApi(APIView):
    """The next effective deadline(s) of a release, a KEP or a SIG."""

    permission_classes = [AllowAny]

    @extend_schema_serializer(component_name="DeadlineNextFilter")
    class FilterSerializer(serializers.Serializer):
        release = serializers.CharField(required=False, help_text="Release slug; default: every active release")
        kep = serializers.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
        sig = serializers.SlugField(required=False)
        limit = serializers.IntegerField(required=False, min_value=1, max_value=100, default=5)

    @extend_schema_serializer(component_name="DeadlineNextOutput")
    class OutputSerializer(serializers.Serializer):
        now = serializers.CharField(help_text="UTC instant the answer was computed for")
        next = DeadlineOutputSerializer(allow_null=True)
        deadlines = DeadlineOutputSerializer(many=True)

        def to_representation(self, instance):
            row = DeadlineOutputSerializer(context=self.context)
            upcoming = instance["next"]
            return {
                "now": text_or_none(instance["now"]),
                "next": None if upcoming is None else row.to_representation(upcoming),
                "deadlines": [row.to_representation(deadline) for deadline in instance["deadlines"]],
            }

    @extend_schema(
        parameters=[
            OpenApiParameter("release", OpenApiTypes.STR, description="Release slug; default: every active release"),
            OpenApiParameter("kep", OpenApiTypes.INT, description="KEP number: its effective deadlines"),
            OpenApiParameter("sig", OpenApiTypes.STR, description="SIG: effective deadlines of its KEPs"),
            OpenApiParameter("limit", OpenApiTypes.INT, description="How many deadlines (1-100, default 5)"),
            TZ_PARAMETER,
        ],
        responses={200: OutputSerializer} | error_responses(400, 404),
    )
    def get(self, request: Request) -> Response:
        context = serializer_context(request)
        params = self.FilterSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        query = params.validated_data
        if query.get("kep") and query.get("sig"):
            raise ValidationFailed(
                "Ask for a KEP or a SIG, not both.", extra={"kep": query["kep"], "sig": query["sig"]}
            )
        enhancements = None
        if query.get("kep"):
            enhancements = [_enhancement_get(query["kep"], Enhancement.objects.all())]
        elif query.get("sig"):
            enhancements = list(Enhancement.objects.filter(sig_q(query["sig"])))
        if query.get("release"):
            releases = [selectors.release_get(slug=query["release"])]
        elif enhancements is not None:
            tracked = Tracking.objects.filter(enhancement__in=enhancements).values("release_id")
            releases = list(Release.objects.filter(pk__in=tracked).exclude(status=Release.Status.RELEASED))
        else:
            releases = list(selectors.release_list_active())
        now = tz.utc_now()
        rows = deadlines_next(releases=releases, enhancements=enhancements, now=now, limit=query["limit"])
        data = {"now": tz.isoformat_utc(now), "next": rows[0] if rows else None, "deadlines": rows}
        return Response(self.OutputSerializer(data, context=context).data)
