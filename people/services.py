"""Writes about people: what a GitHub sign-in records, and what it refuses.

A sign-in (or a staff account connecting GitHub) is refused, before any account is made
or changed, when another releasecal account already claims the identity: an account with
the same email address, or a KEP owner entry naming the handle that an admin linked to
another account. The person is told which, and what to do. A handle GitHub has given to
another account since (a rename, then someone took the old name) moves to the account
that signs in with it now.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from allauth.socialaccount.models import SocialAccount
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q

from people.models import GitHubHandle
from people.selectors import PROVIDER, enhancement_list_of_user, github_login
from releasecal import tz
from releasecal.models import Enhancement, EnhancementOwner
from releasecal.services import audit_record

OWNER_LINK_HELP = (
    "If that account is yours, sign in to it with its password and connect GitHub on your page; "
    "if it is not, ask a releasecal admin to unlink it (Admin → KEPs → the KEP's owners)."
)


@dataclass
class SignIn:
    """What a GitHub sign-in recorded: the handle, the KEPs that are now the account's,
    and the accounts a reused handle was moved away from."""

    handle: str
    keps: list[Enhancement] = field(default_factory=list)
    moved_from: list[str] = field(default_factory=list)


def _owner_rows_linked_elsewhere(*, handle: str, user=None) -> list[EnhancementOwner]:
    rows = EnhancementOwner.objects.filter(github__iexact=handle, user__isnull=False).select_related(
        "enhancement", "user"
    )
    if user is not None:
        rows = rows.exclude(user=user)
    return list(rows.order_by("enhancement__number")[:5])


def _owner_refusal(handle: str, rows: list[EnhancementOwner]) -> str:
    keps = ", ".join(f"KEP-{row.enhancement.number}" for row in rows)
    accounts = ", ".join(sorted({f"“{row.user.get_username()}”" for row in rows}))
    return (
        f"{keps} {'lists' if len(rows) == 1 else 'list'} @{handle} as an owner already linked to the releasecal "
        f"account {accounts}, so signing in as @{handle} would make a second account for the same person. "
        f"Nothing was saved. {OWNER_LINK_HELP}"
    )


def github_sign_up_refusal(*, handle: str, emails: list[str]) -> str | None:
    """Why a first GitHub sign-in as ``handle`` may not make a new releasecal account, or
    None. ``emails``: the addresses GitHub gave (an account already using one of them is
    the same person, who signs in to it and connects GitHub from there)."""
    rows = _owner_rows_linked_elsewhere(handle=handle)
    if rows:
        return _owner_refusal(handle, rows)
    same_email = Q(pk__in=[])
    for email in {email.strip() for email in emails if email and email.strip()}:
        same_email |= Q(email__iexact=email)
    holder = get_user_model().objects.filter(same_email).order_by("pk").first()
    if holder is not None:
        return (
            f"The releasecal account “{holder.get_username()}” already uses the email address GitHub gave for "
            f"@{handle} ({holder.email}), so signing in would make a second account for the same person. "
            "Nothing was saved. Sign in to that account with its password and connect GitHub on your page, "
            "or ask a releasecal admin."
        )
    return None


def github_connect_refusal(*, user, handle: str, uid: str) -> str | None:
    """Why ``user`` (signed in) may not connect the GitHub account ``uid`` (@``handle``), or None."""
    other = SocialAccount.objects.filter(user=user, provider=PROVIDER).exclude(uid=uid).first()
    if other is not None:
        return (
            f"Your releasecal account is already connected to GitHub as @{github_login(other) or other.uid}; "
            f"it cannot also be @{handle}. Nothing was changed."
        )
    rows = _owner_rows_linked_elsewhere(handle=handle, user=user)
    if rows:
        return _owner_refusal(handle, rows)
    return None


@transaction.atomic
def github_sign_in_record(*, account: SocialAccount) -> SignIn:
    """Record the handle ``account`` (allauth's GitHub SocialAccount, just signed in) has
    now: kept beside the handles it had, moved from another account that had it."""
    handle = github_login(account)
    if not handle:
        return SignIn(handle="")
    now = tz.utc_now()
    moved_from: list[str] = []
    row = GitHubHandle.objects.select_for_update().filter(handle__iexact=handle).select_related("account").first()
    if row is None:
        row = GitHubHandle.objects.create(account=account, handle=handle, first_seen_at=now)
        audit_record(
            action="people.github_handle_added",
            obj=row,
            actor=account.user,
            after={"handle": handle, "github_id": account.uid, "user": account.user_id},
        )
    elif row.account_id != account.pk:
        previous = row.account
        moved_from.append(previous.user.get_username())
        audit_record(
            action="people.github_handle_moved",
            obj=row,
            actor=account.user,
            before={"account": previous.pk, "user": previous.user_id, "github_id": previous.uid},
            after={"account": account.pk, "user": account.user_id, "github_id": account.uid},
        )
        row.account, row.handle, row.first_seen_at = account, handle, now
        row.save()
    elif row.handle != handle:  # the same handle, spelt in another case now
        row.handle = handle
        row.save(update_fields=["handle"])
    return SignIn(handle=handle, keps=list(enhancement_list_of_user(user=account.user)), moved_from=moved_from)
