"""The one login page (/login/), sign-out, and "My KEPs" (/me/)."""

from __future__ import annotations

from urllib.parse import urlencode

from allauth.socialaccount.providers.github import views as github_views
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_safe

from exceptions.models import ExceptionRequest
from people.adapters import refused
from people.selectors import (
    enhancement_list_of_user,
    github_account_of,
    github_login,
    github_sign_in_enabled,
    handles_of,
)


def _safe_next(request: HttpRequest) -> str:
    candidate = request.POST.get("next") or request.GET.get("next") or ""
    ok = url_has_allowed_host_and_scheme(
        candidate, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    )
    return candidate if ok else ""


def github_start_url(next_url: str = "", *, process: str = "login") -> str:
    """Where the GitHub sign-in form posts (allauth's view; ``next`` kept)."""
    query = {"process": process} if process != "login" else {}
    if next_url:
        query["next"] = next_url
    return reverse("github_login") + (f"?{urlencode(query)}" if query else "")


class LoginView(auth_views.LoginView):
    """Staff sign in with their releasecal password; contributors with GitHub (a form
    posting to allauth's GitHub view); the Slack link flow lands here too."""

    template_name = "people/login.html"

    def get_default_redirect_url(self) -> str:
        return reverse("people:me")

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        next_url = _safe_next(self.request)
        context.update(
            github_enabled=github_sign_in_enabled(),
            github_url=github_start_url(next_url),
            slack_link=next_url.startswith("/slack/link/"),
        )
        return context


def _when_configured(view):
    """allauth's GitHub views, or (no OAuth app configured) a 404 saying so: allauth
    itself would fail on the missing app."""

    def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not github_sign_in_enabled():
            return refused(
                request,
                "GitHub sign-in is not set up on this site (no GitHub OAuth app is configured). "
                "Sign in with a releasecal account, or ask the site's admins.",
                status=404,
                title="GitHub sign-in is off",
            )
        return view(request, *args, **kwargs)

    return wrapped


github_login_view = _when_configured(github_views.oauth2_login)
github_callback_view = _when_configured(github_views.oauth2_callback)
login = LoginView.as_view()
logout = auth_views.LogoutView.as_view()


@login_required
@require_safe
def me(request: HttpRequest) -> HttpResponse:
    """My KEPs: the KEPs naming the signed-in person, their requests, feed and links."""
    user = request.user
    account = github_account_of(user=user)
    handles = handles_of(user=user)
    keps = list(
        enhancement_list_of_user(user=user).annotate(
            pending=Count("exception_requests", filter=Q(exception_requests__state="pending"))
        )
    )
    requests = list(
        ExceptionRequest.objects.filter(requester=user)
        .select_related("enhancement", "milestone", "release")
        .order_by("-submitted_at")[:50]
    )
    identity = getattr(user, "slack_identity", None)
    return render(
        request,
        "people/me.html",
        {
            "github": account,
            "handle": github_login(account),
            "old_handles": [h for h in handles if h.lower() != github_login(account).lower()],
            "keps": keps,
            "my_requests": requests,
            "slack_identity": identity,
            "github_enabled": github_sign_in_enabled(),
            "connect_url": github_start_url(reverse("people:me"), process="connect"),
            "site_url": settings.SITE_URL,
        },
    )
