"""manage.py github_demo_board: the demo's fake GitHub answers with the demo's board."""

from __future__ import annotations

import os
import subprocess
import sys

import requests

from demo.data import KEPS
from tests.support.paths import ROOT


def test_the_demo_board_serves_every_demo_kep_on_its_own_port():
    process = subprocess.Popen(
        [sys.executable, "manage.py", "github_demo_board", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.base"},
    )
    try:
        settings = {}
        while len(settings) < 5:  # the settings it prints when it listens
            line = process.stdout.readline()
            assert line, "github_demo_board stopped before printing its settings"
            key, _, value = line.strip().partition("=")
            settings[key] = value
        answer = requests.post(
            settings["GITHUB_GRAPHQL_URL"],
            json={
                "query": '{ organization(login: "kubernetes") { projectV2(number: 241) { title items(first: 100) '
                "{ totalCount nodes { content { ... on Issue { number } } } } } } }"
            },
            headers={"Authorization": f"bearer {settings['GITHUB_TOKEN']}"},
            timeout=10,
        ).json()
        project = answer["data"]["organization"]["projectV2"]
        assert project["title"] == "v1.36 Release Tracking"
        assert sorted(n["content"]["number"] for n in project["items"]["nodes"]) == sorted(k[0] for k in KEPS)
        page = requests.get(settings["GITHUB_URL"] + "/_fake/board/kubernetes/241", timeout=10)
        assert "Multiple Service CIDRs" in page.text
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_the_demo_makes_its_board_the_current_releases_read_write_board_and_queues_each_request(
    release, pending_request, monkeypatch, django_capture_on_commit_callbacks
):
    from demo.management.commands import github_demo_board
    from github.models import Board, BoardItem, BoardWrite

    monkeypatch.setattr(github_demo_board, "CURRENT", "1.31")
    stale = Board.objects.create(release=release, owner="kubernetes", number=241)
    BoardItem.objects.create(
        board=stale, item_id="PVTI_old", kind="issue", request=pending_request, linked_at=release.created_at
    )
    with django_capture_on_commit_callbacks(execute=False):
        assert github_demo_board.demo_board_write() == 1
    board = Board.objects.get(release=release)
    assert (board.owner, board.number, board.mode) == ("kubernetes", 241, Board.Mode.READ_WRITE)
    assert not BoardItem.objects.exists()  # the fake starts empty: last run's links are gone
    (write,) = BoardWrite.objects.all()
    assert (write.request, write.event.startswith("demo:")) == (pending_request, True)
