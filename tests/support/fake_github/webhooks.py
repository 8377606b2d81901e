"""Webhook deliveries as GitHub makes them: payloads built to ``@octokit/webhooks-schemas``
and validated against it before they leave, signed (``X-Hub-Signature-256: sha256=<HMAC
of the body with the secret>``, and the legacy ``X-Hub-Signature`` SHA-1), with
``X-GitHub-Event``, ``X-GitHub-Delivery`` (a GUID) and GitHub's other headers.

``Hooks`` delivers them to registered URLs the way an organization webhook does: after
every change the API or a test's "human edit" makes (a field value, an item added or
deleted, a label, a milestone, a closed issue), from a thread of its own; a test can drop
the next deliveries (GitHub does not retry) and wait until every delivery was sent.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
import queue
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

import requests

from tests.support.fake_github import model
from tests.support.fake_github.schemas import webhook_validator


class PayloadInvalid(AssertionError):
    """A payload the fake built does not match the pinned webhook schema (a fake's bug)."""


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, signature: str) -> bool:
    return hmac.compare_digest(sign(secret, body), signature or "")


def validate(event: str, action: str, payload: dict) -> None:
    validator = webhook_validator(event, action)
    errors = sorted(validator.iter_errors(payload), key=lambda e: list(e.path))
    if errors:
        lines = [f"{'/'.join(map(str, e.path)) or '(top)'}: {e.message[:300]}" for e in errors[:10]]
        raise PayloadInvalid(f"{event}.{action} payload does not match @octokit/webhooks-schemas:\n" + "\n".join(lines))


def _without(value: Any, key: str) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, key) for k, v in value.items() if k != key}
    if isinstance(value, list):
        return [_without(v, key) for v in value]
    return value


def _merge(base: dict, extra: dict) -> dict:
    out = copy.deepcopy(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


@dataclass
class Delivery:
    event: str  # "issues", "projects_v2_item"
    action: str
    payload: dict
    guid: str = field(default_factory=lambda: str(uuid.uuid4()))
    hook_id: int = 1

    @property
    def body(self) -> bytes:
        return json.dumps(self.payload, separators=(",", ":")).encode()

    def headers(self, secret: str | None) -> dict[str, str]:
        body = self.body
        out = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/fake",
            "X-GitHub-Event": self.event,
            "X-GitHub-Delivery": self.guid,
            "X-GitHub-Hook-ID": str(self.hook_id),
            "X-GitHub-Hook-Installation-Target-Type": "organization",
        }
        organization = self.payload.get("organization")
        if organization:
            out["X-GitHub-Hook-Installation-Target-ID"] = str(organization["id"])
        if secret is not None:  # GitHub signs only when the hook has a secret
            out["X-Hub-Signature-256"] = sign(secret, body)
            out["X-Hub-Signature"] = "sha1=" + hmac.new(secret.encode(), body, hashlib.sha1).hexdigest()
        return out

    def send(self, url: str, secret: str | None, *, timeout: float = 10.0, headers: dict | None = None):
        """POST it to ``url`` (``headers`` override the signed ones, to forge or drop them)."""
        return requests.post(url, data=self.body, headers={**self.headers(secret), **(headers or {})}, timeout=timeout)


