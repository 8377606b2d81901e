"""/github/: the endpoint GitHub calls (also answered with a trailing slash)."""

from django.urls import path

from github.webhooks import webhook

urlpatterns = [
    path("webhook", webhook, name="github-webhook"),
    path("webhook/", webhook),
]
