"""REST API of exception requests: list, file, amend, sign off, approve, reject, withdraw.

Views parse input and call ``exceptions.services``, the same functions the admin and
Slack call, so the rules and their messages are the same everywhere. Errors are
``DomainError``s mapped to ``{"message", "extra"}`` by ``api.common``.
"""

from __future__ import annotations

import django_filters
from django import forms
from django.contrib.auth import get_user_model
from django.db.models import OuterRef, Prefetch, Subquery
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticatedOrReadOnly
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.errors import error_responses
from api.fields import (
    TZ_PARAMETER,
    TimeAwareOutputSerializer,
    parse_instant_input,
    serializer_context,
    viewer_zone,
)
from api.filters import OrderingFilter
from exceptions import followup, services
from exceptions.models import (
    DecisionCorrection,
    ExceptionRequest,
    ExceptionRequestRevision,
    ProposedDecision,
    SignOff,
)
from exceptions.reader import ReadingTooLong, read_thread, time_limit
from exceptions.selectors import (
    MAX_ID,
    deadlines_next,
    effective_deadline,
    exception_milestone_get,
    hard_stops,
)
from exceptions.yaml_format import RecordFileError
from exceptions.yaml_sync import exceptions_yaml_export
from releasecal import selectors as schedule
from releasecal import tz
from releasecal.api import EnhancementOutputSerializer, enhancement_queryset
from releasecal.errors import Conflict, NotAllowed, NotFound, ValidationFailed
from releasecal.models import Enhancement, Milestone, Release

MAX_KEP = 2**31 - 1
User = get_user_model()


def _request_queryset():
    """Everything a request's output shows, in a constant number of queries: its
    revisions newest first in ``revision_rows``, its sign-offs in ``signoff_rows``."""
    return ExceptionRequest.objects.select_related(
        "release",
        "liaison",
        "enhancement",
        "milestone__kind",
        "also_milestone__kind",
        "requester",
        "decision__decided_by",
    ).prefetch_related(
        Prefetch(
            "revisions",
            queryset=ExceptionRequestRevision.objects.select_related("created_by", "entered_by")
            .defer("source_text")
            .order_by("-number"),
            to_attr="revision_rows",
        ),
        Prefetch(
            "signoffs", queryset=SignOff.objects.select_related("author").order_by("at", "id"), to_attr="signoff_rows"
        ),
    )


def _request_list_queryset():
    """What the list shows, in the attributes of ``_request_queryset``; ``revision_rows``
    holds only the newest revision (the list shows no history)."""
    newest = ExceptionRequestRevision.objects.filter(request=OuterRef("request")).order_by("-number").values("number")
    revision_fields = ["number", "days", "enhancement_name", "stage", "sig", "issue_url", "pr_urls", "until_text"]
    revision_fields += ["until_zone", "until_at", "reason", "risks_adding", "risks_cutting"]
    # The release, milestone and requester are the same few rows on every line of a page:
    # prefetched, each is one model shared by its rows, not one built per row by a join.
    return (
        ExceptionRequest.objects.select_related("enhancement", "decision__decided_by")
        # Only the columns the output reads: building 300 rows of full models (users'
        # passwords, the release's links) was most of the time left.
        .only(
            *("id", "release", "enhancement", "milestone", "also_milestone", "requester", "requester_name"),
            "on_behalf_of",
            *("state", "days", "filed_after_window", "from_archive", "received_at"),
            *("liaison", "slack_thread_url", "board_item_url"),
            "submitted_at",
            *("enhancement__number", "enhancement__title", "enhancement__owning_sig"),
            *("decision__outcome", "decision__decided_by", "decision__note", "decision__granted_zone"),
            *("decision__decided_at", "decision__granted_until", "decision__decided_by__username"),
        )
        .prefetch_related(
            Prefetch("release", queryset=Release.objects.only("slug", "zone", "exception_warn_days")),
            *(
                Prefetch(
                    name,
                    queryset=Milestone.objects.select_related("kind").only(
                        "release", "kind__slug", "kind__is_freeze", "title", "zone", "at", "on_date", "ends_on"
                    ),
                )
                for name in ("milestone", "also_milestone")
            ),
            Prefetch("requester", queryset=User.objects.only("username")),
            Prefetch("liaison", queryset=User.objects.only("username")),
            Prefetch(
                "revisions",
                queryset=ExceptionRequestRevision.objects.select_related("created_by", "entered_by")
                .only("request", "created_at", "created_by__username", "entered_by__username", *revision_fields)
                .filter(number=Subquery(newest[:1])),
                to_attr="revision_rows",
            ),
            Prefetch("signoffs", queryset=SignOff.objects.order_by("at", "id"), to_attr="signoff_rows"),
        )
    )


