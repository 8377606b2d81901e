"""The fake GitHub's in-memory world: users, organizations, repositories with issues,
labels, milestones and comments, and Projects (v2) with fields, items and field values.

Everything a test builds goes through ``World`` (usually through ``FakeGitHub``'s
shortcuts); every change to a field value, label, milestone or comment is appended to
``World.changes`` (who, what, before and after), so a test can assert "written exactly
once" without reading request bodies. The REST and webhook representations of each
object (``rest()``) are the ones GitHub's OpenAPI description and webhook schemas
require; the GraphQL side reads the same objects (``graphql.py``).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

WEB = "https://github.com"
API = "https://api.github.com"

# GitHub's node id prefixes (the new, opaque format: PVT_kwDOAAlRwM4AATbp).
PREFIX = {
    "User": "U",
    "Bot": "BOT",
    "Organization": "O",
    "Repository": "R",
    "Issue": "I",
    "IssueComment": "IC",
    "Label": "LA",
    "Milestone": "MI",
    "DraftIssue": "DI",
    "ProjectV2": "PVT",
    "ProjectV2Item": "PVTI",
    "ProjectV2Field": "PVTF",
    "ProjectV2SingleSelectField": "PVTSSF",
    "ProjectV2IterationField": "PVTIF",
    "ProjectV2ItemFieldValue": "PVTFV",
}

# Kinds of project field, as ProjectV2FieldType names them.
TEXT, NUMBER, DATE, SINGLE_SELECT, ITERATION = "TEXT", "NUMBER", "DATE", "SINGLE_SELECT", "ITERATION"
TITLE, ASSIGNEES, LABELS, MILESTONE, REPOSITORY = "TITLE", "ASSIGNEES", "LABELS", "MILESTONE", "REPOSITORY"
LINKED_PULL_REQUESTS, REVIEWERS = "LINKED_PULL_REQUESTS", "REVIEWERS"
BUILT_IN = (TITLE, ASSIGNEES, LABELS, LINKED_PULL_REQUESTS, MILESTONE, REPOSITORY, REVIEWERS)
BUILT_IN_NAMES = {
    TITLE: "Title",
    ASSIGNEES: "Assignees",
    LABELS: "Labels",
    LINKED_PULL_REQUESTS: "Linked pull requests",
    MILESTONE: "Milestone",
    REPOSITORY: "Repository",
    REVIEWERS: "Reviewers",
}
OPTION_COLORS = ("GRAY", "BLUE", "GREEN", "YELLOW", "ORANGE", "RED", "PINK", "PURPLE")
EPOCH = dt.datetime(2026, 1, 5, 9, 0, tzinfo=dt.UTC)  # when the world was made (created_at)


def iso(moment: dt.datetime | None) -> str | None:
    """GitHub's timestamp form: 2026-01-05T09:00:00Z."""
    return None if moment is None else moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class NotFoundInWorld(LookupError):
    """A test asked the world for something it does not hold."""


@dataclass(eq=False)
class Node:
    world: World = field(repr=False)
    database_id: int
    node_id: str

    typename = "Node"


@dataclass(eq=False)
class User(Node):
    login: str = ""
    name: str | None = None
    email: str | None = None  # the public email (GET /user answers it)
    emails: list[dict] = field(default_factory=list)  # GET /user/emails
    kind: str = "User"  # "User" or "Bot"

    @property
    def typename(self) -> str:  # type: ignore[override]
        return self.kind

    @property
    def html_url(self) -> str:
        return f"{WEB}/{self.login}"

    def rest(self) -> dict:
        """simple-user (REST) and user (webhooks): the same 18 keys plus user_view_type."""
        url = f"{API}/users/{self.login}"
        return {
            "login": self.login,
            "id": self.database_id,
            "node_id": self.node_id,
            "avatar_url": f"https://avatars.githubusercontent.com/u/{self.database_id}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": self.html_url,
            "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}",
            "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs",
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events",
            "type": self.kind,
            "user_view_type": "public",
            "site_admin": False,
        }

    def rest_private(self) -> dict:
        """GET /user for the token's own user (private-user)."""
        return {
            **self.rest(),
            "user_view_type": "private",
            "name": self.name,
            "company": None,
            "blog": "",
            "location": None,
            "email": self.email,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "notification_email": self.email,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": iso(EPOCH),
            "updated_at": iso(EPOCH),
            "private_gists": 0,
            "total_private_repos": 0,
            "owned_private_repos": 0,
            "disk_usage": 0,
            "collaborators": 0,
            "two_factor_authentication": True,
        }


