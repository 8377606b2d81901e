"""POST /graphql: graphql-core parses, validates and executes the client's document against
GitHub's published schema (schemas.graphql_schema) over the world of model.py.

Strict where GitHub is: a document the schema refuses gets graphql-ruby's messages and
``extensions.code`` (``undefinedField``, ``argumentLiteralsIncompatible``, ...) with a
path, HTTP 200 and no data; a connection without ``first``/``last`` or asking for more
than 100 fails before execution (``MISSING_PAGINATION_BOUNDARIES``,
``EXCESSIVE_PAGINATION``); node ids of the wrong type, option ids of another field,
values of the wrong kind and items of another project fail as GitHub's mutations do
(``NOT_FOUND``, ``VALIDATION``), each error with ``type``, ``path``, ``locations`` and
``message``. A field the fake does not model answers ``NOT_MODELLED`` (a fake's gap, never
a silent null). The cost of a query is computed as GitHub documents it (requests per
connection, divided by 100, at least 1) and the node limit (500,000) is enforced.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    ValueNode,
    execute,
    get_named_type,
    parse,
    print_ast,
    validate,
    value_from_ast,
)
from graphql.error import GraphQLSyntaxError
from graphql.execution.values import get_variable_values
from graphql.language import ArgumentNode, ObjectFieldNode, VariableDefinitionNode, Visitor, visit

from tests.support.fake_github import model
from tests.support.fake_github.model import DraftIssue, Issue, Item, Project, ProjectField, World
from tests.support.fake_github.schemas import graphql_schema

MAX_PAGE = 100
NODE_LIMIT = 500_000


class GitHubError(Exception):
    """An error GitHub reports in ``errors`` with a ``type`` (NOT_FOUND, VALIDATION, ...)."""

    def __init__(self, type_: str, message: str):
        super().__init__(message)
        self.type = type_
        self.message = message


def _not_found_node(node_id: str) -> GitHubError:
    return GitHubError("NOT_FOUND", f"Could not resolve to a node with the global id of '{node_id}'.")


# ---------------------------------------------------------------- scalars


def _date_in(value: Any) -> dt.date:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        raise GraphQLError(f"{value!r} is not a valid ISO-8601 date (YYYY-MM-DD)")
    try:
        return dt.date.fromisoformat(value)
    except ValueError as error:
        raise GraphQLError(f"{value!r} is not a valid date") from error


def _datetime_in(value: Any) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError as error:
        raise GraphQLError(f"{value!r} is not a valid ISO-8601 date-time") from error


def _literal(parse_value):
    def parse_literal(node: ValueNode, _variables=None):
        value = getattr(node, "value", None)
        return parse_value(value)

    return parse_literal


def _configure_scalars(schema) -> None:
    """The client schema's custom scalars accept anything; GitHub's Date and DateTime do not."""
    date_type, datetime_type = schema.type_map["Date"], schema.type_map["DateTime"]
    if getattr(date_type, "_fake_github", False):
        return
    date_type.parse_value = _date_in
    date_type.parse_literal = _literal(_date_in)
    date_type.serialize = lambda v: v.isoformat() if isinstance(v, dt.date) else v
    datetime_type.parse_value = _datetime_in
    datetime_type.parse_literal = _literal(_datetime_in)
    datetime_type.serialize = lambda v: model.iso(v) if isinstance(v, dt.datetime) else v
    date_type._fake_github = True


def schema():
    built = graphql_schema()
    _configure_scalars(built)
    return built


# ---------------------------------------------------------------- results of one request


@dataclass
class MutationCall:
    """One mutation field of a document, as executed."""

    name: str  # updateProjectV2ItemFieldValue
    alias: str
    input: dict
    ok: bool = False
    error: dict | None = None


@dataclass
class GraphQLOutcome:
    body: dict
    operation: str | None = None  # "query" or "mutation"; None when the document did not parse
    cost: int = 1
    node_count: int = 0
    mutations: list[MutationCall] = field(default_factory=list)
    executed: bool = False


# ---------------------------------------------------------------- validation errors as graphql-ruby words them


class _Paths(Visitor):
    """For every AST node, graphql-ruby's path to it: ["query Name", "organization", ...]."""

    def __init__(self):
        super().__init__()
        self.paths: dict[int, list[str]] = {}
        self.owner: dict[int, tuple[str, str]] = {}  # argument value node -> (field name, argument name)
        self.stack: list[str] = []

    def enter(self, node, *_args):
        label = None
        if isinstance(node, OperationDefinitionNode):
            label = node.operation.value + (f" {node.name.value}" if node.name else "")
        elif isinstance(node, FragmentDefinitionNode):
            label = f"fragment {node.name.value}"
        elif isinstance(node, InlineFragmentNode):
            label = f"... on {node.type_condition.name.value}" if node.type_condition else "..."
        elif isinstance(node, FieldNode):
            label = (node.alias or node.name).value
        elif isinstance(node, ArgumentNode | ObjectFieldNode):
            label = node.name.value
        elif isinstance(node, VariableDefinitionNode):
            label = f"${node.variable.name.value}"
        if label is not None:
            self.stack.append(label)
        self.paths[id(node)] = list(self.stack)
        node_label = label is not None
        self._labelled = getattr(self, "_labelled", [])
        self._labelled.append(node_label)

    def leave(self, node, *_args):
        if self._labelled.pop():
            self.stack.pop()


