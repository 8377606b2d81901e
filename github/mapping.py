"""What the handbook says an exception request looks like on the board, and how the
board's own names are matched to the handbook's.

The handbook's names (../shared/data/k8s-board/README.md) are the defaults; a release's
``Board.field_names`` renames a field (``{"Exception Status": "Exception state"}``) or an
option (``{"Exception Status/In Review": "Under review"}``). Names are matched without
regard to case (the handbook capitalises them unevenly). Nothing is guessed: a field or
option the board lacks is reported by name.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django.core.exceptions import ObjectDoesNotExist

from github.board import BoardSnapshot, Field, Item, Value
from people.selectors import handles_of

TYPE = "Exception Request Type"
EXCEPTION_STATUS = "Exception Status"
STATUS = "Status"
LINK = "Exception Request Link"
PRS = "Exception Related PRs"
ADDITIONAL_TIME = "Additional Time"
REQUEST_DATE = "Exception Request Date"
DECISION_DATE = "Exception Decision Date"
SLACK_THREAD = "Exception Request Slack Thread"
LIAISON = "Exception Liaison"

# The fields releasecal owns, in the order the handbook sets them, with their kind.
OWNED_FIELDS: dict[str, str] = {
    TYPE: "SINGLE_SELECT",
    EXCEPTION_STATUS: "SINGLE_SELECT",
    STATUS: "SINGLE_SELECT",
    LINK: "TEXT",
    PRS: "TEXT",
    ADDITIONAL_TIME: "NUMBER",
    REQUEST_DATE: "DATE",
    DECISION_DATE: "DATE",
    SLACK_THREAD: "TEXT",
    LIAISON: "TEXT",
}
# Fields the handbook lets a board keep as text or as a single select (of the team's
# aliases): written as the board has them.
TEXT_OR_SELECT = frozenset({LIAISON})

# Exception Request Type's options by the milestone kinds they extend (code and test
# freeze share one option).
TYPE_KINDS: dict[str, tuple[str, ...]] = {
    "PRR Freeze": ("prr-freeze",),
    "Enhancements Freeze": ("enhancements-freeze",),
    "Code and Test Freeze": ("code-freeze", "test-freeze"),
    "Docs Freeze": ("docs-freeze",),
}
TYPE_BY_KIND = {kind: option for option, kinds in TYPE_KINDS.items() for kind in kinds}

# The request's state: (Exception Status, the KEP's Status). Withdrawn: the handbook
# prescribes nothing, so releasecal writes nothing of the two.
STATE_VALUES: dict[str, tuple[str, str]] = {
    "pending": ("In Review", "Exception Pending"),
    "approved": ("Approved", "Exception Approved"),
    "rejected": ("Rejected", "Removed From Milestone"),
}

# After the granted time ended, the liaison's re-evaluation moves the KEP's Status
# (exceptions.models.GrantEnd.outcome): back to "Tracked For <the freeze>", or out.
TRACKED_STATUS_BY_KIND = {
    "prr-freeze": "Tracked For PRR Freeze",
    "enhancements-freeze": "Tracked For Enhancement Freeze",
    "code-freeze": "Tracked For Code Freeze",
    "test-freeze": "Tracked For Code Freeze",
    "docs-freeze": "Tracked For Docs Freeze",
}
REMOVED_STATUS = "Removed From Milestone"

KEP_IN_TITLE = re.compile(r"\bKEP[- ]?(\d{1,6})\b", re.IGNORECASE)


def kep_number(item: Item) -> int | None:
    """The KEP an item is for: a kubernetes/enhancements issue's number, or the "KEP-1880"
    of a draft item's title (a second exception of one KEP); None when neither says."""
    if item.type == "ISSUE":
        return item.number if item.repository.endswith("/enhancements") else None
    if item.type == "DRAFT_ISSUE":
        found = KEP_IN_TITLE.search(item.title)
        return int(found.group(1)) if found else None
    return None


def utc_date(at: dt.datetime | None) -> str | None:
    return at.astimezone(dt.UTC).date().isoformat() if at else None


def liaison_name(user) -> str:
    """How the board names a liaison: their GitHub handle (the team's aliases are
    handles), else their releasecal user name."""
    handles = handles_of(user=user)
    return handles[0] if handles else user.get_username()


