"""The board's faces: the admin (set a board, read-only by default), the command, the
cockpit and check_services."""

from __future__ import annotations

import time
from io import StringIO

import pytest
from django.contrib.auth.models import Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from config.health import run_reports
from github.models import Board


@pytest.fixture
def swap_on_board(project, enhancements):
    issue = enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31")
    return project.add_issue(issue, {"Status": "Tracked For Code Freeze"})


@pytest.fixture
def lead_client(release_team_member) -> Client:
    release_team_member.is_staff = True
    release_team_member.save()
    release_team_member.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="github_board", codename__in=["view_board", "change_board"])
    )
    client = Client()
    client.force_login(release_team_member)
    return client


def run(*args) -> str:
    out = StringIO()
    call_command("github_board_sync", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_what_it_would_write_and_a_dry_run_keeps_nothing(board, swap_on_board, pending_request):
    out = run("--release", "1.31", "--dry-run")
    assert out.splitlines()[:4] == [
        'kubernetes/241 "v1.31 Release Tracking" for 1.31: 1 items read, 0 with an exception, in 2 GraphQL requests.',
        f"KEP-2400 Code and Test Freeze (request #{pending_request.pk}, pending): would write on "
        "kubernetes/enhancements#2400",
        "    Exception Request Type: (empty) -> Code and Test Freeze",
        "    Exception Status: (empty) -> In Review",
    ]
    board.refresh_from_db()
    assert board.last_synced_at is None
    run("--release", "1.31")
    board.refresh_from_db()
    assert board.last_synced_at is not None


def test_the_command_refuses_clearly(db, release, github_settings, board):
    with pytest.raises(CommandError, match=r"Release '9\.99' has no GitHub board: set one in the admin\."):
        run("--release", "9.99")
    github_settings.GITHUB_TOKEN = ""
    with pytest.raises(CommandError, match="No GitHub credentials are set"):
        run("--release", "1.31", "--dry-run")


def test_check_services_says_whether_the_board_answers_and_when_it_synced(board, swap_on_board, github):
    assert run_reports()["github board"] == (
        '1.31 kubernetes/241 (read-only): reachable ("v1.31 Release Tracking"), last synced never'
    )
    github.faults.fail_next(1, status=502, match="graphql")
    assert run_reports()["github board"] == "1.31 kubernetes/241: unreachable: GitHub answered 502 (not retried)"
    board.refresh_from_db()
    assert (board.reachable, board.last_error) == (False, "GitHub answered 502 (not retried)")


def test_check_services_is_bounded_when_github_is_slow(board, github):
    """The beat's liveness probe runs check_services with 15-20 s: GitHub's slowness is a
    line of the report, never a probe that times out."""
    github.faults.slow_next(8, match="graphql")
    started = time.monotonic()
    line = run_reports()["github board"]
    assert time.monotonic() - started < 6
    assert line == "1.31 kubernetes/241: unreachable: GitHub did not answer within 3 s"


def test_check_services_without_a_board_or_credentials(db, release, settings):
    settings.GITHUB_TOKEN = ""
    assert run_reports()["github board"] == "off (no board set)"
    Board.objects.create(release=release, owner="kubernetes", number=241)
    assert run_reports()["github board"] == "off (no GitHub credentials set)"
    settings.GITHUB_APP_ID = 1234
    assert run_reports()["github board"] == (
        "misconfigured: A GitHub App needs GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID: "
        "GITHUB_APP_PRIVATE_KEY, GITHUB_APP_INSTALLATION_ID is not set"
    )


def test_a_board_set_in_the_admin_is_read_only_by_default(admin_client, release, github_settings):
    assert admin_client.get("/admin/github_board/board/add/").status_code == 200
    form = {"release": release.pk, "owner": "kubernetes", "number": 241, "field_names": "{}"}
    saved = admin_client.post("/admin/github_board/board/add/", {**form, "mode": "read_only"})
    assert saved.status_code == 302
    assert Board.objects.get().mode == Board.Mode.READ_ONLY
    assert Board._meta.get_field("mode").default == Board.Mode.READ_ONLY
    unknown = admin_client.post(f"/admin/github_board/board/{Board.objects.get().pk}/change/", {**form, "mode": "on"})
    assert unknown.status_code == 200
    assert "Select a valid choice" in unknown.content.decode()


def test_the_cockpit_shows_the_board_and_its_report(lead_client, board, swap_on_board, pending_request):
    body = lead_client.get("/admin/").content.decode()
    assert "GitHub boards (1)" in body
    assert "not asked yet" in body
    synced = lead_client.post(f"/admin/github_board/board/{board.pk}/sync/", {"action": "sync"})
    assert synced.status_code == 302
    body = lead_client.get("/admin/").content.decode()
    assert "reachable" in body
    assert "5 fields to write, 0 problems" in body
    report = lead_client.get(f"/admin/github_board/board/{board.pk}/sync/").content.decode()
    assert "    Status: Tracked For Code Freeze -&gt; Exception Pending" in report


def test_the_cockpits_report_shows_a_refusal_as_a_message(lead_client, board, github_settings):
    github_settings.GITHUB_TOKEN = "github_pat_nobody"
    answer = lead_client.post(f"/admin/github_board/board/{board.pk}/sync/", {"action": "dry-run"}, follow=True)
    assert answer.status_code == 200
    assert "GitHub refused the credentials (401 Bad credentials)" in answer.content.decode()


def test_the_field_names_must_be_an_object_of_names(admin_client, release, github_settings):
    form = {"release": release.pk, "owner": "kubernetes", "number": 241, "mode": "read_only"}
    refused = admin_client.post("/admin/github_board/board/add/", {**form, "field_names": '["Exception Status"]'})
    assert refused.status_code == 200
    assert "An object of names: {&quot;Exception Status&quot;: &quot;Exception state&quot;, ...}" in (
        refused.content.decode()
    )
    saved = admin_client.post(
        "/admin/github_board/board/add/", {**form, "field_names": '{"Exception Status/In Review": "Under review"}'}
    )
    assert saved.status_code == 302
    assert Board.objects.get().field_names == {"Exception Status/In Review": "Under review"}
