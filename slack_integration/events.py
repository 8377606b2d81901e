"""POST /slack/events: Slack's Events API, signed like the other endpoints.

``url_verification`` is answered with its challenge (Slack sends it when the app is
created from the manifest). ``app_home_opened`` on the Home tab queues the
``slack_publish_home`` task (Slack wants its 200 within 3 seconds; ``users.info`` and
``views.publish`` happen in the worker). Every other event type is acknowledged with 200
and ignored, so Slack does not retry it.

A body that is signed but broken (no ``type``, an ``event_callback`` whose ``event`` is
not an object, an ``app_home_opened`` naming no Slack user) is a 400 with a short
message, never a 200 that pretends it was handled.

With the broker down the Home tab cannot be queued: the event is still a 200 (a retry
from Slack would meet the same broker) and the failure is logged. Nothing is lost: the
tab only shows stored data and is rebuilt on the user's next ``app_home_opened``.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from kombu.exceptions import OperationalError

from slack_integration import tasks
from slack_integration.signature import slack_id, slack_signed_json

logger = logging.getLogger(__name__)


def _bad(message: str) -> JsonResponse:
    return JsonResponse({"message": message, "extra": {}}, status=400)


@slack_signed_json
def events(request: HttpRequest, payload: dict) -> HttpResponse:
    kind = payload.get("type")
    if not isinstance(kind, str) or not kind:
        return _bad("The event has no type.")
    if kind == "url_verification":
        challenge = payload.get("challenge")
        if not isinstance(challenge, str) or not challenge or len(challenge) > 500:
            return _bad("url_verification without a challenge.")
        return JsonResponse({"challenge": challenge})
    event = payload.get("event", {}) if kind == "event_callback" else {}
    if not isinstance(event, dict):
        return _bad("The event_callback's event is not an object.")
    if event.get("type") == "app_home_opened" and event.get("tab", "home") == "home":
        user = slack_id(event.get("user"))
        if not user:
            return _bad("app_home_opened names no Slack user.")
        try:
            tasks.slack_publish_home.delay(user, slack_id(payload.get("team_id")) or "")
        except OperationalError as exc:
            logger.warning("Home tab of %s not queued, the broker is unreachable: %s", user, exc)
        return HttpResponse(status=200)
    logger.info("Ignored a Slack event: %s/%s", kind[:40], str(event.get("type", ""))[:40])
    return HttpResponse(status=200)
