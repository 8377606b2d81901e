"""Self-service linking of a Slack user to a releasecal account.

``/relcal request`` (or ``/relcal link``) from a Slack user who is not linked answers
with a link to ``/slack/link/<token>``. The token is signed with ``django.core.signing``
(its own salt), carries the Slack team and user ids and a random nonce, and is good for
:data:`MAX_AGE_SECONDS`. A linked Slack user files, approves and rejects as the account,
so the link is bound to the browser that opened it and to a fresh sign-in there:

- opening the link records its nonce and the time in this browser's session;
- the confirmation is offered only to a session that signed in (the one login page:
  password or GitHub) *after* opening the link, so a link someone else sent to a person
  already signed in cannot be confirmed with one click: they are asked to sign in again;
- the page names the Slack user and workspace as Slack itself says (``users.info``,
  ``team.info``: display name, real name, workspace name), and says in words that this
  Slack user will approve and reject as the account; a Slack user of another workspace
  than the link's, or one Slack cannot name, is refused.

Confirming records the nonce in ``SlackLinkToken`` (unique: a second use of the same link
is refused) and ties the Slack identity to the signed-in account in the same transaction.
A refusal changes nothing.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core import signing
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from outbox.errors import TransportError
from people.signals import SIGNED_IN_AT
from releasecal.services import audit_record
from slack_integration.client import bot_client
from slack_integration.models import SlackIdentity, SlackLinkToken
from slack_integration.mrkdwn import link
from slack_integration.selectors import slack_identity_find
from slack_integration.signature import slack_id

SALT = "releasecal.slack_integration.link"
MAX_AGE_SECONDS = 15 * 60
AGAIN = "Type /relcal link in Slack to get a new link."
OPENED = "releasecal_slack_links_opened"  # session: nonce -> when this browser opened it


class LinkRefused(Exception):
    """The link cannot be used: ``status`` (a 4xx) and one sentence saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def link_token(*, slack_user_id: str, team_id: str) -> str:
    return signing.dumps({"u": slack_user_id, "t": team_id, "n": secrets.token_urlsafe(18)}, salt=SALT)


def link_url(*, slack_user_id: str, team_id: str) -> str:
    """The absolute link (under SITE_URL) for one Slack user, good for 15 minutes, once."""
    token = link_token(slack_user_id=slack_user_id, team_id=team_id)
    return settings.SITE_URL.rstrip("/") + reverse("slack-link", args=[token])


def not_linked_sentence(*, slack_user_id: str, team_id: str, doing: str) -> str:
    """What an unlinked Slack user is told (mrkdwn): how to link, with their own link."""
    url = link_url(slack_user_id=slack_user_id, team_id=team_id)
    return (
        f"Your Slack account is not linked to a releasecal account, so you cannot {doing} yet. "
        f"Open {link(url, 'this link')} within {MAX_AGE_SECONDS // 60} minutes, log in to releasecal and "
        "confirm: it links this Slack account to yours (the link works once, and only for you: do not pass "
        "it on). Then try again."
    )


def read_token(token: str) -> dict[str, str]:
    """The token's Slack ids and nonce, or LinkRefused (tampered, expired, used)."""
    try:
        data = signing.loads(token, salt=SALT, max_age=MAX_AGE_SECONDS)
    except signing.SignatureExpired:
        raise LinkRefused(
            410, f"This link has expired: links work for {MAX_AGE_SECONDS // 60} minutes. {AGAIN}"
        ) from None
    except signing.BadSignature:
        raise LinkRefused(400, f"This link is not valid: it was changed or cut short. {AGAIN}") from None
    if not isinstance(data, dict):
        raise LinkRefused(400, f"This link is not valid. {AGAIN}")
    user, team, nonce = slack_id(data.get("u")), data.get("t"), data.get("n")
    if not user or not isinstance(team, str) or (team and not slack_id(team)) or not isinstance(nonce, str):
        raise LinkRefused(400, f"This link is not valid. {AGAIN}")
    if SlackLinkToken.objects.filter(nonce=nonce).exists():
        raise LinkRefused(410, f"This link has already been used. {AGAIN}")
    return {"slack_user_id": user, "team_id": team, "nonce": nonce}


@dataclass(frozen=True)
class SlackWho:
    """Who the link's Slack user is, as Slack says."""

    display_name: str
    real_name: str
    handle: str
    workspace: str

    @property
    def name(self) -> str:
        return self.display_name or self.real_name or self.handle