_RUBY = [
    (
        re.compile(r"Cannot query field '(?P<f>\w+)' on type '(?P<t>\w+)'\."),
        "Field '{f}' doesn't exist on type '{t}'",
        lambda m: {"code": "undefinedField", "typeName": m["t"], "fieldName": m["f"]},
    ),
    (
        re.compile(r"Unknown argument '(?P<a>\w+)' on field '\w+\.(?P<f>\w+)'\."),
        "Field '{f}' doesn't accept argument '{a}'",
        lambda m: {"code": "argumentNotAccepted", "name": m["f"], "typeName": "Field", "argumentName": m["a"]},
    ),
    (
        re.compile(r"Field '(?P<f>\w+)' argument '(?P<a>\w+)' of type '(?P<t>[^']+)' is required, but it was not"),
        "Field '{f}' is missing required arguments: {a}",
        lambda m: {"code": "missingRequiredArguments", "className": "Field", "name": m["f"], "arguments": m["a"]},
    ),
    (
        re.compile(r"Field '(?P<f>\w+)' of type '(?P<t>[^']+)' must have a selection of subfields"),
        "Field '{f}' returns {t} but has no selections. Did you mean '{f} {{ ... }}'?",
        lambda m: {"code": "selectionMismatch", "nodeName": m["f"], "typeName": m["t"]},
    ),
    (
        re.compile(r"Field '(?P<f>\w+)' must not have a selection since type '(?P<t>[^']+)' has no subfields"),
        "Selections can't be made on scalars (field '{f}' returns {t} but has selections [...])",
        lambda m: {"code": "selectionMismatch", "nodeName": m["f"], "typeName": m["t"]},
    ),
    (
        re.compile(r"Variable '\$(?P<v>\w+)' of type '(?P<a>[^']+)' used in position expecting type '(?P<b>[^']+)'"),
        "Type mismatch on variable ${v} and argument (({a}) / ({b}))",
        lambda m: {"code": "variableMismatch", "variableName": m["v"], "typeName": m["a"]},
    ),
    (
        re.compile(r"Variable '\$(?P<v>\w+)' is not defined(?: by operation '(?P<o>\w+)')?\."),
        "Variable ${v} is used by {o} but not declared",
        lambda m: {"code": "variableNotDefined", "variableName": m["v"]},
    ),
    (
        re.compile(r"Variable '\$(?P<v>\w+)' is never used(?: in operation '(?P<o>\w+)')?\."),
        "Variable ${v} is declared by {o} but not used",
        lambda m: {"code": "variableNotUsed", "variableName": m["v"]},
    ),
    (
        re.compile(r"Unknown type '(?P<t>\w+)'\."),
        "No such type {t}, so it can't be a fragment condition",
        lambda m: {"code": "undefinedType", "typeName": m["t"]},
    ),
]


def _ruby_error(error: GraphQLError, paths: _Paths) -> dict:
    node = error.nodes[0] if error.nodes else None
    path = paths.paths.get(id(node), []) if node is not None else []
    out: dict[str, Any] = {"path": path}
    message = error.message
    for pattern, template, extensions in _RUBY:
        match = pattern.search(message)
        if match:
            groups = {k: (v if v is not None else "anonymous") for k, v in match.groupdict().items()}
            out["extensions"] = extensions(groups)
            message = template.format(**groups)
            break
    else:
        if isinstance(node, ValueNode) and len(path) >= 2:
            # ValuesOfCorrectType: a literal of the wrong type for its argument
            argument = path[-1]
            field_name = next((p for p in reversed(path[:-1]) if not p.startswith(("query", "mutation"))), "")
            out["extensions"] = {"code": "argumentLiteralsIncompatible", "typeName": "Field", "argumentName": argument}
            message = f"Argument '{argument}' on Field '{field_name}' has an invalid value. Expected type: {message}"
    if error.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    out["message"] = message
    return out


def _variable_error(error: GraphQLError, operation: OperationDefinitionNode) -> dict:
    """graphql-ruby's shape for a variable the client sent a bad value for."""
    message = error.message
    declared_types = {d.variable.name.value: print_ast(d.type) for d in operation.variable_definitions or []}
    match = re.match(
        r"Variable '\$(\w+)' (?:of (?:non-null|required) type '([^']+)' )?(got invalid value (.*?); (.*)|.*)", message
    )
    out: dict[str, Any] = {}
    if match:
        name = match.group(1)
        declared = declared_types.get(name, match.group(2) or "")
        value = match.group(4)
        explanation = match.group(5) or "Expected value to not be null"
        out["extensions"] = {"value": value, "problems": [{"path": [], "explanation": explanation}]}
        message = f"Variable ${name} of type {declared} was provided invalid value"
    if error.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    out["message"] = message
    return out


# ---------------------------------------------------------------- the static pass: pagination, cost, nodes


def _static_pass(doc, operation: OperationDefinitionNode, variables: dict, paths: _Paths):
    """Walk the operation with fragments inlined: pagination errors, GitHub's cost and node count."""
    gql = schema()
    fragments = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
    errors: list[dict] = []
    requests = 0
    nodes = 0
    root = gql.mutation_type if operation.operation == OperationType.MUTATION else gql.query_type

    def count(value_node, arg_def):
        if value_node is None:
            return None
        return value_from_ast(value_node, arg_def.type, variables)

    def walk(selection_set, parent_type, multiplier: int, seen: frozenset):
        nonlocal requests, nodes
        if selection_set is None:
            return
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                name = selection.name.value
                if name.startswith("__") or not hasattr(parent_type, "fields"):
                    continue
                field_def = parent_type.fields.get(name)
                if field_def is None:
                    continue
                return_type = get_named_type(field_def.type)
                inner = multiplier
                if return_type.name.endswith("Connection") and "first" in field_def.args:
                    args = {a.name.value: a.value for a in selection.arguments}
                    first = count(args.get("first"), field_def.args["first"])
                    last = count(args.get("last"), field_def.args["last"])
                    where = paths.paths.get(id(selection), [])
                    if first is None and last is None:
                        errors.append(
                            {
                                "type": "MISSING_PAGINATION_BOUNDARIES",
                                "path": where,
                                "locations": [
                                    {"line": selection.loc.start_token.line, "column": selection.loc.start_token.column}
                                ],
                                "message": "You must provide a `first` or `last` value to properly paginate "
                                f"the `{name}` connection.",
                            }
                        )
                        size = MAX_PAGE
                    else:
                        size = max(first or 0, last or 0)
                        for arg_name, asked in (("first", first), ("last", last)):
                            if asked is not None and asked > MAX_PAGE:
                                errors.append(
                                    {
                                        "type": "EXCESSIVE_PAGINATION",
                                        "path": where,
                                        "locations": [
                                            {
                                                "line": selection.loc.start_token.line,
                                                "column": selection.loc.start_token.column,
                                            }
                                        ],
                                        "message": f"Requesting {asked} records on the `{name}` connection exceeds the "
                                        f"`{arg_name}` limit of {MAX_PAGE} records.",
                                    }
                                )
                            if asked is not None and asked < 0:
                                errors.append(
                                    {
                                        "type": "INVALID_PAGINATION",
                                        "path": where,
                                        "message": f"`{arg_name}` on the `{name}` connection cannot be less than zero.",
                                    }
                                )
                    requests += multiplier
                    nodes += multiplier * size
                    inner = multiplier * max(size, 1)
                walk(selection.selection_set, return_type, inner, seen)
            elif isinstance(selection, InlineFragmentNode):
                condition = (
                    gql.type_map[selection.type_condition.name.value] if selection.type_condition else parent_type
                )
                walk(selection.selection_set, condition, multiplier, seen)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                fragment = fragments.get(name)
                if fragment is None or name in seen:
                    continue
                walk(
                    fragment.selection_set, gql.type_map[fragment.type_condition.name.value], multiplier, seen | {name}
                )

    walk(operation.selection_set, root, 1, frozenset())
    cost = max(1, math.floor(requests / 100 + 0.5))
    if nodes > NODE_LIMIT:
        errors.append(
            {
                "type": "MAX_NODE_LIMIT_EXCEEDED",
                "message": f"This query requests up to {nodes:,} possible nodes which exceeds the maximum limit "
                f"of {NODE_LIMIT:,}.",
            }
        )
    return errors, cost, nodes


