"""REST API of the schedule: releases, milestones and KEPs (deadlines/next and a KEP's
detail with its requests are in ``exceptions.api``).

One view per operation with nested output serializers; reads go through
``releasecal.selectors``. Every instant comes as ``x``, ``x_local`` and (with ``?tz=``)
``x_viewer`` (see ``api.common``).
"""

from __future__ import annotations

import django_filters
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import generics, serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error_responses
from api.fields import TZ_PARAMETER, StrictBooleanFilter, TimeAwareOutputSerializer, serializer_context, viewer_zone
from api.filters import OrderingFilter
from releasecal import selectors, tz
from releasecal.models import (
    Enhancement,
    EnhancementOwner,
    EnhancementPerson,
    Milestone,
    MilestoneKind,
    Release,
    Tracking,
)


class TimeAwareListView(generics.ListAPIView):
    """A list view whose serializers see the viewer's zone (``?tz=``)."""

    permission_classes = [AllowAny]

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "viewer_zone": viewer_zone(self.request)}

    def list(self, request, *args, **kwargs):
        viewer_zone(request)  # a bad zone is a 400 before any query runs
        return super().list(request, *args, **kwargs)


# ------------------------------------------------------------------- milestones


class MilestoneOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {
        "at": ("at", "zone"),
        "ends_at": ("ends_at", "zone"),
        "deadline": ("deadline", "zone"),
    }
    deadline_fields = frozenset({"deadline"})

    id = serializers.IntegerField()
    release = serializers.CharField(source="release.slug")
    kind = serializers.CharField(source="kind.slug")
    kind_name = serializers.CharField(help_text="The kind's name as this release calls it")
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
    state = serializers.SerializerMethodField(
        help_text="upcoming (before it closes; a window: before it starts), in_effect (a window between "
        "its start and its end), closed (a window that ended), passed (any other milestone after it "
        "closed), cancelled"
    )

    def get_state(self, milestone: Milestone) -> str:
        return milestone.state_at(tz.utc_now())


class MilestoneFilter(django_filters.FilterSet):
    release = django_filters.CharFilter(field_name="release__slug", help_text="Release slug, e.g. 1.31")
    kind = django_filters.CharFilter(field_name="kind__slug", help_text="Milestone kind, e.g. code-freeze")
    upcoming = StrictBooleanFilter(
        method="filter_upcoming",
        help_text="Only milestones not yet over (not cancelled; a window while in effect)",
    )
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
    ordering_fields = ["closes_at", "at", "on_date", "id", "title"]

    def get_queryset(self):
        return selectors.milestone_list()

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
        return selectors.milestone_list(release=selectors.release_get(slug=self.kwargs["slug"]))

    @extend_schema(
        parameters=[TZ_PARAMETER], responses={200: MilestoneOutputSerializer(many=True)} | error_responses(400, 404)
    )
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


# --------------------------------------------------------------------- releases


class ReleaseOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {"hard_stop": ("hard_stop", "zone")}
    deadline_fields = frozenset({"hard_stop"})

    slug = serializers.CharField()
    name = serializers.CharField()
    zone = serializers.CharField(help_text="Native time zone of the schedule")
    status = serializers.CharField()
    start_date = serializers.DateField()
    ga_date = serializers.DateField(allow_null=True)
    links = serializers.DictField(child=serializers.CharField())
    request_window_hours = serializers.SerializerMethodField(
        help_text="Per kind that allows exceptions (slug): how many hours after the freeze a request may arrive"
    )
    exception_warn_days = serializers.IntegerField()

    def get_request_window_hours(self, release: Release) -> dict[str, int]:
        kinds = getattr(self.root, "_exception_kinds", None)
        if kinds is None:  # one query for a whole list
            kinds = self.root._exception_kinds = list(MilestoneKind.objects.filter(allows_exceptions=True))
        return {kind.slug: release.request_window_hours_for(kind) for kind in kinds}


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
        release.milestone_rows = list(selectors.milestone_list(release=release))
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
    missed_freeze = serializers.CharField(
        source="missed_freeze.title",
        allow_null=True,
        default=None,
        help_text="Removed from milestone: the freeze it missed, the one it may still ask an exception for",
    )


class PersonOutputSerializer(serializers.Serializer):
    github = serializers.CharField()
    role = serializers.ChoiceField(choices=EnhancementPerson.Role.choices)
    stage = serializers.CharField(help_text="The stage a PRR approver approved; empty for the other roles")


class EnhancementOutputSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    owning_sig = serializers.CharField()
    participating_sigs = serializers.ListField(child=serializers.CharField())
    issue_url = serializers.CharField()
    owners = OwnerOutputSerializer(many=True, source="owners.all")
    tracking = TrackingOutputSerializer(many=True, source="tracking.all")
    kep_status = serializers.CharField(help_text="The kep.yaml status; empty when not recorded")
    kep_stage = serializers.CharField(help_text="The kep.yaml stage; empty when not recorded")
    latest_milestone = serializers.CharField(help_text="The kep.yaml latest-milestone as a release slug (1.34)")
    stage_milestones = serializers.DictField(
        child=serializers.CharField(), help_text='The release of each stage: {"alpha": "1.31", "beta": "1.32"}'
    )
    people = PersonOutputSerializer(
        many=True, source="people.all", help_text="Who its kep.yaml names: authors, approvers, reviewers, PRR approvers"
    )


def enhancement_queryset():
    return Enhancement.objects.prefetch_related(
        Prefetch("owners", queryset=EnhancementOwner.objects.order_by("id")),
        Prefetch(
            "tracking",
            queryset=Tracking.objects.select_related("release", "missed_freeze").order_by("release__start_date"),
        ),
        Prefetch("people", queryset=EnhancementPerson.objects.order_by("role", "stage", "position", "id")),
    )


class EnhancementFilter(django_filters.FilterSet):
    release = django_filters.CharFilter(method="filter_release", help_text="Tracked in this release (slug)")
    sig = django_filters.CharFilter(method="filter_sig", help_text="Owned by or participating SIG, e.g. node")
    naming = django_filters.CharFilter(
        method="filter_naming",
        max_length=40,
        help_text="Naming this GitHub handle (any case, @ or not) as owner, author, approver, reviewer or PRR approver",
    )

    class Meta:
        model = Enhancement
        fields = ["release", "sig", "naming"]

    def filter_naming(self, queryset, name, value):
        return queryset.filter(pk__in=selectors.enhancement_list_naming(handle=value).values("pk"))

    def filter_release(self, queryset, name, value):
        return queryset.filter(pk__in=Tracking.objects.filter(release__slug=value).values("enhancement_id"))

    def filter_sig(self, queryset, name, value):
        return queryset.filter(selectors.sig_q(value))


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
