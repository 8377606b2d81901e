"""Admin: the mailbox's state, every message it read, and the intake problems list."""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpResponse

from intake.models import IntakeMessage, IntakeProblem, MailboxState
from intake.services import intake_problem_retry
from releasecal import tz


def _when(value) -> str:
    return tz.render_in_zone(value, "UTC") if value else "-"


@admin.register(MailboxState)
class MailboxStateAdmin(admin.ModelAdmin):
    list_display = ["mailbox", "status", "last_uid", "uidvalidity", "messages_read", "polled", "succeeded"]
    readonly_fields = [
        "mailbox",
        "uidvalidity",
        "last_uid",
        "last_poll_at",
        "last_success_at",
        "last_error",
        "last_error_at",
        "failures",
        "messages_read",
    ]

    @admin.display(description="Status")
    def status(self, obj: MailboxState) -> str:
        return f"failing: {obj.last_error}" if obj.last_error else "ok"

    @admin.display(description="Last poll (UTC)", ordering="last_poll_at")
    def polled(self, obj: MailboxState) -> str:
        return _when(obj.last_poll_at)

    @admin.display(description="Last good poll (UTC)", ordering="last_success_at")
    def succeeded(self, obj: MailboxState) -> str:
        return _when(obj.last_success_at)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(IntakeMessage)
class IntakeMessageAdmin(admin.ModelAdmin):
    list_display = ["subject", "sender_name", "sender_email", "outcome", "request", "sent", "uid"]
    list_filter = ["outcome"]
    search_fields = ["subject", "sender_name", "sender_email", "message_id"]
    readonly_fields = [f.name for f in IntakeMessage._meta.fields]

    @admin.display(description="Sent (UTC)", ordering="sent_at")
    def sent(self, obj: IntakeMessage) -> str:
        return _when(obj.sent_at)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class OpenFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "open"

    def lookups(self, request, model_admin):
        return [("yes", "Open"), ("no", "Resolved")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(resolved_at__isnull=True)
        if self.value() == "no":
            return queryset.filter(resolved_at__isnull=False)
        return queryset


@admin.register(IntakeProblem)
class IntakeProblemAdmin(admin.ModelAdmin):
    """The "intake problems" list: what the mailbox could not file, and why."""

    list_display = ["subject", "sender", "reason", "received", "resolved"]
    list_filter = [OpenFilter, "mailbox"]
    search_fields = ["subject", "sender", "reason", "message_id"]
    readonly_fields = [
        "mailbox",
        "message_id",
        "uidvalidity",
        "uid",
        "subject",
        "sender",
        "reason",
        "raw_size",
        "created_at",
        "resolved_at",
        "resolved_by",
        "resolution",
        "raw_text",
    ]
    exclude = ["raw"]
    actions = ["try_again", "download_raw"]

    @admin.display(description="Read (UTC)", ordering="created_at")
    def received(self, obj: IntakeProblem) -> str:
        return _when(obj.created_at)

    @admin.display(description="Resolved", boolean=True)
    def resolved(self, obj: IntakeProblem) -> bool:
        return obj.resolved_at is not None

    @admin.display(description="Message (first 20,000 characters)")
    def raw_text(self, obj: IntakeProblem) -> str:
        return bytes(obj.raw)[:20_000].decode("utf-8", errors="replace")

    @admin.action(description="Try again (after importing the KEP, adding the milestone, ...)")
    def try_again(self, request, queryset):
        for problem in queryset.order_by("created_at"):
            outcome = intake_problem_retry(problem=problem, actor=request.user)
            level = messages.WARNING if outcome.startswith("Still not filed") else messages.SUCCESS
            self.message_user(request, f"{problem.subject or problem.message_id}: {outcome}", level)

    @admin.action(description="Download the raw message (.eml)")
    def download_raw(self, request, queryset):
        problem = queryset.order_by("created_at").first()
        response = HttpResponse(bytes(problem.raw), content_type="message/rfc822")
        response["Content-Disposition"] = f'attachment; filename="intake-problem-{problem.pk}.eml"'
        return response

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