def slack_who(*, slack_user_id: str, team_id: str) -> SlackWho:
    """Slack's names for the user and workspace (``users.info``, ``team.info``), or
    LinkRefused: Slack not configured or not answering, a user Slack does not know, or
    one of another workspace than the link's."""
    client = bot_client()
    if client is None:
        raise LinkRefused(
            503, "releasecal cannot ask Slack who this Slack user is (no bot token is set up), so it links nobody."
        )
    try:
        user = client.user_info(user=slack_user_id)
        team = client.team_info(team=team_id) if team_id else {}
    except TransportError as exc:
        if exc.permanent:
            raise LinkRefused(400, f"Slack does not know this Slack user or workspace ({exc}). {AGAIN}") from None
        raise LinkRefused(503, "Slack did not answer who this Slack user is; nothing was changed. Try again.") from None
    user_team = user.get("team_id")
    if team_id and isinstance(user_team, str) and user_team and user_team != team_id:
        raise LinkRefused(400, f"This link names a Slack user of another workspace than its own. {AGAIN}")
    profile = user.get("profile") if isinstance(user.get("profile"), dict) else {}

    def text(value) -> str:
        return value.strip()[:120] if isinstance(value, str) else ""

    who = SlackWho(
        display_name=text(profile.get("display_name")),
        real_name=text(profile.get("real_name")) or text(user.get("real_name")),
        handle=text(user.get("name")),
        workspace=text(team.get("name")) or text(team.get("domain")),
    )
    if not who.name:
        raise LinkRefused(400, f"Slack gave no name for this Slack user, so releasecal links nobody. {AGAIN}")
    return who


@transaction.atomic
def slack_identity_link(*, token: str, user) -> SlackIdentity:
    """Tie the token's Slack user to ``user`` and spend the token. Raises LinkRefused
    (and changes nothing) when the token is bad or used, when that Slack user is linked
    to another account, or when ``user`` is linked to another Slack user."""
    data = read_token(token)
    try:
        with transaction.atomic():
            SlackLinkToken.objects.create(
                nonce=data["nonce"], slack_user_id=data["slack_user_id"], team_id=data["team_id"], user=user
            )
    except IntegrityError:
        raise LinkRefused(410, f"This link has already been used. {AGAIN}") from None
    identity = slack_identity_find(slack_user_id=data["slack_user_id"], team_id=data["team_id"], lock=True)
    if identity is not None and identity.user_id is not None and identity.user_id != user.pk:
        raise LinkRefused(
            409,
            "This Slack account is already linked to another releasecal account; nothing was changed. "
            "Ask a releasecal admin to move it (Admin -> Slack identities).",
        )
    other = SlackIdentity.objects.filter(user=user).exclude(pk=identity.pk if identity else None).first()
    if other is not None:
        raise LinkRefused(
            409,
            f"Your releasecal account is already linked to another Slack account ({other.slack_user_id}); "
            "nothing was changed. Ask a releasecal admin to move it (Admin -> Slack identities).",
        )
    before = {"user": identity.user_id, "team_id": identity.team_id} if identity is not None else None
    if identity is None:
        identity = SlackIdentity(slack_user_id=data["slack_user_id"])
    identity.user = user
    identity.team_id = data["team_id"] or identity.team_id
    identity.save()
    audit_record(
        action="slack.link",
        obj=identity,
        actor=user,
        before=before,
        after={"user": user.pk, "slack_user_id": identity.slack_user_id, "team_id": identity.team_id},
    )
    return identity


def _refused(request: HttpRequest, exc: LinkRefused) -> HttpResponse:
    return render(request, "slack_integration/link.html", {"problem": exc.message}, status=exc.status)


def _opened_at(request: HttpRequest, nonce: str) -> float:
    """When this browser first opened the link (recorded now if it had not)."""
    opened = dict(request.session.get(OPENED) or {})
    if nonce not in opened:
        now = time.time()
        opened = {n: at for n, at in opened.items() if at > now - MAX_AGE_SECONDS}  # links live 15 minutes
        opened[nonce] = now
        request.session[OPENED] = opened
    return opened[nonce]


def _signed_in_since(request: HttpRequest, moment: float) -> bool:
    signed_in_at = request.session.get(SIGNED_IN_AT)
    return isinstance(signed_in_at, (int, float)) and signed_in_at >= moment


@require_http_methods(["GET", "POST"])
def link_view(request: HttpRequest, token: str) -> HttpResponse:
    """GET: who would act as you, and (after a sign-in in this browser since the link was
    opened) the confirmation; POST: do it. A page a preview bot fetches changes nothing."""
    try:
        data = read_token(token)
        opened_at = _opened_at(request, data["nonce"])
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
        who = slack_who(slack_user_id=data["slack_user_id"], team_id=data["team_id"])
        fresh = _signed_in_since(request, opened_at)
        if request.method == "POST":
            if not fresh:
                raise LinkRefused(
                    403,
                    "Sign in again in this browser after opening the link, then confirm: a link is confirmed "
                    "only by a sign-in made for it. Nothing was changed.",
                )
            identity = slack_identity_link(token=token, user=request.user)
            request.session.pop(OPENED, None)
            return render(request, "slack_integration/link.html", {"done": True, "identity": identity, "who": who})
    except LinkRefused as exc:
        return _refused(request, exc)
    context = {"slack": data, "who": who, "fresh": fresh}
    if not fresh:
        context["sign_in_again"] = f"{settings.LOGIN_URL}?{urlencode({'next': request.get_full_path()})}"
    return render(request, "slack_integration/link.html", context)