@dataclass(eq=False)
class Organization(Node):
    login: str = ""
    name: str | None = None
    typename = "Organization"

    @property
    def url(self) -> str:
        return f"{WEB}/{self.login}"

    def rest(self) -> dict:
        url = f"{API}/orgs/{self.login}"
        return {
            "login": self.login,
            "id": self.database_id,
            "node_id": self.node_id,
            "url": url,
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events",
            "hooks_url": f"{url}/hooks",
            "issues_url": f"{url}/issues",
            "members_url": f"{url}/members{{/member}}",
            "public_members_url": f"{url}/public_members{{/member}}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{self.database_id}?v=4",
            "description": None,
        }

    def rest_as_owner(self) -> dict:
        """An organization as a repository's owner (a user-shaped object of type Organization)."""
        return {**_as_user(self.login, self.database_id, self.node_id), "type": "Organization"}


def _as_user(login: str, database_id: int, node_id: str) -> dict:
    url = f"{API}/users/{login}"
    return {
        "login": login,
        "id": database_id,
        "node_id": node_id,
        "avatar_url": f"https://avatars.githubusercontent.com/u/{database_id}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{WEB}/{login}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": "User",
        "user_view_type": "public",
        "site_admin": False,
    }


@dataclass(eq=False)
class Label(Node):
    repository: Repository | None = None
    name: str = ""
    color: str = "ededed"
    description: str | None = None
    typename = "Label"

    def rest(self) -> dict:
        return {
            "id": self.database_id,
            "node_id": self.node_id,
            "url": f"{self.repository.api_url}/labels/{self.name}",
            "name": self.name,
            "color": self.color,
            "default": False,
            "description": self.description,
        }


@dataclass(eq=False)
class Milestone(Node):
    repository: Repository | None = None
    number: int = 0
    title: str = ""
    description: str | None = None
    state: str = "open"
    due_on: dt.datetime | None = None
    creator: User | None = None
    typename = "Milestone"

    def rest(self) -> dict:
        issues = [i for i in self.repository.issues.values() if i.milestone is self and not i.deleted]
        url = f"{self.repository.api_url}/milestones/{self.number}"
        return {
            "url": url,
            "html_url": f"{self.repository.html_url}/milestone/{self.number}",
            "labels_url": f"{url}/labels",
            "id": self.database_id,
            "node_id": self.node_id,
            "number": self.number,
            "title": self.title,
            "description": self.description,
            "creator": self.creator.rest() if self.creator else None,
            "open_issues": sum(1 for i in issues if i.state == "open"),
            "closed_issues": sum(1 for i in issues if i.state == "closed"),
            "state": self.state,
            "created_at": iso(EPOCH),
            "updated_at": iso(EPOCH),
            "due_on": iso(self.due_on),
            "closed_at": None,
        }


@dataclass(eq=False)
class Comment(Node):
    issue: Issue | None = None
    body: str = ""
    user: User | None = None
    created_at: dt.datetime = EPOCH
    updated_at: dt.datetime = EPOCH
    typename = "IssueComment"

    def rest(self) -> dict:
        repo = self.issue.repository
        return {
            "id": self.database_id,
            "node_id": self.node_id,
            "url": f"{repo.api_url}/issues/comments/{self.database_id}",
            "html_url": f"{self.issue.html_url}#issuecomment-{self.database_id}",
            "issue_url": self.issue.api_url,
            "body": self.body,
            "user": self.user.rest() if self.user else None,
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "author_association": "MEMBER",
            "reactions": _reactions(f"{repo.api_url}/issues/comments/{self.database_id}/reactions"),
        }


def _reactions(url: str) -> dict:
    keys = ("+1", "-1", "laugh", "confused", "heart", "hooray", "eyes", "rocket")
    return {"url": url, "total_count": 0, **dict.fromkeys(keys, 0)}