def _request_get(request_id: int) -> ExceptionRequest:
    found = (
        _request_queryset().prefetch_related("decision_corrections").filter(pk=request_id).first()
        if 0 < request_id <= MAX_ID
        else None
    )
    if found is None:
        raise NotFound(f"No exception request #{request_id}.", extra={"id": request_id})
    return found


def _can_act_for_others(user, release) -> bool:
    return user.is_staff or schedule.release_team_includes(release, user)


# ------------------------------------------------------------------------ output


class RevisionOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {
        "created_at": ("created_at", "request.release.zone"),
        "until_at": ("until_at", "request.release.zone"),
    }

    number = serializers.IntegerField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)
    entered_by = serializers.CharField(
        source="entered_by.username",
        allow_null=True,
        default=None,
        help_text="Who entered this version (ran ingest_exception, called the API, used the admin)",
    )
    days = serializers.IntegerField()
    enhancement_name = serializers.CharField()
    stage = serializers.CharField()
    sig = serializers.CharField()
    issue_url = serializers.CharField()
    pr_urls = serializers.ListField(child=serializers.CharField())
    until_text = serializers.CharField(help_text='As written by the requester: "EOD Friday CET"')
    until_zone = serializers.CharField()
    reason = serializers.CharField()
    risks_adding = serializers.CharField()
    risks_cutting = serializers.CharField()


class CurrentRevisionSerializer(RevisionOutputSerializer):
    def get_attribute(self, instance):
        # revision_rows is prefetched newest first; .current would cost a query per row
        return next(iter(instance.revision_rows), None)


class SignOffOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {"at": ("at", "request.release.zone")}

    author = serializers.CharField(source="author_label")
    role = serializers.CharField()
    note = serializers.CharField()


class DecisionOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {
        "decided_at": ("decided_at", "request.release.zone"),
        "granted_until": ("granted_until", "granted_zone"),
    }
    deadline_fields = frozenset({"granted_until"})

    outcome = serializers.CharField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, default=None)
    note = serializers.CharField()
    granted_zone = serializers.CharField()


class KepRefSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    owning_sig = serializers.CharField()


class MilestoneRefSerializer(TimeAwareOutputSerializer):
    instant_fields = {"deadline": ("deadline", "zone")}
    deadline_fields = frozenset({"deadline"})

    id = serializers.IntegerField()
    kind = serializers.CharField(source="kind.slug")
    title = serializers.CharField()
    zone = serializers.CharField()


class ExceptionOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {
        "submitted_at": ("submitted_at", "release.zone"),
        # When releasecal received it (its submitted_at for rows older than the field).
        "received_at": ("waiting_since", "release.zone"),
        "effective_deadline": ("effective_deadline", "effective_zone"),
        "default_granted_until": ("default_granted_until", "release.zone"),
    }
    deadline_fields = frozenset({"effective_deadline", "default_granted_until"})

    id = serializers.IntegerField()
    state = serializers.ChoiceField(choices=ExceptionRequest.State.choices)
    release = serializers.CharField(source="release.slug")
    kep = KepRefSerializer(source="enhancement")
    milestone = MilestoneRefSerializer()
    also_milestone = MilestoneRefSerializer(
        allow_null=True, help_text="The second freeze a PRR + enhancements freeze request names (one completion date)"
    )
    requester = serializers.CharField(source="requester_label")
    on_behalf_of = serializers.CharField(help_text="Whom the requester asks for, when the email says so")
    days = serializers.IntegerField()
    filed_after_window = serializers.BooleanField(
        help_text="The email reached the release team after the request window had closed: the team decides"
    )
    from_archive = serializers.BooleanField(
        help_text="Ingested after its window or more than 24 hours after it was sent: no new-request mail, no nudges"
    )
    warnings = serializers.ListField(
        child=serializers.CharField(),
        source="all_warnings",
        help_text="The request's warnings (days, not weeks; filed after the window) and, once approved, its "
        "grant's (a docs-freeze grant leaving SIG Docs no business day)",
    )
    liaison = serializers.CharField(
        source="liaison.username",
        allow_null=True,
        default=None,
        help_text="The release-team member who follows the request up (user name); a lead changes it: .../liaison/",
    )
    slack_thread_url = serializers.CharField(help_text="The release team's Slack thread of the request, when known")
    board_item_url = serializers.CharField(help_text="The request's item on the release's GitHub board, when linked")
    current = CurrentRevisionSerializer(source="*", allow_null=True)
    signoffs = SignOffOutputSerializer(many=True, source="signoff_rows")
    decision = DecisionOutputSerializer(allow_null=True)
    effective_warning = serializers.CharField(
        allow_null=True,
        help_text="Set when the grant no longer decides the deadline: the freeze moved to or past it "
        "(superseded by the freeze), or it runs past the release's hard stop (rc.0).",
    )

    def _hard_stop(self, release_id: int):
        stops = self.__dict__.setdefault("_hard_stops", {})
        if release_id not in stops:
            stops[release_id] = hard_stops([release_id]).get(release_id)
        return stops[release_id]

    def prepare(self, instance: ExceptionRequest) -> None:
        """The deadline that applies to the KEP now (``effective_deadline``), any warning
        about it, and what approving would grant."""
        approved = instance.state == ExceptionRequest.State.APPROVED
        deadline = effective_deadline(
            milestone=instance.milestone,
            request=instance,
            hard_stop=self._hard_stop(instance.release_id) if approved else None,
        )
        instance.effective_deadline, instance.effective_zone = deadline.instant, deadline.zone
        instance.effective_warning = deadline.warning or None
        instance.default_granted_until = (
            services.default_granted_until(instance) if instance.state == ExceptionRequest.State.PENDING else None
        )
        instance.all_warnings = services.request_warnings(instance)

    def to_representation(self, instance: ExceptionRequest):
        self.prepare(instance)
        return super().to_representation(instance)


class CorrectionOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {"at": ("at", "request.release.zone")}

    number = serializers.IntegerField()
    action = serializers.ChoiceField(choices=DecisionCorrection.Action.choices)
    before = serializers.JSONField(help_text="The decision before (instants in UTC)")
    after = serializers.JSONField(allow_null=True, help_text="The decision after; null for a reopen")
    reason = serializers.CharField()
    corrected_by = serializers.CharField(source="corrected_by_label")


class ExceptionDetailOutputSerializer(ExceptionOutputSerializer):
    revisions = RevisionOutputSerializer(many=True, source="revision_rows")
    corrections = CorrectionOutputSerializer(
        many=True, source="decision_corrections.all", help_text="The decision's corrections and reopens, oldest first"
    )


def _detail(request: Request, exception_request: ExceptionRequest, code: int = status.HTTP_200_OK) -> Response:
    fresh = _request_get(exception_request.pk)
    return Response(ExceptionDetailOutputSerializer(fresh, context=serializer_context(request)).data, status=code)


# ------------------------------------------------------------------------ filters


class IntegerFilter(django_filters.NumberFilter):
    field_class = forms.IntegerField


class ExceptionFilter(django_filters.FilterSet):
    state = django_filters.ChoiceFilter(choices=ExceptionRequest.State.choices)
    release = django_filters.CharFilter(field_name="release__slug", help_text="Release slug, e.g. 1.31")
    milestone = IntegerFilter(field_name="milestone_id", min_value=1, max_value=MAX_ID, help_text="Milestone id")
    kind = django_filters.CharFilter(field_name="milestone__kind__slug", help_text="Milestone kind, e.g. code-freeze")
    kep = IntegerFilter(field_name="enhancement__number", min_value=1, max_value=MAX_KEP, help_text="KEP number")
    sig = django_filters.CharFilter(method="filter_sig", help_text="Owning or participating SIG of the KEP")
    liaison = django_filters.CharFilter(field_name="liaison__username", help_text="The liaison's user name")

    class Meta:
        model = ExceptionRequest
        fields = ["state", "release", "milestone", "kind", "kep", "sig", "liaison"]

    def filter_sig(self, queryset, name, value):
        return queryset.filter(schedule.sig_q(value, "enhancement__"))


# -------------------------------------------------------------------------- views


