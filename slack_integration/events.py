"""POST /slack/events: Slack's Events API, signed like the other endpoints.

``url_verification`` is answered with its challenge (Slack sends it when the app is
created from the manifest). ``app_home_opened`` on the Home tab queues the
``slack_publish_home`` task (Slack wants its 200 within 3 seconds; ``users.info`` and
``views.publish`` happen in the worker). Every other event type, and every event we
cannot read, is acknowledged with 200 and ignored, so Slack does not retry it.
"""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse

from slack_integration import tasks
from slack_integration.signature import slack_id, slack_signed_json

logger = logging.getLogger(__name__)


@slack_signed_json
def events(request: HttpRequest, payload: dict) -> HttpResponse:
    kind = payload.get("type")
    if kind == "url_verification":
        challenge = payload.get("challenge")
        if not isinstance(challenge, str) or not challenge or len(challenge) > 500:
            return JsonResponse({"message": "url_verification without a challenge.", "extra": {}}, status=400)
        return JsonResponse({"challenge": challenge})
    event = payload.get("event") if kind == "event_callback" else None
    event = event if isinstance(event, dict) else {}
    if event.get("type") == "app_home_opened" and event.get("tab", "home") == "home":
        user = slack_id(event.get("user"))
        if user:
            tasks.slack_publish_home.delay(user, slack_id(payload.get("team_id")) or "")
            return HttpResponse(status=200)
    logger.info("Ignored a Slack event: %s/%s", str(kind)[:40], str(event.get("type", ""))[:40])
    return HttpResponse(status=200)
