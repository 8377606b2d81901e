"""A fake Slack on 127.0.0.1 that records and counts what it receives: the one fake used by
the reminder, Slack-integration and end-to-end tests, the bench, and for trying things
locally without a workspace.

    python -m tests.support.fake_slack --port 8765
    SLACK_API_URL=http://127.0.0.1:8765/api/ SLACK_BOT_TOKEN=xoxb-fake make run
    # or point a Slack-webhook channel at http://127.0.0.1:8765/webhook/anything
    curl http://127.0.0.1:8765/_stats          # what arrived, per delivery

It answers ``POST /api/<method>`` (chat.postMessage, chat.update, chat.postEphemeral, ...)
like Slack's Web API: ``{"ok": true, "channel": <channel>, "ts": <the request's ts, else
FakeSlack(ts=...), else a generated one>}``; a missing token or one containing ``invalid``
gets ``invalid_token``, a channel named ``missing`` ``channel_not_found``. Bodies may be
JSON or form-encoded (``blocks``/``attachments`` given as JSON strings are decoded).
``POST /webhook/<anything>`` is answered like an incoming webhook (``ok``).
``users.info`` answers the user set in ``fake.users`` (``{"U1": {"tz": "Asia/Tokyo"}}``),
else ``user_not_found``; ``team.info`` the team in ``fake.teams`` (``{"T1": {"name":
"Kubernetes"}}``; without ``team``, the first), else ``team_not_found``; ``views.publish``
and ``views.open`` answer ``{"ok": true, "view": <the view>}`` (``views.open`` without a trigger_id:
``invalid_trigger_id``; after ``view_delay`` seconds);
``conversations.open`` with ``users=U1`` answers the DM channel ``D<user>``. None of them
counts as a delivered message.

Failures: scripted ones with ``FakeSlack.fail_next(n, status, retry_after)`` or
``POST /_script {"status": 500, "count": 3, "retry_after": 1}``; a persistent Web API
error with ``fake.fail_with = "channel_not_found"``; ``delay`` slows every answer;
``hold()`` keeps senders waiting (``held`` counts them) until ``release()``, to kill a
worker mid-send with a known number of sends in flight.

Slack's posting limit: ``FakeSlack(rate_limit=1)`` (or ``--rate-limit 1``) accepts at
most that many messages (chat.postMessage, webhooks) per channel (the payload's
``channel``, or the webhook's path) per wall-clock second, as ``outbox.ratelimit``
counts them, and answers any more with 429 and ``Retry-After: 1``; ``rate_limited``
counts those answers (off by default).

Every POST is recorded as a ``SlackCall`` in ``fake.calls`` (unless ``keep_payloads`` is
off, as in the bench); see ``methods()``, ``matching()`` and ``summary()``. Each
delivered message is also counted under the "releasecal delivery #N" footer it carries,
so duplicates show. Use it as ``with FakeSlack() as fake:`` or ``FakeSlack().start()``
and ``.stop()``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

_DELIVERY = re.compile(r"releasecal delivery #(\d+)")


@dataclass
class SlackCall:
    """One request the fake received."""

    at: float  # time.time() on receipt
    path: str
    authorization: str
    body: bytes
    data: dict  # the parsed body ({} if it did not parse)
    status: int = 0  # the HTTP status answered
    reply: dict = field(default_factory=dict)  # the JSON answered to a Web API call
    delivered: bool = False  # accepted as a message (not failed or refused)

    @property
    def method(self) -> str:
        """The Web API method (``chat.update``), or the last path segment of a webhook."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def text(self) -> str:
        """The fallback text and every block's text, for searching."""
        return json.dumps({"text": self.data.get("text", ""), "blocks": self.data.get("blocks", [])})


def _parse(raw: bytes, content_type: str) -> dict:
    """The body as a dict: JSON, or form-encoded like slack_sdk's non-JSON calls. Raises
    ValueError when it is neither."""
    if content_type.startswith("application/x-www-form-urlencoded"):
        data: dict = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
    else:
        data = json.loads(raw or b"{}")
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    for key in ("blocks", "attachments"):
        if isinstance(data.get(key), str):
            data[key] = json.loads(data[key])
    return data