class RequestFieldsInputSerializer(serializers.Serializer):
    """The request template's fields (what an email or a form carries)."""

    days = serializers.IntegerField(
        help_text="Additional days needed (at least 1; 0 = admission only, for a PRR or enhancements freeze; "
        "more than 7 is warned about)"
    )
    enhancement_name = serializers.CharField(required=False, allow_blank=True, max_length=300)
    stage = serializers.CharField(required=False, allow_blank=True, max_length=16, help_text="alpha, beta, stable…")
    sig = serializers.CharField(required=False, allow_blank=True, max_length=64)
    issue_url = serializers.URLField(required=False, allow_blank=True, max_length=500)
    pr_urls = serializers.ListField(child=serializers.URLField(max_length=500), required=False, max_length=50)
    until_text = serializers.CharField(required=False, allow_blank=True, max_length=200)
    until_zone = serializers.CharField(required=False, allow_blank=True, max_length=64)
    reason = serializers.CharField(required=False, allow_blank=True, max_length=20000)
    risks_adding = serializers.CharField(required=False, allow_blank=True, max_length=20000)
    risks_cutting = serializers.CharField(required=False, allow_blank=True, max_length=20000)
    source_text = serializers.CharField(required=False, allow_blank=True, max_length=100000)


def _fields(data: dict, base: ExceptionRequestRevision | None = None) -> services.RequestFields:
    names = list(services.RequestFields.__dataclass_fields__)
    values = {name: getattr(base, name) for name in names} if base is not None else {}
    values |= {name: data[name] for name in names if name in data}
    return services.RequestFields(**values)


class ExceptionListCreateApi(generics.ListAPIView):
    """GET: exception requests, filterable and paginated. POST: file a request."""

    permission_classes = [IsAuthenticatedOrReadOnly]
    serializer_class = ExceptionOutputSerializer
    filterset_class = ExceptionFilter
    filter_backends = [django_filters.rest_framework.DjangoFilterBackend, OrderingFilter]
    ordering_fields = ["submitted_at", "days", "id", "state"]

    @extend_schema_serializer(component_name="ExceptionListCreateInput")
    class InputSerializer(RequestFieldsInputSerializer):
        kep = serializers.IntegerField(min_value=1, max_value=MAX_KEP, help_text="The KEP number")
        milestone = serializers.IntegerField(
            required=False, min_value=1, max_value=MAX_ID, help_text="Milestone id (or give release and kind)"
        )
        release = serializers.CharField(required=False, max_length=32, help_text="Release slug, with kind")
        kind = serializers.CharField(required=False, max_length=48, help_text="Milestone kind, e.g. code-freeze")
        also_milestone = serializers.IntegerField(
            required=False,
            allow_null=True,
            min_value=1,
            max_value=MAX_ID,
            help_text="Milestone id of a second freeze asked with one completion date: only the enhancements "
            "freeze of a PRR freeze request (or the PRR freeze of an enhancements freeze one), same release",
        )
        submitted_at = serializers.CharField(
            required=False,
            max_length=64,
            help_text="Release team only: when the request was sent (ISO with offset, or wall time in the "
            "release zone). Default: now.",
        )
        requester_name = serializers.CharField(
            required=False, allow_blank=True, max_length=200, help_text="Release team only: file for this person"
        )

    def get_queryset(self):
        return _request_list_queryset()

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "viewer_zone": viewer_zone(self.request)}

    @extend_schema(
        parameters=[TZ_PARAMETER], responses={200: ExceptionOutputSerializer(many=True)} | error_responses(400)
    )
    def get(self, request, *args, **kwargs):
        viewer_zone(request)  # a bad zone is a 400 before any query runs
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request=InputSerializer,
        responses={201: ExceptionDetailOutputSerializer} | error_responses(400, 401, 403, 409),
    )
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        enhancement = Enhancement.objects.filter(number=data["kep"]).first()
        if enhancement is None:
            raise ValidationFailed(f"No KEP {data['kep']} is known.", extra={"kep": data["kep"]})
        milestone = exception_milestone_get(
            milestone_id=data.get("milestone"), release_slug=data.get("release"), kind=data.get("kind")
        )
        also_milestone = None
        if data.get("also_milestone"):
            also_milestone = exception_milestone_get(milestone_id=data["also_milestone"])
        on_behalf = "submitted_at" in data or bool(data.get("requester_name"))
        if on_behalf and not _can_act_for_others(request.user, milestone.release):
            raise NotAllowed(
                "Only the release team can file a request for someone else or with an earlier date.",
                extra={"fields": [name for name in ("submitted_at", "requester_name") if name in data]},
            )
        submitted_at = None
        if "submitted_at" in data:
            submitted_at = parse_instant_input(data["submitted_at"], zone=milestone.release.zone, field="submitted_at")
        created = services.exception_request_submit(
            enhancement=enhancement,
            milestone=milestone,
            fields=_fields(data),
            requester=None if data.get("requester_name") else request.user,
            requester_name=data.get("requester_name", ""),
            submitted_at=submitted_at,
            entered_by=request.user,
            also_milestone=also_milestone,
        )
        return _detail(request, created, status.HTTP_201_CREATED)


