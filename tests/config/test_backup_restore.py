"""Issue 13: a backup made as README says (pg_dump -Fc) restores into a fresh database
(pg_restore) and that database serves the same feed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid

import pytest
from django.db import connection
from django.test import Client

from tests.support.paths import ROOT
from tests.support.pg import require_postgres

FETCH_FEED = """
import sys
from django.test import Client
response = Client().get("/calendar/1.31.ics")
sys.stdout.buffer.write(str(response.status_code).encode() + b"\\n" + response.content)
"""


def _pg_env() -> tuple[dict[str, str], list[str]]:
    db = connection.settings_dict
    env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
    args = ["-h", db.get("HOST") or "127.0.0.1", "-p", str(db.get("PORT") or 5432), "-U", db.get("USER") or "postgres"]
    return env, args


@pytest.mark.django_db(transaction=True)
def test_a_pg_dump_restored_into_a_fresh_database_serves_the_same_feed(pending_request, tmp_path):
    require_postgres()
    if not (shutil.which("pg_dump") and shutil.which("pg_restore")):
        if os.environ.get("CI") == "true":
            pytest.fail("pg_dump and pg_restore are required in CI (postgresql-client)")
        pytest.skip("needs pg_dump and pg_restore (Debian's postgresql-client)")
    original = Client().get("/calendar/1.31.ics")
    assert original.status_code == 200
    assert b"Code Freeze" in original.content

    env, args = _pg_env()
    dump = tmp_path / "releasecal.dump"
    name = connection.settings_dict["NAME"]
    subprocess.run(["pg_dump", *args, "-Fc", "-f", str(dump), name], env=env, check=True, timeout=120)
    restored = f"releasecal_restore_{uuid.uuid4().hex[:10]}"
    subprocess.run(["createdb", *args, restored], env=env, check=True, timeout=60)
    try:
        subprocess.run(
            ["pg_restore", *args, "--no-owner", "--exit-on-error", "-d", restored, str(dump)],
            env=env,
            check=True,
            timeout=120,
        )
        db = connection.settings_dict
        url = f"postgres://{db.get('USER') or 'postgres'}@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
        app_env = {
            **env,
            "DATABASE_URL": f"{url}/{restored}",
            "REDIS_URL": "",  # a fresh process with its own cache: nothing but the restored rows
            "RELEASECAL_VAR_DIR": str(tmp_path / "var"),
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "PYTHONPATH": str(ROOT),
        }
        manage = [sys.executable, str(ROOT / "manage.py")]
        migrate = subprocess.run(
            [*manage, "migrate", "--check"], env=app_env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr  # the schema came back whole
        subprocess.run([*manage, "feeds_bump"], env=app_env, cwd=ROOT, check=True, capture_output=True, timeout=120)
        served = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup()\n{FETCH_FEED}"],
            env=app_env,
            cwd=ROOT,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert served.returncode == 0, served.stderr.decode()[-3000:]
        status, body = served.stdout.split(b"\n", 1)
        assert status == b"200"
        assert body == original.content  # byte-identical: same rows, same feed
    finally:
        subprocess.run(["dropdb", *args, "--if-exists", restored], env=env, check=False, timeout=60)
