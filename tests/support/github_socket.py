"""A loopback socket for the fake GitHub, bound before Django loads.

allauth's GitHub provider reads ``GITHUB_URL`` once, when its module is imported, so the
fake's address must be known before Django starts and cannot change for the run.
``tests/settings.py`` binds this socket first (a port of the run's own, never given back,
so nothing else can take it) and puts its address in ``GITHUB_URL``; a test serves a
``FakeGitHub(sock=github_socket.reserved())`` on it (docs/testing.md, "The fake GitHub").
Imports nothing but the standard library: it runs before Django is set up.
"""

from __future__ import annotations

import socket

_reserved: socket.socket | None = None


def reserved() -> socket.socket:
    """The listening socket (bound and listening on 127.0.0.1 from the first call on)."""
    global _reserved
    if _reserved is None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        _reserved = sock
    return _reserved


def url() -> str:
    host, port = reserved().getsockname()[:2]
    return f"http://{host}:{port}"