# ---------------------------------------------------------------- execution


class Context:
    """What resolvers see: the world, the caller, the request's rate-limit figures."""

    def __init__(self, world: World, actor, rate: dict, mutations: list[MutationCall]):
        self.world = world
        self.actor = actor  # auth.Actor
        self.rate = rate
        self.mutations = mutations
        self.alias = ""

    @property
    def viewer(self) -> model.User:
        return self.actor.user

    def require_projects(self, write: bool) -> None:
        self.actor.require_graphql_projects(write)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def cursor(index: int) -> str:
    return _b64(f"cursor:v2:{index}")


def _decode_cursor(value: str) -> int:
    try:
        text = base64.b64decode(value, validate=True).decode()
        prefix, _, number = text.rpartition(":")
        if prefix != "cursor:v2":
            raise ValueError(text)
        return int(number)
    except (ValueError, UnicodeDecodeError) as error:
        raise GitHubError("INVALID_CURSOR_ARGUMENTS", f"`{value}` does not appear to be a valid cursor.") from error


def connection(nodes: list, args: dict) -> dict:
    """A GitHub connection over ``nodes``: edges, nodes, pageInfo, totalCount; position cursors."""
    start, end = 0, len(nodes)
    if args.get("after") is not None:
        start = max(start, _decode_cursor(args["after"]) + 1)
    if args.get("before") is not None:
        end = min(end, _decode_cursor(args["before"]))
    indexes = list(range(start, max(start, end)))
    first, last = args.get("first"), args.get("last")
    if first is not None:
        has_next = len(indexes) > first
        indexes = indexes[:first]
    else:
        has_next = end < len(nodes)
    if last is not None:
        has_previous = len(indexes) > last
        indexes = indexes[-last:] if last else []
    else:
        has_previous = start > 0
    window = [nodes[i] for i in indexes]
    return {
        "nodes": window,
        "edges": [{"node": nodes[i], "cursor": cursor(i)} for i in indexes],
        "pageInfo": {
            "hasNextPage": has_next,
            "hasPreviousPage": has_previous,
            "startCursor": cursor(indexes[0]) if indexes else None,
            "endCursor": cursor(indexes[-1]) if indexes else None,
        },
        "totalCount": len(nodes),
    }


@dataclass(eq=False)
class FieldValue:
    """One value of an item's field, as ProjectV2ItemFieldValue's union members show it."""

    item: Item
    field: ProjectField
    raw: Any

    @property
    def typename(self) -> str:
        data_type = self.field.data_type
        return {
            model.TEXT: "ProjectV2ItemFieldTextValue",
            model.TITLE: "ProjectV2ItemFieldTextValue",
            model.NUMBER: "ProjectV2ItemFieldNumberValue",
            model.DATE: "ProjectV2ItemFieldDateValue",
            model.SINGLE_SELECT: "ProjectV2ItemFieldSingleSelectValue",
            model.ITERATION: "ProjectV2ItemFieldIterationValue",
            model.LABELS: "ProjectV2ItemFieldLabelValue",
            model.ASSIGNEES: "ProjectV2ItemFieldUserValue",
            model.MILESTONE: "ProjectV2ItemFieldMilestoneValue",
            model.REPOSITORY: "ProjectV2ItemFieldRepositoryValue",
        }[data_type]

    @property
    def ids(self) -> tuple[int, str]:
        return self.item.value_ids.get(self.field.node_id) or (
            self.item.database_id * 1000 + self.item.project.fields.index(self.field),
            self.item.world.node_id_for(
                "ProjectV2ItemFieldValue", self.item.database_id * 1000 + self.item.project.fields.index(self.field)
            ),
        )


def field_values(item: Item) -> list[FieldValue]:
    """The item's values in field order, as GitHub lists them: built-in ones that have a
    value (Title always; Repository for issues), then every custom field that has one."""
    out = []
    content = item.content
    for fld in item.project.fields:
        if fld.data_type == model.TITLE:
            out.append(FieldValue(item, fld, content.title))
        elif fld.data_type == model.ASSIGNEES:
            if content.assignees:
                out.append(FieldValue(item, fld, content.assignees))
        elif fld.data_type in (model.LABELS, model.MILESTONE, model.REPOSITORY):
            if isinstance(content, DraftIssue):
                continue
            raw = {
                model.LABELS: content.labels,
                model.MILESTONE: content.milestone,
                model.REPOSITORY: content.repository,
            }[fld.data_type]
            if raw:
                out.append(FieldValue(item, fld, raw))
        elif fld.data_type in model.BUILT_IN:
            continue
        elif fld.node_id in item.values:
            out.append(FieldValue(item, fld, item.values[fld.node_id]))
    return out


