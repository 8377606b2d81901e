"""The board's services: sync (read the board, report what releasecal would write),
the one-time backfill (link the board's existing exception items to releasecal's
requests), and the reachability check of check_services and the cockpit.

Every contact with GitHub records on the ``Board`` whether it answered (``reachable``,
``last_checked_at``, ``last_error``), also for a dry run: that is a fact about GitHub,
not a change of releasecal's records.
"""

from __future__ import annotations

import logging

from django.db import transaction

from exceptions.followup import exception_request_board_item_set
from github import client as github_client
from github.board import board_fields_read, board_read
from github.client import BoardClient, GitHubUnavailable
from github.models import Board, BoardItem
from github.sync import SyncReport, board_plan
from releasecal import tz
from releasecal.errors import DomainError

log = logging.getLogger(__name__)


class BoardRefused(DomainError):
    """The board cannot be synced as asked (off, no credentials, backfilled already)."""


def board_github(client: BoardClient | None) -> BoardClient:
    """``client``, else the configured credentials' (raises :class:`BoardRefused` without any)."""
    if client is not None:
        return client
    try:
        made = github_client.board_client()
    except GitHubUnavailable as exc:
        raise BoardRefused(str(exc)) from exc
    if made is None:
        raise BoardRefused(
            "No GitHub credentials are set: GITHUB_TOKEN, or GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and "
            "GITHUB_APP_INSTALLATION_ID (docs/github.md)"
        )
    return made


def board_contact_record(board: Board, *, error: str = "", title: str = "", project_id: str = "") -> None:
    board.reachable = not error
    board.last_checked_at = tz.utc_now()
    board.last_error = error
    fields = ["reachable", "last_checked_at", "last_error", "updated_at"]
    if title:
        board.title, board.project_node_id = title, project_id
        fields += ["title", "project_node_id"]
    board.save(update_fields=fields)


def board_sync(
    *, board: Board, dry_run: bool = False, backfill: bool = False, client: BoardClient | None = None
) -> SyncReport:
    """Read the board and plan what releasecal would write, field by field.

    Not a dry run: the report is kept (the cockpit shows it) with ``last_synced_at``.
    ``backfill``: the one-time linking of the board's existing exception items to their
    requests (with ``dry_run``: which links it would make). Raises :class:`BoardRefused`
    when the board is off, no credentials are set, or GitHub cannot be asked (the
    board records the error)."""
    if board.mode == Board.Mode.OFF:
        raise BoardRefused(f"The board of {board.release.slug} is off: set its mode in the admin")
    if backfill and board.backfilled_at is not None:
        raise BoardRefused(
            f"The board of {board.release.slug} was backfilled at {tz.render(board.backfilled_at, 'UTC')}: "
            "a backfill is done once (later links come with the writes)"
        )
    github = board_github(client)
    try:
        snapshot = board_read(github, owner=board.owner, number=board.number)
    except GitHubUnavailable as exc:
        log.warning("github board %s: %s", board, exc)
        board_contact_record(board, error=str(exc))
        raise BoardRefused(f"The board {board.owner}/{board.number} could not be read: {exc}") from exc
    board_contact_record(board, title=snapshot.title, project_id=snapshot.project_id)
    report = board_plan(board, snapshot)
    if backfill:
        report.links = _backfill(board, report, dry_run=dry_run)
    if not dry_run:
        board.last_synced_at = tz.utc_now()
        board.last_report = report.as_dict()
        board.save(update_fields=["last_synced_at", "last_report", "updated_at"])
    return report


@transaction.atomic
def _backfill(board: Board, report: SyncReport, *, dry_run: bool) -> list[str]:
    """Link each request the board already holds (an item with its type and KEP) to that
    item, so that no write ever adds a second item for it."""
    lines = []
    now = tz.utc_now()
    for plan in report.plans:
        if plan.linked or not plan.item_id or plan.action != "update":
            continue
        lines.append(f"KEP-{plan.kep} ({plan.type}, request #{plan.request_id}) -> {plan.item} ({plan.item_id})")
        if not dry_run:
            BoardItem.objects.create(
                board=board,
                item_id=plan.item_id,
                kind=plan.item_kind,
                request_id=plan.request_id,
                linked_at=now,
            )
            if plan.item_url:
                exception_request_board_item_set(request_id=plan.request_id, url=plan.item_url)
            plan.linked = True
    if not dry_run:
        board.backfilled_at = now
        board.save(update_fields=["backfilled_at", "updated_at"])
    return lines


def board_check(*, board: Board, client: BoardClient) -> str:
    """Ask GitHub for the board (one query); one line, and the board records the answer."""
    try:
        head = board_fields_read(client, owner=board.owner, number=board.number)
    except GitHubUnavailable as exc:
        board_contact_record(board, error=str(exc))
        return f"{board.release.slug} {board.owner}/{board.number}: unreachable: {exc}"
    board_contact_record(board, title=head.title, project_id=head.project_id)
    synced = tz.render(board.last_synced_at, "UTC") if board.last_synced_at else "never"
    return (
        f"{board.release.slug} {board.owner}/{board.number} ({board.get_mode_display().split(':')[0].lower()}): "
        f'reachable ("{head.title}"), last synced {synced}'
    )


# check_services is the beat's liveness probe (15-20 s): each board's question is bounded
# to this, without retries, so a slow or down GitHub is reported, never a failed probe.
CHECK_TIMEOUT = 3.0


def board_status_check() -> str:
    """check_services' line: each board of a release not yet released, not off, asked now."""
    boards = list(
        Board.objects.exclude(mode=Board.Mode.OFF)
        .exclude(release__status="released")
        .select_related("release")
        .order_by("release__slug")
    )
    if not boards:
        return "off (no board set)"
    try:
        github = github_client.board_client(timeout=CHECK_TIMEOUT, retries=0)
    except GitHubUnavailable as exc:
        return f"misconfigured: {exc}"
    if github is None:
        return "off (no GitHub credentials set)"
    return "; ".join(board_check(board=board, client=github) for board in boards)
