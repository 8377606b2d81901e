"""What is "mine" after a GitHub sign-in: the personal feed and the Slack Home tab read
people.selectors.enhancement_list_of_user, as /me/ and the KEP page do."""

from __future__ import annotations

import pytest

from feeds.services import feed_token_create
from people.models import GitHubHandle
from releasecal import tz
from slack_integration.home import kep_blocks
from tests.people.test_kep_requests import current, github_user  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


def test_the_personal_feed_has_the_kep_naming_your_handle(client, current):  # noqa: F811
    user = github_user("owner-one")
    url = f"/calendar/u/{feed_token_create(user=user).token}.ics"
    body = client.get(url).content.decode()
    assert "Kubernetes v1.99" in body
    assert "Code Freeze" in body

    GitHubHandle.objects.all().delete()  # the handle gone (moved to another account): the feed follows
    later = client.get(url).content.decode()
    assert "Kubernetes v1.99" not in later


def test_the_slack_home_tab_lists_the_kep_naming_your_handle(current):  # noqa: F811
    user = github_user("OWNER-ONE")
    text = str(kep_blocks(user, None, tz.utc_now()))
    assert "KEP-4444" in text
    assert "You own no KEP" not in text


def test_a_kep_yaml_author_is_mine_a_reviewer_is_not(current):  # noqa: F811
    from people.selectors import enhancement_list_of_user
    from releasecal.models import EnhancementPerson
    from releasecal.services import enhancement_upsert

    authored = enhancement_upsert(number=5001, title="Authored", owning_sig="node")
    reviewed = enhancement_upsert(number=5002, title="Reviewed", owning_sig="node")
    EnhancementPerson.objects.create(enhancement=authored, github="Owner-ONE", role=EnhancementPerson.Role.AUTHOR)
    EnhancementPerson.objects.create(enhancement=reviewed, github="owner-one", role=EnhancementPerson.Role.REVIEWER)
    user = github_user("owner-one")
    assert [k.number for k in enhancement_list_of_user(user=user)] == [4444, 5001]