@dataclass(eq=False)
class Issue(Node):
    repository: Repository | None = None
    number: int = 0
    title: str = ""
    body: str | None = None
    user: User | None = None
    state: str = "open"  # open, closed
    state_reason: str | None = None
    labels: list[Label] = field(default_factory=list)
    milestone: Milestone | None = None
    assignees: list[User] = field(default_factory=list)
    locked: bool = False
    active_lock_reason: str | None = None
    deleted: bool = False  # GitHub answers 410 Gone
    comments: list[Comment] = field(default_factory=list)
    created_at: dt.datetime = EPOCH
    updated_at: dt.datetime = EPOCH
    closed_at: dt.datetime | None = None
    typename = "Issue"

    @property
    def api_url(self) -> str:
        return f"{self.repository.api_url}/issues/{self.number}"

    @property
    def html_url(self) -> str:
        return f"{self.repository.html_url}/issues/{self.number}"

    @property
    def label_names(self) -> list[str]:
        return [label.name for label in self.labels]

    def rest(self, *, for_webhook: bool = False) -> dict:
        data = {
            "url": self.api_url,
            "repository_url": self.repository.api_url,
            "labels_url": f"{self.api_url}/labels{{/name}}",
            "comments_url": f"{self.api_url}/comments",
            "events_url": f"{self.api_url}/events",
            "html_url": self.html_url,
            "id": self.database_id,
            "node_id": self.node_id,
            "number": self.number,
            "title": self.title,
            "user": self.user.rest() if self.user else None,
            "labels": [label.rest() for label in self.labels],
            "state": self.state,
            "locked": self.locked,
            "assignee": self.assignees[0].rest() if self.assignees else None,
            "assignees": [user.rest() for user in self.assignees],
            "milestone": self.milestone.rest() if self.milestone else None,
            "comments": len(self.comments),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "closed_at": iso(self.closed_at),
            "author_association": "MEMBER",
            "active_lock_reason": self.active_lock_reason,
            "body": self.body,
            "reactions": _reactions(f"{self.api_url}/reactions"),
            "timeline_url": f"{self.api_url}/timeline",
            "state_reason": self.state_reason,
        }
        if not for_webhook:
            data["closed_by"] = None
        return data


@dataclass(eq=False)
class Repository(Node):
    owner: Organization | User | None = None
    name: str = ""
    private: bool = False
    issues: dict[int, Issue] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)  # by lower-case name
    milestones: dict[int, Milestone] = field(default_factory=dict)
    typename = "Repository"

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    @property
    def api_url(self) -> str:
        return f"{API}/repos/{self.full_name}"

    @property
    def html_url(self) -> str:
        return f"{WEB}/{self.full_name}"

    # -- building (tests) --
    def label(self, name: str, *, color: str = "ededed", description: str | None = None) -> Label:
        """The repository's label of that name (case-insensitive, as GitHub), made if new."""
        existing = self.labels.get(name.lower())
        if existing:
            return existing
        made = self.world.add(Label, repository=self, name=name, color=color, description=description)
        self.labels[name.lower()] = made
        return made

    def milestone(self, title: str, *, due_on: dt.datetime | None = None, state: str = "open") -> Milestone:
        for milestone in self.milestones.values():
            if milestone.title == title:
                return milestone
        number = len(self.milestones) + 1
        made = self.world.add(Milestone, repository=self, number=number, title=title, due_on=due_on, state=state)
        made.creator = self.world.default_user
        self.milestones[number] = made
        return made

    def issue(
        self,
        number: int,
        title: str,
        *,
        body: str | None = None,
        labels: list[str] = (),
        milestone: str | None = None,
        assignees: list[str] = (),
        state: str = "open",
        author: str | None = None,
        locked: bool = False,
    ) -> Issue:
        """Make issue ``number`` (a KEP's tracking issue in kubernetes/enhancements)."""
        if number in self.issues:
            raise ValueError(f"{self.full_name}#{number} exists")
        world = self.world
        made = world.add(
            Issue,
            repository=self,
            number=number,
            title=title,
            body=body,
            user=world.user(author) if author else world.default_user,
            labels=[self.label(name) for name in labels],
            milestone=self.milestone(milestone) if milestone else None,
            assignees=[world.user(login) for login in assignees],
            state=state,
            state_reason="completed" if state == "closed" else None,
            locked=locked,
            active_lock_reason="resolved" if locked else None,
            closed_at=EPOCH if state == "closed" else None,
        )
        self.issues[number] = made
        return made

    def rest(self) -> dict:
        """The webhook schemas' repository (every key they require)."""
        api, web = self.api_url, self.html_url
        owner = self.owner.rest_as_owner() if isinstance(self.owner, Organization) else self.owner.rest()
        data = {
            "id": self.database_id,
            "node_id": self.node_id,
            "name": self.name,
            "full_name": self.full_name,
            "private": self.private,
            "owner": owner,
            "html_url": web,
            "description": None,
            "fork": False,
            "url": api,
            "created_at": iso(EPOCH),
            "updated_at": iso(EPOCH),
            "pushed_at": iso(EPOCH),
            "git_url": f"git://github.com/{self.full_name}.git",
            "ssh_url": f"git@github.com:{self.full_name}.git",
            "clone_url": f"{web}.git",
            "svn_url": web,
            "homepage": None,
            "size": 0,
            "stargazers_count": 0,
            "watchers_count": 0,
            "language": None,
            "has_issues": True,
            "has_projects": True,
            "has_downloads": True,
            "has_wiki": False,
            "has_pages": False,
            "forks_count": 0,
            "mirror_url": None,
            "archived": False,
            "open_issues_count": sum(1 for i in self.issues.values() if i.state == "open" and not i.deleted),
            "license": None,
            "forks": 0,
            "open_issues": sum(1 for i in self.issues.values() if i.state == "open" and not i.deleted),
            "watchers": 0,
            "default_branch": "master",
            "is_template": False,
            "web_commit_signoff_required": False,
            "topics": [],
            "visibility": "private" if self.private else "public",
            "custom_properties": {},
        }
        for key, path in _REPO_URLS.items():
            data[key] = f"{api}/{path}" if path else api
        return data


