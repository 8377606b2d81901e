"""The audit log cannot be edited: not through the model, and on PostgreSQL not even
with a raw UPDATE or DELETE."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from releasecal.models import AuditLog
from tests.support.pg import require_postgres


@pytest.fixture
def row(pending_request) -> AuditLog:
    return AuditLog.objects.get(action="exception.submit", object_id=str(pending_request.pk))


def test_a_saved_row_cannot_be_saved_again_or_deleted(row):
    row.action = "exception.forged"
    with pytest.raises(ValidationError):
        row.save()
    with pytest.raises(ValidationError):
        row.delete()


@pytest.mark.postgres
def test_postgresql_refuses_update_and_delete_of_a_row(row):
    require_postgres()
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        AuditLog.objects.filter(pk=row.pk).update(action="exception.forged")
    with pytest.raises(IntegrityError, match="immutable"), transaction.atomic():
        AuditLog.objects.filter(pk=row.pk).delete()
    assert AuditLog.objects.get(pk=row.pk).action == "exception.submit"


@pytest.mark.postgres
def test_deleting_a_user_keeps_their_rows_with_the_label(row, requester):
    require_postgres()
    label = row.actor_label
    assert row.actor_id == requester.pk
    User.objects.filter(pk=requester.pk).delete()
    row = AuditLog.objects.get(pk=row.pk)
    assert row.actor_id is None
    assert row.actor_label == label
