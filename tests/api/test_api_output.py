"""What the API writes for each resource, field by field: one output path per resource.

Each resource's JSON comes from its DRF output serializer (which is also the OpenAPI
schema); these tests pin the shape that clients read: every key in order, instants as
x / x_local / x_viewer, nulls where a part is absent, and the same row from the list's
slim query as from the detail's full one.
"""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from exceptions.services import (
    RequestFields,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_signoff,
    exception_request_submit,
)
from releasecal import tz
from releasecal.services import enhancement_upsert, tracking_set

VIEWERS = [None, "Asia/Kolkata", "AoE"]

REQUEST_KEYS = [
    "id", "state", "release", "kep", "milestone", "also_milestone", "requester", "on_behalf_of", "days",
    "filed_after_window", "from_archive", "warnings", "liaison", "slack_thread_url", "board_item_url", "current",
    "signoffs", "decision", "effective_warning", "submitted_at",
    "submitted_at_local", "submitted_at_viewer", "received_at", "received_at_local", "received_at_viewer",
    "effective_deadline", "effective_deadline_local", "effective_deadline_viewer", "default_granted_until",
    "default_granted_until_local", "default_granted_until_viewer",
]  # fmt: skip
DEADLINE_KEYS = [
    "milestone_id", "release", "kind", "title", "zone", "display", "source", "exception_id", "keps",
    "deadline", "deadline_local", "deadline_viewer", "original_deadline", "original_deadline_local",
    "original_deadline_viewer",
]  # fmt: skip


def keys(names: list[str], viewer: str | None) -> list[str]:
    return [name for name in names if viewer or not name.endswith("_viewer")]


def get(path: str, viewer: str | None, **params) -> dict:
    response = APIClient().get(path, {**params, **({"tz": viewer} if viewer else {})})
    assert response.status_code == 200, response.content
    return response.json()


def viewer_keys(value) -> list[str]:
    """Every ``*_viewer`` key anywhere in a JSON value."""
    if isinstance(value, dict):
        found = [key for key in value if key.endswith("_viewer")]
        return found + [key for item in value.values() for key in viewer_keys(item)]
    if isinstance(value, list):
        return [key for item in value for key in viewer_keys(item)]
    return []


@pytest.fixture
def requests_in_every_shape(pending_request, code_freeze, release, release_team_member, requester):
    """Pending (amended, signed off), approved, rejected, and filed for someone by email."""
    exception_request_amend(
        request=pending_request,
        fields=RequestFields(days=9, reason="more", pr_urls=["https://example.com/pr/1"], until_zone="Europe/Berlin"),
        actor=requester,
    )
    exception_request_signoff(request=pending_request, author=release_team_member, note="+1")
    shapes = {"pending": pending_request.pk}
    for number, outcome in [(2401, "approved"), (2402, "rejected"), (2403, "emailed")]:
        enhancement = enhancement_upsert(number=number, title=f"KEP {number}", owning_sig="apps")
        tracking_set(release=release, enhancement=enhancement, stage="alpha", status="tracked")
        filed = exception_request_submit(
            enhancement=enhancement,
            milestone=code_freeze,
            requester=None if outcome == "emailed" else requester,
            requester_name="Someone by email" if outcome == "emailed" else "",
            fields=RequestFields(days=1),
            submitted_at=code_freeze.deadline + dt.timedelta(minutes=5),
        )
        if outcome == "approved":
            exception_request_approve(request=filed, actor=release_team_member, note="ok")
        elif outcome == "rejected":
            exception_request_reject(request=filed, actor=release_team_member, note="no")
        shapes[outcome] = filed.pk
    return shapes


@pytest.mark.parametrize("viewer", VIEWERS)
def test_a_list_row_is_the_detail_without_its_history(requests_in_every_shape, viewer):
    rows = get("/api/v1/exceptions/", viewer, ordering="id")["results"]
    assert [row["id"] for row in rows] == sorted(requests_in_every_shape.values())
    for row in rows:
        detail = get(f"/api/v1/exceptions/{row['id']}/", viewer)
        assert list(row) == keys(REQUEST_KEYS, viewer)
        with_history = keys(REQUEST_KEYS, viewer)
        with_history.insert(with_history.index("effective_warning") + 1, "revisions")
        with_history.insert(with_history.index("revisions") + 1, "corrections")  # the decision's history
        assert list(detail) == with_history
        assert row == {key: value for key, value in detail.items() if key not in ("revisions", "corrections")}
        assert detail["current"] == detail["revisions"][0]
    if viewer is None:
        assert viewer_keys(rows) == []