_REPO_URLS = {
    "forks_url": "forks",
    "keys_url": "keys{/key_id}",
    "collaborators_url": "collaborators{/collaborator}",
    "teams_url": "teams",
    "hooks_url": "hooks",
    "issue_events_url": "issues/events{/number}",
    "events_url": "events",
    "assignees_url": "assignees{/user}",
    "branches_url": "branches{/branch}",
    "tags_url": "tags",
    "blobs_url": "git/blobs{/sha}",
    "git_tags_url": "git/tags{/sha}",
    "git_refs_url": "git/refs{/sha}",
    "trees_url": "git/trees{/sha}",
    "statuses_url": "statuses/{sha}",
    "languages_url": "languages",
    "stargazers_url": "stargazers",
    "contributors_url": "contributors",
    "subscribers_url": "subscribers",
    "subscription_url": "subscription",
    "commits_url": "commits{/sha}",
    "git_commits_url": "git/commits{/sha}",
    "comments_url": "comments{/number}",
    "issue_comment_url": "issues/comments{/number}",
    "contents_url": "contents/{+path}",
    "compare_url": "compare/{base}...{head}",
    "merges_url": "merges",
    "archive_url": "{archive_format}{/ref}",
    "downloads_url": "downloads",
    "issues_url": "issues{/number}",
    "pulls_url": "pulls{/number}",
    "milestones_url": "milestones{/number}",
    "notifications_url": "notifications{?since,all,participating}",
    "labels_url": "labels{/name}",
    "releases_url": "releases{/id}",
    "deployments_url": "deployments",
}


@dataclass(eq=False)
class Option:
    """A single-select option: its id is an 8-hex string, not a node id (as GitHub)."""

    id: str
    name: str
    color: str = "GRAY"
    description: str = ""


@dataclass(eq=False)
class Iteration:
    id: str
    title: str
    start_date: dt.date
    duration: int = 14


@dataclass(eq=False)
class ProjectField(Node):
    project: Project | None = None
    name: str = ""
    data_type: str = TEXT
    options: list[Option] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    created_at: dt.datetime = EPOCH
    updated_at: dt.datetime = EPOCH

    @property
    def typename(self) -> str:  # type: ignore[override]
        if self.data_type == SINGLE_SELECT:
            return "ProjectV2SingleSelectField"
        if self.data_type == ITERATION:
            return "ProjectV2IterationField"
        return "ProjectV2Field"

    def option(self, name: str) -> Option:
        for option in self.options:
            if option.name == name:
                return option
        raise NotFoundInWorld(f"field {self.name!r} has no option {name!r} (options: {[o.name for o in self.options]})")

    def option_by_id(self, option_id: str) -> Option | None:
        return next((o for o in self.options if o.id == option_id), None)

    def iteration_by_id(self, iteration_id: str) -> Iteration | None:
        return next((i for i in self.iterations if i.id == iteration_id), None)

    def add_option(self, name: str, *, color: str = "GRAY", description: str = "") -> Option:
        option = Option(self.world.short_id(), name, color, description)
        self.options.append(option)
        return option

    def rename_option(self, old: str, new: str) -> None:
        """A human renames an option on the board (its id stays)."""
        self.option(old).name = new