class PayloadBuilder:
    """Builds validated payloads from the world's objects."""

    def __init__(self, world: model.World):
        self.world = world

    def _common(self, organization: model.Organization | None, sender: model.User | None, installation_id):
        out: dict[str, Any] = {"sender": (sender or self.world.default_user).rest()}
        if organization is not None:
            out["organization"] = organization.rest()
        if installation_id is not None:
            out["installation"] = {
                "id": installation_id,
                "node_id": f"MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9u{installation_id}",
            }
        return out

    def projects_v2_item(
        self,
        action: str,
        item: model.Item,
        *,
        field_name: str | None = None,
        sender: model.User | None = None,
        installation_id: int | None = None,
        extra: dict | None = None,
        moved_from: model.Item | None = None,
    ) -> Delivery:
        """``created``, ``edited`` (name the field), ``deleted``, ``archived``, ``restored``
        (the item archived, or not, as it is now), ``converted``, ``reordered`` (the item it
        came after, ``moved_from``; the one it comes after now is read from the board)."""
        content = item.content
        payload: dict[str, Any] = {
            "action": action,
            "projects_v2_item": {
                "id": item.database_id,
                "node_id": item.node_id,
                "project_node_id": item.project.node_id,
                "content_node_id": content.node_id,
                "content_type": "DraftIssue" if isinstance(content, model.DraftIssue) else "Issue",
                "creator": (item.creator or self.world.default_user).rest(),
                "created_at": model.iso(item.created_at),
                "updated_at": model.iso(item.updated_at),
                "archived_at": model.iso(item.updated_at) if item.archived else None,
            },
            **self._common(item.project.owner, sender, installation_id),
        }
        if action in ("archived", "restored"):  # the item as it is now: archived, or not any more
            at = model.iso(item.updated_at)
            payload["changes"] = {
                "archived_at": {"from": None, "to": at} if action == "archived" else {"from": at, "to": None}
            }
        if action == "reordered":
            if moved_from is None:
                raise ValueError("a reordered event names the item it came after (moved_from)")
            index = item.project.items.index(item)
            after = item.project.items[index - 1].node_id if index else None
            payload["changes"] = {"previous_projects_v2_item_node_id": {"from": moved_from.node_id, "to": after}}
        if action == "edited":
            fld = item.project.field(field_name) if field_name else None
            if fld is None or fld.data_type.lower() not in ("single_select", "date", "number", "text", "iteration"):
                raise ValueError("an edited event names a custom field (single select, date, number, text, iteration)")
            payload["changes"] = {"field_value": {"field_node_id": fld.node_id, "field_type": fld.data_type.lower()}}
        return self._finish("projects_v2_item", action, payload, extra)

    def issues(
        self,
        action: str,
        issue: model.Issue,
        *,
        label: model.Label | str | None = None,
        milestone: model.Milestone | None = None,
        sender: model.User | None = None,
        installation_id: int | None = None,
        extra: dict | None = None,
    ) -> Delivery:
        """``labeled``/``unlabeled`` (the label), ``milestoned``/``demilestoned`` (the
        milestone; the issue's state is read as it is now), ``closed``, ``opened``, ..."""
        owner = issue.repository.owner
        payload: dict[str, Any] = {
            "action": action,
            "issue": issue.rest(for_webhook=True),
            "repository": issue.repository.rest(),
            **self._common(owner if isinstance(owner, model.Organization) else None, sender, installation_id),
        }
        if isinstance(label, str):
            label = issue.repository.label(label)
        if label is not None:
            payload["label"] = label.rest()
        if action in ("milestoned", "demilestoned"):
            chosen = milestone or issue.milestone
            if chosen is None:
                raise ValueError(f"an issues.{action} event names the milestone")
            payload["milestone"] = chosen.rest()
        return self._finish("issues", action, payload, extra)

    def _finish(self, event: str, action: str, payload: dict, extra: dict | None) -> Delivery:
        payload = _without(payload, "user_view_type")  # REST users carry it; webhook users do not
        validate(event, action, payload)
        if extra:  # what GitHub sends beyond the pinned schema (receivers must accept it)
            payload = _merge(payload, extra)
        return Delivery(event=event, action=action, payload=payload)


@dataclass
class Hook:
    id: int
    url: str
    secret: str | None
    events: tuple[str, ...]


@dataclass
class Sent:
    hook: Hook
    delivery: Delivery
    status: int | None  # None: not answered (connection refused, timeout) or dropped
    dropped: bool = False
    error: str | None = None


class Hooks:
    """Registered webhooks and what was delivered to them (``sent``)."""

    def __init__(self):
        self.hooks: list[Hook] = []
        self.sent: list[Sent] = []
        self.drop = 0  # the next N deliveries emitted are lost
        self.queue: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, url: str, secret: str | None, *, events: tuple[str, ...] = ("issues", "projects_v2_item")) -> Hook:
        hook = Hook(id=len(self.hooks) + 1, url=url, secret=secret, events=tuple(events))
        self.hooks.append(hook)
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, daemon=True, name="fake-github-hooks")
            self.thread.start()
        return hook

    def drop_next(self, count: int = 1) -> None:
        with self.lock:
            self.drop += count

    def emit(self, delivery: Delivery) -> None:
        for hook in self.hooks:
            if delivery.event in hook.events:
                copy_for_hook = Delivery(delivery.event, delivery.action, delivery.payload, hook_id=hook.id)
                # Which deliveries are lost is decided as they are emitted, in order, not
                # when the sending thread reaches them (a test's drop_next would otherwise
                # race with deliveries still queued).
                with self.lock:
                    dropped = self.drop > 0
                    if dropped:
                        self.drop -= 1
                self.queue.put((hook, copy_for_hook, dropped))

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Until every delivery emitted so far was sent or dropped."""
        done = threading.Event()
        self.queue.put((None, done, False))
        if not done.wait(timeout):
            raise TimeoutError("webhook deliveries still pending")

    def _run(self) -> None:
        while True:
            hook, delivery, dropped = self.queue.get()
            if hook is None:
                delivery.set()
                continue
            if dropped:
                self.sent.append(Sent(hook, delivery, None, dropped=True))
                continue
            try:
                answer = delivery.send(hook.url, hook.secret)
                self.sent.append(Sent(hook, delivery, answer.status_code))
            except requests.RequestException as error:
                self.sent.append(Sent(hook, delivery, None, error=str(error)))
