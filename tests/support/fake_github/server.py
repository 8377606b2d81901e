"""FakeGitHub: the world, its GraphQL and REST APIs, OAuth, Apps, limits, faults and hooks,
as a WSGI application (``fake.wsgi``) and a threaded HTTP server on 127.0.0.1 (port 0 by
default: each test its own). See docs/testing.md for how a test uses it.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

from openapi_core.contrib.werkzeug import WerkzeugOpenAPIRequest, WerkzeugOpenAPIResponse
from openapi_core.exceptions import OpenAPIError
from werkzeug.routing import Map, Rule
from werkzeug.routing.exceptions import HTTPException as RoutingException
from werkzeug.serving import WSGIRequestHandler, make_server
from werkzeug.wrappers import Request, Response

from tests.support.fake_github import graphql_api, model
from tests.support.fake_github.auth import (
    LEVELS,
    Actor,
    App,
    Installation,
    JWTRefused,
    Token,
    new_token_value,
    verify_app_jwt,
)
from tests.support.fake_github.limits import PRIMARY_DOC, SECONDARY_DOC, Faults, RateLimits, RecordedRequest
from tests.support.fake_github.model import Change, Issue, World
from tests.support.fake_github.schemas import openapi
from tests.support.fake_github.webhooks import Delivery, Hooks, PayloadBuilder

REST_DOC = "https://docs.github.com/rest"
WRITE_METHODS = ("POST", "PATCH", "PUT", "DELETE")
REDIRECT_MISMATCH = "The redirect_uri MUST match the registered callback URL for this application."


class RestError(Exception):
    def __init__(self, status: int, message: str, *, doc: str = REST_DOC, extra: dict | None = None, headers=None):
        super().__init__(message)
        self.status = status
        self.body = {"message": message, "documentation_url": doc, "status": str(status), **(extra or {})}
        self.headers = headers or {}


class _RawPathRequest(WerkzeugOpenAPIRequest):
    """The path as sent (``labels/tracked%2Fno`` stays one segment), for the OpenAPI check."""

    @property
    def path(self) -> str:
        raw = self.request.environ.get("RAW_URI") or self.request.environ.get("REQUEST_URI")
        return raw.split("?", 1)[0] if raw else super().path


class _QuietHandler(WSGIRequestHandler):
    def log_request(self, *args, **kwargs) -> None:  # the record is fake.requests
        pass


class FakeBug(AssertionError):
    """The fake answered something GitHub's OpenAPI description refuses."""


@dataclass
class OAuthApp:
    client_id: str
    client_secret: str
    callback_url: str
    name: str = "releasecal"
    auto_approve: bool = True  # the user authorized it before: GitHub redirects at once


@dataclass
class OAuthCode:
    code: str
    app: OAuthApp
    user: model.User
    redirect_uri: str
    scopes: list[str]
    issued_at: float
    used: bool = False