def _option_dict(option: model.Option) -> dict:
    return {
        "id": option.id,
        "name": option.name,
        "nameHTML": option.name,
        "color": option.color,
        "description": option.description,
        "descriptionHTML": option.description,
    }


def _iteration_dict(iteration: model.Iteration) -> dict:
    return {
        "id": iteration.id,
        "title": iteration.title,
        "titleHTML": iteration.title,
        "startDate": iteration.start_date,
        "duration": iteration.duration,
    }


def _org(ctx: Context, login: str) -> model.Organization:
    org = ctx.world.organizations.get(login.lower())
    if org is None:
        raise GitHubError("NOT_FOUND", f"Could not resolve to an Organization with the login of '{login}'.")
    return org


def _project(ctx: Context, org: model.Organization, number: int) -> Project:
    ctx.require_projects(write=False)
    found = ctx.world.find_project(org.login, number)
    if found is None:
        raise GitHubError("NOT_FOUND", f"Could not resolve to a ProjectV2 with the number {number}.")
    return found


def _repository(ctx: Context, owner: str, name: str) -> model.Repository:
    repo = ctx.world.repositories.get(f"{owner}/{name}".lower())
    if repo is None or (repo.private and not ctx.actor.can_read_private):
        raise GitHubError("NOT_FOUND", f"Could not resolve to a Repository with the name '{owner}/{name}'.")
    return repo


def _issue(repo: model.Repository, number: int) -> Issue:
    issue = repo.issues.get(number)
    if issue is None or issue.deleted:
        raise GitHubError("NOT_FOUND", f"Could not resolve to an issue or pull request with the number of {number}.")
    return issue


def _visible_node(ctx: Context, node_id: str):
    found = ctx.world.node(node_id)
    if found is None:
        return None
    if isinstance(found, Issue) and found.deleted:
        return None
    if isinstance(found, Project | Item | ProjectField):
        ctx.require_projects(write=False)
    return found


def _rate_limit(_source, ctx: Context, dryRun: bool = False) -> dict:
    rate = ctx.rate
    return {
        "limit": rate["limit"],
        "cost": rate["cost"],
        "remaining": rate["remaining"],
        "resetAt": rate["reset_at"],
        "used": rate["used"],
        "nodeCount": rate["node_count"],
    }


_NODE_COMMON = {
    "id": lambda o, c: o.node_id,
    "databaseId": lambda o, c: o.database_id,
}

_ACTOR = {
    **_NODE_COMMON,
    "login": lambda o, c: o.login,
    "name": lambda o, c: o.name,
    "email": lambda o, c: o.email or "",
    "url": lambda o, c: o.html_url,
    "resourcePath": lambda o, c: f"/{o.login}",
    "avatarUrl": lambda o, c, size=None: f"https://avatars.githubusercontent.com/u/{o.database_id}?v=4",
    "createdAt": lambda o, c: model.EPOCH,
    "updatedAt": lambda o, c: model.EPOCH,
}

_FIELD_COMMON = {
    **_NODE_COMMON,
    "name": lambda o, c: o.name,
    "dataType": lambda o, c: o.data_type,
    "project": lambda o, c: o.project,
    "createdAt": lambda o, c: o.created_at,
    "updatedAt": lambda o, c: o.updated_at,
}

_VALUE_COMMON = {
    "id": lambda o, c: o.ids[1],
    "databaseId": lambda o, c: o.ids[0],
    "field": lambda o, c: o.field,
    "item": lambda o, c: o.item,
    "createdAt": lambda o, c: o.item.created_at,
    "updatedAt": lambda o, c: o.item.updated_at,
    "creator": lambda o, c: o.item.creator,
}


def _single_select_value(attribute: str):
    def resolve(o: FieldValue, c):
        option = o.field.option_by_id(o.raw)
        if option is None:
            return None if attribute != "color" else "GRAY"
        return _option_dict(option)[attribute]

    return resolve


def _iteration_value(attribute: str):
    def resolve(o: FieldValue, c):
        iteration = o.field.iteration_by_id(o.raw)
        return _iteration_dict(iteration)[attribute]

    return resolve


