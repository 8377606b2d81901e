"""The sync's plan: each of the release's exception requests matched to its board item,
and what releasecal would write there, field by field. Reads the database, writes
nothing (the services save the outcome).

Matching, in order: an item linked to the request (``BoardItem``); else an item whose
Exception Request Type and KEP (the enhancements issue's number, or "KEP-1880" in a
draft's title) are the request's; else, for a request no item holds, the KEP's issue item
when it carries no other exception (the fields go there), or a new draft item (a second
exception of one KEP, as the handbook says).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from exceptions.models import ExceptionRequest
from github import mapping
from github.board import BoardSnapshot, Item
from github.models import Board, BoardItem

ACTION_UPDATE = "update"  # set fields of the item
ACTION_ADD_ISSUE = "add issue"  # add the KEP's issue to the board, then set the fields
ACTION_DRAFT = "create draft"  # a draft item for a second exception of one KEP

DRAFT_MARK = re.compile(r"\(releasecal #(\d+)\)")


def item_url(board: Board, database_id: str) -> str:
    """The item as a person opens it: the board with the item's pane."""
    return f"{board.url}?pane=issue&itemId={database_id}" if database_id else ""


def draft_title(request) -> str:
    """The title of the draft item releasecal creates for a second exception of a KEP."""
    kind = mapping.TYPE_BY_KIND.get(request.milestone.kind.slug, request.milestone.title)
    return f"KEP-{request.enhancement.number}: {kind} exception (releasecal #{request.pk})"


@dataclass
class Change:
    field: str  # the board's name of the field
    before: str | float | None
    after: str | float


@dataclass
class ItemPlan:
    request_id: int
    kep: int
    type: str  # the handbook's Exception Request Type
    state: str
    item_id: str  # "" when the item does not exist yet
    item: str  # how a person finds it: "kubernetes/enhancements#1880", 'draft "..."'
    item_kind: str  # BoardItem.Kind: "issue" or "draft" ("" when the item does not exist yet)
    action: str
    linked: bool  # a BoardItem row holds the link already
    changes: list[Change] = field(default_factory=list)
    item_url: str = ""  # the item on the board, as a person opens it ("" when it does not exist yet)


@dataclass
class SyncReport:
    release: str
    board: str
    title: str
    mode: str
    items_read: int
    exception_items: int
    requests: int  # GraphQL requests the read took
    plans: list[ItemPlan] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)  # what the backfill linked (or would)

    @property
    def writes(self) -> int:
        return sum(len(plan.changes) + (plan.action != ACTION_UPDATE) for plan in self.plans)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SyncReport:
        """The report kept on the board (``Board.last_report``) as it was made."""
        plans = [
            ItemPlan(**{**plan, "changes": [Change(**change) for change in plan["changes"]]})
            for plan in data.get("plans", [])
        ]
        return cls(**{**data, "plans": plans})


def _changes(
    snapshot: BoardSnapshot, names: mapping.Names, request, item: Item | None, problems: list[str], *, on_draft: bool
) -> list[Change]:
    changes = []
    for handbook_name, wanted in mapping.wanted_values(request, on_draft=on_draft).items():
        board_field = mapping.find_field(snapshot, names.field(handbook_name))
        if board_field is None:
            problem = f'the board has no field "{names.field(handbook_name)}" (the handbook\'s "{handbook_name}")'
            if problem not in problems:
                problems.append(problem)
            continue
        kind = mapping.OWNED_FIELDS[handbook_name]
        if handbook_name in mapping.TEXT_OR_SELECT and board_field.data_type == "SINGLE_SELECT":
            kind = "SINGLE_SELECT"
        after = wanted
        if kind == "SINGLE_SELECT":
            wanted_option = names.option(handbook_name, str(wanted))
            option = mapping.find_option(board_field, wanted_option)
            if option is None:
                problem = (
                    f'the board\'s field "{board_field.name}" has no option "{wanted_option}"'
                    f" (its options: {', '.join(board_field.options) or 'none'})"
                )
                if problem not in problems:
                    problems.append(problem)
                continue
            after = option
        before = mapping.item_value(item, board_field) if item else None
        if not mapping.same(kind, before, after):
            changes.append(Change(field=board_field.name, before=before, after=after))
    return changes


def _request_label(request) -> str:
    return f"KEP-{request.enhancement.number} ({mapping.TYPE_BY_KIND.get(request.milestone.kind.slug, '?')})"


