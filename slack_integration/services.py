"""Slack writes: post a request to the release team, update it, remember a user's zone."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

from exceptions import followup
from exceptions.models import ExceptionRequest
from outbox.errors import TransportError
from releasecal import tz
from slack_integration import blocks, home, mrkdwn
from slack_integration.client import bot_client
from slack_integration.models import SlackDecisionMessage, SlackIdentity, SlackRequesterNotice
from slack_integration.selectors import slack_identity_find

logger = logging.getLogger(__name__)


def _load(request_id: int) -> ExceptionRequest | None:
    return (
        ExceptionRequest.objects.select_related(
            "release", "enhancement", "milestone", "milestone__release", "requester", "decision__decided_by"
        )
        .filter(pk=request_id)
        .first()
    )


def slack_post_exception_request(*, request_id: int) -> SlackDecisionMessage | None:
    """Post a new request to the release-team channel with Approve / Reject buttons.

    Idempotent: a request already posted is not posted again (a redelivered task)."""
    client, channel = bot_client(), settings.SLACK_RELEASE_TEAM_CHANNEL
    if client is None or not channel:
        logger.info("Slack not configured (SLACK_BOT_TOKEN / SLACK_RELEASE_TEAM_CHANNEL); not posting.")
        return None
    request = _load(request_id)
    if request is None:
        return None
    existing = SlackDecisionMessage.objects.filter(request=request).first()
    if existing is not None:
        return existing
    text, content = blocks.request_message(request)
    data = client.post_message(channel=channel, text=text, blocks=content)
    message = SlackDecisionMessage.objects.create(request=request, channel=data["channel"], ts=data["ts"])
    _keep_thread(client, request, message)
    return message


def _keep_thread(client, request: ExceptionRequest, message: SlackDecisionMessage) -> None:
    """The request's Slack thread (chat.getPermalink) on the request: the board's
    "Exception Request Slack Thread". A link Slack does not give is logged, not fatal:
    the post is made."""
    try:
        answer = client.permalink(channel=message.channel, ts=message.ts)
    except TransportError as exc:
        logger.warning("request #%s: no permalink for its Slack post: %s", request.pk, exc)
        return
    permalink = str(answer.get("permalink") or "")
    if permalink.startswith("https://"):
        followup.exception_request_slack_thread_set(request_id=request.pk, url=permalink)


def slack_grant_end_resolved(*, channel: str, ts: str, grant_end) -> None:
    """Rewrite the liaison's DM once the KEP is re-evaluated: what was chosen, by whom."""
    client = bot_client()
    if client is None:
        return
    text, content = blocks.grant_end_resolved_message(grant_end)
    client.update_message(channel=channel, ts=ts, text=text, blocks=content)


def slack_update_exception_messages(*, request_id: int) -> int:
    """Rewrite every posted message of a request to show its state (chat.update)."""
    client = bot_client()
    request = _load(request_id)
    if client is None or request is None:
        return 0
    text, content = blocks.request_message(request)
    updated = 0
    for message in SlackDecisionMessage.objects.filter(request=request):
        client.update_message(channel=message.channel, ts=message.ts, text=text, blocks=content)
        message.save(update_fields=["updated_at"])
        updated += 1
    return updated


def slack_post_ephemeral(*, channel: str, user: str, text: str) -> None:
    """Tell one Slack user something only they see (e.g. why they cannot decide).
    ``text`` is plain text: it is escaped here."""
    client = bot_client()
    if client is None or not channel or not user:
        return
    try:
        client.post_ephemeral(
            channel=channel, user=user, text=mrkdwn.fallback(text), blocks=[mrkdwn.section(mrkdwn.escape(text))]
        )
    except TransportError as exc:
        logger.warning("Could not tell %s in %s: %s", user, channel, exc)


@transaction.atomic
def slack_identity_set_zone(*, slack_user_id: str, team_id: str, zone: str) -> SlackIdentity:
    canonical = tz.normalize_zone_name(zone)
    identity = slack_identity_find(slack_user_id=slack_user_id, team_id=team_id, lock=True)
    if identity is None:
        identity = SlackIdentity(slack_user_id=slack_user_id, team_id=team_id)
    identity.zone = canonical
    if team_id and not identity.team_id:
        identity.team_id = team_id
    identity.save()
    return identity


def slack_publish_home(*, slack_user_id: str, team_id: str = "") -> bool:
    """Publish a user's Home tab (``views.publish``), in their Slack time zone
    (``users.info``; when Slack cannot say, the zone set with ``/relcal tz``)."""
    client = bot_client()
    if client is None:
        logger.info("Slack not configured (SLACK_BOT_TOKEN); not publishing a Home tab.")
        return False
    identity = slack_identity_find(slack_user_id=slack_user_id, team_id=team_id)
    try:
        slack_tz = client.user_info(user=slack_user_id).get("tz")
    except TransportError as exc:
        if not exc.permanent:
            raise
        logger.warning(
            "users.info for %s failed (%s); showing the Home tab without their Slack zone", slack_user_id, exc
        )
        slack_tz = None
    client.publish_view(user_id=slack_user_id, view=home.home_view(identity=identity, slack_tz=slack_tz))
    return True


def slack_notify_requester(*, request_id: int, event: str) -> bool:
    """DM a request's requester (through their linked Slack identity) that it was filed
    or decided: ``conversations.open`` + ``chat.postMessage``.

    Exactly once per request and event: the SlackRequesterNotice row is locked while
    sending and marked sent in the same transaction, so a retried or redelivered task,
    or two at once, sends one DM (a worker killed between Slack's answer and the commit
    sends it again: at least once, never silently lost)."""
    if event not in SlackRequesterNotice.Event.values:
        return False
    client = bot_client()
    request = _load(request_id)
    if client is None or request is None or request.requester_id is None:
        return False
    if event != SlackRequesterNotice.Event.SUBMITTED and request.state != event:
        return False  # not what was decided (a task for a decision that never committed)
    identity = SlackIdentity.objects.filter(user_id=request.requester_id).first()
    if identity is None:
        logger.info("Requester of #%s has no linked Slack account; no DM.", request_id)
        return False
    with transaction.atomic():
        notice, _ = SlackRequesterNotice.objects.get_or_create(request=request, event=event)
        notice = SlackRequesterNotice.objects.select_for_update().get(pk=notice.pk)
        if notice.sent_at is not None:
            return False
        text, content = blocks.requester_notice(request, event)
        channel = client.open_dm(user=identity.slack_user_id)
        data = client.post_message(channel=channel, text=text, blocks=content)
        notice.channel, notice.ts, notice.sent_at = channel, str(data.get("ts", ""))[:32], tz.utc_now()
        notice.save(update_fields=["channel", "ts", "sent_at"])
    return True