class ExceptionDetailApi(APIView):
    """GET: one request with every revision. PATCH: amend a pending request."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema_serializer(component_name="ExceptionDetailInput")
    class InputSerializer(RequestFieldsInputSerializer):
        days = serializers.IntegerField(required=False, help_text="Additional days needed")

    @extend_schema(
        parameters=[TZ_PARAMETER], responses={200: ExceptionDetailOutputSerializer} | error_responses(400, 404)
    )
    def get(self, request: Request, request_id: int) -> Response:
        return _detail(request, _request_get(request_id))

    @extend_schema(
        request=InputSerializer,
        responses={200: ExceptionDetailOutputSerializer} | error_responses(400, 401, 403, 404, 409),
    )
    def patch(self, request: Request, request_id: int) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        exception_request = _request_get(request_id)
        current = next(iter(exception_request.revision_rows), None)
        amended = services.exception_request_amend(
            request=exception_request,
            fields=_fields(serializer.validated_data, current),
            actor=request.user,
            entered_by=request.user,
        )
        return _detail(request, amended)


class NoteInputSerializer(serializers.Serializer):
    note = serializers.CharField(required=False, allow_blank=True, max_length=5000)


class _RequestActionApi(APIView):
    """POST to one request: read the input, call one service, answer the request's detail."""

    InputSerializer: type[serializers.Serializer] = NoteInputSerializer
    success_status = status.HTTP_200_OK

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        raise NotImplementedError

    def post(self, request: Request, request_id: int) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        exception_request = _request_get(request_id)
        self.act(exception_request, serializer.validated_data, request.user)
        return _detail(request, exception_request, self.success_status)


def _action_schema(input_serializer, code: int = status.HTTP_200_OK):
    return extend_schema_view(
        post=extend_schema(
            request=input_serializer,
            responses={code: ExceptionDetailOutputSerializer} | error_responses(400, 401, 403, 404, 409),
        )
    )


@extend_schema_serializer(component_name="ExceptionApproveInput")
class ApproveInputSerializer(NoteInputSerializer):
    granted_until = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="ISO 8601 with an offset (2024-07-26T19:00:00-07:00), or a wall time "
        "(2024-07-26 19:00) in granted_zone. A wall time in a DST gap or fold is refused. "
        "Default: freeze + requested days, end of day in the release zone.",
    )
    granted_zone = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="IANA zone or AoE; default: the release zone"
    )


@_action_schema(ApproveInputSerializer)
class ExceptionApproveApi(_RequestActionApi):
    """Approve a pending request (release team; never your own request)."""

    InputSerializer = ApproveInputSerializer

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        zone = tz.normalize_zone_name(data.get("granted_zone") or exception_request.release.zone)
        granted_until = None
        if data.get("granted_until"):
            granted_until = parse_instant_input(data["granted_until"], zone=zone, field="granted_until")
        services.exception_request_approve(
            request=exception_request, actor=user, granted_until=granted_until, granted_zone=zone,
            note=data.get("note", ""),
        )  # fmt: skip


@extend_schema_serializer(component_name="ExceptionCorrectInput")
class CorrectInputSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=5000, help_text="Required: the clerical error corrected"
    )
    outcome = serializers.ChoiceField(
        required=False, choices=["approved", "rejected"], help_text="The corrected outcome; default unchanged"
    )
    granted_until = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=64,
        help_text="The corrected grant, as /approve/ takes it; default the grant in force (a rejection corrected "
        "to an approval: freeze + requested days).",
    )
    granted_zone = serializers.CharField(
        required=False, allow_blank=True, max_length=64, help_text="IANA zone or AoE; default the grant's"
    )
    note = serializers.CharField(
        required=False, allow_blank=True, max_length=5000, help_text="The corrected note; default unchanged"
    )