def test_a_pending_request_writes_every_field(requests_in_every_shape):
    body = get(f"/api/v1/exceptions/{requests_in_every_shape['pending']}/", "Asia/Kolkata")
    assert body["state"] == "pending"
    assert body["release"] == "1.31"
    assert body["kep"] == {"number": 2400, "title": "Node memory swap support", "owning_sig": "node"}
    assert body["milestone"]["kind"] == "code-freeze"
    assert body["milestone"]["deadline"] == "2024-07-24T02:00:00Z"
    assert body["milestone"]["deadline_local"]["abbreviation"] == "PDT"
    assert body["milestone"]["deadline_viewer"]["datetime"] == "2024-07-24T07:30:00+05:30"
    assert body["requester"] == "requester"
    assert body["days"] == 9
    assert body["decision"] is None
    assert body["submitted_at"] == "2024-07-24T03:00:00Z"
    assert body["effective_deadline"] == "2024-07-24T02:00:00Z"
    assert body["effective_deadline_local"]["timezone"] == "America/Los_Angeles"
    # Freeze + 9 days, end of that day in the release zone.
    assert body["default_granted_until"] == "2024-08-02T07:00:00Z"
    assert body["default_granted_until_viewer"]["abbreviation"] == "IST"
    assert [revision["number"] for revision in body["revisions"]] == [2, 1]
    current = body["current"]
    assert (current["days"], current["reason"], current["until_zone"]) == (9, "more", "Europe/Berlin")
    assert current["pr_urls"] == ["https://example.com/pr/1"]
    assert current["created_by"] == "requester"
    assert current["created_at_local"]["timezone"] == "America/Los_Angeles"
    [signoff] = body["signoffs"]
    assert (signoff["author"], signoff["role"], signoff["note"]) == ("lead", "1.31 release team", "+1")
    assert list(signoff) == ["author", "role", "note", "at", "at_local", "at_viewer"]


def test_decided_and_emailed_requests_write_their_own_parts(requests_in_every_shape):
    approved = get(f"/api/v1/exceptions/{requests_in_every_shape['approved']}/", None)
    decision = approved["decision"]
    assert list(decision) == [
        "outcome", "decided_by", "note", "granted_zone", "decided_at", "decided_at_local", "granted_until",
        "granted_until_local",
    ]  # fmt: skip
    assert (decision["outcome"], decision["decided_by"], decision["note"]) == ("approved", "lead", "ok")
    assert approved["effective_deadline"] == decision["granted_until"] == "2024-07-25T07:00:00Z"
    assert approved["default_granted_until"] is None
    assert approved["default_granted_until_local"] is None
    rejected = get(f"/api/v1/exceptions/{requests_in_every_shape['rejected']}/", None)
    assert rejected["decision"]["granted_until"] is None
    assert rejected["decision"]["granted_until_local"] is None
    assert rejected["effective_deadline"] == "2024-07-24T02:00:00Z"
    emailed = get(f"/api/v1/exceptions/{requests_in_every_shape['emailed']}/", None)
    assert emailed["requester"] == "Someone by email"
    assert emailed["current"]["created_by"] is None


@pytest.mark.parametrize("viewer", VIEWERS)
def test_deadline_rows_write_every_field(requests_in_every_shape, viewer, monkeypatch):
    monkeypatch.setattr(tz, "utc_now", lambda: dt.datetime(2024, 7, 1, tzinfo=dt.UTC))
    release = get("/api/v1/deadlines/next/", viewer, release="1.31", limit=100)
    assert list(release) == ["now", "next", "deadlines", "out_of_milestone"]
    assert release["out_of_milestone"] == []  # only KEPs asked for can be out of a release
    assert release["now"] == "2024-07-01T00:00:00Z"
    assert release["next"] == release["deadlines"][0]
    for row in release["deadlines"]:
        assert list(row) == keys(DEADLINE_KEYS, viewer)
        assert (row["source"], row["exception_id"], row["keps"]) == ("milestone", None, [])
        assert row["original_deadline"] == row["deadline"]
    ga = release["deadlines"][-1]
    assert ga["kind"] == "ga"
    assert ga["display"].startswith("Tuesday 13 August 2024 (all day; ends ")
    assert ga["deadline_local"]["timezone"] == ga["zone"] == "America/Los_Angeles"
    assert ga["deadline"] == "2024-08-14T07:00:00Z"

    extended = get("/api/v1/deadlines/next/", viewer, kep=2401)["next"]
    assert list(extended) == keys(DEADLINE_KEYS, viewer)
    assert (extended["source"], extended["exception_id"], extended["keps"]) == (
        "exception", requests_in_every_shape["approved"], [2401]
    )  # fmt: skip
    assert (extended["deadline"], extended["original_deadline"]) == ("2024-07-25T07:00:00Z", "2024-07-24T02:00:00Z")
    if viewer:
        assert extended["deadline_viewer"]["timezone"] == viewer


def test_no_deadline_left_is_a_null_next_and_an_empty_list(release, monkeypatch):
    monkeypatch.setattr(tz, "utc_now", lambda: dt.datetime(2030, 1, 1, tzinfo=dt.UTC))
    assert get("/api/v1/deadlines/next/", None, release="1.31") == {
        "now": "2030-01-01T00:00:00Z",
        "next": None,
        "deadlines": [],
        "out_of_milestone": [],
    }
