from django.contrib import admin, messages
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from github.conflicts import ConflictRefused, conflict_keep_releasecal, conflict_take_board
from github.models import Board, BoardConflict, BoardItem, BoardWrite
from github.report import report_lines
from github.services import BoardRefused, board_sync
from github.sync import SyncReport
from github.writes import board_write_retry
from releasecal.errors import DomainError


@admin.register(Board)
class BoardAdmin(admin.ModelAdmin):
    list_display = ["release", "owner", "number", "mode", "reachable", "last_synced_at", "last_error"]
    list_filter = ["mode", "reachable"]
    list_select_related = ["release"]
    autocomplete_fields = ["release"]
    readonly_fields = [
        "title",
        "project_node_id",
        "reachable",
        "last_checked_at",
        "last_error",
        "last_synced_at",
        "backfilled_at",
        "created_at",
        "updated_at",
    ]
    exclude = ["last_report"]

    def get_urls(self):
        return [
            path("<int:board_id>/sync/", self.admin_site.admin_view(self.sync_view), name="github_board_board_sync"),
            *super().get_urls(),
        ]

    def sync_view(self, request: HttpRequest, board_id: int):
        """The cockpit's view of a board: the last sync's report; POST runs a sync (or a
        dry run of the backfill, or the backfill)."""
        board = get_object_or_404(Board.objects.select_related("release"), pk=board_id)
        if not self.has_view_permission(request, board):
            return redirect("admin:index")
        lines = None
        if request.method == "POST":
            if not self.has_change_permission(request, board):
                messages.error(request, "Syncing a board needs the permission to change it.")
                return redirect(reverse("admin:github_board_board_sync", args=[board.pk]))
            action = request.POST.get("action", "sync")
            dry_run = action != "sync" and action != "backfill"
            try:
                report = board_sync(board=board, dry_run=dry_run, backfill=action.startswith("backfill"))
            except BoardRefused as exc:
                messages.error(request, exc.message)
                return redirect(reverse("admin:github_board_board_sync", args=[board.pk]))
            if not dry_run:
                messages.success(request, f"Synced {board}.")
                return redirect(reverse("admin:github_board_board_sync", args=[board.pk]))
            lines = report_lines(report, dry_run=True)
        elif board.last_report:
            lines = report_lines(SyncReport.from_dict(board.last_report), dry_run=False)
        context = {
            **self.admin_site.each_context(request),
            "title": f"GitHub board of {board.release.slug}",
            "board": board,
            "lines": lines,
            "opts": self.model._meta,
            "can_sync": self.has_change_permission(request, board),
        }
        return TemplateResponse(request, "github/board_sync.html", context)


@admin.register(BoardItem)
class BoardItemAdmin(admin.ModelAdmin):
    list_display = ["request", "board", "kind", "item_id", "linked_at"]
    list_select_related = ["board__release", "request__enhancement", "request__milestone"]
    raw_id_fields = ["request"]
    readonly_fields = ["linked_at"]


@admin.register(BoardWrite)
class BoardWriteAdmin(admin.ModelAdmin):
    """The board writes' ledger: a failed write shows GitHub's words; Retry sends it again."""

    list_display = ["request", "event", "board", "state", "attempts", "last_error", "sent_at", "updated_at"]
    list_filter = ["state", "board"]
    list_select_related = ["board__release", "request__enhancement", "request__milestone"]
    raw_id_fields = ["request"]
    readonly_fields = [f.name for f in BoardWrite._meta.fields]
    actions = ["retry"]

    @admin.action(description="Retry the selected failed writes", permissions=["change"])
    def retry(self, request, queryset):
        count = board_write_retry(write_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} write{'s' if count != 1 else ''} queued again.")


@admin.register(BoardConflict)
class BoardConflictAdmin(admin.ModelAdmin):
    """A field the board shows otherwise than releasecal's record: resolve it in one
    click, "Keep releasecal's" (written to the board) or "Take the board's" (applied in
    releasecal where that is meaningful; otherwise the message says why not)."""

    list_display = ["item", "field", "board_value", "releasecal_value", "request", "seen_at", "resolution"]
    list_filter = [("resolved_at", admin.EmptyFieldListFilter), "field", "board"]
    list_select_related = ["board__release", "request__enhancement", "request__milestone"]
    readonly_fields = [f.name for f in BoardConflict._meta.fields]
    actions = ["keep_releasecal", "take_board"]

    def has_add_permission(self, request):
        return False

    def _resolve(self, request, queryset, resolve) -> None:
        for conflict in queryset.order_by("pk"):
            try:
                said = resolve(conflict_id=conflict.pk, actor=request.user)
            except (ConflictRefused, DomainError) as exc:
                self.message_user(request, f"{conflict.field} of {conflict.item}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, said, messages.SUCCESS)

    @admin.action(description="Keep releasecal's value (write it to the board)", permissions=["change"])
    def keep_releasecal(self, request, queryset):
        self._resolve(request, queryset, conflict_keep_releasecal)

    @admin.action(description="Take the board's value (apply it in releasecal)", permissions=["change"])
    def take_board(self, request, queryset):
        self._resolve(request, queryset, conflict_take_board)
