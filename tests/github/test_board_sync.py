"""Reading the board: each exception item matched to releasecal's request, and what
releasecal would write there, field by field (read-only: nothing is written)."""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.fields import RequestFields
from exceptions.services import exception_request_approve, exception_request_submit, exception_request_withdraw
from github.models import Board, BoardItem
from github.report import report_lines
from github.services import BoardRefused, board_sync
from github.sync import Change

DECIDED = dt.datetime(2024, 7, 25, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def swap(enhancements):
    return enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31")


def changes(report, kep: int) -> dict:
    (plan,) = [plan for plan in report.plans if plan.kep == kep]
    return {change.field: (change.before, change.after) for change in plan.changes}


def test_a_pending_request_would_set_the_handbooks_values_on_the_keps_item(
    board, project, swap, pending_request, github
):
    project.add_issue(swap, {"Status": "Tracked For Code Freeze", "Stage": "Beta", "Note": "on track"})

    report = board_sync(board=board, dry_run=True)

    assert report.items_read == 1
    assert report.exception_items == 0
    assert report.problems == []
    (plan,) = report.plans
    assert (plan.action, plan.item, plan.type, plan.state) == (
        "update",
        "kubernetes/enhancements#2400",
        "Code and Test Freeze",
        "pending",
    )
    assert plan.changes == [
        Change("Exception Request Type", None, "Code and Test Freeze"),
        Change("Exception Status", None, "In Review"),
        Change("Status", "Tracked For Code Freeze", "Exception Pending"),
        Change("Additional Time", None, 2.0),
        Change("Exception Request Date", None, "2024-07-24"),  # 03:00 UTC, 20:00 PDT the day before
    ]
    assert github.mutations() == []  # read-only: nothing written
    assert github.changes(via="graphql") == []


def test_the_report_reads_field_by_field(board, project, swap, pending_request):
    project.add_issue(swap, {"Status": "Tracked For Code Freeze"})
    report = board_sync(board=board, dry_run=True)
    assert report_lines(report, dry_run=True)[1:] == [
        f"KEP-2400 Code and Test Freeze (request #{pending_request.pk}, pending): would write on "
        "kubernetes/enhancements#2400",
        "    Exception Request Type: (empty) -> Code and Test Freeze",
        "    Exception Status: (empty) -> In Review",
        "    Status: Tracked For Code Freeze -> Exception Pending",
        "    Additional Time: (empty) -> 2",
        "    Exception Request Date: (empty) -> 2024-07-24",
    ]


def test_an_approval_would_set_approved_exception_approved_and_the_decision_date(
    board, project, swap, pending_request, release_team_member
):
    exception_request_approve(request=pending_request, actor=release_team_member, at=DECIDED)
    project.add_issue(
        swap,
        {
            "Exception Request Type": "Code and Test Freeze",
            "Exception Status": "In Review",
            "Status": "Exception Pending",
            "Additional Time": 2,
            "Exception Request Date": "2024-07-24",
        },
    )
    report = board_sync(board=board, dry_run=True)
    assert report.exception_items == 1
    assert changes(report, 2400) == {
        "Exception Status": ("In Review", "Approved"),
        "Status": ("Exception Pending", "Exception Approved"),
        "Exception Decision Date": (None, "2024-07-25"),
    }


def test_a_board_that_holds_releasecals_record_needs_nothing_and_a_second_sync_changes_nothing(
    board, project, swap, pending_request, github
):
    project.field("Exception Status").rename_option("In Review", "In review")  # the handbook's uneven case
    project.add_issue(
        swap,
        {
            "Exception Request Type": "Code and Test Freeze",
            "Exception Status": "In review",  # options match without regard to case
            "Status": "Exception Pending",
            "Additional Time": 2,
            "Exception Request Date": "2024-07-24",
            "Exception Request Notes": "the liaison's own words",  # a human's field: never planned
        },
    )
    first = board_sync(board=board)
    board.refresh_from_db()
    kept = board.last_report
    second = board_sync(board=board)
    assert first.plans == second.plans
    assert [plan.changes for plan in second.plans] == [[]]  # matched (for the backfill), nothing to write
    assert report_lines(second, dry_run=False)[1:] == ["Nothing to write: the board holds releasecal's record."]
    board.refresh_from_db()
    assert board.last_report == kept
    assert github.mutations() == []


def test_a_second_exception_of_a_kep_on_the_view_would_be_a_draft_item(
    board, project, swap, pending_request, kep, enhancements_freeze, requester, release_team_member
):
    exception_request_approve(request=pending_request, actor=release_team_member, at=DECIDED)
    project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze", "Exception Status": "Approved"})
    earlier = exception_request_submit(
        enhancement=kep,
        milestone=enhancements_freeze,
        requester=requester,
        fields=RequestFields(days=3, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=enhancements_freeze.deadline + dt.timedelta(hours=2),
    )
    report = board_sync(board=board, dry_run=True)
    (draft,) = [plan for plan in report.plans if plan.request_id == earlier.pk]
    assert (draft.action, draft.item_id, draft.type) == ("create draft", "", "Enhancements Freeze")
    assert [c.field for c in draft.changes] == [
        "Exception Request Type",
        "Exception Status",
        "Additional Time",
        "Exception Request Date",
    ]  # no Status on a draft: the KEP's Status lives on its issue's item


def test_a_draft_item_naming_the_kep_is_its_second_exception(
    board, project, swap, pending_request, kep, enhancements_freeze, requester
):
    earlier = exception_request_submit(
        enhancement=kep,
        milestone=enhancements_freeze,
        requester=requester,
        fields=RequestFields(days=3, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=enhancements_freeze.deadline + dt.timedelta(hours=2),
    )
    project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze"})
    draft = project.add_draft(
        "KEP-2400: enhancements freeze exception",
        values={"Exception Request Type": "Enhancements Freeze", "Exception Status": "In Review"},
    )
    report = board_sync(board=board, dry_run=True)
    assert report.exception_items == 2
    (plan,) = [plan for plan in report.plans if plan.request_id == earlier.pk]
    assert (plan.action, plan.item_id) == ("update", draft.node_id)
    assert plan.item == 'draft "KEP-2400: enhancements freeze exception"'


def test_it_reads_a_150_item_board_in_pages_of_100(board, project, enhancements, pending_request):
    for number in range(3000, 3150):
        project.add_issue(enhancements.issue(number, f"KEP {number}"), {"Status": "Tracked For Code Freeze"})
    report = board_sync(board=board, dry_run=True)
    assert report.items_read == 150
    assert report.requests == 3  # the fields, then two pages of items
    (plan,) = report.plans
    assert plan.action == "add issue"  # KEP-2400 is not on the board yet


def test_what_it_cannot_map_is_reported_by_name_never_guessed(board, project, swap, enhancements, pending_request):
    project.field("Exception Status").rename_option("In Review", "Under review")
    project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze"})
    project.add_issue(enhancements.issue(4444, "Unknown to releasecal"), {"Exception Request Type": "Docs Freeze"})
    project.add_draft("a second exception", values={"Exception Request Type": "Docs Freeze"})
    project.field("Exception Request Type").add_option("KEP Readiness")
    project.add_issue(enhancements.issue(5555, "A v1.38 name"), {"Exception Request Type": "KEP Readiness"})

    report = board_sync(board=board, dry_run=True)

    assert report.problems == [
        "kubernetes/enhancements#4444: KEP-4444 (Docs Freeze) has no exception request in releasecal",
        'draft "a second exception": no KEP number (a draft\'s title names it as KEP-1880)',
        'kubernetes/enhancements#5555: the option "KEP Readiness" of "Exception Request Type" is not one '
        "releasecal maps",
        'the board\'s field "Exception Status" has no option "In Review" (its options: Under review, Approved, '
        "Rejected)",
    ]
    assert "Exception Status" not in changes(report, 2400)


def test_a_renamed_field_or_option_is_matched_through_the_releases_names(board, project, swap, pending_request):
    project.field("Exception Status").rename_option("In Review", "Under review")
    project.rename_field("Additional Time", "Days Asked")
    project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze"})
    board.field_names = {"Exception Status/In Review": "Under review", "Additional Time": "Days Asked"}
    board.save()
    report = board_sync(board=board, dry_run=True)
    assert report.problems == []
    assert changes(report, 2400)["Exception Status"] == (None, "Under review")
    assert changes(report, 2400)["Days Asked"] == (None, 2.0)


def test_a_dry_run_keeps_nothing_and_a_sync_keeps_its_report(board, project, swap, pending_request):
    project.add_issue(swap)
    board_sync(board=board, dry_run=True)
    board.refresh_from_db()
    assert (board.last_synced_at, board.last_report) == (None, {})
    assert (board.reachable, board.title) == (True, "v1.31 Release Tracking")
    board_sync(board=board)
    board.refresh_from_db()
    assert board.last_synced_at is not None
    assert board.last_report["plans"][0]["changes"][0] == {
        "field": "Exception Request Type",
        "before": None,
        "after": "Code and Test Freeze",
    }


def test_the_backfill_links_existing_items_once(board, project, swap, pending_request):
    item = project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze"})
    dry = board_sync(board=board, dry_run=True, backfill=True)
    assert dry.links == [
        f"KEP-2400 (Code and Test Freeze, request #{pending_request.pk}) -> kubernetes/enhancements#2400 "
        f"({item.node_id})"
    ]
    assert not BoardItem.objects.exists()
    board_sync(board=board, backfill=True)
    (link,) = BoardItem.objects.all()
    assert (link.item_id, link.kind, link.request_id) == (item.node_id, "issue", pending_request.pk)
    board.refresh_from_db()
    assert board.backfilled_at is not None
    with pytest.raises(BoardRefused, match=r"was backfilled at .*: a backfill is done once"):
        board_sync(board=board, backfill=True)
    # The link holds even when the item's type is cleared by hand.
    project.world.set_value(
        item, project.field("Exception Request Type"), None, by=project.world.default_user, via="human"
    )
    (plan,) = board_sync(board=board, dry_run=True).plans
    assert (plan.item_id, plan.linked) == (item.node_id, True)


def test_a_withdrawn_requests_item_is_known_and_left_alone(board, project, swap, pending_request):
    exception_request_withdraw(request=pending_request, actor_label="the requester")
    project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze", "Exception Status": "In Review"})
    report = board_sync(board=board, dry_run=True)
    assert report.exception_items == 1
    assert (report.plans, report.problems) == ([], [])


def test_an_off_board_is_refused(board):
    board.mode = Board.Mode.OFF
    board.save()
    with pytest.raises(BoardRefused, match=r"The board of 1\.31 is off: set its mode in the admin"):
        board_sync(board=board, dry_run=True)
