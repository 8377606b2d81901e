import pytest

from tests.support.fake_slack import FakeSlack


@pytest.fixture
def fake_slack():
    """A fake Slack on 127.0.0.1, not wired into the settings: reminders reach it through
    a channel's webhook URL or the environment a worker is given."""
    with FakeSlack() as fake:
        yield fake