@dataclass(eq=False)
class DraftIssue(Node):
    title: str = ""
    body: str = ""
    assignees: list[User] = field(default_factory=list)
    creator: User | None = None
    created_at: dt.datetime = EPOCH
    updated_at: dt.datetime = EPOCH
    typename = "DraftIssue"


@dataclass(eq=False)
class Item(Node):
    project: Project | None = None
    content: Issue | DraftIssue | None = None
    values: dict[str, Any] = field(default_factory=dict)  # field node id -> raw value
    value_ids: dict[str, tuple[int, str]] = field(default_factory=dict)  # field node id -> value's ids
    archived: bool = False
    creator: User | None = None
    created_at: dt.datetime = EPOCH
    updated_at: dt.datetime = EPOCH
    typename = "ProjectV2Item"

    @property
    def type(self) -> str:
        return "DRAFT_ISSUE" if isinstance(self.content, DraftIssue) else "ISSUE"

    @property
    def title(self) -> str:
        return self.content.title

    def value(self, field_name: str) -> Any:
        """What the board shows in that field: an option's or iteration's name, the text, a
        float, a ``datetime.date``; the issue's labels, assignees' logins or milestone
        title for the built-in fields; None when empty."""
        fld = self.project.field(field_name)
        if fld.data_type in BUILT_IN:
            return self.built_in_value(fld)
        raw = self.values.get(fld.node_id)
        if raw is None:
            return None
        if fld.data_type == SINGLE_SELECT:
            option = fld.option_by_id(raw)
            return option.name if option else None
        if fld.data_type == ITERATION:
            iteration = fld.iteration_by_id(raw)
            return iteration.title if iteration else None
        return raw

    def built_in_value(self, fld: ProjectField) -> Any:
        content = self.content
        if fld.data_type == TITLE:
            return content.title
        if fld.data_type == ASSIGNEES:
            return [user.login for user in content.assignees]
        if isinstance(content, DraftIssue):
            return None
        if fld.data_type == LABELS:
            return content.label_names
        if fld.data_type == MILESTONE:
            return content.milestone.title if content.milestone else None
        if fld.data_type == REPOSITORY:
            return content.repository.full_name
        return None

    def fields(self) -> dict[str, Any]:
        """Every field with a value, by name (what a person sees on the item)."""
        shown = {}
        for fld in self.project.fields:
            value = self.value(fld.name)
            if value not in (None, []):
                shown[fld.name] = value
        return shown


