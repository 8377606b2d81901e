"""schemathesis against /api/schema/: a bounded run, and not one 5xx.

The CLI runs against a live server with demo-shaped data and a release-team token, so
the write endpoints are exercised too. SCHEMATHESIS_MAX_EXAMPLES raises the bound.

Its phases here are examples, fuzzing (valid and invalid data) and stateful, about 300
requests. The coverage phase (every boundary and negative value of every field: about
1,700 requests, 90 s of the suite) runs with SCHEMATHESIS_PHASES=examples,coverage,fuzzing,stateful;
tests/api/test_api_fuzz.py sends hostile values to every operation in every run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def test_schemathesis_finds_no_server_errors(live_server, pending_request, release_team_member, settings, tmp_path):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"anon": "100000/min", "user": "100000/min", "parse": "100000/min"},
    }
    token = Token.objects.create(user=release_team_member)
    cli = Path(sys.executable).with_name("schemathesis")
    result = subprocess.run(
        [
            str(cli),
            "run",
            f"{live_server.url}/api/schema/",
            "--checks",
            "not_a_server_error",
            "--max-examples",
            os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "10"),
            "--phases",
            os.environ.get("SCHEMATHESIS_PHASES", "examples,fuzzing,stateful"),
            "--seed",
            "20240723",
            "--generation-database",
            "none",
            "--header",
            f"Authorization: Token {token.key}",
            "--no-color",
            "--request-timeout",
            "20",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=540,
        check=False,
    )
    output = result.stdout + result.stderr
    tested = re.search(r"Tested: (\d+)", output)
    assert tested is not None, output[-3000:]
    assert int(tested.group(1)) >= 16, output[-3000:]  # every releasecal operation, at least
    assert result.returncode == 0, output[-6000:]
