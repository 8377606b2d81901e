"""A fake Slack on 127.0.0.1 that counts what it receives: for tests, the bench and trying
reminders locally without a workspace.

    python -m reminders.fake_slack --port 8765
    SLACK_API_URL=http://127.0.0.1:8765/api/ SLACK_BOT_TOKEN=xoxb-fake make run
    # or point a Slack-webhook channel at http://127.0.0.1:8765/webhook/anything
    curl http://127.0.0.1:8765/_stats          # what arrived, per delivery

It answers ``POST /api/chat.postMessage`` like Slack's Web API (``{"ok": true}``; a
token containing ``invalid`` gets ``invalid_token``, a channel named ``missing``
``channel_not_found``) and ``POST /webhook/<anything>`` like an incoming webhook
(``ok``). Scripted failures: ``FakeSlack.fail_next(n, status, retry_after)`` or
``POST /_script {"status": 500, "count": 3, "retry_after": 1}``; ``delay`` slows every
answer (to kill a worker mid-send). Each received message is counted under the
"releasecal delivery #N" footer it carries, so duplicates show.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_DELIVERY = re.compile(r"releasecal delivery #(\d+)")


class FakeSlack:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, delay: float = 0.0, quiet: bool = True):
        self.lock = threading.Lock()
        self.received: Counter[int] = Counter()  # delivery id -> times received
        self.requests: list[dict] = []
        self.script: list[tuple[int, float | None, str]] = []  # (status, retry_after, slack error)
        self.delay = delay
        self.quiet = quiet
        self.keep_payloads = True
        self.server = ThreadingHTTPServer((host, port), self._handler())
        self.server.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def webhook_url(self, name: str = "hook") -> str:
        return f"http://127.0.0.1:{self.port}/webhook/{name}"

    def start(self) -> FakeSlack:
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def fail_next(self, count: int, status: int = 500, retry_after: float | None = None, error: str = "") -> None:
        with self.lock:
            self.script.extend([(status, retry_after, error)] * count)

    def stats(self) -> dict:
        with self.lock:
            return {
                "messages": sum(self.received.values()),
                "distinct": len(self.received),
                "duplicates": sum(n - 1 for n in self.received.values() if n > 1),
                "requests": len(self.requests),
            }

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
                        data = {**fake.stats(), "received": {str(k): v for k, v in fake.received.items()}}
                    self._answer(200, json.dumps(data).encode(), "application/json")
                elif self.path.startswith("/_messages"):
                    with fake.lock:
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
                is_api = self.path.startswith("/api/chat.postMessage")
                if not (is_api or self.path.startswith("/webhook/")):
                    self._answer(404, b"no_service", "text/plain")
                    return
                try:
                    payload = json.loads(raw or b"{}")
                except ValueError:
                    self._answer(400, b"invalid_payload", "text/plain")
                    return
                with fake.lock:
                    scripted = fake.script.pop(0) if fake.script else None
                if scripted is not None:
                    status, retry_after, error = scripted
                    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
                    if status == 200 and error:
                        self._answer(200, json.dumps({"ok": False, "error": error}).encode(), "application/json")
                    else:
                        self._answer(status, (error or "error").encode(), "text/plain", headers)
                    return
                if is_api:
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    error = None
                    if not token or "invalid" in token:
                        error = "invalid_token"
                    elif payload.get("channel") == "missing":
                        error = "channel_not_found"
                    if error:
                        self._answer(200, json.dumps({"ok": False, "error": error}).encode(), "application/json")
                        return
                self._record(payload)
                if fake.delay:
                    time.sleep(fake.delay)
                if is_api:
                    body = {"ok": True, "channel": payload.get("channel"), "ts": f"{time.time():.6f}"}
                    self._answer(200, json.dumps(body).encode(), "application/json")
                else:
                    self._answer(200, b"ok", "text/plain")

            def _record(self, payload: dict) -> None:
                # Counted on receipt, before answering: a sender killed while waiting
                # for the answer has still delivered the message (the worst case).
                match = _DELIVERY.search(json.dumps(payload.get("blocks", [])))
                with fake.lock:
                    if match:
                        fake.received[int(match.group(1))] += 1
                    if fake.keep_payloads:
                        fake.requests.append({"path": self.path, "text": payload.get("text", "")})
                if not fake.quiet:
                    print(f"{self.path}: {payload.get('text', '')}", flush=True)

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    fake = FakeSlack(port=args.port, delay=args.delay, quiet=False)
    print(f"fake Slack on http://127.0.0.1:{fake.port}  (API {fake.api_url}, webhook {fake.webhook_url()})")
    with contextlib.suppress(KeyboardInterrupt):
        fake.server.serve_forever()


if __name__ == "__main__":
    main()