RESOLVERS: dict[str, dict[str, Any]] = {
    "Query": {
        "organization": lambda o, c, login: _org(c, login),
        "repository": lambda o, c, owner, name, followRenames=True: _repository(c, owner, name),
        "user": lambda o, c, login: (
            c.world.users.get(login.lower())
            or (_ for _ in ()).throw(
                GitHubError("NOT_FOUND", f"Could not resolve to a User with the login of '{login}'.")
            )
        ),
        "viewer": lambda o, c: c.viewer,
        "node": lambda o, c, id: _visible_node(c, id) or (_ for _ in ()).throw(_not_found_node(id)),
        "nodes": lambda o, c, ids: [_visible_node(c, i) for i in ids],
        "rateLimit": _rate_limit,
    },
    "Organization": {
        **_NODE_COMMON,
        "login": lambda o, c: o.login,
        "name": lambda o, c: o.name,
        "url": lambda o, c: o.url,
        "resourcePath": lambda o, c: f"/{o.login}",
        "projectV2": lambda o, c, number: _project(c, o, number),
        "projectsV2": lambda o, c, query=None, orderBy=None, minPermissionLevel=None, **page: (
            c.require_projects(write=False),
            connection(
                [p for p in c.world.projects if p.owner is o and (not query or query.lower() in p.title.lower())], page
            ),
        )[1],
        "repository": lambda o, c, name, followRenames=True: _repository(c, o.login, name),
    },
    "User": _ACTOR,
    "Bot": _ACTOR,
    "Repository": {
        **_NODE_COMMON,
        "name": lambda o, c: o.name,
        "nameWithOwner": lambda o, c: o.full_name,
        "owner": lambda o, c: o.owner,
        "url": lambda o, c: o.html_url,
        "isPrivate": lambda o, c: o.private,
        "issue": lambda o, c, number: _issue(o, number),
        "issues": lambda o, c, states=None, labels=None, filterBy=None, orderBy=None, **page: connection(
            [
                i
                for i in sorted(o.issues.values(), key=lambda i: i.number)
                if not i.deleted
                and (not states or i.state.upper() in states)
                and (not labels or set(labels) & set(i.label_names))
                and (
                    not filterBy
                    or not filterBy.get("milestone")
                    or (i.milestone and filterBy["milestone"] in (i.milestone.title, str(i.milestone.number)))
                )
            ],
            page,
        ),
        "label": lambda o, c, name: o.labels.get(name.lower()),
        "labels": lambda o, c, query=None, orderBy=None, **page: connection(list(o.labels.values()), page),
        "milestone": lambda o, c, number: o.milestones.get(number),
        "milestones": lambda o, c, states=None, orderBy=None, query=None, **page: connection(
            [m for m in o.milestones.values() if not states or m.state.upper() in states], page
        ),
    },
    "Issue": {
        **_NODE_COMMON,
        "number": lambda o, c: o.number,
        "title": lambda o, c: o.title,
        "body": lambda o, c: o.body or "",
        "url": lambda o, c: o.html_url,
        "resourcePath": lambda o, c: o.html_url.removeprefix(model.WEB),
        "state": lambda o, c: o.state.upper(),
        "stateReason": lambda o, c, enableDuplicate=False: o.state_reason.upper() if o.state_reason else None,
        "closed": lambda o, c: o.state == "closed",
        "closedAt": lambda o, c: o.closed_at,
        "locked": lambda o, c: o.locked,
        "activeLockReason": lambda o, c: o.active_lock_reason.upper() if o.active_lock_reason else None,
        "createdAt": lambda o, c: o.created_at,
        "updatedAt": lambda o, c: o.updated_at,
        "author": lambda o, c: o.user,
        "repository": lambda o, c: o.repository,
        "labels": lambda o, c, orderBy=None, **page: connection(o.labels, page),
        "milestone": lambda o, c: o.milestone,
        "assignees": lambda o, c, **page: connection(o.assignees, page),
        "comments": lambda o, c, orderBy=None, **page: connection(o.comments, page),
        "projectItems": lambda o, c, includeArchived=True, **page: (
            c.require_projects(write=False),
            connection(
                [
                    i
                    for p in c.world.projects
                    for i in p.items
                    if i.content is o and (includeArchived or not i.archived)
                ],
                page,
            ),
        )[1],
    },
    "IssueComment": {
        **_NODE_COMMON,
        "body": lambda o, c: o.body,
        "author": lambda o, c: o.user,
        "createdAt": lambda o, c: o.created_at,
        "updatedAt": lambda o, c: o.updated_at,
        "url": lambda o, c: o.rest()["html_url"],
    },
    "Label": {
        **_NODE_COMMON,
        "name": lambda o, c: o.name,
        "color": lambda o, c: o.color,
        "description": lambda o, c: o.description,
        "url": lambda o, c: f"{o.repository.html_url}/labels/{o.name}",
    },
    "Milestone": {
        **_NODE_COMMON,
        "number": lambda o, c: o.number,
        "title": lambda o, c: o.title,
        "description": lambda o, c: o.description,
        "state": lambda o, c: o.state.upper(),
        "closed": lambda o, c: o.state == "closed",
        "dueOn": lambda o, c: o.due_on,
        "url": lambda o, c: f"{o.repository.html_url}/milestone/{o.number}",
    },
    "ProjectV2": {
        **_NODE_COMMON,
        "number": lambda o, c: o.number,
        "title": lambda o, c: o.title,
        "url": lambda o, c: o.url,
        "resourcePath": lambda o, c: o.url.removeprefix(model.WEB),
        "closed": lambda o, c: o.closed,
        "closedAt": lambda o, c: None,
        "public": lambda o, c: o.public,
        "template": lambda o, c: False,
        "shortDescription": lambda o, c: o.short_description,
        "readme": lambda o, c: None,
        "createdAt": lambda o, c: o.created_at,
        "updatedAt": lambda o, c: o.updated_at,
        "owner": lambda o, c: o.owner,
        "creator": lambda o, c: o.world.default_user,
        "viewerCanUpdate": lambda o, c: c.actor.can_write_projects,
        "fields": lambda o, c, orderBy=None, **page: connection(o.fields, page),
        "field": lambda o, c, name: next((f for f in o.fields if f.name == name), None),
        "items": lambda o, c, orderBy=None, query=None, **page: connection(o.items, page),
    },
    "ProjectV2Field": _FIELD_COMMON,
    "ProjectV2SingleSelectField": {
        **_FIELD_COMMON,
        "options": lambda o, c, names=None: [_option_dict(opt) for opt in o.options if not names or opt.name in names],
    },
    "ProjectV2IterationField": {
        **_FIELD_COMMON,
        "configuration": lambda o, c: {
            "iterations": [_iteration_dict(i) for i in o.iterations],
            "completedIterations": [],
            "duration": o.iterations[0].duration if o.iterations else 14,
            "startDay": o.iterations[0].start_date.isoweekday() if o.iterations else 1,
        },
    },
    "ProjectV2Item": {
        **_NODE_COMMON,
        "fullDatabaseId": lambda o, c: str(o.database_id),
        "type": lambda o, c: o.type,
        "isArchived": lambda o, c: o.archived,
        "content": lambda o, c: None if isinstance(o.content, Issue) and o.content.deleted else o.content,
        "project": lambda o, c: o.project,
        "createdAt": lambda o, c: o.created_at,
        "updatedAt": lambda o, c: o.updated_at,
        "creator": lambda o, c: o.creator,
        "fieldValues": lambda o, c, orderBy=None, **page: connection(field_values(o), page),
        "fieldValueByName": lambda o, c, name: next((v for v in field_values(o) if v.field.name == name), None),
    },
    "DraftIssue": {
        "id": lambda o, c: o.node_id,
        "title": lambda o, c: o.title,
        "body": lambda o, c: o.body,
        "bodyText": lambda o, c: o.body,
        "bodyHTML": lambda o, c: o.body,
        "createdAt": lambda o, c: o.created_at,
        "updatedAt": lambda o, c: o.updated_at,
        "creator": lambda o, c: o.creator,
        "assignees": lambda o, c, **page: connection(o.assignees, page),
        "projectV2Items": lambda o, c, **page: connection(
            [i for p in c.world.projects for i in p.items if i.content is o], page
        ),
    },
    "ProjectV2ItemFieldTextValue": {**_VALUE_COMMON, "text": lambda o, c: o.raw},
    "ProjectV2ItemFieldNumberValue": {**_VALUE_COMMON, "number": lambda o, c: o.raw},
    "ProjectV2ItemFieldDateValue": {**_VALUE_COMMON, "date": lambda o, c: o.raw},
    "ProjectV2ItemFieldSingleSelectValue": {
        **_VALUE_COMMON,
        "optionId": lambda o, c: o.raw,
        "name": _single_select_value("name"),
        "nameHTML": _single_select_value("nameHTML"),
        "color": _single_select_value("color"),
        "description": _single_select_value("description"),
        "descriptionHTML": _single_select_value("descriptionHTML"),
    },
    "ProjectV2ItemFieldIterationValue": {
        **_VALUE_COMMON,
        "iterationId": lambda o, c: o.raw,
        "title": _iteration_value("title"),
        "titleHTML": _iteration_value("titleHTML"),
        "startDate": _iteration_value("startDate"),
        "duration": _iteration_value("duration"),
    },
    "ProjectV2ItemFieldLabelValue": {
        "field": lambda o, c: o.field,
        "labels": lambda o, c, **page: connection(o.raw, page),
    },
    "ProjectV2ItemFieldUserValue": {
        "field": lambda o, c: o.field,
        "users": lambda o, c, **page: connection(o.raw, page),
    },
    "ProjectV2ItemFieldMilestoneValue": {"field": lambda o, c: o.field, "milestone": lambda o, c: o.raw},
    "ProjectV2ItemFieldRepositoryValue": {"field": lambda o, c: o.field, "repository": lambda o, c: o.raw},
}