@dataclass(eq=False)
class Project(Node):
    owner: Organization | None = None
    number: int = 0
    title: str = ""
    short_description: str | None = None
    public: bool = False
    closed: bool = False
    fields: list[ProjectField] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    created_at: dt.datetime = EPOCH
    updated_at: dt.datetime = EPOCH
    typename = "ProjectV2"

    @property
    def url(self) -> str:
        return f"{WEB}/orgs/{self.owner.login}/projects/{self.number}"

    # -- fields --
    def field(self, name: str) -> ProjectField:
        for fld in self.fields:
            if fld.name == name:
                return fld
        raise NotFoundInWorld(f"project {self.number} has no field {name!r} (fields: {[f.name for f in self.fields]})")

    def _add_field(self, name: str, data_type: str, **extra) -> ProjectField:
        if any(f.name.lower() == name.lower() for f in self.fields):
            raise ValueError(f"project {self.number} already has a field {name!r}")
        made = self.world.add(ProjectField, project=self, name=name, data_type=data_type, **extra)
        self.fields.append(made)
        return made

    def add_single_select(self, name: str, options: list[str | tuple[str, str]]) -> ProjectField:
        """A single-select field; options are names, or (name, color) pairs."""
        made = self._add_field(name, SINGLE_SELECT)
        for index, option in enumerate(options):
            label, color = option if isinstance(option, tuple) else (option, OPTION_COLORS[index % len(OPTION_COLORS)])
            made.add_option(label, color=color)
        return made

    def add_text(self, name: str) -> ProjectField:
        return self._add_field(name, TEXT)

    def add_number(self, name: str) -> ProjectField:
        return self._add_field(name, NUMBER)

    def add_date(self, name: str) -> ProjectField:
        return self._add_field(name, DATE)

    def add_iteration(self, name: str, start: dt.date, count: int = 3, *, duration: int = 14) -> ProjectField:
        made = self._add_field(name, ITERATION)
        for index in range(count):
            made.iterations.append(
                Iteration(
                    self.world.short_id(),
                    f"Iteration {index + 1}",
                    start + dt.timedelta(days=duration * index),
                    duration,
                )
            )
        return made

    def rename_field(self, old: str, new: str) -> None:
        """A human renames a field on the board (its id stays)."""
        self.field(old).name = new

    # -- items --
    def add_issue(self, issue: Issue, values: dict[str, Any] | None = None) -> Item:
        """Put an issue on the board (as the test-infra job does), with field values by name."""
        if self.item_for(issue):
            raise ValueError(f"{issue.repository.full_name}#{issue.number} is already on project {self.number}")
        item = self.world.add(Item, project=self, content=issue, creator=self.world.default_user)
        self.items.append(item)
        for name, value in (values or {}).items():
            self.world.set_value(item, self.field(name), value, by=self.world.default_user, via="setup")
        return item

    def add_draft(self, title: str, *, body: str = "", values: dict[str, Any] | None = None) -> Item:
        world = self.world
        draft = world.add(DraftIssue, title=title, body=body, creator=world.default_user)
        item = world.add(Item, project=self, content=draft, creator=world.default_user)
        self.items.append(item)
        for name, value in (values or {}).items():
            world.set_value(item, self.field(name), value, by=world.default_user, via="setup")
        return item

    def item_for(self, issue: Issue) -> Item | None:
        return next((item for item in self.items if item.content is issue), None)

    def item_titled(self, title: str) -> Item:
        matches = [item for item in self.items if item.title == title]
        if len(matches) != 1:
            raise NotFoundInWorld(f"{len(matches)} items titled {title!r} on project {self.number}")
        return matches[0]

    def drafts(self) -> list[Item]:
        return [item for item in self.items if isinstance(item.content, DraftIssue)]


@dataclass
class Change:
    """One change the world saw: a field value, a label, a milestone, a comment, an item."""

    at: dt.datetime
    kind: str  # "field", "item-added", "item-deleted", "item-archived", "label-added", "label-removed",
    # "milestone", "comment", "state", "lock", "draft-edited"
    target: Any  # the Item or Issue
    name: str | None = None  # the field's name, the label's name
    before: Any = None
    after: Any = None
    by: str | None = None  # the actor's login
    via: str = "api"  # "graphql", "rest", "human" (a test editing the board as a person), "setup"


