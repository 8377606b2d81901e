"""The one GitHub client of the board: githubkit, configured from the environment.

Credentials (docs/github.md, config/env.py): a fine-grained token (``GITHUB_TOKEN``), or
a GitHub App (``GITHUB_APP_ID``, ``GITHUB_APP_PRIVATE_KEY`` or ``..._FILE``,
``GITHUB_APP_INSTALLATION_ID``), as the k8s-infra bot would use; neither: the board is
off. The queries live in ``github/queries/*.graphql`` (a test validates each against
GitHub's published schema). Every failure becomes one :class:`GitHubUnavailable` whose
message says what happened in words an operator can act on; 5xx answers are retried
twice by githubkit, a rate limit is not waited out here (the caller reports when the
quota comes back).
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings

if TYPE_CHECKING:
    from githubkit.exception import GitHubException

# githubkit (with httpx, pydantic's models and its auth strategies) costs most of a
# Django process start; it is imported where a client is built or a failure read, so
# manage.py calls, web and worker processes that never ask GitHub do not pay for it.

QUERIES = Path(__file__).resolve().parent / "queries"


class GitHubUnavailable(Exception):
    """GitHub could not be asked, or refused: ``message`` says why (shown in the admin,
    the cockpit, check_services and the command's output).

    ``permanent``: asking again cannot help (credentials, scopes, a board that does not
    exist); ``retry_after``: seconds until GitHub's quota comes back (a rate limit)."""

    def __init__(
        self,
        message: str,
        *,
        permanent: bool = False,
        retry_after: float | None = None,
        status: int | str | None = None,
        types: tuple[str, ...] = (),
    ):
        super().__init__(message)
        self.message = message
        self.permanent = permanent
        self.retry_after = retry_after
        self.status = status  # GitHub's HTTP status (or "GraphQL RATE_LIMITED"), when it said one
        self.types = types  # a GraphQL refusal's error types ("NOT_FOUND", "FORBIDDEN", ...)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Credentials:
    kind: str  # "token" or "app"
    token: str = ""
    app_id: int = 0
    private_key: str = ""
    installation_id: int = 0

    def describe(self) -> str:
        if self.kind == "token":
            return "a token"
        return f"GitHub App {self.app_id} (installation {self.installation_id})"


def credentials() -> Credentials | None:
    """The board's credentials from the settings; None when none is set (the board is off).
    Raises :class:`GitHubUnavailable` for a half-set or doubly-set configuration."""
    token = settings.GITHUB_TOKEN
    app = {
        "GITHUB_APP_ID": settings.GITHUB_APP_ID,
        "GITHUB_APP_PRIVATE_KEY": settings.GITHUB_APP_PRIVATE_KEY,
        "GITHUB_APP_INSTALLATION_ID": settings.GITHUB_APP_INSTALLATION_ID,
    }
    given = [name for name, value in app.items() if value]
    if token and given:
        raise GitHubUnavailable(
            f"GITHUB_TOKEN and {', '.join(given)} are both set: set a token or a GitHub App, not both", permanent=True
        )
    if token:
        return Credentials(kind="token", token=token)
    if not given:
        return None
    missing = [name for name in app if name not in given]
    if missing:
        raise GitHubUnavailable(f"A GitHub App needs {', '.join(app)}: {', '.join(missing)} is not set", permanent=True)
    return Credentials(
        kind="app",
        app_id=settings.GITHUB_APP_ID,
        private_key=settings.GITHUB_APP_PRIVATE_KEY,
        installation_id=settings.GITHUB_APP_INSTALLATION_ID,
    )


@functools.cache
def query(name: str) -> str:
    """The text of ``github/queries/<name>.graphql``."""
    return (QUERIES / f"{name}.graphql").read_text(encoding="utf-8")


class BoardClient:
    """GraphQL calls for the board, each one request through githubkit."""

    def __init__(
        self, creds: Credentials, *, base_url: str | None = None, timeout: float | None = None, retries: int = 2
    ):
        from githubkit import AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
        from githubkit.retry import RetryChainDecision, RetryServerError

        auth = (
            TokenAuthStrategy(creds.token)
            if creds.kind == "token"
            else AppInstallationAuthStrategy(creds.app_id, creds.private_key, creds.installation_id)
        )
        self.credentials = creds
        self.requests = 0
        self.timeout = timeout or settings.GITHUB_TIMEOUT
        self.retries = retries
        self.github = GitHub(
            auth,
            base_url=(base_url or settings.GITHUB_API_URL).rstrip("/") + "/",
            timeout=self.timeout,
            user_agent="releasecal",
            http_cache=False,  # nothing kept between calls: every read is GitHub's answer now
            auto_retry=RetryChainDecision(RetryServerError(max_retry=retries)) if retries else False,
        )

    def graphql(self, name: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run the named query; its ``data``. Raises :class:`GitHubUnavailable`."""
        return self.request_document(query(name), variables)

    def request_document(self, document: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        """Run a GraphQL document (a named query's, or the generated field updates')."""
        from githubkit.exception import GitHubException

        self.requests += 1
        try:
            return self.github.graphql.request(document, variables)
        except GitHubException as exc:
            raise unavailable(exc, timeout=self.timeout, retries=self.retries) from exc

    # -- REST: the KEP issues (comments, the sweeps' lists) --

    def rest(self, method: str, path: str, *, what: str, params: dict | None = None, json: Any = None):
        """One REST call; its response. Raises :class:`GitHubUnavailable` in the words of
        ``what`` ("kubernetes/enhancements#2400")."""
        from githubkit.exception import GitHubException

        self.requests += 1
        try:
            return self.github.request(method, path, params=params, json=json)
        except GitHubException as exc:
            raise rest_unavailable(exc, what=what, timeout=self.timeout, retries=self.retries) from exc

    def rest_pages(self, path: str, *, what: str, params: dict | None = None) -> list[dict]:
        """Every page of a REST list (100 a page)."""
        found: list[dict] = []
        page = 1
        while True:
            answer = self.rest("GET", path, what=what, params={**(params or {}), "per_page": 100, "page": page})
            batch = answer.json()
            found.extend(batch)
            if len(batch) < 100 or 'rel="next"' not in answer.headers.get("link", ""):
                return found
            page += 1

    def issue_comment_create(self, owner: str, repo: str, number: int, body: str) -> dict:
        """Post a comment on an issue; GitHub's comment (``id``, ``html_url``)."""
        path = f"/repos/{owner}/{repo}/issues/{number}/comments"
        return self.rest("POST", path, what=f"{owner}/{repo}#{number}", json={"body": body}).json()

    def issue_comment_find(self, owner: str, repo: str, number: int, text: str) -> dict | None:
        """The issue's first comment whose body holds ``text``, or None."""
        path = f"/repos/{owner}/{repo}/issues/{number}/comments"
        comments = self.rest_pages(path, what=f"{owner}/{repo}#{number}")
        return next((c for c in comments if text in (c.get("body") or "")), None)

    def issues_list(self, owner: str, repo: str, **params) -> list[dict]:
        """The repository's issues (``state``, ``labels``, ``milestone`` as GitHub reads
        them), pull requests left out."""
        issues = self.rest_pages(f"/repos/{owner}/{repo}/issues", what=f"{owner}/{repo}", params=params)
        return [issue for issue in issues if "pull_request" not in issue]

    def milestones_list(self, owner: str, repo: str) -> list[dict]:
        return self.rest_pages(f"/repos/{owner}/{repo}/milestones", what=f"{owner}/{repo}", params={"state": "all"})


def board_client(*, timeout: float | None = None, retries: int = 2) -> BoardClient | None:
    """The client for the configured credentials; None when the board is off (none set).
    ``timeout`` and ``retries``: check_services' probe is bounded (a liveness probe must
    not fail because GitHub is slow)."""
    creds = credentials()
    return BoardClient(creds, timeout=timeout, retries=retries) if creds else None


# GraphQL error types after which asking again cannot help.
PERMANENT_GRAPHQL = {"NOT_FOUND", "FORBIDDEN", "INSUFFICIENT_SCOPES", "VALIDATION", "UNPROCESSABLE"}


def unavailable(exc: GitHubException, *, timeout: float, retries: int) -> GitHubUnavailable:
    """githubkit's exception in an operator's words."""
    from githubkit.exception import (
        GraphQLFailed,
        RateLimitExceeded,
        RequestError,
        RequestFailed,
        RequestTimeout,
        SecondaryRateLimitExceeded,
    )

    if isinstance(exc, RateLimitExceeded):
        wait = exc.retry_after.total_seconds()
        back = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=wait)
        # GitHub's own answer: a 403 or 429 over REST and for the secondary limit, a 200
        # with a RATE_LIMITED error for GraphQL's primary limit.
        status = exc.response.status_code if exc.response.status_code != 200 else "GraphQL RATE_LIMITED"
        kind = "secondary rate limit" if isinstance(exc, SecondaryRateLimitExceeded) else "rate limit"
        return GitHubUnavailable(
            f"GitHub's {kind} is spent ({status}): it comes back at {back:%H:%M:%S} UTC (in {wait:.0f} s)",
            retry_after=wait,
            status=status,
        )
    if isinstance(exc, GraphQLFailed):
        errors = exc.response.errors or []
        words = "; ".join(f"{e.type or 'ERROR'}: {e.message}" for e in errors) or "an error without a message"
        permanent = any((e.type or "") in PERMANENT_GRAPHQL for e in errors)
        types = tuple(e.type or "ERROR" for e in errors)
        return GitHubUnavailable(f"GitHub refused the query: {words}", permanent=permanent, types=types)
    if isinstance(exc, RequestFailed):
        status = exc.response.status_code
        if status == 401:
            return GitHubUnavailable("GitHub refused the credentials (401 Bad credentials)", permanent=True)
        if status in (403, 404):
            return GitHubUnavailable(
                f"GitHub answered {status}: the credentials may not reach this organization's projects",
                permanent=True,
            )
        tried = {0: "not retried", 1: "retried once", 2: "retried twice"}.get(retries, f"retried {retries} times")
        return GitHubUnavailable(f"GitHub answered {status} ({tried})")
    if isinstance(exc, RequestTimeout):
        return GitHubUnavailable(f"GitHub did not answer within {timeout:g} s")
    if isinstance(exc, RequestError):
        return GitHubUnavailable(f"GitHub could not be reached: {exc.exc}")
    return GitHubUnavailable(f"GitHub could not be asked: {exc}", permanent=True)


def rest_unavailable(exc: GitHubException, *, what: str, timeout: float, retries: int) -> GitHubUnavailable:
    """A REST call's refusal about ``what`` (an issue, a repository) in an operator's
    words: locked, deleted, not found, no write access, invalid; else as ``unavailable``."""
    from githubkit.exception import RateLimitExceeded, RequestFailed

    if isinstance(exc, RequestFailed) and not isinstance(exc, RateLimitExceeded):
        status = exc.response.status_code
        try:
            message = (exc.response.json() or {}).get("message", "")
        except ValueError:
            message = ""
        if status == 403 and "locked" in message.lower():
            return GitHubUnavailable(
                f"{what} is locked: GitHub refused the comment (403 “{message}”). Unlock the issue or post by hand.",
                permanent=True,
            )
        if status == 410:
            return GitHubUnavailable(f"{what} was deleted (410 “{message}”): nothing to comment on.", permanent=True)
        if status == 404:
            return GitHubUnavailable(
                f"GitHub answered 404 for {what}: it does not exist or the credentials cannot see it.", permanent=True
            )
        if status == 403:
            return GitHubUnavailable(
                f"GitHub answered 403 for {what} (“{message}”): the credentials may not write issues "
                "(a fine-grained token needs Issues: read and write on the repository).",
                permanent=True,
            )
        if status == 422:
            return GitHubUnavailable(f"GitHub refused the request for {what} (422 “{message}”).", permanent=True)
    return unavailable(exc, timeout=timeout, retries=retries)
