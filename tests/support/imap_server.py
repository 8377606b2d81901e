"""The intake tests' IMAP server: demo.dovecot, skipped locally without dovecot and a
failure in CI (``make test`` installs Debian's dovecot-imapd)."""

from __future__ import annotations

import os

import pytest

from demo.dovecot import Dovecot, dovecot_available

__all__ = ["Dovecot", "dovecot_or_skip"]


def dovecot_or_skip() -> None:
    if dovecot_available():
        return
    message = "needs Debian's dovecot-imapd (make test installs it: apt-get install -y dovecot-imapd)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
