"""Who is calling: tokens (classic ``ghp_`` with scopes, fine-grained ``github_pat_`` and
GitHub App installation ``ghs_`` tokens with permissions, OAuth ``gho_`` user tokens with
the scopes granted), GitHub Apps whose JWTs (RS256, signed with the app's private key) the
fake verifies as GitHub does, and what each may do.
"""

from __future__ import annotations

import datetime as dt
import secrets
from dataclasses import dataclass, field

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.fake_github.graphql_api import GitHubError
from tests.support.fake_github.model import User

LEVELS = {None: 0, "read": 1, "write": 2, "admin": 3}


@dataclass
class Token:
    value: str
    kind: str  # "classic", "fine-grained", "installation", "oauth"
    user: User
    scopes: list[str] = field(default_factory=list)  # classic and oauth
    permissions: dict[str, str] = field(default_factory=dict)  # fine-grained and installation
    expires_at: dt.datetime | None = None
    installation_id: int | None = None
    revoked: bool = False

    @property
    def rate_key(self) -> str:
        if self.kind == "installation":
            return f"installation:{self.installation_id}"
        return f"user:{self.user.database_id}"

    @property
    def rate_subject(self) -> str:
        """How GitHub names the caller in a rate-limit message."""
        if self.kind == "installation":
            return f"installation ID {self.installation_id}"
        return f"user ID {self.user.database_id}"


class Actor:
    """The caller of one request (None token: anonymous)."""

    def __init__(self, token: Token | None, *, anonymous_user: User):
        self.token = token
        self._anonymous_user = anonymous_user

    @property
    def user(self) -> User:
        return self.token.user if self.token else self._anonymous_user

    @property
    def kind(self) -> str | None:
        return self.token.kind if self.token else None

    @property
    def rate_key(self) -> str:
        return self.token.rate_key if self.token else "ip:127.0.0.1"

    @property
    def rate_subject(self) -> str:
        return self.token.rate_subject if self.token else "127.0.0.1"

    def has_scope(self, *wanted: str) -> bool:
        return bool(self.token) and any(scope in self.token.scopes for scope in wanted)

    def permission(self, name: str) -> int:
        return LEVELS.get(self.token.permissions.get(name)) if self.token else 0

    @property
    def not_accessible(self) -> str:
        what = "integration" if self.kind == "installation" else "personal access token"
        return f"Resource not accessible by {what}"

    # -- projects (GraphQL) --
    def project_scope_error(self, write: bool) -> str | None:
        """For a classic or OAuth token without the scope: GitHub's INSUFFICIENT_SCOPES text."""
        if self.kind not in ("classic", "oauth"):
            return None
        wanted = ["project"] if write else ["read:project", "project"]
        if self.has_scope(*wanted):
            return None
        granted = ", ".join(f"'{s}'" for s in self.token.scopes)
        needed = ", ".join(f"'{s}'" for s in (["project"] if write else ["read:project"]))
        return (
            "Your token has not been granted the required scopes to execute this query. The 'id' field requires "
            f"one of the following scopes: [{needed}], but your token has only been granted the: [{granted}] "
            "scopes. Please modify your token's scopes at: https://github.com/settings/tokens."
        )

    def require_graphql_projects(self, write: bool) -> None:
        if self.token is None:
            raise GitHubError("FORBIDDEN", "This endpoint requires you to be authenticated.")
        if self.kind in ("classic", "oauth"):
            message = self.project_scope_error(write)
            if message:
                raise GitHubError("INSUFFICIENT_SCOPES", message)
            return
        if self.permission("organization_projects") < (2 if write else 1):
            raise GitHubError("FORBIDDEN", self.not_accessible)

    @property
    def can_write_projects(self) -> bool:
        if self.kind in ("classic", "oauth"):
            return self.has_scope("project")
        return self.permission("organization_projects") >= 2

    @property
    def can_read_private(self) -> bool:
        if self.kind in ("classic", "oauth"):
            return self.has_scope("repo")
        return self.permission("metadata") >= 1 or self.permission("issues") >= 1

    # -- issues (REST) --
    def can_write_issues(self, private: bool) -> bool:
        if self.token is None:
            return False
        if self.kind in ("classic", "oauth"):
            return self.has_scope("repo") or (not private and self.has_scope("public_repo"))
        return self.permission("issues") >= 2


@dataclass
class Installation:
    id: int
    app: App
    account: str  # the organization's login
    permissions: dict[str, str]


@dataclass
class App:
    """A GitHub App: its id, and a private key whose public half the fake verifies JWTs with."""

    id: int
    slug: str
    private_key_pem: str
    public_key: object
    installations: dict[int, Installation] = field(default_factory=dict)

    @classmethod
    def generate(cls, app_id: int, slug: str) -> App:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        ).decode()
        return cls(id=app_id, slug=slug, private_key_pem=pem, public_key=key.public_key())

    def jwt(self, *, now: dt.datetime | None = None, lifetime: int = 540, issued_ago: int = 60) -> str:
        """A JWT as GitHub's docs sign one (iat 60 s back, exp under 10 minutes) for tests
        that are not the client under test."""
        moment = int((now or dt.datetime.now(dt.UTC)).timestamp())
        claims = {"iat": moment - issued_ago, "exp": moment + lifetime, "iss": str(self.id)}
        return jwt.encode(claims, self.private_key_pem, algorithm="RS256")


class JWTRefused(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def verify_app_jwt(apps: dict[int, App], token: str, now: dt.datetime) -> App:
    """The app whose key signed ``token``, with GitHub's checks (RS256, ``iss`` the app id,
    ``iat`` not in the future beyond a minute of drift, ``exp`` in the future and at most
    ten minutes after ``iat``); JWTRefused with GitHub's message otherwise."""
    try:
        unverified = jwt.decode(token, options={"verify_signature": False})
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as error:
        raise JWTRefused("A JSON web token could not be decoded") from error
    if header.get("alg") != "RS256":
        raise JWTRefused("A JSON web token could not be decoded")
    try:
        app = apps[int(unverified.get("iss"))]
    except (TypeError, ValueError, KeyError) as error:
        raise JWTRefused("A JSON web token could not be decoded") from error
    try:
        claims = jwt.decode(
            token, app.public_key, algorithms=["RS256"], options={"verify_exp": False, "verify_iat": False}
        )
    except jwt.PyJWTError as error:
        raise JWTRefused("A JSON web token could not be decoded") from error
    moment = now.timestamp()
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or iat > moment + 60:
        raise JWTRefused(
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
        )
    if not isinstance(exp, int) or exp <= moment:
        raise JWTRefused(
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the "
            "assertion expires"
        )
    if exp - iat > 600:
        raise JWTRefused("'Expiration time' claim ('exp') is too far in the future")
    return app


def new_token_value(prefix: str) -> str:
    return f"{prefix}_{secrets.token_urlsafe(27)[:36]}"
