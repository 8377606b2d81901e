"""The milestone a request extends: one reading for the API and ingest_exception."""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.selectors import exception_milestone_get
from releasecal.errors import NotFound, ValidationFailed
from releasecal.models import Release
from releasecal.services import milestone_create


def test_it_finds_a_milestone_by_id(code_freeze):
    assert exception_milestone_get(milestone_id=code_freeze.pk) == code_freeze
    assert exception_milestone_get(milestone_id=code_freeze.pk, release_slug="1.31") == code_freeze


def test_it_refuses_an_id_of_another_release(code_freeze):
    with pytest.raises(ValidationFailed, match=r"belongs to release 1\.31, not 1\.32"):
        exception_milestone_get(milestone_id=code_freeze.pk, release_slug="1.32")


@pytest.mark.parametrize("milestone_id", [999_999, 2**63, 10**30])
def test_an_unknown_or_impossible_id_is_a_clear_error(release, milestone_id):
    with pytest.raises(ValidationFailed, match=f"No milestone with id {milestone_id}"):
        exception_milestone_get(milestone_id=milestone_id)


def test_it_finds_the_one_milestone_of_a_release_and_kind(code_freeze):
    assert exception_milestone_get(release_slug="1.31", kind="code-freeze") == code_freeze


def test_it_names_every_candidate_when_a_kind_is_ambiguous(code_freeze, kinds):
    second = milestone_create(
        release=code_freeze.release, kind=kinds["code-freeze"], title="Code Freeze (again)",
        at=code_freeze.deadline + dt.timedelta(days=3),
    )  # fmt: skip
    listed = rf"2 'code-freeze' milestones .*#{second.pk}\)\); give the milestone id"
    with pytest.raises(ValidationFailed, match=listed):
        exception_milestone_get(release_slug="1.31", kind="code-freeze")


def test_a_cancelled_milestone_is_not_a_candidate(code_freeze):
    code_freeze.cancelled = True
    code_freeze.save()
    with pytest.raises(ValidationFailed, match=r"Release 1\.31 has no 'code-freeze' milestone"):
        exception_milestone_get(release_slug="1.31", kind="code-freeze")


def test_an_unknown_release_is_not_found(release):
    with pytest.raises(NotFound, match=r"No release '9\.99'"):
        exception_milestone_get(release_slug="9.99", kind="code-freeze")


def test_it_asks_for_an_id_or_a_release_and_kind(release):
    for named in ({}, {"release_slug": "1.31"}, {"kind": "code-freeze"}):
        with pytest.raises(ValidationFailed, match="Give the milestone id, or the release and the milestone kind"):
            exception_milestone_get(**named)
    assert Release.objects.count() == 1
