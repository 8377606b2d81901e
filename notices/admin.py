"""The notices ledger, read-only: what was told to whom, and what is still waiting."""

from __future__ import annotations

from django.contrib import admin

from notices.models import NoticeDelivery, ScheduleNotice


class NoticeDeliveryInline(admin.TabularInline):
    model = NoticeDelivery
    fields = ["recipient", "keps", "state", "attempts", "sent_at", "next_attempt_at", "last_error"]
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ScheduleNotice)
class ScheduleNoticeAdmin(admin.ModelAdmin):
    list_display = ["title", "kind", "release", "created_at"]
    list_filter = ["kind", "release"]
    readonly_fields = ["key", "kind", "release", "milestone", "title", "lines", "conflict_lines", "exception_ids"]
    fields = readonly_fields
    inlines = [NoticeDeliveryInline]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
