from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from people.views import github_callback_view, github_login_view

# /healthz, /readyz and /metrics are answered by config.middleware.ProbeMiddleware, for any Host.
urlpatterns = [
    path("admin/", admin.site.urls),
    path("calendar/", include("feeds.urls")),
    path("api/", include("api.urls")),
    path("slack/", include("slack_integration.urls")),
    path("github/", include("github.urls")),
    # allauth (GitHub sign-in) under /accounts/; its own login and sign-up pages give way
    # to the one login page (people/), query string kept.
    path("accounts/login/", RedirectView.as_view(pattern_name="people:login", query_string=True)),
    path("accounts/signup/", RedirectView.as_view(pattern_name="people:login", query_string=True)),
    # allauth's GitHub views, answering 404 while no OAuth app is configured (the names
    # github_login and github_callback, which allauth reverses, stay allauth's: same paths).
    path("accounts/github/login/", github_login_view),
    path("accounts/github/login/callback/", github_callback_view),
    path("accounts/", include("allauth.urls")),
    path("", include("people.urls")),
    path("", include("pages.urls")),
]
