"""The fake GitHub on the socket tests/settings.py reserved, with releasecal's OAuth app
(the ``fake_github`` and ``oauth_app`` fixtures, offered to every test by tests/conftest.py),
and ``github_sign_in``, which walks the OAuth web flow with Django's test client."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.conf import settings

from tests import settings as test_settings
from tests.support import github_socket
from tests.support.fake_github import FakeGitHub

CALLBACK_PATH = "/accounts/github/login/callback/"


@pytest.fixture
def fake_github():
    """A fresh fake GitHub where GITHUB_URL points (allauth read it at import)."""
    if github_socket.url() != settings.GITHUB_URL:
        pytest.fail(
            "GITHUB_URL is not the fake's socket: run the tests with DJANGO_SETTINGS_MODULE=tests.settings "
            f"(got {settings.GITHUB_URL!r})"
        )
    with FakeGitHub(sock=github_socket.reserved()) as fake:
        yield fake


@pytest.fixture
def oauth_app(fake_github):
    """releasecal's OAuth app on the fake, its callback on Django's test client host."""
    return fake_github.oauth_app(
        test_settings.GITHUB_TEST_CLIENT_ID,
        test_settings.GITHUB_TEST_CLIENT_SECRET,
        f"http://testserver{CALLBACK_PATH}",
    )


@dataclass
class Flow:
    start: object  # the test client's answer to POST /accounts/github/login/
    authorize_url: str
    callback: str  # path and query GitHub redirected the browser to
    answer: object  # the test client's answer to the callback

    @property
    def state(self) -> str:
        return parse_qs(urlsplit(self.authorize_url).query)["state"][0]


def github_sign_in(client, fake: FakeGitHub, *, next_url: str = "", process: str = "", tamper=None) -> Flow:
    """POST the login page's GitHub form, follow GitHub's authorize redirect on the fake
    (a real HTTP request), then GET the callback; ``tamper(path_and_query)`` may change
    the callback (a wrong state, a reused code) before it is sent."""
    query = {k: v for k, v in {"next": next_url, "process": process}.items() if v}
    start = client.post(
        "/accounts/github/login/" + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")
    )
    assert start.status_code == 302, start.content[:500]
    authorize_url = start["Location"]
    assert authorize_url.startswith(fake.url + "/login/oauth/authorize?"), authorize_url
    redirected = requests.get(authorize_url, allow_redirects=False, timeout=10)
    assert redirected.status_code == 302, redirected.text[:300]
    parts = urlsplit(redirected.headers["location"])
    assert parts.path == CALLBACK_PATH
    callback = f"{parts.path}?{parts.query}"
    if tamper is not None:
        callback = tamper(callback)
    return Flow(start=start, authorize_url=authorize_url, callback=callback, answer=client.get(callback))