class World:
    """Everything the fake GitHub holds, behind one lock (the server is threaded)."""

    def __init__(self, *, clock=None):
        self.lock = threading.RLock()
        self._serial = itertools.count(1)
        self.nodes: dict[str, Node] = {}
        self.users: dict[str, User] = {}  # by lower-case login
        self.organizations: dict[str, Organization] = {}
        self.repositories: dict[str, Repository] = {}  # by lower-case full name
        self.projects: list[Project] = []
        self.changes: list[Change] = []
        self.clock = clock or (lambda: dt.datetime.now(dt.UTC))
        self.default_user = self.user("k8s-release-robot", name="Kubernetes Release Robot")

    # -- ids --
    def next_id(self) -> int:
        return next(self._serial)

    def short_id(self) -> str:
        """An 8-hex id like a single-select option's or an iteration's."""
        return hashlib.sha256(f"option-{self.next_id()}".encode()).hexdigest()[:8]

    def node_id_for(self, typename: str, database_id: int) -> str:
        prefix = PREFIX.get(typename, "N")
        packed = hashlib.sha256(f"{typename}:{database_id}".encode()).digest()[:10]
        return f"{prefix}_{base64.urlsafe_b64encode(packed).decode().rstrip('=')}"

    def add(self, cls, **attributes):
        database_id = self.next_id()
        made = cls(world=self, database_id=database_id, node_id="", **attributes)
        made.node_id = self.node_id_for(made.typename, database_id)
        self.nodes[made.node_id] = made
        return made

    # -- building --
    def user(self, login: str, *, name: str | None = None, email: str | None = None) -> User:
        existing = self.users.get(login.lower())
        if existing:
            return existing
        made = self.add(User, login=login, name=name, email=email, kind="Bot" if login.endswith("[bot]") else "User")
        # Without an address of their own, GitHub's private one: ID+login@users.noreply.github.com
        # (unique per account: the id stays when the login changes, and a new account that
        # takes an old login gets another).
        address = email or f"{made.database_id}+{login}@users.noreply.github.com"
        made.emails = [{"email": address, "primary": True, "verified": True, "visibility": "public" if email else None}]
        self.users[login.lower()] = made
        return made

    def organization(self, login: str, *, name: str | None = None) -> Organization:
        existing = self.organizations.get(login.lower())
        if existing:
            return existing
        made = self.add(Organization, login=login, name=name or login)
        self.organizations[login.lower()] = made
        return made

    def repository(self, full_name: str, *, private: bool = False) -> Repository:
        existing = self.repositories.get(full_name.lower())
        if existing:
            return existing
        owner_login, name = full_name.split("/")
        made = self.add(Repository, owner=self.organization(owner_login), name=name, private=private)
        self.repositories[full_name.lower()] = made
        return made

    def project(self, owner: str, number: int, title: str) -> Project:
        org = self.organization(owner)
        if self.find_project(owner, number):
            raise ValueError(f"{owner} already has project {number}")
        made = self.add(Project, owner=org, number=number, title=title)
        for data_type in BUILT_IN:  # every project has them, first, as on GitHub
            built_in = self.add(ProjectField, project=made, name=BUILT_IN_NAMES[data_type], data_type=data_type)
            made.fields.append(built_in)
        self.projects.append(made)
        return made

    def find_project(self, owner: str, number: int) -> Project | None:
        return next(
            (p for p in self.projects if p.owner.login.lower() == owner.lower() and p.number == number),
            None,
        )

    # -- changing (the API and tests both come here) --
    def record(self, kind: str, target: Any, **details) -> Change:
        change = Change(at=self.clock(), kind=kind, target=target, **details)
        self.changes.append(change)
        return change

    def set_value(self, item: Item, fld: ProjectField, value: Any, *, by: User, via: str) -> Change:
        """Set a custom field by what a person picks: an option's or iteration's name, text,
        a number, a ``datetime.date`` (or ``YYYY-MM-DD``); None clears it."""
        raw = value
        if value is not None:
            if fld.data_type == SINGLE_SELECT:
                raw = fld.option(value).id
            elif fld.data_type == ITERATION:
                raw = next(i.id for i in fld.iterations if i.title == value)
            elif fld.data_type == DATE and isinstance(value, str):
                raw = dt.date.fromisoformat(value)
            elif fld.data_type == NUMBER:
                raw = float(value)
            elif fld.data_type == TITLE:
                return self.set_title(item, value, by=by, via=via)
            elif fld.data_type in BUILT_IN:
                raise ValueError(f"{fld.name} is the issue's own ({fld.data_type}); change the issue")
        return self.set_raw(item, fld, raw, by=by, via=via)

    def set_raw(self, item: Item, fld: ProjectField, raw: Any, *, by: User, via: str) -> Change:
        before = item.value(fld.name)
        if raw is None:
            item.values.pop(fld.node_id, None)
            item.value_ids.pop(fld.node_id, None)
        else:
            item.values[fld.node_id] = raw
            if fld.node_id not in item.value_ids:
                database_id = self.next_id()
                item.value_ids[fld.node_id] = (database_id, self.node_id_for("ProjectV2ItemFieldValue", database_id))
        item.updated_at = self.clock()
        return self.record(
            "field", item, name=fld.name, before=before, after=item.value(fld.name), by=by.login, via=via
        )

    def set_title(self, item: Item, title: str, *, by: User, via: str) -> Change:
        before = item.content.title
        item.content.title = title
        item.content.updated_at = item.updated_at = self.clock()
        return self.record("field", item, name="Title", before=before, after=title, by=by.login, via=via)

    # -- looking up --
    def node(self, node_id: str) -> Node | None:
        found = self.nodes.get(node_id)
        if isinstance(found, Item) and found not in found.project.items:
            return None  # deleted
        return found

    def field_changes(self, item: Item | None = None, name: str | None = None, *, via: str | None = None) -> list:
        return [
            c
            for c in self.changes
            if c.kind == "field"
            and (item is None or c.target is item)
            and (name is None or c.name == name)
            and (via is None or c.via == via)
        ]
