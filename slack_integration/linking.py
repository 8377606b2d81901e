"""Self-service linking of a Slack user to a releasecal account.

``/relcal request`` (or ``/relcal link``) from a Slack user who is not linked answers
with a link to ``/slack/link/<token>``. The token is signed with ``django.core.signing``
(its own salt), carries the Slack team and user ids and a random nonce, and is good for
:data:`MAX_AGE_SECONDS`. Opened in a browser, the page asks the person to log in to
releasecal (the normal Django login) and to confirm; confirming records the nonce in
``SlackLinkToken`` (unique: a second use of the same link is refused) and ties the Slack
identity to the logged-in account in the same transaction. A refusal changes nothing.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse, reverse_lazy
from django.views.decorators.http import require_http_methods

from releasecal.services import audit_record
from slack_integration.models import SlackIdentity, SlackLinkToken
from slack_integration.mrkdwn import link
from slack_integration.signature import slack_id

SALT = "releasecal.slack_integration.link"
MAX_AGE_SECONDS = 15 * 60
AGAIN = "Type /relcal link in Slack to get a new link."


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
        "confirm: it links this Slack account to yours (the link works once). Then try again."
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
    identity = SlackIdentity.objects.select_for_update().filter(slack_user_id=data["slack_user_id"]).first()
    if identity is not None and identity.user_id is not None and identity.user_id != user.pk:
        raise LinkRefused(
            409,
            "This Slack account is already linked to another releasecal account; nothing was changed. "
            "Ask a releasecal admin to move it (Admin -> Slack identities).",
        )
    other = SlackIdentity.objects.filter(user=user).exclude(slack_user_id=data["slack_user_id"]).first()
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


# Without a usable ?next= (none, or another site's), the person lands on the home page
# (Django's default, /accounts/profile/, is no page here).
login = auth_views.LoginView.as_view(
    template_name="slack_integration/login.html", redirect_authenticated_user=True, next_page=reverse_lazy("pages:home")
)


@require_http_methods(["GET", "POST"])
@login_required(login_url=reverse_lazy("slack-link-login"))
def link_view(request: HttpRequest, token: str) -> HttpResponse:
    """GET: what confirming will do; POST: do it (a page a preview bot fetches changes nothing)."""
    try:
        data = read_token(token)
        if request.method == "POST":
            identity = slack_identity_link(token=token, user=request.user)
            return render(request, "slack_integration/link.html", {"done": True, "identity": identity})
    except LinkRefused as exc:
        return _refused(request, exc)
    return render(request, "slack_integration/link.html", {"slack": data})