class FakeGitHub:
    """A fake GitHub for one test (or the demo). Use as ``with FakeGitHub() as fake:``."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        validate_responses: bool = True,
        sock: socket.socket | None = None,
    ):
        self.clock_offset = 0.0
        self.world = World(clock=lambda: dt.datetime.fromtimestamp(self.time(), dt.UTC))
        self.limits = RateLimits(self.time)
        self.faults = Faults()
        self.hooks = Hooks()
        self.payloads = PayloadBuilder(self.world)
        self.requests: list[RecordedRequest] = []
        self.tokens: dict[str, Token] = {}
        self.apps: dict[int, App] = {}
        self.installations: dict[int, Installation] = {}
        self.oauth_apps: dict[str, OAuthApp] = {}
        self.oauth_codes: dict[str, OAuthCode] = {}
        self.signed_in: model.User | None = None  # who authorizes at /login/oauth/authorize
        self.validate_responses = validate_responses
        self.fake_bugs: list[str] = []  # answers that failed the OpenAPI check (also a 500)
        self.request_lock = threading.Lock()
        self.anonymous = self.world.user("ghost")
        self.host, self.requested_port = host, port
        # A socket bound before Django loaded (tests/support/github_socket.py: GITHUB_URL
        # is fixed at import by allauth); each fake serves a duplicate of it, so it stays
        # bound for the next test when this one stops.
        self.sock = sock
        self.server = None
        self.thread: threading.Thread | None = None
        self.routes = Map(
            [
                Rule("/user", endpoint="get_user", methods=["GET"]),
                Rule("/user/emails", endpoint="get_user_emails", methods=["GET"]),
                Rule("/rate_limit", endpoint="get_rate_limit", methods=["GET"]),
                Rule(
                    "/app/installations/<int:installation_id>/access_tokens",
                    endpoint="post_installation_token",
                    methods=["POST"],
                ),
                Rule("/repos/<owner>/<repo>/issues", endpoint="list_issues", methods=["GET"]),
                Rule("/repos/<owner>/<repo>/issues/<int:number>", endpoint="issue", methods=["GET", "PATCH"]),
                Rule(
                    "/repos/<owner>/<repo>/issues/<int:number>/comments", endpoint="comments", methods=["GET", "POST"]
                ),
                Rule(
                    "/repos/<owner>/<repo>/issues/comments/<int:comment_id>",
                    endpoint="comment",
                    methods=["GET", "PATCH", "DELETE"],
                ),
                Rule(
                    "/repos/<owner>/<repo>/issues/<int:number>/labels",
                    endpoint="labels",
                    methods=["GET", "POST", "PUT", "DELETE"],
                ),
                Rule(
                    "/repos/<owner>/<repo>/issues/<int:number>/labels/<path:name>", endpoint="label", methods=["DELETE"]
                ),
                Rule("/repos/<owner>/<repo>/issues/<int:number>/lock", endpoint="lock", methods=["PUT", "DELETE"]),
                Rule("/repos/<owner>/<repo>/milestones", endpoint="milestones", methods=["GET"]),
            ]
        )

    # ------------------------------------------------------------ time, lifecycle

    def time(self) -> float:
        return time.time() + self.clock_offset

    def advance(self, seconds: float) -> None:
        """Move the fake's clock forward (rate-limit windows, token expiry, code expiry)."""
        self.clock_offset += seconds

    def start(self) -> FakeGitHub:
        if self.sock is not None:
            self.host, self.requested_port = self.sock.getsockname()[:2]
        self.server = make_server(
            self.host,
            self.requested_port,
            self.wsgi,
            threaded=True,
            request_handler=_QuietHandler,
            fd=self.sock.fileno() if self.sock is not None else None,
        )
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True, name="fake-github")
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def url(self) -> str:
        """The web root: GITHUB_URL for allauth (which then calls ``{url}/api/v3/...``)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """The REST root as api.github.com (``/user``, ``/repos/...``)."""
        return self.url

    @property
    def graphql_url(self) -> str:
        return f"{self.url}/graphql"

    # ------------------------------------------------------------ building the world (tests)

    def user(self, login: str, *, name: str | None = None, email: str | None = None) -> model.User:
        return self.world.user(login, name=name, email=email)

    def repository(self, full_name: str = "kubernetes/enhancements", *, private: bool = False) -> model.Repository:
        return self.world.repository(full_name, private=private)

    def project(self, owner: str, number: int, title: str) -> model.Project:
        return self.world.project(owner, number, title)

    def token(
        self,
        user: str = "releasecal-bot",
        *,
        scopes: tuple[str, ...] = ("repo", "project", "read:org"),
        kind: str = "classic",
        permissions: dict[str, str] | None = None,
        value: str | None = None,
    ) -> str:
        """A token for ``user``: classic (``ghp_``, ``scopes``) or ``kind="fine-grained"``
        (``github_pat_``, ``permissions`` such as {"organization_projects": "write",
        "issues": "write", "metadata": "read"})."""
        prefix = {"classic": "ghp", "fine-grained": "github_pat", "oauth": "gho"}[kind]
        token = Token(
            value=value or new_token_value(prefix),
            kind=kind,
            user=self.world.user(user),
            scopes=list(scopes) if kind in ("classic", "oauth") else [],
            permissions=dict(permissions or {}) if kind == "fine-grained" else {},
        )
        self.tokens[token.value] = token
        return token.value

    def app(self, app_id: int = 424242, slug: str = "releasecal") -> App:
        """A GitHub App with a fresh RSA key (``app.private_key_pem`` for the client)."""
        made = App.generate(app_id, slug)
        self.apps[app_id] = made
        self.world.user(f"{slug}[bot]")
        return made

    def install(self, app: App, organization: str = "kubernetes", *, permissions: dict[str, str] | None = None) -> int:
        """Install ``app`` on the organization; the installation id."""
        installation = Installation(
            id=self.world.next_id() + 10_000_000,
            app=app,
            account=self.world.organization(organization).login,
            permissions=dict(permissions or {"organization_projects": "write", "issues": "write", "metadata": "read"}),
        )
        app.installations[installation.id] = installation
        self.installations[installation.id] = installation
        return installation.id

    def oauth_app(
        self, client_id: str, client_secret: str, callback_url: str, *, auto_approve: bool = True
    ) -> OAuthApp:
        made = OAuthApp(client_id, client_secret, callback_url, auto_approve=auto_approve)
        self.oauth_apps[client_id] = made
        return made

    def sign_in(self, login: str, *, name: str | None = None, email: str | None = None) -> model.User:
        """The GitHub user whose browser session authorizes OAuth apps."""
        user = self.world.user(login)
        if name is not None:
            user.name = name
        if email is not None:
            user.email = email
            user.emails = [{"email": email, "primary": True, "verified": True, "visibility": "public"}]
        self.signed_in = user
        return user

    def rename_user(self, login: str, new_login: str) -> model.User:
        """A person renames their GitHub account: the same id, a new login; the old login
        is free again, for anyone (``fake.sign_in(old)`` then makes a new user)."""
        with self.world.lock:
            if new_login.lower() in self.world.users and new_login.lower() != login.lower():
                raise ValueError(f"{new_login} is taken on GitHub")
            user = self.world.users.pop(login.lower())
            user.login = new_login
            self.world.users[new_login.lower()] = user
        return user

    # ------------------------------------------------------------ changing the board as a person

    def human_edit(self, item: model.Item, field_name: str, value: Any, *, by: str = "enhancements-lead") -> Change:
        """A person sets a field on the board (None clears it); the org webhook fires."""
        with self.world.lock:
            mark = len(self.world.changes)
            change = self.world.set_value(
                item, item.project.field(field_name), value, by=self.world.user(by), via="human"
            )
            self._emit_since(mark)
        return change

    def human_label(self, issue: Issue, name: str, *, add: bool = True, by: str = "enhancements-lead") -> None:
        with self.world.lock:
            mark = len(self.world.changes)
            self._label_change(issue, issue.repository.label(name), add=add, by=self.world.user(by), via="human")
            self._emit_since(mark)

    # ------------------------------------------------------------ reading what happened (tests)

    def graphql_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.kind == "graphql"]

    def mutations(self, name: str | None = None, *, ok: bool | None = True) -> list[graphql_api.MutationCall]:
        """Every mutation field executed, in order (``ok=None``: failed ones too)."""
        return [
            call
            for r in self.requests
            for call in r.mutations
            if (name is None or call.name == name) and (ok is None or call.ok == ok)
        ]

    def rest_requests(self, method: str | None = None, path_contains: str = "") -> list[RecordedRequest]:
        return [
            r
            for r in self.requests
            if r.kind == "rest" and (method is None or r.method == method) and path_contains in r.path
        ]

    def changes(self, kind: str | None = None, *, via: str | None = None) -> list[Change]:
        return [c for c in self.world.changes if (kind is None or c.kind == kind) and (via is None or c.via == via)]

    # ------------------------------------------------------------ WSGI

    def wsgi(self, environ, start_response):
        request = Request(environ)
        response = self.handle(request)
        return response(environ, start_response)

    def handle(self, request: Request) -> Response:
        path = request.path
        enterprise = path.startswith("/api/v3/") or path == "/api/graphql"
        if path.startswith("/api/v3/"):
            path = path[len("/api/v3") :]
        elif path == "/api/graphql":
            path = "/graphql"
        raw = request.get_data()
        record = RecordedRequest(
            at=self.time(),
            method=request.method,
            path=path,
            query=dict(request.args.items()),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=raw,
        )
        try:
            record.json = json.loads(raw) if raw and "json" in (request.mimetype or "json") else None
        except ValueError:
            record.json = None
        if path.startswith("/login/oauth/"):
            record.kind = "oauth"
        elif path == "/graphql":
            record.kind = "graphql"
        elif path.startswith("/_fake/"):
            record.kind = "fake"
        elif path.startswith("/app/"):
            record.kind = "app"
        if record.kind == "graphql" and isinstance(record.json, dict):
            query = record.json.get("query")
            if isinstance(query, str) and query.lstrip().startswith("mutation"):
                record.operation = "mutation"
        if record.kind != "fake":
            self.requests.append(record)
        fault = self.faults.take(record) if record.kind != "fake" else None
        if fault and fault.delay:
            time.sleep(fault.delay)
            record.fault = f"delay {fault.delay}"
        if self.faults.delay_all:
            time.sleep(self.faults.delay_all)
        if fault and fault.status and not fault.after:
            record.fault = f"status {fault.status}"
            return self._finish(record, *self._fault_answer(record, fault))
        status, body, headers = self._dispatch(request, record, path, enterprise)
        if fault and fault.status and fault.after:
            record.fault = f"after {fault.status}"
            return self._finish(record, *self._fault_answer(record, fault))
        return self._finish(record, status, body, headers)

    def _fault_answer(self, record: RecordedRequest, fault) -> tuple[int, Any, dict]:
        body = fault.body
        if body is None:
            if record.kind == "graphql":
                body = {
                    "data": None,
                    "errors": [
                        {
                            "message": "Something went wrong while executing your query. This may be the result of a "
                            f"timeout, or it could be a GitHub bug. Please include `{record.request_id}` when "
                            "reporting this issue."
                        }
                    ],
                }
            else:
                body = {"message": "Server Error"}
        return fault.status, body, dict(fault.headers)

    def _finish(self, record: RecordedRequest, status: int, body: Any, headers: dict) -> Response:
        record.status = status
        record.response = body
        headers = {**headers, "x-github-request-id": record.request_id}
        record.response_headers = headers
        if isinstance(body, Response):
            for key, value in headers.items():
                body.headers[key] = value
            return body
        if body is None:
            return Response(status=status, headers=headers)
        if isinstance(body, str | bytes):
            return Response(body, status=status, headers=headers)
        return Response(
            json.dumps(body), status=status, headers=headers, content_type="application/json; charset=utf-8"
        )

    # ------------------------------------------------------------ auth

    def _actor(self, request: Request, record: RecordedRequest) -> Actor | RestError:
        header = request.headers.get("Authorization", "")
        if not header:
            return Actor(None, anonymous_user=self.anonymous)
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in ("token", "bearer") or not value:
            return RestError(401, "Bad credentials")
        token = self.tokens.get(value.strip())
        if token is None or token.revoked:
            return RestError(401, "Bad credentials")
        if token.expires_at is not None and dt.datetime.fromtimestamp(self.time(), dt.UTC) >= token.expires_at:
            return RestError(401, "Bad credentials")
        record.actor = token.user.login
        return Actor(token, anonymous_user=self.anonymous)

    # ------------------------------------------------------------ dispatch

    def _dispatch(
        self, request: Request, record: RecordedRequest, path: str, enterprise: bool
    ) -> tuple[int, Any, dict]:
        if record.kind == "oauth":
            return self._oauth(request, record, path)
        if record.kind == "fake":
            return self._fake_pages(request, path)
        if record.kind == "app":
            return self._app_endpoint(request, record, path)
        actor = self._actor(request, record)
        if isinstance(actor, RestError):
            return actor.status, actor.body, {}
        if record.kind == "graphql":
            return self._graphql(request, record, actor)
        return self._rest(request, record, actor, path)

    # ------------------------------------------------------------ GraphQL

    def _graphql(self, request: Request, record: RecordedRequest, actor: Actor) -> tuple[int, Any, dict]:
        if request.method != "POST":
            return 404, {"message": "Not Found", "documentation_url": "https://docs.github.com/graphql"}, {}
        if actor.token is None:
            return (
                401,
                {
                    "message": "This endpoint requires you to be authenticated.",
                    "documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql",
                },
                {},
            )
        bucket = self.limits.bucket(actor.rate_key, "graphql")
        if bucket.remaining <= 0:
            self.limits.primary_refusals += 1
            record.fault = "primary"
            body = {
                "errors": [
                    {
                        "type": "RATE_LIMIT",
                        "code": "graphql_rate_limit",
                        "message": f"API rate limit already exceeded for {actor.rate_subject}.",
                    }
                ]
            }
            return 200, body, self.limits.headers(bucket, "graphql")
        if not isinstance(record.json, dict):
            self.limits.charge(bucket, 1)
            return (
                400,
                {"message": "Problems parsing JSON", "documentation_url": "https://docs.github.com/graphql"},
                self.limits.headers(bucket, "graphql"),
            )
        prepared = graphql_api.prepare(record.json)
        if isinstance(prepared, graphql_api.GraphQLOutcome):
            record.operation = prepared.operation or record.operation
            self.limits.charge(bucket, 1)
            return 200, prepared.body, self.limits.headers(bucket, "graphql")
        record.operation = prepared.operation.operation.value
        if graphql_api.uses_projects(prepared):
            message = actor.project_scope_error(write=record.operation == "mutation")
            if message:
                self.limits.charge(bucket, 1)
                locations = [
                    {
                        "line": prepared.operation.loc.start_token.line,
                        "column": prepared.operation.loc.start_token.column,
                    }
                ]
                body = {"errors": [{"type": "INSUFFICIENT_SCOPES", "locations": locations, "message": message}]}
                return (
                    200,
                    body,
                    {**self.limits.headers(bucket, "graphql"), **self._scope_headers(actor, "read:project")},
                )
        if bucket.remaining < prepared.cost:
            self.limits.primary_refusals += 1
            record.fault = "primary"
            body = {
                "errors": [
                    {
                        "type": "RATE_LIMIT",
                        "code": "graphql_rate_limit",
                        "message": f"API rate limit exceeded for {actor.rate_subject}.",
                    }
                ]
            }
            return 200, body, self.limits.headers(bucket, "graphql")
        if record.operation == "mutation":
            refused = self._secondary(actor, record, bucket, "graphql")
            if refused:
                return refused
        self.limits.charge(bucket, prepared.cost)
        rate = {
            "limit": bucket.limit,
            "cost": prepared.cost,
            "remaining": bucket.remaining,
            "reset_at": dt.datetime.fromtimestamp(bucket.reset, dt.UTC),
            "used": bucket.used,
            "node_count": prepared.node_count,
        }
        mark = len(self.world.changes)
        outcome = graphql_api.run(prepared, self.world, actor, rate)
        record.mutations = outcome.mutations
        self._emit_since(mark)
        return 200, outcome.body, {**self.limits.headers(bucket, "graphql"), **self._scope_headers(actor, "")}

    def _secondary(self, actor: Actor, record: RecordedRequest, bucket, resource: str):
        retry_after = self.limits.content_retry_after(actor.rate_key)
        if retry_after is None:
            return None
        self.limits.secondary_refusals += 1
        record.fault = "secondary"
        body = {
            "message": "You have exceeded a secondary rate limit and have been temporarily blocked from content "
            "creation. Please retry your request again later. If you reach out to GitHub Support for help, please "
            f"include the request ID {record.request_id}.",
            "documentation_url": SECONDARY_DOC,
        }
        headers = {**self.limits.headers(bucket, resource), "retry-after": str(retry_after)}
        return self.limits.secondary_status, body, headers

    @staticmethod
    def _scope_headers(actor: Actor, accepted: str) -> dict:
        if actor.kind in ("classic", "oauth"):
            return {"x-oauth-scopes": ", ".join(actor.token.scopes), "x-accepted-oauth-scopes": accepted}
        return {}

    # ------------------------------------------------------------ REST

    def _rest(self, request: Request, record: RecordedRequest, actor: Actor, path: str) -> tuple[int, Any, dict]:
        resource = "core"
        counted = path != "/rate_limit"
        bucket = self.limits.bucket(actor.rate_key, resource)
        headers = {}
        if counted and bucket.remaining <= 0:
            self.limits.primary_refusals += 1
            record.fault = "primary"
            body = {
                "message": f"API rate limit exceeded for {actor.rate_subject}.",
                "documentation_url": PRIMARY_DOC,
                "status": str(self.limits.primary_status),
            }
            if actor.token is None:
                body["message"] += (
                    " (But here's the good news: Authenticated requests get a higher rate limit. Check out the "
                    "documentation for more details.)"
                )
            return self.limits.primary_status, body, self.limits.headers(bucket, resource)
        if counted and request.method in WRITE_METHODS:
            refused = self._secondary(actor, record, bucket, resource)
            if refused:
                return refused
        if counted:
            self.limits.charge(bucket, 1)
        headers.update(self.limits.headers(bucket, resource))
        headers.update(self._scope_headers(actor, "repo" if "/repos/" in path else ""))
        adapter = self.routes.bind("api.github.com", path_info=path)
        try:
            endpoint, args = adapter.match(path, method=request.method)
        except RoutingException as error:
            code = getattr(error, "code", 404)
            message = "Not Found" if code == 404 else "Method Not Allowed"
            return code, {"message": message, "documentation_url": REST_DOC, "status": str(code)}, headers
        validation_request = _RawPathRequest(request)
        errors = self._validate_rest_request(validation_request)
        if errors:
            return (
                422,
                {"message": f"Invalid request.\n\n{errors}", "documentation_url": REST_DOC, "status": "422"},
                headers,
            )
        mark = len(self.world.changes)
        try:
            with self.world.lock:
                status, body, extra = getattr(self, f"rest_{endpoint}")(request, actor, record, **args)
        except RestError as error:
            status, body, extra = error.status, error.body, error.headers
        headers.update(extra)
        self._emit_since(mark)
        if self.validate_responses and status < 500:
            self._validate_rest_response(validation_request, status, body, headers)
        return status, body, headers

    @staticmethod
    def _validate_rest_request(validation_request) -> str | None:
        try:
            openapi().validate_request(validation_request)
        except OpenAPIError as error:  # the cause says what
            cause = error.__cause__ or error
            details = getattr(cause, "schema_errors", None)
            if details:
                return "; ".join(e.message for e in details)
            return str(cause)
        return None

    def _validate_rest_response(self, validation_request, status: int, body: Any, headers: dict) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        response = Response(
            data, status=status, content_type="application/json; charset=utf-8" if body is not None else None
        )
        try:
            openapi().validate_response(validation_request, WerkzeugOpenAPIResponse(response))
        except OpenAPIError as error:  # a fake's bug: recorded, and the test's check fails
            if status >= 400 and type(error).__name__ == "ResponseNotFound":
                return  # GitHub answers 401, 403, 404 on any endpoint; the description lists some
            cause = error.__cause__ or error
            details = getattr(cause, "schema_errors", None) or [cause]
            message = f"{validation_request.method.upper()} {validation_request.path} -> {status}: " + "; ".join(
                getattr(e, "message", str(e))[:300] for e in details
            )
            self.fake_bugs.append(message)

    def check(self) -> None:
        """Raise if any answer failed GitHub's OpenAPI description (call at a test's end)."""
        if self.fake_bugs:
            raise FakeBug("\n".join(self.fake_bugs))

    # -- REST helpers --

    def _repo(self, actor: Actor, owner: str, repo: str) -> model.Repository:
        found = self.world.repositories.get(f"{owner}/{repo}".lower())
        if found is None or (found.private and not actor.can_read_private):
            raise RestError(404, "Not Found", doc="https://docs.github.com/rest/repos/repos#get-a-repository")
        return found

    def _issue(self, actor: Actor, owner: str, repo: str, number: int, doc: str) -> Issue:
        repository = self._repo(actor, owner, repo)
        issue = repository.issues.get(number)
        if issue is None:
            raise RestError(404, "Not Found", doc=doc)
        if issue.deleted:
            raise RestError(410, "This issue was deleted", doc=doc)
        return issue

    def _require_issue_write(self, actor: Actor, issue: Issue, doc: str) -> None:
        if actor.can_write_issues(issue.repository.private):
            return
        if actor.token is None:
            raise RestError(401, "Requires authentication", doc=doc)
        if actor.kind in ("classic", "oauth"):
            raise RestError(404, "Not Found", doc=doc)
        raise RestError(403, actor.not_accessible, doc=doc, headers={"x-accepted-github-permissions": "issues=write"})

    @staticmethod
    def _page(request: Request, items: list, record_path: str) -> tuple[list, dict]:
        try:
            per_page = min(100, max(1, int(request.args.get("per_page", 30))))
            page = max(1, int(request.args.get("page", 1)))
        except ValueError as error:
            raise RestError(422, "Invalid request.\n\nper_page and page are integers.") from error
        start = (page - 1) * per_page
        window = items[start : start + per_page]
        last = max(1, -(-len(items) // per_page))
        links = []
        base = request.base_url

        def link(number: int, rel: str) -> str:
            query = {**request.args.to_dict(), "page": str(number), "per_page": str(per_page)}
            return f'<{base}?{urlencode(query)}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(1, "first"), link(page - 1, "prev")]
        return window, ({"link": ", ".join(links)} if links else {})

    # -- REST endpoints (each returns status, body, headers) --

    def rest_get_user(self, request, actor: Actor, record, **_):
        doc = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
        if actor.token is None:
            raise RestError(401, "Requires authentication", doc=doc)
        if actor.kind == "installation":
            raise RestError(403, "Resource not accessible by integration", doc=doc)
        return 200, actor.user.rest_private(), {}

    def rest_get_user_emails(self, request, actor: Actor, record, **_):
        doc = "https://docs.github.com/rest/users/emails#list-email-addresses-for-the-authenticated-user"
        if actor.token is None:
            raise RestError(401, "Requires authentication", doc=doc)
        if actor.kind in ("classic", "oauth") and not actor.has_scope("user", "user:email"):
            raise RestError(404, "Not Found", doc=doc)
        if actor.kind == "installation":
            raise RestError(403, "Resource not accessible by integration", doc=doc)
        return 200, list(actor.user.emails), {}

    def rest_get_rate_limit(self, request, actor: Actor, record, **_):
        resources = {}
        for name in ("core", "graphql", "search"):
            bucket = self.limits.bucket(actor.rate_key, name)
            resources[name] = {
                "limit": bucket.limit,
                "remaining": bucket.remaining,
                "reset": bucket.reset,
                "used": bucket.used,
                "resource": name,
            }
        return 200, {"resources": resources, "rate": resources["core"]}, {}

    def rest_list_issues(self, request, actor: Actor, record, owner, repo):
        repository = self._repo(actor, owner, repo)
        state = request.args.get("state", "open")
        labels = [name for name in request.args.get("labels", "").split(",") if name]
        milestone = request.args.get("milestone")
        chosen = []
        for issue in sorted(repository.issues.values(), key=lambda i: -i.number):
            if issue.deleted or (state != "all" and issue.state != state):
                continue
            if labels and not {n.lower() for n in labels} <= {n.lower() for n in issue.label_names}:
                continue
            if milestone not in (None, "*", "none"):
                if issue.milestone is None or str(issue.milestone.number) != milestone:
                    continue
            elif (milestone == "*" and issue.milestone is None) or (
                milestone == "none" and issue.milestone is not None
            ):
                continue
            chosen.append(issue)
        window, headers = self._page(request, chosen, record.path)
        return 200, [issue.rest() for issue in window], headers

    def rest_issue(self, request, actor: Actor, record, owner, repo, number):
        doc = "https://docs.github.com/rest/issues/issues#get-an-issue"
        issue = self._issue(actor, owner, repo, number, doc)
        if request.method == "GET":
            return 200, issue.rest(), {}
        doc = "https://docs.github.com/rest/issues/issues#update-an-issue"
        self._require_issue_write(actor, issue, doc)
        data = record.json or {}
        by = actor.user
        if "milestone" in data:
            value = data["milestone"]
            target = None
            if value is not None:
                target = issue.repository.milestones.get(int(value)) if str(value).isdigit() else None
                if target is None:
                    raise RestError(
                        422,
                        "Validation Failed",
                        doc=doc,
                        extra={
                            "errors": [{"value": value, "resource": "Issue", "field": "milestone", "code": "invalid"}]
                        },
                    )
            self._milestone_change(issue, target, by=by, via="rest")
        if "labels" in data:
            names = [label if isinstance(label, str) else label.get("name", "") for label in data["labels"]]
            self._set_labels(issue, names, by=by)
        if "title" in data and data["title"] is not None:
            issue.title = str(data["title"])
        if "body" in data:
            issue.body = data["body"]
        if "state" in data and data["state"] != issue.state:
            before = issue.state
            issue.state = data["state"]
            issue.state_reason = data.get("state_reason") or ("completed" if issue.state == "closed" else "reopened")
            issue.closed_at = self.world.clock() if issue.state == "closed" else None
            self.world.record("state", issue, before=before, after=issue.state, by=by.login, via="rest")
        if "assignees" in data:
            issue.assignees = [self.world.user(login) for login in data["assignees"] or []]
        issue.updated_at = self.world.clock()
        return 200, issue.rest(), {}

    def rest_comments(self, request, actor: Actor, record, owner, repo, number):
        if request.method == "GET":
            doc = "https://docs.github.com/rest/issues/comments#list-issue-comments"
            issue = self._issue(actor, owner, repo, number, doc)
            window, headers = self._page(request, issue.comments, record.path)
            return 200, [c.rest() for c in window], headers
        doc = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
        issue = self._issue(actor, owner, repo, number, doc)
        self._require_issue_write(actor, issue, doc)
        if issue.locked:
            raise RestError(
                403,
                "Unable to create comment because issue is locked.",
                doc="https://docs.github.com/articles/locking-conversations/",
            )
        body = (record.json or {}).get("body", "")
        if not body.strip():
            raise RestError(
                422,
                "Validation Failed",
                doc=doc,
                extra={"errors": [{"resource": "IssueComment", "code": "missing_field", "field": "body"}]},
            )
        now = self.world.clock()
        comment = self.world.add(model.Comment, issue=issue, body=body, user=actor.user, created_at=now, updated_at=now)
        issue.comments.append(comment)
        issue.updated_at = now
        self.world.record("comment", issue, after=body, by=actor.user.login, via="rest")
        return 201, comment.rest(), {"location": comment.rest()["url"]}

    def rest_comment(self, request, actor: Actor, record, owner, repo, comment_id):
        repository = self._repo(actor, owner, repo)
        found = next((c for i in repository.issues.values() for c in i.comments if c.database_id == comment_id), None)
        if found is None:
            raise RestError(404, "Not Found")
        if request.method == "GET":
            return 200, found.rest(), {}
        self._require_issue_write(actor, found.issue, REST_DOC)
        if request.method == "DELETE":
            found.issue.comments.remove(found)
            self.world.record("comment-deleted", found.issue, before=found.body, by=actor.user.login, via="rest")
            return 204, None, {}
        before = found.body
        found.body = (record.json or {}).get("body", found.body)
        found.updated_at = self.world.clock()
        self.world.record(
            "comment-edited", found.issue, before=before, after=found.body, by=actor.user.login, via="rest"
        )
        return 200, found.rest(), {}

    def rest_labels(self, request, actor: Actor, record, owner, repo, number):
        doc = "https://docs.github.com/rest/issues/labels#add-labels-to-an-issue"
        issue = self._issue(actor, owner, repo, number, doc)
        if request.method == "GET":
            window, headers = self._page(request, issue.labels, record.path)
            return 200, [label.rest() for label in window], headers
        self._require_issue_write(actor, issue, doc)
        data = record.json
        if isinstance(data, dict):
            data = data.get("labels", [])
        names = [label if isinstance(label, str) else label.get("name", "") for label in data or []]
        if request.method == "POST":
            for name in names:
                self._label_change(issue, issue.repository.label(name), add=True, by=actor.user, via="rest")
        elif request.method == "PUT":
            self._set_labels(issue, names, by=actor.user)
        else:
            self._set_labels(issue, [], by=actor.user)
            return 204, None, {}
        return 200, [label.rest() for label in issue.labels], {}

    def rest_label(self, request, actor: Actor, record, owner, repo, number, name):
        doc = "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue"
        issue = self._issue(actor, owner, repo, number, doc)
        self._require_issue_write(actor, issue, doc)
        label = next((label for label in issue.labels if label.name.lower() == name.lower()), None)
        if label is None:
            raise RestError(404, "Label does not exist", doc=doc)
        self._label_change(issue, label, add=False, by=actor.user, via="rest")
        return 200, [each.rest() for each in issue.labels], {}

    def rest_lock(self, request, actor: Actor, record, owner, repo, number):
        doc = "https://docs.github.com/rest/issues/issues#lock-an-issue"
        issue = self._issue(actor, owner, repo, number, doc)
        self._require_issue_write(actor, issue, doc)
        locked = request.method == "PUT"
        if issue.locked != locked:
            issue.locked = locked
            issue.active_lock_reason = ((record.json or {}).get("lock_reason") or "resolved") if locked else None
            self.world.record("lock", issue, before=not locked, after=locked, by=actor.user.login, via="rest")
        return 204, None, {}

    def rest_milestones(self, request, actor: Actor, record, owner, repo):
        repository = self._repo(actor, owner, repo)
        state = request.args.get("state", "open")
        chosen = [m for m in repository.milestones.values() if state == "all" or m.state == state]
        window, headers = self._page(request, chosen, record.path)
        return 200, [m.rest() for m in window], headers

    # -- changes that fire webhooks --

    def _label_change(self, issue: Issue, label: model.Label, *, add: bool, by: model.User, via: str) -> None:
        present = label in issue.labels
        if add and not present:
            issue.labels.append(label)
        elif not add and present:
            issue.labels.remove(label)
        else:
            return
        issue.updated_at = self.world.clock()
        self.world.record("label-added" if add else "label-removed", issue, name=label.name, by=by.login, via=via)

    def _set_labels(self, issue: Issue, names: list[str], *, by: model.User) -> None:
        wanted = [issue.repository.label(name) for name in names]
        for label in list(issue.labels):
            if label not in wanted:
                self._label_change(issue, label, add=False, by=by, via="rest")
        for label in wanted:
            self._label_change(issue, label, add=True, by=by, via="rest")

    def _milestone_change(self, issue: Issue, target: model.Milestone | None, *, by: model.User, via: str) -> None:
        before = issue.milestone
        if before is target:
            return
        issue.milestone = target
        self.world.record(
            "milestone",
            issue,
            before=before.title if before else None,
            after=target.title if target else None,
            by=by.login,
            via=via,
        )

    def _emit_since(self, mark: int) -> None:
        """Turn the world's new changes into the webhook deliveries GitHub would make."""
        if not self.hooks.hooks:
            return
        for change in self.world.changes[mark:]:
            delivery = self._delivery_for(change)
            if delivery is not None:
                self.hooks.emit(delivery)

    def _delivery_for(self, change: Change) -> Delivery | None:
        sender = self.world.users.get((change.by or "").lower())
        target = change.target
        build = self.payloads
        if isinstance(target, model.Item):
            if change.kind == "field":
                fld = next((f for f in target.project.fields if f.name == change.name), None)
                if fld is None or fld.data_type in model.BUILT_IN:
                    return None
                return build.projects_v2_item("edited", target, field_name=fld.name, sender=sender)
            action = {
                "item-added": "created",
                "item-deleted": "deleted",
                "item-archived": "archived",
                "item-unarchived": "restored",
            }.get(change.kind)
            return build.projects_v2_item(action, target, sender=sender) if action else None
        if isinstance(target, Issue):
            if change.kind in ("label-added", "label-removed"):
                label = target.repository.label(change.name)
                return build.issues(
                    "labeled" if change.kind == "label-added" else "unlabeled", target, label=label, sender=sender
                )
            if change.kind == "milestone":
                if change.after is None:
                    previous = next(
                        (m for m in target.repository.milestones.values() if m.title == change.before), None
                    )
                    return build.issues("demilestoned", target, milestone=previous, sender=sender) if previous else None
                return build.issues("milestoned", target, sender=sender)
            if change.kind == "state" and change.after == "closed":
                return build.issues("closed", target, sender=sender)
        return None

    # ------------------------------------------------------------ GitHub Apps

    def _app_endpoint(self, request: Request, record: RecordedRequest, path: str) -> tuple[int, Any, dict]:
        parts = path.strip("/").split("/")
        if request.method != "POST" or len(parts) != 4 or parts[1] != "installations" or parts[3] != "access_tokens":
            return 404, {"message": "Not Found", "documentation_url": REST_DOC, "status": "404"}, {}
        doc = "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app"
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not value:
            return (
                401,
                {"message": "A JSON web token could not be decoded", "documentation_url": REST_DOC, "status": "401"},
                {},
            )
        try:
            app = verify_app_jwt(self.apps, value.strip(), dt.datetime.fromtimestamp(self.time(), dt.UTC))
        except JWTRefused as error:
            return 401, {"message": error.message, "documentation_url": REST_DOC, "status": "401"}, {}
        record.actor = f"{app.slug}[bot]"
        try:
            installation = app.installations[int(parts[2])]
        except (ValueError, KeyError):
            return 404, {"message": "Not Found", "documentation_url": doc, "status": "404"}, {}
        asked = (record.json or {}).get("permissions") or {}

        for name, level in asked.items():
            if LEVELS.get(level, 9) > LEVELS.get(installation.permissions.get(name), 0):
                return (
                    422,
                    {
                        "message": "The permissions requested are not granted to this installation.",
                        "documentation_url": doc,
                        "status": "422",
                    },
                    {},
                )
        permissions = asked or installation.permissions
        expires = dt.datetime.fromtimestamp(self.time(), dt.UTC).replace(microsecond=0) + dt.timedelta(hours=1)
        token = Token(
            value=new_token_value("ghs"),
            kind="installation",
            user=self.world.user(f"{app.slug}[bot]"),
            permissions=dict(permissions),
            expires_at=expires,
            installation_id=installation.id,
        )
        self.tokens[token.value] = token
        body = {
            "token": token.value,
            "expires_at": model.iso(expires),
            "permissions": dict(permissions),
            "repository_selection": "all",
        }
        return 201, body, {}

    # ------------------------------------------------------------ OAuth (github.com's web flow)

    def _oauth(self, request: Request, record: RecordedRequest, path: str) -> tuple[int, Any, dict]:
        if path == "/login/oauth/authorize":
            return self._authorize(request, record)
        if path == "/login/oauth/access_token" and request.method == "POST":
            return self._access_token(request, record)
        return 404, "Not Found", {"content-type": "text/plain"}

    def _authorize(self, request: Request, record: RecordedRequest) -> tuple[int, Any, dict]:
        args = request.values
        app = self.oauth_apps.get(args.get("client_id", ""))
        if app is None:
            return 404, "<h1>404: the client_id is not an OAuth app's</h1>", {"content-type": "text/html"}
        redirect_uri = args.get("redirect_uri") or app.callback_url
        if not _redirect_allowed(app.callback_url, redirect_uri):
            location = _with_query(
                app.callback_url,
                {
                    "error": "redirect_uri_mismatch",
                    "error_description": REDIRECT_MISMATCH,
                    "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch",
                    **({"state": args["state"]} if args.get("state") else {}),
                },
            )
            return 302, None, {"location": location}
        user = self.signed_in
        if request.method == "POST" and args.get("authorize") == "1" and args.get("login"):
            user = self.world.user(args["login"])
        elif user is None or not app.auto_approve:
            page = (
                f"<h1>Authorize {app.name}</h1><p>Signed in as <b>{user.login if user else '(nobody)'}</b></p>"
                f'<form method="post"><input type="hidden" name="client_id" value="{app.client_id}">'
                f'<input type="hidden" name="redirect_uri" value="{redirect_uri}">'
                f'<input type="hidden" name="state" value="{args.get("state", "")}">'
                f'<input type="hidden" name="scope" value="{args.get("scope", "")}">'
                f'<input type="hidden" name="authorize" value="1">'
                f'<label>Login <input name="login" value="{user.login if user else ""}"></label>'
                f'<button type="submit" id="js-oauth-authorize-btn">Authorize {app.name}</button></form>'
            )
            return 200, page, {"content-type": "text/html; charset=utf-8"}
        scopes = [s for s in args.get("scope", "").replace(",", " ").split() if s]
        code = secrets.token_hex(10)
        self.oauth_codes[code] = OAuthCode(code, app, user, redirect_uri, scopes, self.time())
        query = {"code": code}
        if args.get("state"):
            query["state"] = args["state"]
        return 302, None, {"location": _with_query(redirect_uri, query)}

    def _access_token(self, request: Request, record: RecordedRequest) -> tuple[int, Any, dict]:
        data = dict(request.form.items()) if request.form else {}
        if not data and isinstance(record.json, dict):
            data = record.json
        data = {**request.args.to_dict(), **data}
        if not data.get("client_id") and request.authorization:
            data["client_id"] = request.authorization.username
            data["client_secret"] = request.authorization.password
        wants_json = "application/json" in request.headers.get("Accept", "")

        def answer(fields: dict) -> tuple[int, Any, dict]:
            if wants_json:
                return 200, fields, {}
            return 200, urlencode(fields), {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}

        app = self.oauth_apps.get(data.get("client_id", ""))
        if app is None or data.get("client_secret") != app.client_secret:
            return answer(
                {
                    "error": "incorrect_client_credentials",
                    "error_description": "The client_id and/or client_secret passed are incorrect.",
                    "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials",
                }
            )
        code = self.oauth_codes.get(data.get("code", ""))
        bad_code = {
            "error": "bad_verification_code",
            "error_description": "The code passed is incorrect or expired.",
            "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
        }
        if code is None or code.used or code.app is not app or self.time() - code.issued_at > 600:
            if code is not None:
                code.used = True  # a code tried twice is dead for good
            return answer(bad_code)
        if data.get("redirect_uri") and data["redirect_uri"] != code.redirect_uri:
            return answer(
                {
                    "error": "redirect_uri_mismatch",
                    "error_description": REDIRECT_MISMATCH,
                    "error_uri": "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#redirect-uri-mismatch2",
                }
            )
        code.used = True
        value = self.token(code.user.login, kind="oauth", scopes=tuple(code.scopes))
        return answer({"access_token": value, "token_type": "bearer", "scope": ",".join(code.scopes)})

    # ------------------------------------------------------------ the demo's pages

    def _fake_pages(self, request: Request, path: str) -> tuple[int, Any, dict]:
        """``/_fake/board/<owner>/<number>``: the board as a person sees it (HTML), and
        ``.json``; ``/_fake/changes``: every change so far (JSON)."""
        parts = path.strip("/").split("/")
        if parts[1:2] == ["changes"]:
            rows = [
                {
                    "at": model.iso(c.at),
                    "kind": c.kind,
                    "name": c.name,
                    "before": _plain(c.before),
                    "after": _plain(c.after),
                    "by": c.by,
                    "via": c.via,
                    "target": getattr(c.target, "title", None),
                }
                for c in self.world.changes
            ]
            return 200, rows, {}
        if parts[1:2] == ["board"] and len(parts) == 4:
            as_json = parts[3].endswith(".json")
            project = self.world.find_project(parts[2], int(parts[3].removesuffix(".json")))
            if project is None:
                return 404, {"message": "no such board"}, {}
            rows = [
                {"title": item.title, "type": item.type, **{k: _plain(v) for k, v in item.fields().items()}}
                for item in project.items
            ]
            if as_json:
                return 200, {"title": project.title, "items": rows}, {}
            names = ["title", "type"] + [f.name for f in project.fields if f.data_type not in model.BUILT_IN]
            head = "".join(f"<th>{n}</th>" for n in names)
            body = "".join(
                "<tr>" + "".join(f"<td>{_html(row.get(n, ''))}</td>" for n in names) + "</tr>" for row in rows
            )
            page = (
                f"<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=5><title>{project.title}</title>"
                f"<h1>{project.title} (fake GitHub)</h1><table border=1 cellpadding=4><tr>{head}</tr>{body}</table>"
            )
            return 200, page, {"content-type": "text/html; charset=utf-8"}
        return 404, {"message": "Not Found"}, {}


def _plain(value: Any) -> Any:
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _html(value: Any) -> str:
    import html

    return html.escape(", ".join(map(str, value)) if isinstance(value, list) else str(_plain(value)))


def _redirect_allowed(callback: str, redirect: str) -> bool:
    """GitHub's rule: same scheme, host and port as the callback URL, and a path under it."""
    a, b = urlsplit(callback), urlsplit(redirect)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc) and b.path.startswith(a.path.rstrip("/"))


def _with_query(url: str, query: dict) -> str:
    parts = urlsplit(url)
    existing = parse_qs(parts.query)
    merged = {**{k: v[0] for k, v in existing.items()}, **query}
    return urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(merged), parts.fragment))


Callback = Callable[[RecordedRequest], bool]
