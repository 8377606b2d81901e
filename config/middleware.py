"""What runs around every request before the views: the probes and the metrics (answered
for any Host), the request id, and the refusal of a NUL in the address."""

from __future__ import annotations

from collections.abc import Callable

from django.core.signals import request_finished
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, HttpResponseNotAllowed, JsonResponse
from django.urls import resolve
from django.utils.cache import add_never_cache_headers

from config import request_id


class RejectNulMiddleware:
    """A NUL character in the path or the query string is a 400.

    PostgreSQL refuses NUL in text, so a page, feed or API lookup with one would fail
    in the database driver (a 500). No slug, token, filter or zone name contains one;
    one check here covers every view instead of one in each.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        query = request.GET.lists()
        if "\x00" in request.path or any("\x00" in key or "\x00" in "".join(values) for key, values in query):
            message = "The address contains a NUL character."
            if request.path.startswith(("/api/", "/slack/")):
                return JsonResponse({"message": message, "extra": {}}, status=400)
            return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class ProbeMiddleware:
    """``/healthz``, ``/readyz`` and ``/metrics``, answered before anything else runs.

    First in MIDDLEWARE, so before the host check: a kubelet's probe and Prometheus'
    scrape of a pod send the pod's IP as Host, which ALLOWED_HOSTS refuses (400). Only
    these three exact paths are answered here; every other request, whatever its Host,
    goes through the host check as before. Plain HTTP is never redirected for them (they
    are in SECURE_REDIRECT_EXEMPT too, should this middleware move). GET and HEAD only.
    ``/metrics`` asks for its token or an allowed address (config.metrics).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        from config.health import healthz, readyz
        from config.metrics import metrics

        self.get_response = get_response
        self.views = {"/healthz": healthz, "/readyz": readyz, "/metrics": metrics}

    def __call__(self, request: HttpRequest) -> HttpResponse:
        view = self.views.get(request.path_info)
        if view is None:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET", "HEAD"])
        response = view(request)
        add_never_cache_headers(response)
        if request.method == "HEAD":
            response.content = b""
        return response


class RequestIdMiddleware:
    """Every request gets an id: the one the proxy sent in ``X-Request-ID`` (ingress-nginx
    sets one) when it is a plain token, else a new one. It is in every log line written
    while the request runs (django.request's "Not Found" too, written after the
    middleware: the id is cleared when the response is closed, ``request_finished``), in
    the response's ``X-Request-ID`` (and so in gunicorn's access line), and in every
    Celery task the request queues (config/celery.py)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        request_finished.connect(_clear_request_id, dispatch_uid="config.request_id.clear")

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id.bind(request.headers.get("X-Request-ID"))
        response = self.get_response(request)
        response.headers["X-Request-ID"] = request_id.current()
        return response


def _clear_request_id(**kwargs) -> None:
    request_id.clear()


class FeedMiddleware:
    """The iCal feeds (``/calendar/``), routed to their view right after the security
    headers, the NUL check and the latency timer, without the middleware that follows.

    A feed reads no session, user, message or CSRF token and is not HTML (no CSP or
    framing header applies to ``text/calendar``), yet CSP, session, CSRF, auth,
    messages, clickjacking and allauth ran for every feed request: most of a 304's CPU
    (issue 27). Here the host is checked (``get_host``: DisallowedHost is a 400, as
    CommonMiddleware would answer), the path goes through the normal URL resolver (an
    unknown feed path is its usual 404) and ``resolver_match`` is set for the latency
    label. Every other path goes through the whole stack as before.
    """

    PREFIX = "/calendar/"

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path_info.startswith(self.PREFIX):
            return self.get_response(request)
        request.get_host()
        match = resolve(request.path_info)
        request.resolver_match = match
        return match.func(request, *match.args, **match.kwargs)
