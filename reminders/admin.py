"""Admin: rules are edited here; the ledger is read here and retried from here.

Actions only parse input and call services.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import transaction

from releasecal import tz
from releasecal.admin import PlainActionCheckbox
from reminders import services
from reminders.liveness import sweep_stall_check, sweep_status
from reminders.models import Channel, Delivery, ReminderRule, SweepHeartbeat


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "failing", "failing_since", "short_error"]
    list_filter = ["kind", "failing"]
    readonly_fields = ["failing", "failing_since", "last_error", "created_at", "updated_at"]
    actions = ["clear_failing"]

    @admin.display(description="Last error")
    def short_error(self, obj: Channel) -> str:
        return obj.last_error[:120]

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        if change and obj.failing:
            # A saved (presumably fixed) configuration gets another chance.
            services.channel_clear_failing(channel=obj)
            messages.info(request, f"{obj.name} is no longer marked failing; retry its failed deliveries.")

    @admin.action(description="Clear the failing flag")
    def clear_failing(self, request, queryset):
        for channel in queryset:
            services.channel_clear_failing(channel=channel)
        self.message_user(request, f"{queryset.count()} channel(s) cleared.")


class ReminderRuleForm(forms.ModelForm):
    class Meta:
        model = ReminderRule
        fields = ["name", "applies_to", "kinds", "release", "offsets", "channel", "combine", "active"]

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("applies_to") == ReminderRule.AppliesTo.MILESTONES and not cleaned.get("kinds"):
            self.add_error(
                "kinds",
                "A milestone rule reminds of the kinds chosen here: with none it sends nothing. "
                "Choose at least one kind (or untick Active to pause the rule).",
            )
        return cleaned


@admin.register(ReminderRule)
class ReminderRuleAdmin(admin.ModelAdmin):
    form = ReminderRuleForm
    list_display = ["name", "applies_to", "offsets", "channel", "release", "combine", "active"]
    list_filter = ["applies_to", "active", "channel"]
    filter_horizontal = ["kinds"]
    search_fields = ["name"]

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        # The kinds (many-to-many) are saved only now: re-sync after them.
        transaction.on_commit(services.deliveries_sync_all)

    def delete_model(self, request, obj):
        super().delete_model(request, obj)
        transaction.on_commit(services.deliveries_sync_all)

    def delete_queryset(self, request, queryset):
        super().delete_queryset(request, queryset)
        transaction.on_commit(services.deliveries_sync_all)


@admin.register(Delivery)
class DeliveryAdmin(PlainActionCheckbox, admin.ModelAdmin):
    list_display = [
        "id",
        "state",
        "due",
        "offset",
        "deadline",
        "channel",
        "recipient",
        "attempts",
        "sent",
        "short_error",
    ]
    list_filter = ["state", "channel", "milestone__release", "milestone__kind"]
    search_fields = ["recipient", "milestone__title", "last_error", "reason"]
    list_select_related = ["channel", "milestone", "milestone__release", "request", "request__enhancement"]
    date_hierarchy = "due_at"
    actions = ["retry"]
    readonly_fields = [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    @admin.display(description="Due", ordering="due_at")
    def due(self, obj: Delivery) -> str:
        return tz.render(obj.due_at, obj.deadline_zone or "UTC")

    @admin.display(description="Sent", ordering="sent_at")
    def sent(self, obj: Delivery) -> str:
        return tz.render_in_zone(obj.sent_at, "UTC") if obj.sent_at else ""

    @admin.display(description="Deadline")
    def deadline(self, obj: Delivery) -> str:
        if obj.request_id:
            return f"{obj.milestone.title}: exception #{obj.request_id} (KEP-{obj.request.enhancement.number})"
        return f"{obj.milestone}"

    @admin.display(description="Last error / reason")
    def short_error(self, obj: Delivery) -> str:
        return (obj.last_error or obj.reason)[:160]

    def has_retry_permission(self, request) -> bool:
        # The ledger stays read-only (has_change_permission is False for everyone); the
        # change permission is what lets a user send a row again.
        return request.user.has_perm("reminders.change_delivery")

    @admin.action(description="Retry (send now; marked late if its time has passed)", permissions=["retry"])
    def retry(self, request, queryset):
        retried = sum(services.delivery_retry(delivery=d) for d in queryset)
        skipped = queryset.count() - retried
        self.message_user(request, f"{retried} delivery(ies) queued again.")
        if skipped:
            self.message_user(
                request, f"{skipped} not retried: only failed, missed or cancelled ones can be.", messages.WARNING
            )


@admin.register(SweepHeartbeat)
class SweepHeartbeatAdmin(admin.ModelAdmin):
    """When the minute sweep last completed (read-only); opening it also runs the stall
    check, which alerts the release team once per stall."""

    list_display = ["status", "last_completed_at", "stall_alerted_for"]
    readonly_fields = ["status", "last_completed_at", "stall_alerted_for"]
    fields = readonly_fields

    @admin.display(description="Reminder sweep")
    def status(self, obj: SweepHeartbeat) -> str:
        sweep_stall_check()
        return sweep_status()[1]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