class FakeSlack:
    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        delay: float = 0.0,
        quiet: bool = True,
        ts: str | None = None,
        rate_limit: int | None = None,
    ):
        self.lock = threading.Lock()
        self.received: Counter[int] = Counter()  # delivery id -> times received
        self.first_received_at: dict[int, float] = {}  # delivery id -> time.time() it first arrived
        self.rate_limit = rate_limit  # messages per channel per second; None: no limit
        self.rate_limited = 0  # 429s answered for the limit
        self.windows: Counter[tuple[str, int]] = Counter()  # (channel, second) -> messages accepted
        self.calls: list[SlackCall] = []
        self.delivered = 0  # messages accepted (what stats() calls "requests")
        self.script: list[tuple[int, float | None, str]] = []  # (status, retry_after, slack error)
        self.fail_with: str | None = None  # every Web API call answers {"ok": false, "error": fail_with}
        self.ts = ts  # the ts answered when the request names none (default: a generated one)
        self.delay = delay
        self.gate = threading.Event()  # cleared by hold(): accepted messages wait unanswered
        self.gate.set()
        self.held = 0  # messages received and waiting at the closed gate
        self.quiet = quiet
        self.keep_payloads = True
        self.view_delay = 0.0  # seconds views.open waits before answering
        self.users: dict[str, dict] = {}  # users.info: Slack user id -> the user object's fields
        self.teams: dict[str, dict] = {}  # team.info: team id -> the team object's fields (name, domain)
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def webhook_url(self, name: str = "hook") -> str:
        return f"{self.base}/webhook/{name}"

    def start(self) -> FakeSlack:
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def fail_next(self, count: int, status: int = 500, retry_after: float | None = None, error: str = "") -> None:
        with self.lock:
            self.script.extend([(status, retry_after, error)] * count)

    def hold(self) -> None:
        """From now on, record each message and then keep its sender waiting for the
        answer (up to two minutes) until ``release()``: a test sees in ``held`` how many
        sends are in flight, e.g. to kill a worker with exactly that many open."""
        self.gate.clear()

    def release(self) -> None:
        self.gate.set()

    def stats(self) -> dict:
        with self.lock:
            return self._stats_locked()

    def _stats_locked(self) -> dict:
        """The counts; the caller holds ``self.lock`` (a plain Lock: taking it twice hangs)."""
        return {
            "messages": sum(self.received.values()),
            "distinct": len(self.received),
            "duplicates": sum(n - 1 for n in self.received.values() if n > 1),
            "requests": self.delivered,
            "rate_limited": self.rate_limited,
        }

    @property
    def requests(self) -> list[dict]:
        """The delivered messages as ``{"path", "text"}``, in order of receipt."""
        with self.lock:
            calls = list(self.calls)
        return [{"path": c.path, "text": c.data.get("text", "")} for c in calls if c.delivered]

    def methods(self) -> list[str]:
        """The method (or webhook name) of every call, in order of receipt."""
        with self.lock:
            return [call.method for call in self.calls]

    def matching(self, predicate: Callable[[SlackCall], bool]) -> list[SlackCall]:
        with self.lock:
            calls = list(self.calls)
        return [call for call in calls if predicate(call)]

    def summary(self) -> str:
        with self.lock:
            lines = [f"{call.method}: {call.data.get('text', '')[:160]}" for call in self.calls]
        return "----- fake Slack received:\n" + ("\n".join(lines) or "(nothing)")

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, like Slack
            # Headers and body go out in two writes: without TCP_NODELAY the client's
            # delayed ACK adds 40 ms to every answer.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                if not fake.quiet:
                    super().log_message(*args)

            def _answer(self, status: int, body: bytes, content_type: str, headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                # The sender may have died waiting (the SIGKILL test); it was counted already.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.end_headers()
                    self.wfile.write(body)

            def do_GET(self):
                if self.path.startswith("/_stats"):
                    with fake.lock:
                        data = {**fake._stats_locked(), "received": {str(k): v for k, v in fake.received.items()}}
                    self._answer(200, json.dumps(data).encode(), "application/json")
                elif self.path.startswith("/_messages"):
                    data = fake.requests[-50:]
                    self._answer(200, json.dumps(data, indent=2).encode(), "application/json")
                else:
                    self._answer(404, b"not found", "text/plain")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path == "/_script":
                    spec = json.loads(raw or b"{}")
                    fake.fail_next(int(spec.get("count", 1)), int(spec.get("status", 500)), spec.get("retry_after"))
                    self._answer(200, b"ok", "text/plain")
                    return
                try:
                    payload, parsed = _parse(raw, self.headers.get("Content-Type", "")), True
                except ValueError:
                    payload, parsed = {}, False
                call = SlackCall(time.time(), self.path, self.headers.get("Authorization", ""), raw, payload)
                is_api = self.path.startswith("/api/")
                if not (is_api or self.path.startswith("/webhook/")):
                    self._reply(call, 404, b"no_service", "text/plain")
                    return
                if not parsed:
                    self._reply(call, 400, b"invalid_payload", "text/plain")
                    return
                with fake.lock:
                    scripted = fake.script.pop(0) if fake.script else None
                if scripted is not None:
                    status, retry_after, error = scripted
                    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
                    if status == 200 and error:
                        self._reply_json(call, {"ok": False, "error": error})
                    else:
                        self._reply(call, status, (error or "error").encode(), "text/plain", headers)
                    return
                if is_api:
                    token = call.authorization.removeprefix("Bearer ")
                    error = fake.fail_with
                    if not token or "invalid" in token:
                        error = "invalid_token"
                    elif payload.get("channel") == "missing":
                        error = "channel_not_found"
                    if error:
                        self._reply_json(call, {"ok": False, "error": error})
                        return
                if is_api and call.method == "users.info":
                    user = fake.users.get(str(payload.get("user", "")))
                    if user is None:
                        self._reply_json(call, {"ok": False, "error": "user_not_found"})
                    else:
                        self._reply_json(call, {"ok": True, "user": {"id": payload["user"], **user}})
                    return
                if is_api and call.method == "team.info":
                    team_id = str(payload.get("team", "")) or next(iter(fake.teams), "")
                    team = fake.teams.get(team_id)
                    if team is None:
                        self._reply_json(call, {"ok": False, "error": "team_not_found"})
                    else:
                        self._reply_json(call, {"ok": True, "team": {"id": team_id, **team}})
                    return
                if is_api and call.method == "views.open":
                    if fake.view_delay:
                        time.sleep(fake.view_delay)  # a slow Slack, for the 3-second trigger_id
                    if not str(payload.get("trigger_id", "")).strip():
                        self._reply_json(call, {"ok": False, "error": "invalid_trigger_id"})
                    else:
                        self._reply_json(call, {"ok": True, "view": {"id": "V0MODAL", **payload.get("view", {})}})
                    return
                if is_api and call.method == "conversations.open":
                    users = str(payload.get("users", ""))
                    if not users or "," in users:
                        self._reply_json(call, {"ok": False, "error": "user_not_found"})
                    else:
                        self._reply_json(call, {"ok": True, "channel": {"id": f"D{users}"}})
                    return
                if is_api and call.method == "chat.getPermalink":
                    channel, ts = str(payload.get("channel", "")), str(payload.get("message_ts", ""))
                    if not channel or not ts:
                        self._reply_json(call, {"ok": False, "error": "message_not_found"})
                    else:
                        link = f"https://releasecal-test.slack.com/archives/{channel}/p{ts.replace('.', '')}"
                        self._reply_json(call, {"ok": True, "channel": channel, "permalink": link})
                    return
                if is_api and call.method == "views.publish":
                    self._reply_json(call, {"ok": True, "view": {"id": "V0HOME", **payload.get("view", {})}})
                    return
                if fake.rate_limit is not None and (not is_api or call.method == "chat.postMessage"):
                    target = str(payload.get("channel", "")) if is_api else self.path
                    with fake.lock:
                        window = (target, int(call.at))
                        over = fake.windows[window] >= fake.rate_limit
                        if over:
                            fake.rate_limited += 1
                        else:
                            fake.windows[window] += 1
                    if over:
                        body = {"ok": False, "error": "ratelimited"} if is_api else None
                        self._reply(
                            call,
                            429,
                            json.dumps(body).encode() if body else b"rate_limited",
                            "application/json" if body else "text/plain",
                            {"Retry-After": "1"},
                        )
                        return
                self._record(call)
                if not fake.gate.is_set():
                    with fake.lock:
                        fake.held += 1
                    fake.gate.wait(timeout=120)
                    with fake.lock:
                        fake.held -= 1
                if fake.delay:
                    time.sleep(fake.delay)
                if is_api:
                    ts = payload.get("ts") or fake.ts or f"{call.at:.6f}"
                    self._reply_json(call, {"ok": True, "channel": payload.get("channel"), "ts": ts})
                else:
                    self._reply(call, 200, b"ok", "text/plain")

            def _reply(self, call: SlackCall, status: int, body: bytes, content_type: str, headers=None) -> None:
                # Listed once its answer is known (so a reader sees .reply filled in).
                call.status = status
                with fake.lock:
                    if fake.keep_payloads:
                        fake.calls.append(call)
                self._answer(status, body, content_type, headers)

            def _reply_json(self, call: SlackCall, answer: dict) -> None:
                call.reply = answer
                self._reply(call, 200, json.dumps(answer).encode(), "application/json")

            def _record(self, call: SlackCall) -> None:
                # Counted on receipt, before answering: a sender killed while waiting
                # for the answer has still delivered the message (the worst case).
                # A digest carries several deliveries: each one's footer counts.
                found = [int(n) for n in _DELIVERY.findall(json.dumps(call.data.get("blocks", [])))]
                with fake.lock:
                    call.delivered = True
                    fake.delivered += 1
                    for delivery_id in found:
                        fake.received[delivery_id] += 1
                        fake.first_received_at.setdefault(delivery_id, call.at)
                if not fake.quiet:
                    print(f"{call.path}: {call.data.get('text', '')}", flush=True)

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--rate-limit", type=int, default=None, help="messages per channel per second (429 beyond)")
    args = parser.parse_args()
    fake = FakeSlack(port=args.port, delay=args.delay, quiet=False, rate_limit=args.rate_limit)
    print(f"fake Slack on http://127.0.0.1:{fake.port}  (API {fake.api_url}, webhook {fake.webhook_url()})")
    with contextlib.suppress(KeyboardInterrupt):
        fake.server.serve_forever()


if __name__ == "__main__":
    main()
