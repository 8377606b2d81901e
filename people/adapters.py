"""allauth, told how releasecal signs people in (settings: ACCOUNT_ADAPTER, SOCIALACCOUNT_ADAPTER).

- No password sign-up: staff accounts are made in the admin; contributors sign in with
  GitHub, which makes their account on the first sign-in.
- Before a first sign-in makes an account, or a signed-in account connects GitHub, the
  claims of other accounts are checked (people.services); a refusal is a page saying
  why, and nothing is saved.
- Any failure of the OAuth exchange (a wrong or replayed ``state``, a code GitHub
  refuses, GitHub unreachable, the person pressing Cancel) is our page saying what
  happened, with a 4xx; the person is not signed in and no account is made.
"""

from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.providers.base import AuthError, AuthProcess
from django.shortcuts import render
from django.urls import reverse

from people import services
from people.selectors import github_login


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False


def refused(request, message: str, *, status: int, title: str):
    return render(request, "people/refused.html", {"title": title, "message": message}, status=status)


def oauth_error_text(error, exception) -> tuple[str, int]:
    """What a failed GitHub sign-in tells the person, and its status."""
    text = str(exception or "")
    if error == AuthError.CANCELLED:
        return "You cancelled the sign-in on GitHub. Nothing was saved.", 400
    if "bad_verification_code" in text:
        return (
            "GitHub refused the sign-in code: it was already used or has expired (a code works once, for ten "
            "minutes). Nothing was saved. Start again from the login page.",
            400,
        )
    if "redirect_uri_mismatch" in text or "incorrect_client_credentials" in text:
        return (
            "GitHub refused this site's OAuth app (its client id, secret or callback address do not match what "
            "is registered on GitHub). Nothing was saved. Tell a releasecal admin.",
            502,
        )
    if exception is not None and exception.__class__.__module__.startswith("requests"):
        return "GitHub could not be reached to finish the sign-in. Nothing was saved. Try again in a minute.", 502
    if error == AuthError.DENIED:
        return "GitHub did not allow the sign-in. Nothing was saved.", 403
    return (
        "This sign-in could not be finished: the answer from GitHub did not match a sign-in started in this "
        "browser (a wrong, old or reused state, or no code). Nothing was saved. Start again from the login page.",
        400,
    )


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request, sociallogin) -> bool:
        return True

    def is_auto_signup_allowed(self, request, sociallogin) -> bool:
        # No form: an email another account uses is refused in pre_social_login first.
        return True

    def populate_user(self, request, sociallogin, data):
        user = super().populate_user(request, sociallogin, data)
        # Only a verified address GitHub gave is kept (reminders go to it).
        verified = [e.email for e in sociallogin.email_addresses if e.verified]
        if user.email and user.email not in verified:
            user.email = verified[0] if verified else ""
        return user

    def pre_social_login(self, request, sociallogin) -> None:
        account = sociallogin.account
        handle = github_login(account) or account.uid
        if sociallogin.state.get("process") == AuthProcess.CONNECT:
            if sociallogin.is_existing and sociallogin.user != request.user:
                message = (
                    f"GitHub @{handle} is already how the releasecal account “{sociallogin.user.get_username()}” "
                    "signs in; one GitHub account belongs to one releasecal account. Nothing was changed."
                )
            else:
                message = services.github_connect_refusal(user=request.user, handle=handle, uid=account.uid)
        elif sociallogin.is_existing:
            return
        else:
            emails = [e.email for e in sociallogin.email_addresses if e.verified]
            message = services.github_sign_up_refusal(handle=handle, emails=emails)
        if message:
            raise ImmediateHttpResponse(
                refused(request, message, status=409, title="Two releasecal accounts cannot share one identity")
            )

    def on_authentication_error(self, request, provider, error=None, exception=None, extra_context=None) -> None:
        message, status = oauth_error_text(error, exception)
        raise ImmediateHttpResponse(refused(request, message, status=status, title="Sign-in with GitHub failed"))

    def get_connect_redirect_url(self, request, socialaccount) -> str:
        return reverse("people:me")
