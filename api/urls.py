"""/api/: the v1 REST API, its OpenAPI schema and a browsable docs page."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path, register_converter
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from exceptions import api as exceptions_api
from feeds import api as feeds_api
from releasecal import api


class ReleaseSlugConverter:
    """Release slugs such as 1.31 (dots allowed, unlike Django's slug converter)."""

    regex = r"[-a-zA-Z0-9_.]{1,32}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(ReleaseSlugConverter, "release")

v1 = [
    path("releases/", api.ReleaseListApi.as_view(), name="release-list"),
    path("releases/<release:slug>/", api.ReleaseDetailApi.as_view(), name="release-detail"),
    path("releases/<release:slug>/milestones/", api.ReleaseMilestoneListApi.as_view(), name="release-milestones"),
    path(
        "releases/<release:slug>/exceptions.yaml",
        exceptions_api.ExceptionsYamlApi.as_view(),
        name="release-exceptions-yaml",
    ),
    path("milestones/", api.MilestoneListApi.as_view(), name="milestone-list"),
    path("enhancements/", api.EnhancementListApi.as_view(), name="enhancement-list"),
    path("enhancements/<int:number>/", exceptions_api.EnhancementDetailApi.as_view(), name="enhancement-detail"),
    path("deadlines/next/", exceptions_api.DeadlineNextApi.as_view(), name="deadline-next"),
    path("exceptions/", exceptions_api.ExceptionListCreateApi.as_view(), name="exception-list"),
    path("exceptions/parse/", exceptions_api.ExceptionParseApi.as_view(), name="exception-parse"),
    path("exceptions/<int:request_id>/", exceptions_api.ExceptionDetailApi.as_view(), name="exception-detail"),
    path(
        "exceptions/<int:request_id>/approve/", exceptions_api.ExceptionApproveApi.as_view(), name="exception-approve"
    ),
    path("exceptions/<int:request_id>/reject/", exceptions_api.ExceptionRejectApi.as_view(), name="exception-reject"),
    path(
        "exceptions/<int:request_id>/correct/", exceptions_api.ExceptionCorrectApi.as_view(), name="exception-correct"
    ),
    path("exceptions/<int:request_id>/reopen/", exceptions_api.ExceptionReopenApi.as_view(), name="exception-reopen"),
    path(
        "exceptions/<int:request_id>/liaison/",
        exceptions_api.ExceptionLiaisonApi.as_view(),
        name="exception-liaison",
    ),
    path(
        "exceptions/<int:request_id>/withdraw/",
        exceptions_api.ExceptionWithdrawApi.as_view(),
        name="exception-withdraw",
    ),
    path(
        "exceptions/<int:request_id>/signoff/", exceptions_api.ExceptionSignOffApi.as_view(), name="exception-signoff"
    ),
    path(
        "exceptions/<int:request_id>/proposed-decisions/",
        exceptions_api.ProposedDecisionListApi.as_view(),
        name="exception-proposed-decisions",
    ),
    path(
        "exceptions/proposed-decisions/<int:proposal_id>/confirm/",
        exceptions_api.ProposedDecisionConfirmApi.as_view(),
        name="proposed-decision-confirm",
    ),
    path(
        "exceptions/proposed-decisions/<int:proposal_id>/dismiss/",
        exceptions_api.ProposedDecisionDismissApi.as_view(),
        name="proposed-decision-dismiss",
    ),
]

# Personal calendar feed tokens (releasecal/feeds_api.py).
v1 += [
    path("feed-tokens/", feeds_api.FeedTokenListCreateApi.as_view(), name="feed-token-list"),
    path("feed-tokens/<int:token_id>/rotate/", feeds_api.FeedTokenRotateApi.as_view(), name="feed-token-rotate"),
    path("feed-tokens/<int:token_id>/revoke/", feeds_api.FeedTokenRevokeApi.as_view(), name="feed-token-revoke"),
]


@csrf_exempt  # a POST to a wrong path is a JSON 404, not Django's HTML CSRF page
def api_not_found(request: HttpRequest, unmatched: str = "") -> JsonResponse:
    """Unmatched /api/ paths (``exceptions/abc/``) answer in the API's error shape."""
    return JsonResponse({"message": "No such API endpoint.", "extra": {"path": request.path}}, status=404)


urlpatterns = [
    path("v1/", include((v1, "v1"), namespace="v1")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves Swagger UI's start-up script as its own request: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Keep last: JSON 404 for anything else under /api/.
    re_path(r"^(?P<unmatched>.*)$", api_not_found, name="api-not-found"),
]
