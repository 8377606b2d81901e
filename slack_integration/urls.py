"""/slack/: the signed endpoints Slack calls (each also answers with a trailing slash)."""

from django.urls import path

from people.views import login
from slack_integration.commands import commands
from slack_integration.events import events
from slack_integration.interactions import interactions
from slack_integration.linking import link_view

urlpatterns = [
    path("commands", commands, name="slack-commands"),
    path("commands/", commands),
    path("interactions", interactions, name="slack-interactions"),
    path("interactions/", interactions),
    path("events", events, name="slack-events"),
    path("events/", events),
    path("link/login", login, name="slack-link-login"),  # the one login page (/login/), at its old address
    path("link/<str:token>", link_view, name="slack-link"),
]
