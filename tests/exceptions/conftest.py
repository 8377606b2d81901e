"""Fixtures of the exceptions tests: an AoE release with one request to decide, as the
release of issue 24's example (a 3-day grant after "end of Thursday 10 December 2026 AoE")."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from exceptions.models import ExceptionRequest
from exceptions.services import RequestFields, exception_request_submit
from releasecal import tz
from releasecal.models import Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set

UTC = dt.UTC


@pytest.fixture
def aoe_release(kinds) -> Release:
    """1.36-like, AoE: code freeze at the end of Thursday 10 December 2026 AoE (12:00 UTC
    Friday 11 December), rc.0 on Monday 21 December 2026."""
    release = Release.objects.create(
        slug="1.36", name="Kubernetes v1.36", zone="AoE", start_date=dt.date(2026, 9, 7),
        status=Release.Status.ACTIVE,
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze", at=tz.end_of_day(dt.date(2026, 12, 10), "AoE")
    )
    milestone_create(
        release=release, kind=kinds["rc"], title="v1.36.0-rc.0", at=dt.datetime(2026, 12, 21, 17, 0, tzinfo=UTC)
    )
    return release


@pytest.fixture
def decider(aoe_release) -> User:
    user = User.objects.create_user("rel-lead", "rel-lead@example.com", "pw-rel-lead-1", is_staff=True)
    user.groups.add(Group.objects.get(name="Release Team"))
    aoe_release.team.add(user)
    return user


@pytest.fixture
def decider_client(decider) -> Client:
    client = Client()
    client.force_login(decider)
    return client


@pytest.fixture
def request_1880(aoe_release) -> ExceptionRequest:
    kep = enhancement_upsert(number=1880, title="Multiple Service CIDRs", owning_sig="network")
    tracking_set(release=aoe_release, enhancement=kep, stage="stable", status="tracked")
    return exception_request_submit(
        enhancement=kep,
        milestone=aoe_release.milestones.get(kind__slug="code-freeze"),
        requester_name="Antonio Ojea",
        requester_email="aojea@example.com",
        submitted_at=dt.datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
        fields=RequestFields(
            days=3,
            enhancement_name="Multiple Service CIDRs",
            stage="stable",
            sig="network",
            issue_url="https://github.com/kubernetes/enhancements/issues/1880",
            pr_urls=["https://github.com/kubernetes/kubernetes/pull/128971"],
            reason="The GA graduation is the last step; the e2e tests are written.",
            risks_adding="Low: the feature has been beta for three releases.",
            risks_cutting="Users wait another release for GA.",
        ),
    )
