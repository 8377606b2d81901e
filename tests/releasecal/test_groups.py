"""The groups the migrations make are the groups groups_ensure makes again after a
flush: a permission granted by a later data migration and missing from
releasecal.defaults left the release team without it in every test that ran after a
transactional one (the KEP comments page redirected the Enhancements Lead to the
cockpit), and would leave a restored or re-seeded database the same."""

import pytest
from django.contrib.auth.models import Group

from releasecal.services import groups_ensure


def _granted() -> dict[str, set[tuple[str, str]]]:
    return {
        group.name: set(group.permissions.values_list("content_type__app_label", "codename"))
        for group in Group.objects.order_by("name")
    }


@pytest.mark.django_db
def test_groups_ensure_makes_again_exactly_what_the_migrations_granted():
    migrated = _granted()
    assert set(migrated) == {"Release Team", "Enhancements"}
    assert ("github_board", "view_issuecomment") in migrated["Release Team"]
    Group.objects.all().delete()
    groups_ensure()
    assert _granted() == migrated
