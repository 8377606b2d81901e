from django.contrib import admin

from slack_integration.models import SlackDecisionMessage, SlackIdentity


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
