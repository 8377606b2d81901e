from django.contrib import admin, messages
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from github.comments import issue_comment_mark_posted, issue_comment_retry
from github.conflicts import ConflictRefused, conflict_keep_releasecal, conflict_take_board
from github.models import Board, BoardConflict, BoardItem, BoardWrite, IssueComment, IssueCommentSetting
from github.report import report_lines
from github.services import BoardRefused, board_sync
from github.sweeps import SweepRefused, cleanup_plan, opt_in_plan, sweep_record
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


@admin.register(IssueCommentSetting)
class IssueCommentSettingAdmin(admin.ModelAdmin):
    """Per release: the KEP issues' comments off, listed to post by hand, or posted."""

    list_display = ["release", "mode", "repository"]
    list_select_related = ["release"]
    autocomplete_fields = ["release"]


@admin.register(IssueComment)
class IssueCommentAdmin(admin.ModelAdmin):
    """The KEP issues' comments: a failed one shows GitHub's words (locked, deleted, no
    write access) and Retry; a listed one is posted by hand from "to post"."""

    list_display = ["kep", "event", "release", "state", "attempts", "last_error", "comment_url", "sent_at"]
    list_filter = ["state", "event", "release"]
    list_select_related = ["release"]
    search_fields = ["kep__exact", "source"]
    readonly_fields = [f.name for f in IssueComment._meta.fields]
    actions = ["retry", "mark_posted"]

    def get_urls(self):
        return [
            path("to-post/", self.admin_site.admin_view(self.to_post_view), name="github_board_issuecomment_to_post"),
            path("sweeps/", self.admin_site.admin_view(self.sweeps_view), name="github_board_issuecomment_sweeps"),
            *super().get_urls(),
        ]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Retry the selected failed comments", permissions=["change"])
    def retry(self, request, queryset):
        count = issue_comment_retry(comment_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{count} comment{'s' if count != 1 else ''} queued again.")

    @admin.action(description="Mark the selected listed comments as posted by hand", permissions=["change"])
    def mark_posted(self, request, queryset):
        count = issue_comment_mark_posted(comment_ids=list(queryset.values_list("pk", flat=True)), actor=request.user)
        self.message_user(request, f"{count} comment{'s' if count != 1 else ''} marked posted.")

    def to_post_view(self, request: HttpRequest):
        """The comments to post by hand (each with a copy button and a "posted" mark),
        and those GitHub refused (with its words)."""
        if not self.has_view_permission(request):
            return redirect("admin:index")
        if request.method == "POST":
            if not self.has_change_permission(request):
                messages.error(request, "Marking a comment posted needs the permission to change comments.")
            else:
                try:
                    ids = [int(request.POST.get("comment", ""))]
                except ValueError:
                    ids = []
                if issue_comment_mark_posted(comment_ids=ids, actor=request.user):
                    messages.success(request, "Marked posted.")
                else:
                    messages.error(request, "That comment is not waiting to be posted by hand (already marked?).")
            return redirect(reverse("admin:github_board_issuecomment_to_post"))
        base = IssueComment.objects.select_related("release").order_by("release__slug", "kep", "pk")
        context = {
            **self.admin_site.each_context(request),
            "title": "KEP issue comments to post",
            "opts": self.model._meta,
            "listed": list(base.filter(state=IssueComment.State.LISTED)[:200]),
            "failed": list(base.filter(state=IssueComment.State.FAILED)[:200]),
            # The latest listed comments a corrected decision took off the list (why, so a
            # person who copied one knows not to post it).
            "superseded": list(base.filter(state=IssueComment.State.SUPERSEDED).order_by("-updated_at")[:20]),
            "can_mark": self.has_change_permission(request),
        }
        return TemplateResponse(request, "github/issue_comments_to_post.html", context)

    def sweeps_view(self, request: HttpRequest):
        """The sweeps' plans (opt-in reminders, cleanup): a dry run shows the plan, a run
        records its comments."""
        if not self.has_view_permission(request):
            return redirect("admin:index")
        data = request.POST if request.method == "POST" else request.GET
        release, following, sweep = data.get("release", ""), data.get("next", ""), data.get("sweep", "")
        lines = None
        if sweep:
            run = request.method == "POST" and data.get("action") == "run"
            if run and not self.has_change_permission(request):
                messages.error(request, "Running a sweep needs the permission to change comments.")
                run = False

            def planned():
                if sweep != "cleanup":
                    return opt_in_plan(release_slug=release)
                if not following:
                    raise SweepRefused("The cleanup needs the next release (e.g. 1.38).")
                return cleanup_plan(release_slug=release, next_slug=following)

            try:
                plan = planned()
                if run:
                    made = sweep_record(plan=plan)
                    messages.success(request, f"{len(made)} comment{'s' if len(made) != 1 else ''} recorded.")
                    plan = planned()  # as recorded now
                lines = plan.lines(dry_run=not run)
            except SweepRefused as exc:
                messages.error(request, exc.message)
        context = {
            **self.admin_site.each_context(request),
            "title": "KEP issue sweeps",
            "opts": self.model._meta,
            "lines": lines,
            "release": release,
            "next": following,
            "sweep": sweep,
            "can_run": self.has_change_permission(request),
        }
        return TemplateResponse(request, "github/issue_sweeps.html", context)
