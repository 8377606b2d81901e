"""Helpers for Slack tests: sign requests like Slack does, and a fake Slack Web API."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode

from slack_sdk.signature import SignatureVerifier

SIGNING_SECRET = "test-signing-secret-0123456789abcdef"


def signed_headers(body: bytes, *, secret: str = SIGNING_SECRET, timestamp: int | None = None) -> dict[str, str]:
    timestamp = int(time.time()) if timestamp is None else timestamp
    signature = SignatureVerifier(secret).generate_signature(timestamp=str(timestamp), body=body)
    return {"HTTP_X_SLACK_REQUEST_TIMESTAMP": str(timestamp), "HTTP_X_SLACK_SIGNATURE": signature}


def post_signed(client, path: str, fields: dict[str, str], **kwargs):
    body = urlencode(fields).encode()
    return client.post(
        path, data=body, content_type="application/x-www-form-urlencoded", **signed_headers(body, **kwargs)
    )


class FakeSlack:
    """A tiny Slack Web API on 127.0.0.1 that records every call and answers ok."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []
        self.fail_with: str | None = None
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.headers.get("Content-Type", "").startswith("application/json"):
                    data = json.loads(raw or "{}")
                else:
                    data = {k: v[0] for k, v in parse_qs(raw).items()}
                for key in ("blocks", "attachments"):
                    if isinstance(data.get(key), str):
                        data[key] = json.loads(data[key])
                method = self.path.rsplit("/", 1)[-1]
                fake.calls.append((method, data))
                if fake.fail_with:
                    answer = {"ok": False, "error": fake.fail_with}
                else:
                    answer = {
                        "ok": True,
                        "channel": data.get("channel", "C0RELEASE"),
                        "ts": data.get("ts", "1721780000.000100"),
                    }
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeSlack:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def methods(self) -> list[str]:
        return [method for method, _ in self.calls]