@_action_schema(CorrectInputSerializer)
class ExceptionCorrectApi(_RequestActionApi):
    """Correct a clerical error in a made decision (release team, the same rule as
    deciding): a reason is required; answers the request with its decision in force."""

    InputSerializer = CorrectInputSerializer

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        zone = None
        granted_until = None
        if data.get("granted_zone"):
            zone = tz.normalize_zone_name(data["granted_zone"])
        if data.get("granted_until"):
            decision = getattr(exception_request, "decision", None)
            in_zone = zone or (decision.granted_zone if decision else "") or exception_request.release.zone
            granted_until = parse_instant_input(data["granted_until"], zone=in_zone, field="granted_until")
        services.exception_decision_correct(
            request=exception_request, actor=user, reason=data.get("reason", ""), outcome=data.get("outcome"),
            granted_until=granted_until, granted_zone=zone, note=data.get("note"),
        )  # fmt: skip


@extend_schema_serializer(component_name="ExceptionReopenInput")
class ReopenInputSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=5000, help_text="Required: why the decision is undone"
    )


@_action_schema(ReopenInputSerializer)
class ExceptionReopenApi(_RequestActionApi):
    """Reopen a decision made on the wrong request: back to pending (release team, the
    same rule as deciding); a reason is required."""

    InputSerializer = ReopenInputSerializer

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        services.exception_decision_reopen(request=exception_request, actor=user, reason=data.get("reason", ""))


# ------------------------------------------------------------ proposed decisions


class ProposedDecisionOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {
        "granted_until": ("granted_until", "request.release.zone"),
        "sent_at": ("sent_at", "request.release.zone"),
    }

    id = serializers.IntegerField()
    request = serializers.IntegerField(source="request_id")
    outcome = serializers.CharField()
    state = serializers.CharField(help_text="proposed, confirmed or dismissed")
    granted_text = serializers.CharField(help_text='As the reply wrote it: "18:00 PST Friday, 21st June 2024"')
    granted_zone = serializers.CharField()
    warnings = serializers.ListField(child=serializers.CharField())
    readings = serializers.ListField(child=serializers.DictField(), help_text="Every reading of the deadline text")
    author_name = serializers.CharField()
    source_text = serializers.CharField(help_text="The reply's text the decision was read from")
    entered_by = serializers.CharField(source="entered_by.username", allow_null=True, default=None)
    resolved_by = serializers.CharField(source="resolved_by.username", allow_null=True, default=None)


def _proposal_get(proposal_id: int) -> ProposedDecision:
    found = (
        ProposedDecision.objects.select_related("request__release", "entered_by", "resolved_by")
        .filter(pk=proposal_id)
        .first()
        if 0 < proposal_id <= MAX_ID
        else None
    )
    if found is None:
        raise NotFound(f"No proposed decision #{proposal_id}.", extra={"id": proposal_id})
    return found


class ProposedDecisionListApi(APIView):
    """The decisions read from a request's thread (release team replies), newest first.
    A proposal changes nothing until a release-team member confirms it."""

    permission_classes = [IsAuthenticatedOrReadOnly]

    @extend_schema(
        parameters=[TZ_PARAMETER],
        responses={200: ProposedDecisionOutputSerializer(many=True)} | error_responses(400, 404),
    )
    def get(self, request: Request, request_id: int) -> Response:
        exception_request = _request_get(request_id)
        rows = exception_request.proposed_decisions.select_related(
            "request__release", "entered_by", "resolved_by"
        ).order_by("-created_at", "-id")
        return Response(ProposedDecisionOutputSerializer(rows, many=True, context=serializer_context(request)).data)


