"""The suite's settings: the project's own (``config.settings.base``, read from the
environment as in any deployment), with GitHub sign-in pointed at the fake GitHub.

allauth's GitHub provider reads ``GITHUB_URL`` when its module is imported, not per
request (so ``override_settings`` cannot move it): the address is the loopback socket
``tests/support/github_socket.py`` binds here, before Django loads, and the tests serve
``FakeGitHub(sock=github_socket.reserved())`` on it. The OAuth app's client id and
secret are the ones the tests register with the fake (``tests/support/github_oauth.py``).
Processes the tests start inherit these variables.
"""

import os

from tests.support import github_socket

GITHUB_TEST_CLIENT_ID = "Iv1.releasecal-tests"
GITHUB_TEST_CLIENT_SECRET = "releasecal-tests-oauth-secret"

os.environ["GITHUB_URL"] = github_socket.url()
os.environ["GITHUB_OAUTH_CLIENT_ID"] = GITHUB_TEST_CLIENT_ID
os.environ["GITHUB_OAUTH_CLIENT_SECRET"] = GITHUB_TEST_CLIENT_SECRET

from config.settings.base import *  # noqa: E402, F403