def _reevaluated_status(request) -> str | None:
    """The KEP's Status after its grant ended and the liaison re-evaluated it (None before)."""
    decision = getattr(request, "decision", None) if request.state == "approved" else None
    try:
        grant_end = decision.grant_end if decision is not None else None
    except ObjectDoesNotExist:
        return None
    if grant_end is None or not grant_end.outcome:
        return None
    if grant_end.outcome == "removed":
        return REMOVED_STATUS
    return TRACKED_STATUS_BY_KIND.get(request.milestone.kind.slug)


def wanted_values(request, *, on_draft: bool) -> dict[str, Value]:
    """The handbook's values of ``request`` (an ExceptionRequest), by handbook field name;
    a field releasecal knows nothing of is left out (never cleared). A draft item holds
    the exception's fields only: the KEP's Status lives on its issue's item."""
    values: dict[str, Value] = {}
    # A request naming the PRR and the enhancements freeze is one request with one
    # completion date: one item whose single-select type is its first freeze, "PRR
    # Freeze" (the handbook keeps draft items for a *second* exception of a KEP, and the
    # type cannot hold two freezes); releasecal's record keeps both (docs/github.md).
    option = TYPE_BY_KIND.get(request.milestone.kind.slug)
    if option:
        values[TYPE] = option
    state = STATE_VALUES.get(request.state)
    if state:
        values[EXCEPTION_STATUS] = state[0]
        if not on_draft:
            values[STATUS] = _reevaluated_status(request) or state[1]
    if request.thread_url:
        values[LINK] = request.thread_url
    if request.slack_thread_url:
        values[SLACK_THREAD] = request.slack_thread_url
    if request.liaison_id is not None:
        values[LIAISON] = liaison_name(request.liaison)
    revision = request.current
    if revision is not None and revision.pr_urls:
        values[PRS] = ", ".join(revision.pr_urls)
    if request.days is not None:
        values[ADDITIONAL_TIME] = float(request.days)
    values[REQUEST_DATE] = utc_date(request.submitted_at)
    decision = getattr(request, "decision", None) if request.state in ("approved", "rejected") else None
    if decision is not None:
        values[DECISION_DATE] = utc_date(decision.decided_at)
    return values


@dataclass(frozen=True)
class Names:
    """The board's names for the handbook's, from ``Board.field_names``."""

    overrides: dict[str, str]

    def field(self, name: str) -> str:
        return self.overrides.get(name, name)

    def option(self, field_name: str, option: str) -> str:
        return self.overrides.get(f"{field_name}/{option}", option)


def find_field(snapshot: BoardSnapshot, name: str) -> Field | None:
    lowered = name.casefold()
    return next((f for f in snapshot.fields.values() if f.name.casefold() == lowered), None)


def find_option(board_field: Field, name: str) -> str | None:
    """The board's spelling of option ``name`` of ``board_field`` (None: it has none)."""
    lowered = name.casefold()
    return next((option for option in board_field.options if option.casefold() == lowered), None)


def item_value(item: Item, board_field: Field) -> Value | None:
    lowered = board_field.name.casefold()
    return next((value for name, value in item.values.items() if name.casefold() == lowered), None)


def same(kind: str, before: Value | None, after: Value) -> bool:
    if before is None:
        return False
    if kind == "SINGLE_SELECT":
        return str(before).casefold() == str(after).casefold()
    if kind == "NUMBER":
        return float(before) == float(after)
    return str(before).strip() == str(after).strip()


def type_option(snapshot: BoardSnapshot, names: Names, item: Item) -> str | None:
    """The handbook's Exception Request Type of an item (None: the item has none); an
    option the mapping does not know raises :class:`UnknownOption`."""
    board_field = find_field(snapshot, names.field(TYPE))
    if board_field is None:
        return None
    value = item_value(item, board_field)
    if value is None:
        return None
    for option in TYPE_KINDS:
        if str(value).casefold() == names.option(TYPE, option).casefold():
            return option
    raise UnknownOption(board_field.name, str(value))


class UnknownOption(Exception):
    def __init__(self, field_name: str, option: str):
        self.field_name = field_name
        self.option = option
        super().__init__(f'the option "{option}" of "{field_name}" is not one releasecal maps')
