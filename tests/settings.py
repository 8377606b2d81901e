"""The suite's settings: the project's own (``config.settings.base``, read from the
environment as in any deployment), with GitHub sign-in pointed at the fake GitHub.

allauth's GitHub provider reads ``GITHUB_URL`` when its module is imported, not per
request (so ``override_settings`` cannot move it): the address is the loopback socket
``tests/support/github_socket.py`` binds here, before Django loads, and the tests serve
``FakeGitHub(sock=github_socket.reserved())`` on it. The OAuth app's client id and
secret are the ones the tests register with the fake (``tests/support/github_oauth.py``).
Processes the tests start inherit these variables.

Under pytest-xdist (``pytest -n 2``) each worker process has a test database
of its own (pytest-django adds ``_gw0``, ``_gw1``), so its rows, ids and versions repeat
the other worker's: the run's cache key prefix and Celery queue get the worker's name
too (``<prefix>-gw0``), or one worker would read the other's cached feeds and consume
its tasks. ``redis_sentinels`` (tests/conftest.py) then checks per worker that nothing
outside its own prefix and queue went missing.
"""

import os

from tests.support import github_socket

GITHUB_TEST_CLIENT_ID = "Iv1.releasecal-tests"
GITHUB_TEST_CLIENT_SECRET = "releasecal-tests-oauth-secret"

os.environ["GITHUB_URL"] = github_socket.url()
os.environ["GITHUB_OAUTH_CLIENT_ID"] = GITHUB_TEST_CLIENT_ID
os.environ["GITHUB_OAUTH_CLIENT_SECRET"] = GITHUB_TEST_CLIENT_SECRET

# Once per worker: the processes a test starts inherit PYTEST_XDIST_WORKER and these
# settings, and often get a queue or prefix of the test's own (a Celery worker's
# CELERY_QUEUE), which must reach them unchanged.
_xdist_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _xdist_worker and os.environ.get("RELEASECAL_TEST_XDIST_NAMED") != _xdist_worker:
    for _name, _default in (("CACHE_KEY_PREFIX", "releasecal"), ("CELERY_QUEUE", "celery")):
        os.environ[_name] = f"{os.environ.get(_name) or _default}-{_xdist_worker}"
    os.environ["RELEASECAL_TEST_XDIST_NAMED"] = _xdist_worker

from config.settings.base import *  # noqa: E402, F403

# A password hash costs 0.8 s of CPU with Django's PBKDF2 (a million rounds, by design),
# and the suite's fixtures create a user with a password in hundreds of tests
# (``requester``, ``staff``, ``admin_client``): MD5 here, as Django's testing docs advise.
# Production keeps Django's default (config.settings.base sets none); the processes the
# tests start with production settings hash as a deployment does.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
