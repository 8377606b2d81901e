"""Admin for personal feed tokens: create (the URL is shown once), list, rotate, revoke.

Writes go through feeds.services; only the SHA-256 of a token is ever stored.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.html import format_html

from feeds.models import FeedToken
from feeds.services import IssuedFeedToken, feed_token_create, feed_token_revoke, feed_token_rotate
from releasecal.errors import DomainError


def _show_once(request, issued: IssuedFeedToken, verb: str) -> None:
    messages.success(
        request,
        format_html(
            "{} feed token #{} for {}. Its URL is shown only now; copy it: <code>{}</code>",
            verb,
            issued.row.pk,
            issued.row.user,
            issued.url,
        ),
    )


@admin.register(FeedToken)
class FeedTokenAdmin(admin.ModelAdmin):
    list_display = ("id", "user", "label", "created_at", "last_used_at", "active", "revoked_at")
    list_filter = (("revoked_at", admin.EmptyFieldListFilter),)
    search_fields = ("user__username", "user__email", "label")
    list_select_related = ("user",)
    autocomplete_fields = ()
    raw_id_fields = ("user",)
    readonly_fields = ("created_at", "last_used_at", "revoked_at", "replaced_by")
    actions = ("rotate_selected", "revoke_selected")

    def get_fields(self, request, obj=None):
        if obj is None:
            return ("user", "label")
        return ("user", "label", "created_at", "last_used_at", "revoked_at", "replaced_by")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ()
        return ("user", *self.readonly_fields)

    @admin.display(boolean=True, description="Active")
    def active(self, obj: FeedToken) -> bool:
        return obj.is_active

    def save_model(self, request, obj, form, change):
        if change:
            obj.save(update_fields=["label"])
            return
        issued = feed_token_create(user=obj.user, label=obj.label, actor=request.user)
        obj.pk = issued.row.pk
        obj.token_hash = issued.row.token_hash
        obj.created_at = issued.row.created_at
        _show_once(request, issued, "Created")

    @admin.action(description="Rotate selected tokens (the old URLs stop working)")
    def rotate_selected(self, request, queryset):
        for row in queryset.select_related("user"):
            try:
                issued = feed_token_rotate(feed_token=row, actor=request.user)
            except DomainError as exc:
                messages.warning(request, exc.message)
                continue
            _show_once(request, issued, "Rotated; new")

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request, queryset):
        for row in queryset:
            feed_token_revoke(feed_token=row, actor=request.user)
        messages.success(request, f"Revoked {queryset.count()} token(s).")
