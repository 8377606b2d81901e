from django.contrib import admin

from people.models import GitHubHandle


@admin.register(GitHubHandle)
class GitHubHandleAdmin(admin.ModelAdmin):
    list_display = ["handle", "account", "first_seen_at"]
    search_fields = ["handle", "account__user__username", "account__uid"]
    readonly_fields = ["account", "handle", "first_seen_at"]