# ---------------------------------------------------------------- mutations


def _load(ctx: Context, node_id: str, cls, label: str):
    found = ctx.world.node(node_id)
    if found is None or (isinstance(found, Issue) and found.deleted):
        raise _not_found_node(node_id)
    if not isinstance(found, cls):
        raise GitHubError("NOT_FOUND", f"Could not resolve to {label} node with the global id of '{node_id}'.")
    return found


def _item_in(project: Project, item: Item, message: str = "The item does not exist in the project") -> Item:
    if item.project is not project or item not in project.items:
        raise GitHubError("VALIDATION", message)
    return item


def _field_in(project: Project, fld: ProjectField) -> ProjectField:
    if fld.project is not project:
        raise GitHubError("VALIDATION", "The field does not exist in the project")
    return fld


_VALUE_KEY = {
    model.TEXT: ("text", "a text value"),
    model.NUMBER: ("number", "a number value"),
    model.DATE: ("date", "a date value"),
    model.SINGLE_SELECT: ("singleSelectOptionId", "a single select option Id"),
    model.ITERATION: ("iterationId", "an iteration Id"),
}


def update_item_field_value(ctx: Context, data: dict) -> dict:
    ctx.require_projects(write=True)
    project = _load(ctx, data["projectId"], Project, "ProjectV2")
    item = _load(ctx, data["itemId"], Item, "ProjectV2Item")
    fld = _load(ctx, data["fieldId"], ProjectField, "ProjectV2FieldConfiguration")
    _item_in(project, item)
    _field_in(project, fld)
    if item.archived:
        raise GitHubError("VALIDATION", "The item is archived and cannot be updated")
    kind = fld.data_type.lower()
    value = data["value"]
    if fld.data_type == model.TITLE:
        if not isinstance(item.content, DraftIssue):
            raise GitHubError("VALIDATION", "The title field can only be updated on DraftIssues")
        if value.get("text") is None:
            raise GitHubError("VALIDATION", f"Did not receive a text value to update a field of type {kind}")
        ctx.world.set_title(item, value["text"], by=ctx.viewer, via="graphql")
        return {"projectV2Item": item, "clientMutationId": data.get("clientMutationId")}
    if fld.data_type not in _VALUE_KEY:
        raise GitHubError("VALIDATION", f"The field of type {kind} is currently not supported.")
    key, words = _VALUE_KEY[fld.data_type]
    if key not in value:
        raise GitHubError("VALIDATION", f"Did not receive {words} to update a field of type {kind}")
    raw = value[key]
    if fld.data_type == model.SINGLE_SELECT and raw is not None and fld.option_by_id(raw) is None:
        raise GitHubError("VALIDATION", "The single select option Id does not belong to the field")
    if fld.data_type == model.ITERATION and raw is not None and fld.iteration_by_id(raw) is None:
        raise GitHubError("VALIDATION", "The iteration Id does not belong to the field")
    if fld.data_type == model.TEXT and raw is not None and len(raw) > 1024:
        raise GitHubError("UNPROCESSABLE", "Text values cannot exceed 1024 characters")
    if fld.data_type == model.NUMBER and raw is not None:
        raw = float(raw)
    ctx.world.set_raw(item, fld, raw, by=ctx.viewer, via="graphql")
    return {"projectV2Item": item, "clientMutationId": data.get("clientMutationId")}