def board_plan(board: Board, snapshot: BoardSnapshot) -> SyncReport:
    names = mapping.Names(dict(board.field_names or {}))
    report = SyncReport(
        release=board.release.slug,
        board=f"{board.owner}/{board.number}",
        title=snapshot.title,
        mode=board.mode,
        items_read=len(snapshot.items),
        exception_items=0,
        requests=snapshot.requests,
    )
    if mapping.find_field(snapshot, names.field(mapping.TYPE)) is None:
        report.problems.append(
            f'the board has no field "{names.field(mapping.TYPE)}": no item can be read as an exception request'
        )
    requests = list(
        ExceptionRequest.objects.filter(release=board.release)
        .select_related("enhancement", "milestone__kind", "decision__grant_end", "liaison")
        .prefetch_related("revisions")
        .order_by("enhancement__number", "milestone__at", "submitted_at", "id")
    )
    linked = dict(BoardItem.objects.filter(board=board).values_list("request_id", "item_id"))
    items = {item.id: item for item in snapshot.items if not item.archived}
    by_request: dict[int, Item] = {}
    used: set[str] = set()

    # 1. Links already made.
    for request in requests:
        item_id = linked.get(request.pk)
        if item_id is None:
            continue
        if item_id in items:
            by_request[request.pk] = items[item_id]
            used.add(item_id)
        else:
            report.problems.append(f"{_request_label(request)}: its linked item {item_id} is no longer on the board")

    # A draft releasecal created names its request ("... (releasecal #12)"): matched even
    # when the write that set its fields was lost.
    for item in items.values():
        found = DRAFT_MARK.search(item.title) if item.type == "DRAFT_ISSUE" else None
        request = next((r for r in requests if found and r.pk == int(found.group(1))), None)
        if request is not None and request.pk not in by_request and item.id not in used:
            by_request[request.pk] = item
            used.add(item.id)

    # 2. Exception items, by KEP and type.
    for item in items.values():
        try:
            option = mapping.type_option(snapshot, names, item)
        except mapping.UnknownOption as exc:
            report.problems.append(f"{item.label}: {exc}")
            continue
        if option is None:
            continue
        report.exception_items += 1
        if item.id in used:
            continue
        number = mapping.kep_number(item)
        if number is None:
            report.problems.append(f"{item.label}: no KEP number (a draft's title names it as KEP-1880)")
            continue
        kinds = mapping.TYPE_KINDS[option]
        match = [
            r
            for r in requests
            if r.enhancement.number == number and r.milestone.kind.slug in kinds and r.pk not in by_request
        ]
        if not match:
            report.problems.append(f"{item.label}: KEP-{number} ({option}) has no exception request in releasecal")
            continue
        # A live request before a decided or withdrawn one of the same KEP and freeze.
        match.sort(key=lambda r: (r.state not in ExceptionRequest.ACTIVE_STATES, -r.submitted_at.timestamp()))
        by_request[match[0].pk] = item
        used.add(item.id)

    # 3. Requests no item holds yet.
    issue_items = {
        mapping.kep_number(item): item for item in items.values() if item.type == "ISSUE" and mapping.kep_number(item)
    }
    for request in requests:
        if request.state == ExceptionRequest.State.WITHDRAWN:
            continue  # matched above (so its item is no stranger), never written
        item = by_request.get(request.pk)
        action = ACTION_UPDATE
        if item is None:
            issue_item = issue_items.get(request.enhancement.number)
            if issue_item is not None and issue_item.id not in used:
                item, used = issue_item, used | {issue_item.id}
            elif issue_item is not None:
                action = ACTION_DRAFT
            else:
                action = ACTION_ADD_ISSUE
        on_draft = action == ACTION_DRAFT or (item is not None and item.type == "DRAFT_ISSUE")
        changes = _changes(snapshot, names, request, item, report.problems, on_draft=on_draft)
        plan = ItemPlan(
            request_id=request.pk,
            kep=request.enhancement.number,
            type=mapping.TYPE_BY_KIND.get(request.milestone.kind.slug, ""),
            state=request.state,
            item_id=item.id if item else "",
            item=item.label if item else "",
            item_kind=("draft" if item.type == "DRAFT_ISSUE" else "issue") if item else "",
            action=action,
            linked=request.pk in linked,
            changes=changes,
            item_url=item_url(board, item.database_id) if item else "",
        )
        if plan.changes or plan.action != ACTION_UPDATE:
            report.plans.append(plan)
        elif not plan.linked and plan.item_id:
            report.plans.append(plan)  # nothing to write, but the backfill links it
    return report
