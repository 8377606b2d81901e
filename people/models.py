"""Who is who on GitHub: the handles a releasecal account has signed in with.

The key of a GitHub identity is GitHub's numeric user id: allauth's ``SocialAccount``
(provider ``github``, ``uid``) ties it to one releasecal account, and a renamed GitHub
account signs in to the same account. The handle is what it is shown as and what KEPs
name (kep.yaml authors, owners, the board's assignees), so every handle the account has
signed in with is kept: a KEP written before the rename still names its author. GitHub
lets one account at a time hold a handle, so a handle is unique here too, in any case;
when GitHub gives an old handle to another account, the row moves to the account that
signs in with it (people.services.github_sign_in_record).
"""

from __future__ import annotations

from allauth.socialaccount.models import SocialAccount
from django.db import models
from django.db.models.functions import Lower


class GitHubHandle(models.Model):
    account = models.ForeignKey(SocialAccount, on_delete=models.CASCADE, related_name="github_handles")
    handle = models.CharField(max_length=39, help_text="As GitHub spells it, without the @")
    first_seen_at = models.DateTimeField(help_text="The first sign-in with this handle (by this account)")

    class Meta:
        ordering = ["-first_seen_at", "-pk"]
        constraints = [models.UniqueConstraint(Lower("handle"), name="one_account_per_github_handle_any_case")]
        verbose_name = "GitHub handle"

    def __str__(self) -> str:
        return f"@{self.handle}"
