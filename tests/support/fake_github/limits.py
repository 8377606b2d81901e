"""Rate limits as GitHub applies them, faults a test injects, and the record of requests.

Primary limits: an hourly budget per caller and resource (``core`` for REST, ``graphql``
for GraphQL points); every API answer carries ``x-ratelimit-limit``, ``-remaining``,
``-reset`` (epoch seconds), ``-used`` and ``-resource``. Past the budget REST answers 403
(or 429: ``primary_status``) and GraphQL HTTP 200 with a ``RATE_LIMIT`` error (what GitHub
sends today, githubkit#271), with ``x-ratelimit-remaining: 0``.

Secondary limit: at most ``content_per_minute`` (80) content-creating requests a minute
per caller (REST POST/PATCH/PUT/DELETE, GraphQL documents with a mutation); past it 403
(or 429) with ``retry-after`` and GitHub's message.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PRIMARY_DOC = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"
SECONDARY_DOC = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"


@dataclass
class Bucket:
    limit: int
    used: int
    reset: int  # epoch seconds

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.used)


class RateLimits:
    def __init__(self, clock: Callable[[], float]):
        self.clock = clock
        self.lock = threading.Lock()
        self.limits = {"core": 5000, "graphql": 5000, "search": 30}
        self.anonymous_limits = {"core": 60, "graphql": 0, "search": 10}
        self.window = 3600
        self.primary_status = 403  # REST answer past the primary limit (GitHub sends 403 or 429)
        self.secondary_status = 403  # 403 or 429
        self.content_per_minute = 80
        self.content_per_hour = 500
        self.buckets: dict[tuple[str, str], Bucket] = {}
        self.content: dict[str, deque[float]] = {}
        self.overrides: dict[str, tuple[int, int]] = {}  # resource -> (remaining, reset) for new buckets
        self.primary_refusals = 0
        self.secondary_refusals = 0

    def bucket(self, key: str, resource: str) -> Bucket:
        """The caller's budget for ``resource`` (a new hour's when the last one reset)."""
        now = int(self.clock())
        with self.lock:
            found = self.buckets.get((key, resource))
            if found is None or now >= found.reset:
                limits = self.anonymous_limits if key.startswith("ip:") else self.limits
                found = Bucket(limit=limits[resource], used=0, reset=now + self.window)
                override = self.overrides.get(resource)
                if override and now < override[1] and not key.startswith("ip:"):
                    found = Bucket(limit=limits[resource], used=limits[resource] - override[0], reset=override[1])
                self.buckets[(key, resource)] = found
            return found

    def set_remaining(self, resource: str, remaining: int, *, key: str | None = None, reset_in: int = 60) -> None:
        """Leave ``remaining`` of the ``resource`` budget until ``reset_in`` seconds from now:
        ``key``'s ("user:<id>", "installation:<id>"), or every authenticated caller's."""
        reset = int(self.clock()) + reset_in
        limit = self.limits[resource]
        with self.lock:
            for each_key, each_resource in list(self.buckets):
                if each_resource == resource and (key is None or each_key == key) and not each_key.startswith("ip:"):
                    self.buckets[(each_key, resource)] = Bucket(limit=limit, used=limit - remaining, reset=reset)
            if key is None:
                self.overrides[resource] = (remaining, reset)
            else:
                self.buckets[(key, resource)] = Bucket(limit=limit, used=limit - remaining, reset=reset)

    @staticmethod
    def headers(bucket: Bucket, resource: str) -> dict[str, str]:
        return {
            "x-ratelimit-limit": str(bucket.limit),
            "x-ratelimit-remaining": str(bucket.remaining),
            "x-ratelimit-reset": str(bucket.reset),
            "x-ratelimit-used": str(bucket.used),
            "x-ratelimit-resource": resource,
        }

    def charge(self, bucket: Bucket, points: int) -> None:
        with self.lock:
            bucket.used += points

    def content_retry_after(self, key: str) -> int | None:
        """Seconds to wait when one more content-creating request from ``key`` would pass
        the secondary limit, else None (and the request is counted)."""
        now = self.clock()
        with self.lock:
            times = self.content.setdefault(key, deque())
            while times and times[0] <= now - 3600:
                times.popleft()
            last_minute = [t for t in times if t > now - 60]
            if len(last_minute) >= self.content_per_minute:
                return max(1, int(last_minute[0] + 60 - now + 0.999))
            if len(times) >= self.content_per_hour:
                return max(1, int(times[0] + 3600 - now + 0.999))
            times.append(now)
            return None


@dataclass
class Fault:
    """An answer a test asked for in place of (or after) the real one."""

    count: int
    status: int | None = None  # None: answer normally, after ``delay``
    delay: float = 0.0
    match: Callable[[Any], bool] | None = None
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    after: bool = False  # do the request's work, then answer with the fault (a reply lost in transit)
    used: int = 0


def _matcher(match: str | Callable | None) -> Callable[[Any], bool] | None:
    """None matches every API request; "graphql", "rest", "oauth", "mutation"; "POST /repos/..."
    a method and a path regex; another string a path regex; or a callable on the request."""
    if match is None or callable(match):
        return match
    if match in ("graphql", "rest", "oauth", "app"):
        return lambda request: request.kind == match
    if match == "mutation":
        return lambda request: request.kind == "graphql" and request.operation == "mutation"
    method, _, path = match.partition(" ")
    if path and method.isupper():
        pattern = re.compile(path)
        return lambda request: request.method == method and bool(pattern.search(request.path))
    pattern = re.compile(match)
    return lambda request: bool(pattern.search(request.path))


class Faults:
    """Scripted failures, used in order; each applies to the next ``count`` matching requests."""

    def __init__(self):
        self.lock = threading.Lock()
        self.script: list[Fault] = []
        self.delay_all = 0.0

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 502,
        match: str | Callable | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        after: bool = False,
    ) -> Fault:
        fault = Fault(count=count, status=status, match=_matcher(match), body=body, headers=headers or {}, after=after)
        with self.lock:
            self.script.append(fault)
        return fault

    def slow_next(self, seconds: float, count: int = 1, *, match: str | Callable | None = None) -> Fault:
        fault = Fault(count=count, delay=seconds, match=_matcher(match))
        with self.lock:
            self.script.append(fault)
        return fault

    def take(self, request) -> Fault | None:
        with self.lock:
            for fault in self.script:
                if fault.used < fault.count and (fault.match is None or fault.match(request)):
                    fault.used += 1
                    return fault
        return None

    def clear(self) -> None:
        with self.lock:
            self.script.clear()
        self.delay_all = 0.0


@dataclass
class RecordedRequest:
    """One request the fake answered."""

    at: float
    method: str
    path: str  # without /api/v3
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    json: Any = None
    kind: str = "rest"  # "graphql", "rest", "oauth", "app", "fake"
    operation: str | None = None  # GraphQL: "query", "mutation"
    actor: str | None = None  # the caller's login
    status: int = 0
    response: Any = None  # the JSON answered
    response_headers: dict[str, str] = field(default_factory=dict)
    mutations: list = field(default_factory=list)  # GraphQL: MutationCall, in order
    fault: str | None = None  # "status 502", "delay 2.0", "after 502", "primary", "secondary"
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex[:20].upper())


def now() -> float:
    return time.time()
