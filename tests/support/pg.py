"""Helpers for tests that need the real PostgreSQL."""

from __future__ import annotations

import os

import pytest
from django.db import connection


def require_postgres() -> None:
    """Skip locally on SQLite; in CI (CI=true) a missing PostgreSQL is a failure."""
    if connection.vendor == "postgresql":
        return
    message = "needs PostgreSQL: set DATABASE_URL=postgres://postgres@127.0.0.1:5432/<name>"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
