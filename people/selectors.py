"""Reads about people: a releasecal account's GitHub identity, and the KEPs that are its.

"My KEPs" are the KEPs whose owners list the account (``EnhancementOwner.user``, set in
the admin) or that name one of the account's GitHub handles as an owner or a kep.yaml
author, in any case. Every face that says "your KEPs" (the pages, the personal feed,
the Slack Home tab, the KEP page's request form) reads it here.
"""

from __future__ import annotations

from allauth.socialaccount.models import SocialAccount
from django.conf import settings
from django.db.models import Q, QuerySet
from django.db.models.functions import Lower

from people.models import GitHubHandle
from releasecal.models import Enhancement
from releasecal.selectors import enhancement_list_naming_any

PROVIDER = "github"


def github_sign_in_enabled() -> bool:
    """Is a GitHub OAuth app configured (GITHUB_OAUTH_CLIENT_ID: allauth's provider app)?"""
    return bool(settings.SOCIALACCOUNT_PROVIDERS.get(PROVIDER, {}).get("APPS"))


def github_account_of(*, user) -> SocialAccount | None:
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return SocialAccount.objects.filter(user=user, provider=PROVIDER).first()


def github_login(account: SocialAccount | None) -> str:
    """The account's handle as GitHub gave it at the last sign-in ("" when unknown)."""
    if account is None:
        return ""
    login = (account.extra_data or {}).get("login")
    return login if isinstance(login, str) else ""


def handles_of(*, user) -> list[str]:
    """Every GitHub handle the user's GitHub account has signed in with, newest first."""
    if user is None or not getattr(user, "is_authenticated", False):
        return []
    return list(
        GitHubHandle.objects.filter(account__user=user, account__provider=PROVIDER).values_list("handle", flat=True)
    )


def user_for_handle(*, handle: str):
    """The releasecal account that signed in with GitHub ``handle`` (any case), or None."""
    row = (
        GitHubHandle.objects.select_related("account__user")
        .filter(handle__iexact=(handle or "").strip().removeprefix("@"))
        .first()
    )
    return row.account.user if row is not None else None


def _handles_lowered(user) -> QuerySet:
    return GitHubHandle.objects.filter(account__user=user, account__provider=PROVIDER).values(lowered=Lower("handle"))


# "My KEPs": the KEPs naming a handle as an owner or a kep.yaml author (not as a reviewer
# or approver), and, when the board lands, as an assignee.
MY_ROLES = ("owner", "author")


def enhancement_list_of_user(*, user) -> QuerySet[Enhancement]:
    """The user's KEPs: listed with their account as an owner, or naming one of their
    GitHub handles (any case) as an owner or a kep.yaml author
    (releasecal.selectors.enhancement_list_naming_any). One query when read."""
    if user is None or not getattr(user, "is_authenticated", False):
        return Enhancement.objects.none()
    named = enhancement_list_naming_any(handles=_handles_lowered(user), roles=MY_ROLES).values("pk")
    mine = Enhancement.objects.filter(Q(owners__user=user) | Q(pk__in=named)).values("pk")
    return Enhancement.objects.filter(pk__in=mine).order_by("number")


def user_names_enhancement(*, user, enhancement: Enhancement) -> bool:
    """Is ``enhancement`` one of the user's KEPs?"""
    return enhancement_list_of_user(user=user).filter(pk=enhancement.pk).exists()