def clear_item_field_value(ctx: Context, data: dict) -> dict:
    ctx.require_projects(write=True)
    project = _load(ctx, data["projectId"], Project, "ProjectV2")
    item = _load(ctx, data["itemId"], Item, "ProjectV2Item")
    fld = _load(ctx, data["fieldId"], ProjectField, "ProjectV2FieldConfiguration")
    _item_in(project, item)
    if item.archived:
        raise GitHubError("VALIDATION", "Cannot clear the field as the item is archived")
    _field_in(project, fld)
    kind = fld.data_type.lower()
    if fld.data_type == model.TITLE:
        raise GitHubError("VALIDATION", "The title field can not be cleared")
    if isinstance(item.content, DraftIssue) and fld.data_type in (model.LABELS, model.MILESTONE):
        raise GitHubError("VALIDATION", f'Cannot set "{kind}" type fields on a draft issue.')
    if fld.data_type not in _VALUE_KEY:
        raise GitHubError("VALIDATION", f'Clearing "{kind}" type fields is not supported.')
    ctx.world.set_raw(item, fld, None, by=ctx.viewer, via="graphql")
    return {"projectV2Item": item, "clientMutationId": data.get("clientMutationId")}


def add_item_by_id(ctx: Context, data: dict) -> dict:
    ctx.require_projects(write=True)
    project = _load(ctx, data["projectId"], Project, "ProjectV2")
    content = _load(ctx, data["contentId"], Issue | DraftIssue, "ProjectV2ItemContent")
    if not isinstance(content, Issue):
        raise GitHubError("VALIDATION", "contentID must refer to an Issue or a Pull Request.")
    existing = project.item_for(content)
    if existing:  # GitHub answers the item it has (unarchived), and adds nothing
        if existing.archived:
            existing.archived = False
            ctx.world.record("item-unarchived", existing, by=ctx.viewer.login, via="graphql")
        return {"item": existing, "clientMutationId": data.get("clientMutationId")}
    item = ctx.world.add(Item, project=project, content=content, creator=ctx.viewer, created_at=ctx.world.clock())
    project.items.append(item)
    ctx.world.record("item-added", item, name=content.title, by=ctx.viewer.login, via="graphql")
    return {"item": item, "clientMutationId": data.get("clientMutationId")}


def add_draft_issue(ctx: Context, data: dict) -> dict:
    ctx.require_projects(write=True)
    project = _load(ctx, data["projectId"], Project, "ProjectV2")
    assignees = [_load(ctx, user_id, model.User, "User") for user_id in data.get("assigneeIds") or []]
    title = data["title"]
    if not title.strip():
        raise GitHubError("UNPROCESSABLE", "Title can't be blank")
    world = ctx.world
    draft = world.add(
        DraftIssue,
        title=title,
        body=data.get("body") or "",
        assignees=assignees,
        creator=ctx.viewer,
        created_at=world.clock(),
    )
    item = world.add(Item, project=project, content=draft, creator=ctx.viewer, created_at=world.clock())
    project.items.append(item)
    world.record("item-added", item, name=title, by=ctx.viewer.login, via="graphql")
    return {"projectItem": item, "clientMutationId": data.get("clientMutationId")}


def update_draft_issue(ctx: Context, data: dict) -> dict:
    ctx.require_projects(write=True)
    draft = _load(ctx, data["draftIssueId"], DraftIssue, "DraftIssue")
    before = {"title": draft.title, "body": draft.body}
    if data.get("title") is not None:
        if not data["title"].strip():
            raise GitHubError("UNPROCESSABLE", "Title can't be blank")
        draft.title = data["title"]
    if data.get("body") is not None:
        draft.body = data["body"]
    if data.get("assigneeIds") is not None:
        draft.assignees = [_load(ctx, user_id, model.User, "User") for user_id in data["assigneeIds"]]
    draft.updated_at = ctx.world.clock()
    ctx.world.record(
        "draft-edited",
        draft,
        before=before,
        after={"title": draft.title, "body": draft.body},
        by=ctx.viewer.login,
        via="graphql",
    )
    return {"draftIssue": draft, "clientMutationId": data.get("clientMutationId")}


def delete_item(ctx: Context, data: dict) -> dict:
    ctx.require_projects(write=True)
    project = _load(ctx, data["projectId"], Project, "ProjectV2")
    item = _load(ctx, data["itemId"], Item, "ProjectV2Item")
    _item_in(project, item, "The item does not exist in the project.")
    project.items.remove(item)
    ctx.world.record("item-deleted", item, name=item.title, by=ctx.viewer.login, via="graphql")
    return {"deletedItemId": item.node_id, "clientMutationId": data.get("clientMutationId")}


def _archive(archived: bool):
    def mutate(ctx: Context, data: dict) -> dict:
        ctx.require_projects(write=True)
        project = _load(ctx, data["projectId"], Project, "ProjectV2")
        item = _item_in(project, _load(ctx, data["itemId"], Item, "ProjectV2Item"))
        if item.archived != archived:
            item.archived = archived
            ctx.world.record(
                "item-archived" if archived else "item-unarchived", item, by=ctx.viewer.login, via="graphql"
            )
        return {"item": item, "clientMutationId": data.get("clientMutationId")}

    return mutate


MUTATIONS = {
    "updateProjectV2ItemFieldValue": update_item_field_value,
    "clearProjectV2ItemFieldValue": clear_item_field_value,
    "addProjectV2ItemById": add_item_by_id,
    "addProjectV2DraftIssue": add_draft_issue,
    "updateProjectV2DraftIssue": update_draft_issue,
    "deleteProjectV2Item": delete_item,
    "archiveProjectV2Item": _archive(True),
    "unarchiveProjectV2Item": _archive(False),
}


def _mutation_resolver(name: str):
    def resolve(_source, ctx: Context, input):
        call = MutationCall(name=name, alias=ctx.alias, input=dict(input))
        ctx.mutations.append(call)
        with ctx.world.lock:
            result = MUTATIONS[name](ctx, input)
        call.ok = True
        return result

    return resolve


