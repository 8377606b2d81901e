"""The hand-written output of the hot API serializers equals DRF's generic field path.

ExceptionOutputSerializer, ExceptionDetailOutputSerializer and DeadlineOutputSerializer
build their dicts directly for speed; their declared fields stay (they are the OpenAPI
schema), so DRF's generic ``to_representation`` over those fields is the reference.
"""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework import serializers

from api.fields import TimeAwareOutputSerializer
from exceptions import api as exceptions_api
from exceptions.models import ExceptionRequest
from exceptions.selectors import deadlines_next
from exceptions.services import (
    RequestFields,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_signoff,
    exception_request_submit,
)
from releasecal.models import Enhancement
from releasecal.services import enhancement_upsert, tracking_set

ZONES = [None, "Asia/Kolkata", "AoE"]


@pytest.fixture
def requests_in_every_shape(pending_request, code_freeze, release, release_team_member, requester):
    exception_request_amend(
        request=pending_request,
        fields=RequestFields(days=9, reason="more", pr_urls=["https://example.com/pr/1"], until_zone="Europe/Berlin"),
        actor=requester,
    )
    exception_request_signoff(request=pending_request, author=release_team_member, role="SIG Node lead", note="+1")
    shapes = [pending_request.pk]
    for number, outcome in [(2401, "approve"), (2402, "reject"), (2403, None)]:
        enhancement = enhancement_upsert(number=number, title=f"KEP {number}", owning_sig="apps")
        tracking_set(release=release, enhancement=enhancement, stage="alpha", status="tracked")
        filed = exception_request_submit(
            enhancement=enhancement,
            milestone=code_freeze,
            requester=None if outcome is None else requester,
            requester_name="Someone by email" if outcome is None else "",
            fields=RequestFields(days=1),
            submitted_at=code_freeze.deadline + dt.timedelta(minutes=5),
        )
        if outcome == "approve":
            exception_request_approve(request=filed, actor=release_team_member, note="ok")
        elif outcome == "reject":
            exception_request_reject(request=filed, actor=release_team_member, note="no")
        shapes.append(filed.pk)
    return shapes


def _generic(serializer: exceptions_api.ExceptionOutputSerializer, instance: ExceptionRequest) -> dict:
    serializer.prepare(instance)
    return TimeAwareOutputSerializer.to_representation(serializer, instance)


@pytest.mark.parametrize("viewer", ZONES)
def test_it_writes_the_exception_list_rows_exactly_as_the_declared_fields(requests_in_every_shape, viewer):
    rows = list(exceptions_api._request_list_queryset())
    assert len(rows) == len(requests_in_every_shape)
    serializer = exceptions_api.ExceptionOutputSerializer(context={"viewer_zone": viewer})
    for row in rows:
        reference = exceptions_api._request_get(row.pk)
        assert serializer.to_representation(row) == _generic(serializer, reference)
    assert {row.state for row in rows} == {"pending", "approved", "rejected"}


@pytest.mark.parametrize("viewer", ZONES)
def test_it_writes_the_exception_detail_exactly_as_the_declared_fields(requests_in_every_shape, viewer):
    serializer = exceptions_api.ExceptionDetailOutputSerializer(context={"viewer_zone": viewer})
    for pk in requests_in_every_shape:
        fast = serializer.to_representation(exceptions_api._request_get(pk))
        assert fast == _generic(serializer, exceptions_api._request_get(pk))
        assert list(fast) == list(_generic(serializer, exceptions_api._request_get(pk)))


@pytest.mark.parametrize("viewer", ZONES)
def test_it_writes_deadlines_exactly_as_the_declared_fields(requests_in_every_shape, release, kep, viewer):
    now = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    rows = deadlines_next(releases=[release], enhancements=None, now=now, limit=100)
    rows += deadlines_next(releases=[release], enhancements=list(Enhancement.objects.all()), now=now, limit=100)
    assert any(row.milestone.is_all_day for row in rows)
    assert any(row.is_extension for row in rows)
    serializer = exceptions_api.DeadlineOutputSerializer(context={"viewer_zone": viewer})
    for row in rows:
        fast = serializer.to_representation(row)
        generic = TimeAwareOutputSerializer.to_representation(serializer, row)
        assert fast == generic
        assert list(fast) == list(generic)
    outer = exceptions_api.DeadlineNextApi.OutputSerializer(context={"viewer_zone": viewer})
    data = {"now": "2024-06-01T00:00:00Z", "next": rows[0], "deadlines": rows}
    assert outer.to_representation(data) == serializers.Serializer.to_representation(outer, data)
    assert outer.to_representation({**data, "next": None, "deadlines": []}) == {
        "now": "2024-06-01T00:00:00Z",
        "next": None,
        "deadlines": [],
    }
