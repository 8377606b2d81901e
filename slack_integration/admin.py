from django.contrib import admin

from slack_integration.models import SlackDecisionMessage, SlackIdentity, SlackWork


@admin.register(SlackIdentity)
class SlackIdentityAdmin(admin.ModelAdmin):
    list_display = ["slack_user_id", "user", "team_id", "zone", "updated_at"]
    search_fields = ["slack_user_id", "user__username", "user__email"]
    autocomplete_fields = ["user"]


@admin.register(SlackDecisionMessage)
class SlackDecisionMessageAdmin(admin.ModelAdmin):
    list_display = ["request", "channel", "ts", "posted_at", "updated_at"]
    list_select_related = ["request__enhancement", "request__milestone"]
    raw_id_fields = ["request"]
    readonly_fields = ["posted_at", "updated_at"]


@admin.register(SlackWork)
class SlackWorkAdmin(admin.ModelAdmin):
    """The Slack ledger: what each write still owes Slack, and why a row failed."""

    list_display = ["request", "kind", "event", "state", "attempts", "next_attempt_at", "sent_at", "updated_at"]
    list_filter = ["state", "kind"]
    raw_id_fields = ["request"]
    readonly_fields = [f.name for f in SlackWork._meta.fields]
