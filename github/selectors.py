"""Reads for the cockpit: each release's board, whether GitHub answered, when it synced."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from github.models import Board, BoardConflict, BoardWrite, IssueComment


@dataclass
class BoardRow:
    board: Board
    writes: int  # fields the last sync would write (items to add count one each)
    problems: int
    failed_writes: int  # writes GitHub refused for good (the admin's list has Retry)


def board_rows() -> list[BoardRow]:
    """Every board of an active or planned release (one query), for the cockpit."""
    rows = []
    boards = (
        Board.objects.exclude(release__status="released")
        .select_related("release")
        .annotate(failed=Count("writes", filter=Q(writes__state=BoardWrite.State.FAILED)))
        .order_by("release__slug")
    )
    for board in boards:
        report = board.last_report or {}
        plans = report.get("plans", [])
        writes = sum(len(plan["changes"]) + (plan["action"] != "update") for plan in plans)
        rows.append(
            BoardRow(board=board, writes=writes, problems=len(report.get("problems", [])), failed_writes=board.failed)
        )
    return rows


def open_conflicts(limit: int = 50) -> list[BoardConflict]:
    """The conflicts to resolve, newest first (one query), for the cockpit."""
    return list(
        BoardConflict.objects.filter(resolved_at__isnull=True)
        .exclude(board__release__status="released")
        .select_related("board__release", "request__enhancement")
        .order_by("-seen_at", "-id")[:limit]
    )


@dataclass
class IssueCommentCounts:
    to_post: int  # listed, waiting for a person to post them by hand
    pending: int  # waiting to be posted (a retry, a rate limit)
    failed: int  # refused by GitHub for good (locked, deleted, no write access)


def issue_comment_counts() -> IssueCommentCounts:
    """The KEP issues' comments that need someone, for the cockpit (one query)."""
    counts = IssueComment.objects.aggregate(
        to_post=Count("pk", filter=Q(state=IssueComment.State.LISTED)),
        pending=Count("pk", filter=Q(state__in=[IssueComment.State.PENDING, IssueComment.State.SENDING])),
        failed=Count("pk", filter=Q(state=IssueComment.State.FAILED)),
    )
    return IssueCommentCounts(**counts)
