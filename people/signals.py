"""After a sign-in: the GitHub handle recorded, and when this browser session last signed in.

``SIGNED_IN_AT`` (seconds since the epoch, in the session) is what the Slack link flow
checks: a link is confirmed only by a session that signed in after opening it
(slack_integration/linking.py).
"""

from __future__ import annotations

import time

from allauth.account.signals import user_logged_in as allauth_user_logged_in
from allauth.socialaccount.signals import social_account_added
from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver

from people.selectors import PROVIDER
from people.services import github_sign_in_record

SIGNED_IN_AT = "releasecal_signed_in_at"


@receiver(user_logged_in, dispatch_uid="people.signed_in")
def signed_in(sender, request, user, **kwargs) -> None:
    """Any sign-in (password or GitHub): when, in this browser session."""
    if request is not None and hasattr(request, "session"):
        request.session[SIGNED_IN_AT] = time.time()


@receiver(allauth_user_logged_in, dispatch_uid="people.github_signed_in")
def github_signed_in(sender, request, user, **kwargs) -> None:
    """A sign-in through allauth: with GitHub, its handle recorded."""
    sociallogin = kwargs.get("sociallogin")
    if sociallogin is not None and sociallogin.account.provider == PROVIDER:
        github_sign_in_record(account=sociallogin.account)


@receiver(social_account_added, dispatch_uid="people.github_connected")
def github_connected(sender, request, sociallogin, **kwargs) -> None:
    if sociallogin.account.provider == PROVIDER:
        github_sign_in_record(account=sociallogin.account)