class ProposedDecisionConfirmApi(APIView):
    """Confirm a proposed decision: approves or rejects the request through the same
    service as /approve/ and /reject/ (release team; never your own request).
    ``granted_until`` overrides the deadline read from the reply (required when it
    could not be read unambiguously, e.g. "IST")."""

    @extend_schema_serializer(component_name="ProposedDecisionConfirmInput")
    class InputSerializer(NoteInputSerializer):
        granted_until = serializers.CharField(required=False, allow_blank=True, max_length=64)
        granted_zone = serializers.CharField(required=False, allow_blank=True, max_length=64)

    @extend_schema(
        request=InputSerializer,
        responses={200: ExceptionDetailOutputSerializer} | error_responses(400, 401, 403, 404, 409),
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        proposal = _proposal_get(proposal_id)
        data = serializer.validated_data
        zone = tz.normalize_zone_name(
            data.get("granted_zone") or proposal.granted_zone or proposal.request.release.zone
        )
        granted_until = None
        if data.get("granted_until"):
            granted_until = parse_instant_input(data["granted_until"], zone=zone, field="granted_until")
        services.proposed_decision_confirm(
            proposal=proposal,
            actor=request.user,
            granted_until=granted_until,
            granted_zone=zone if (granted_until or data.get("granted_zone")) else None,
            note=data.get("note", ""),
        )
        return _detail(request, _request_get(proposal.request_id))


class ProposedDecisionDismissApi(APIView):
    """Dismiss a misread proposed decision; the request stays as it is."""

    @extend_schema(
        request=NoteInputSerializer,
        responses={200: ProposedDecisionOutputSerializer} | error_responses(400, 401, 403, 404, 409),
    )
    def post(self, request: Request, proposal_id: int) -> Response:
        serializer = NoteInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        proposal = services.proposed_decision_dismiss(
            proposal=_proposal_get(proposal_id), actor=request.user, note=serializer.validated_data.get("note", "")
        )
        return Response(
            ProposedDecisionOutputSerializer(_proposal_get(proposal.pk), context=serializer_context(request)).data
        )


@_action_schema(NoteInputSerializer)
class ExceptionRejectApi(_RequestActionApi):
    """Reject a pending request (release team; never your own request)."""

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        services.exception_request_reject(request=exception_request, actor=user, note=data.get("note", ""))


@_action_schema(NoteInputSerializer)
class ExceptionWithdrawApi(_RequestActionApi):
    """Withdraw a pending request (the requester, the release team or staff)."""

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        services.exception_request_withdraw(request=exception_request, actor=user, note=data.get("note", ""))


@extend_schema_serializer(component_name="ExceptionLiaisonInput")
class LiaisonInputSerializer(serializers.Serializer):
    liaison = serializers.CharField(max_length=150, help_text="The user name of a member of the release's team")


@_action_schema(LiaisonInputSerializer)
class ExceptionLiaisonApi(_RequestActionApi):
    """Make a member of the release's team the request's liaison (a lead of the release,
    or its Enhancements Lead). Someone off the team is a 400."""

    InputSerializer = LiaisonInputSerializer

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        liaison = User.objects.filter(username=data["liaison"]).first()
        if liaison is None:
            raise ValidationFailed(f"No user {data['liaison']!r}.", extra={"liaison": data["liaison"]})
        followup.exception_request_liaison_set(request=exception_request, liaison=liaison, actor=user)


@extend_schema_serializer(component_name="ExceptionSignOffInput")
class SignOffInputSerializer(NoteInputSerializer):
    pass


@_action_schema(SignOffInputSerializer, status.HTTP_201_CREATED)
class ExceptionSignOffApi(_RequestActionApi):
    """Add your +1 to a pending request: as a lead of a SIG named on the KEP, or as a
    member of the release's team; never on your own request. The role recorded comes
    from that membership ("SIG node chair", "1.31 release team"), not from the body."""

    InputSerializer = SignOffInputSerializer
    success_status = status.HTTP_201_CREATED

    def act(self, exception_request: ExceptionRequest, data: dict, user) -> None:
        services.exception_request_signoff(request=exception_request, author=user, note=data.get("note", ""))


class ExceptionsYamlApi(APIView):
    """The release's requests and decisions as kubernetes/sig-release's exceptions.yaml
    (the file the release team commits; see docs/exceptions-yaml.md)."""

    permission_classes = [AllowAny]

    @extend_schema(
        responses={(200, "application/yaml"): OpenApiTypes.STR} | error_responses(404, 409),
        description="The imported file edited in place, or a new file in the current shape.",
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        release = schedule.release_get(slug=slug)
        try:
            text = exceptions_yaml_export(release=release)
        except RecordFileError as exc:
            raise Conflict(f"The release's stored exceptions.yaml cannot be written back: {exc}") from None
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = 'inline; filename="exceptions.yaml"'
        return response


class ExceptionParseApi(APIView):
    """Read a request thread (an email, a pasted thread, an mbox file): the fields, the
    amendments, the until-text as an instant, the release team's decision as a
    *proposed* decision, and the inferred freeze and release with their reasons.
    Nothing is saved. Text that is not a request is refused with 422 and one sentence
    saying what it looks like (``extra.kind``); unreadable input with 400. Anyone may call
    it, so it reads at most ``MAX_CHARS`` characters for at most ``SECONDS`` (413 past
    either; ``ingest_exception`` takes up to the reader's 1,000,000 and has no limit)."""

    permission_classes = [AllowAny]
    throttle_scope = "parse"
    MAX_CHARS = 200_000  # a thread is a few thousand; a long one with quoted replies some tens
    SECONDS = 5.0

    @extend_schema_serializer(component_name="ExceptionParseInput")
    class InputSerializer(serializers.Serializer):
        text = serializers.CharField(help_text="The email or thread, headers optional; at most 200,000 characters")

    @extend_schema(request=InputSerializer, responses={200: OpenApiTypes.OBJECT} | error_responses(400, 413, 422))
    def post(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        text = serializer.validated_data["text"]
        if len(text) > self.MAX_CHARS:
            raise ReadingTooLong(
                f"The text is {len(text):,} characters; this endpoint reads at most {self.MAX_CHARS:,} "
                "(a request thread is a few thousand). Paste the request and its replies only, or ingest a "
                "longer file with manage.py ingest_exception.",
                extra={"length": len(text), "max": self.MAX_CHARS},
            )
        with time_limit(self.SECONDS):
            return Response(read_thread(text).as_dict())


# ------------------------------------------------------------ KEPs and deadlines


class ExceptionSummarySerializer(TimeAwareOutputSerializer):
    instant_fields = {"granted_until": ("decision.granted_until", "decision.granted_zone")}
    deadline_fields = frozenset({"granted_until"})

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


class DeadlineOutputSerializer(TimeAwareOutputSerializer):
    instant_fields = {"deadline": ("instant", "zone"), "original_deadline": ("original", "milestone.zone")}
    deadline_fields = frozenset({"deadline", "original_deadline"})

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


class OutOfMilestoneOutputSerializer(serializers.Serializer):
    """A KEP removed from (or deferred out of) a release: that release's deadlines are
    not its own, so ``deadlines`` has none of them for it."""

    kep = serializers.IntegerField(source="enhancement.number")
    release = serializers.CharField(source="release.slug")
    status = serializers.CharField(help_text="removed_from_milestone or deferred")
    missed_freeze = serializers.CharField(
        source="missed_freeze.title", allow_null=True, default=None, help_text="Removed: the freeze it missed"
    )
    message = serializers.CharField(source="out_of_milestone_text")


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
        out_of_milestone = OutOfMilestoneOutputSerializer(
            many=True, help_text="The asked KEPs removed from or deferred out of a release asked: none of its deadlines"
        )

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
        enhancements = tracked = None
        if query.get("kep"):
            if not query.get("release"):
                # The KEP's tracking rows carry the KEP: no query of its own when it has some.
                tracked = schedule.tracking_in_open_releases(Enhancement.objects.filter(number=query["kep"]))
            kep = tracked[0].enhancement if tracked else _enhancement_get(query["kep"], Enhancement.objects.all())
            enhancements = [kep]
        elif query.get("sig"):
            enhancements = list(Enhancement.objects.filter(schedule.sig_q(query["sig"])))
        out = []
        if query.get("release"):
            releases = [schedule.release_get(slug=query["release"])]
            if enhancements:
                out = schedule.tracking_out_of_milestone(enhancements=enhancements, releases=releases)
        elif enhancements is not None:
            # One query: the KEPs' open releases and, among their rows, those out of a milestone.
            if tracked is None:
                tracked = schedule.tracking_in_open_releases(enhancements) if enhancements else []
            releases = list({row.release_id: row.release for row in tracked}.values())
            out = [row for row in tracked if row.out_of_milestone]
        else:
            releases = list(schedule.release_list_active())
        now = tz.utc_now()
        rows = deadlines_next(
            releases=releases, enhancements=enhancements, now=now, limit=query["limit"], out_of_milestone=out
        )
        data = {
            "now": tz.isoformat_utc(now),
            "next": rows[0] if rows else None,
            "deadlines": rows,
            "out_of_milestone": out,
        }
        return Response(self.OutputSerializer(data, context=context).data)
