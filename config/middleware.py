"""Requests no view could answer: refused before any of them runs."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse


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
