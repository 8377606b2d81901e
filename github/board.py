"""Reading a board: its field definitions and every item with its values, paginated by
100 (GitHub's most). Pure reading: nothing is saved here.

A phase per function, each returning a dataclass: ``board_fields_read`` (the project and
its fields), ``board_items_read`` (the items), ``board_read`` (both); and
``board_item_read``, one item with its board's fields in one request (a webhook's pull).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from github.client import BoardClient, GitHubUnavailable

# Item values, by the board's field names: an option's name, a text, a number, an ISO date
# or an iteration's title. GitHub's built-in fields (Title, Assignees, Labels, ...) are
# listed among the fields but carry no value of these kinds.
Value = str | float


@dataclass(frozen=True)
class Field:
    id: str
    name: str
    data_type: str  # TEXT, NUMBER, DATE, SINGLE_SELECT, ITERATION, TITLE, ...
    options: dict[str, str] = field(default_factory=dict)  # option name -> option id


@dataclass(frozen=True)
class Item:
    id: str
    type: str  # ISSUE, DRAFT_ISSUE, PULL_REQUEST, REDACTED
    title: str
    number: int | None  # the number (None for a draft)
    repository: str  # "kubernetes/enhancements" ("" for a draft)
    url: str
    archived: bool
    values: dict[str, Value]
    database_id: str = ""  # the item's number in its board's links (?pane=issue&itemId=...)

    @property
    def label(self) -> str:
        if self.type == "ISSUE":
            return f"{self.repository}#{self.number}"
        return f'draft "{self.title}"'


@dataclass(frozen=True)
class BoardFields:
    project_id: str
    title: str
    url: str
    fields: dict[str, Field]  # by name


@dataclass(frozen=True)
class BoardSnapshot:
    project_id: str
    title: str
    url: str
    fields: dict[str, Field]
    items: list[Item]
    requests: int  # GraphQL requests this read took


def _project(data: dict, owner: str, number: int) -> dict:
    organization = data.get("organization")
    project = organization.get("projectV2") if organization else None
    if project is None:
        raise GitHubUnavailable(f"GitHub has no project {number} of the organization {owner}", permanent=True)
    return project


def _fields(project: dict) -> dict[str, Field]:
    fields = {}
    for node in project["fields"]["nodes"]:
        if not node or "name" not in node:
            continue
        options = {option["name"]: option["id"] for option in node.get("options") or []}
        fields[node["name"]] = Field(id=node["id"], name=node["name"], data_type=node["dataType"], options=options)
    return fields


def board_fields_read(client: BoardClient, *, owner: str, number: int) -> BoardFields:
    project = _project(client.graphql("board_fields", {"owner": owner, "number": number}), owner, number)
    return BoardFields(project_id=project["id"], title=project["title"], url=project["url"], fields=_fields(project))


def _values(nodes: list[dict]) -> dict[str, Value]:
    values: dict[str, Value] = {}
    for node in nodes:
        name = (node or {}).get("field", {}).get("name")
        if not name:
            continue
        kind = node["__typename"]
        if kind == "ProjectV2ItemFieldSingleSelectValue":
            values[name] = node["name"]
        elif kind == "ProjectV2ItemFieldTextValue":
            values[name] = node["text"]
        elif kind == "ProjectV2ItemFieldNumberValue":
            values[name] = float(node["number"])
        elif kind == "ProjectV2ItemFieldDateValue":
            values[name] = node["date"]
        elif kind == "ProjectV2ItemFieldIterationValue":
            values[name] = node["title"]
    return values


def _item(node: dict) -> Item:
    content = node.get("content") or {}
    repository = (content.get("repository") or {}).get("nameWithOwner", "")
    return Item(
        id=node["id"],
        type=node["type"],
        title=content.get("title", ""),
        number=content.get("number"),
        repository=repository,
        url=content.get("url", ""),
        archived=node["isArchived"],
        values=_values(node["fieldValues"]["nodes"]),
        database_id=str(node.get("fullDatabaseId") or ""),
    )


def board_items_read(client: BoardClient, *, owner: str, number: int) -> list[Item]:
    items: list[Item] = []
    after = None
    while True:
        project = _project(
            client.graphql("board_items", {"owner": owner, "number": number, "after": after}), owner, number
        )
        page = project["items"]
        items.extend(_item(node) for node in page["nodes"] if node)
        if not page["pageInfo"]["hasNextPage"]:
            return items
        after = page["pageInfo"]["endCursor"]


def board_read(client: BoardClient, *, owner: str, number: int) -> BoardSnapshot:
    before = client.requests
    head = board_fields_read(client, owner=owner, number=number)
    items = board_items_read(client, owner=owner, number=number)
    return BoardSnapshot(
        project_id=head.project_id,
        title=head.title,
        url=head.url,
        fields=head.fields,
        items=items,
        requests=client.requests - before,
    )


def board_item_read(client: BoardClient, *, item_id: str) -> BoardSnapshot | None:
    """One item (a ``ProjectV2Item``'s node id) with its field values and its board's
    field definitions, in one request: a snapshot holding that item alone (archived or
    not: the caller judges). None when GitHub has no such item (deleted, or the id is not
    an item's)."""
    before = client.requests
    try:
        data = client.graphql("board_item", {"id": item_id})
    except GitHubUnavailable as exc:
        if exc.types and set(exc.types) <= {"NOT_FOUND"}:
            return None
        raise
    node = data.get("node")
    if not node or node.get("__typename") != "ProjectV2Item" or not node.get("project"):
        return None
    project = node["project"]
    return BoardSnapshot(
        project_id=project["id"],
        title=project["title"],
        url=project["url"],
        fields=_fields(project),
        items=[_item(node)],
        requests=client.requests - before,
    )
