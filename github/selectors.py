"""Reads for the cockpit: each release's board, whether GitHub answered, when it synced."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from github.models import Board, BoardConflict, BoardWrite


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