RESOLVERS["Mutation"] = {name: _mutation_resolver(name) for name in MUTATIONS}


def _field_resolver(source, info, **args):
    type_name = info.parent_type.name
    table = RESOLVERS.get(type_name, {})
    resolver = table.get(info.field_name)
    if type_name == "Mutation":
        info.context.alias = info.path.key
    if resolver is not None:
        try:
            return resolver(source, info.context, **args)
        except GitHubError:
            raise
        except TypeError as error:  # an argument the fake's resolver does not take
            raise GitHubError(
                "NOT_MODELLED", f"fake GitHub: {type_name}.{info.field_name}{args} is not modelled ({error})"
            ) from error
    if isinstance(source, dict) and info.field_name in source:
        return source[info.field_name]
    raise GitHubError(
        "NOT_MODELLED",
        f"fake GitHub: {type_name}.{info.field_name} is not modelled "
        "(tests/support/fake_github/graphql_api.py RESOLVERS)",
    )


def _type_resolver(value, _info, _abstract_type):
    if isinstance(value, dict):
        return value.get("__typename")
    return value.typename


def _format_execution_error(error: GraphQLError) -> dict:
    original = error.original_error
    out: dict[str, Any] = {}
    if isinstance(original, GitHubError):
        out["type"] = original.type
        message = original.message
    elif original is not None:  # a fake's bug: say so loudly
        out["type"] = "FAKE_GITHUB_BUG"
        message = f"fake GitHub: {type(original).__name__}: {original}"
    else:
        message = error.message
    if error.path:
        out["path"] = list(error.path)
    if error.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in error.locations]
    out["message"] = message
    return out


@dataclass
class Prepared:
    """A document that parsed and validated, with its static figures, ready to run."""

    doc: Any
    operation: OperationDefinitionNode
    variables: dict
    cost: int
    node_count: int
    raw_variables: dict = field(default_factory=dict)


def prepare(body: Any) -> Prepared | GraphQLOutcome:
    """Parse, validate and measure a request body; a GraphQLOutcome when it fails (GitHub's
    answer to send), a Prepared when it may run."""
    if not isinstance(body, dict) or not isinstance(body.get("query"), str):
        return GraphQLOutcome(
            body={"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"}
        )
    gql = schema()
    try:
        doc = parse(body["query"])
    except GraphQLSyntaxError as error:
        loc = error.locations[0] if error.locations else None
        found = re.search(r"found (.+)\.$", error.message)
        where = f" at [{loc.line}, {loc.column}]" if loc else ""
        message = f"Parse error on {found.group(1) if found else 'input'}{where}"
        entry: dict[str, Any] = {"message": message}
        if loc:
            entry["locations"] = [{"line": loc.line, "column": loc.column}]
        return GraphQLOutcome(body={"errors": [entry]})
    paths = _Paths()
    visit(doc, paths)
    errors = validate(gql, doc)
    if errors:
        return GraphQLOutcome(body={"errors": [_ruby_error(e, paths) for e in errors]})
    operations = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    name = body.get("operationName")
    if name:
        chosen = [o for o in operations if o.name and o.name.value == name]
        if not chosen:
            return GraphQLOutcome(body={"errors": [{"message": f'No operation named "{name}"'}]})
        operation = chosen[0]
    elif len(operations) > 1:
        return GraphQLOutcome(body={"errors": [{"message": "An operation name is required"}]})
    else:
        operation = operations[0]
    raw_variables = body.get("variables") or {}
    if isinstance(raw_variables, str):  # some clients send the variables as a JSON string
        import json

        try:
            raw_variables = json.loads(raw_variables)
        except ValueError:
            raw_variables = None
    if not isinstance(raw_variables, dict):
        return GraphQLOutcome(body={"errors": [{"message": "Variables must be an object"}]})
    coerced = get_variable_values(gql, operation.variable_definitions or [], raw_variables)
    if isinstance(coerced, list):
        return GraphQLOutcome(
            body={"errors": [_variable_error(e, operation) for e in coerced]}, operation=operation.operation.value
        )
    static_errors, cost, nodes = _static_pass(doc, operation, coerced, paths)
    if static_errors:
        return GraphQLOutcome(body={"errors": static_errors}, operation=operation.operation.value)
    return Prepared(
        doc=doc, operation=operation, variables=coerced, cost=cost, node_count=nodes, raw_variables=raw_variables
    )


def uses_projects(prepared: Prepared) -> bool:
    """Whether the document reads or writes Projects (v2), for the token's scope check."""
    text = prepared.doc.loc.source.body if prepared.doc.loc else ""
    return bool(re.search(r"\bprojectV2|\bProjectV2|projectItems|projectsV2", text))


def run(prepared: Prepared, world: World, actor, rate: dict) -> GraphQLOutcome:
    """Execute a prepared document. Queries read under the world's lock; mutations run one
    root field after another (graphql-core executes them serially), each under the lock."""
    mutations: list[MutationCall] = []
    ctx = Context(world, actor, rate, mutations)
    arguments = {
        "context_value": ctx,
        "variable_values": prepared.raw_variables,
        "operation_name": prepared.operation.name.value if prepared.operation.name else None,
        "field_resolver": _field_resolver,
        "type_resolver": _type_resolver,
    }
    if prepared.operation.operation == OperationType.MUTATION:
        result = execute(schema(), prepared.doc, **arguments)
    else:
        with world.lock:
            result = execute(schema(), prepared.doc, **arguments)
    body: dict[str, Any] = {"data": result.data}
    errors = [_format_execution_error(e) for e in result.errors or []]
    if errors:
        body["errors"] = errors
        for entry in errors:  # which mutation failed, and how
            for call in mutations:
                if entry.get("path") and call.alias == entry["path"][0] and not call.ok:
                    call.error = entry
    return GraphQLOutcome(
        body=body,
        operation=prepared.operation.operation.value,
        cost=prepared.cost,
        node_count=prepared.node_count,
        mutations=mutations,
        executed=True,
    )
