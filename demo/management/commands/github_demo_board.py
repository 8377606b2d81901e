"""``manage.py github_demo_board [--port 8766]``: the fake GitHub of the test suite
(tests/support/fake_github) on 127.0.0.1 with the demo's board, for ``make run``.

It holds kubernetes/enhancements with the demo's KEP issues (demo.data.KEPS), a
"v1.36 Release Tracking" board (project 241) with every field of the handbook and an
item per KEP, and a token with the board and issue scopes. It prints the settings to
source (``KEY=value`` lines) and serves until stopped (SIGTERM, SIGINT). The board as a
person sees it: ``/_fake/board/kubernetes/241`` (it refreshes itself), every change
written: ``/_fake/changes``. ``--write`` (``make run``) makes it the current release's
board, read-write, and queues a write of each of its requests.
"""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from demo.data import CURRENT, KEPS

STATUS = {"tracked": "Tracked For Code Freeze", "at_risk": "At Risk For Code Freeze", "deferred": "Deferred"}
STAGE = {"alpha": "Alpha", "beta": "Beta", "stable": "Stable"}


def build_demo(fake) -> None:
    """The demo's KEPs as kubernetes/enhancements issues on the current release's board."""
    from tests.support.fake_github import k8s_board

    repo = fake.repository("kubernetes/enhancements")
    board = k8s_board(fake, number=241, release=CURRENT)
    sigs = {o.name for o in board.field("SIG").options}
    for number, title, sig, _participating, authors, stage, status in KEPS:
        issue = repo.issue(
            number, title, labels=["lead-opted-in", f"sig/{sig}"], milestone=f"v{CURRENT}", assignees=authors[-1:]
        )
        values = {"Status": STATUS[status], "Stage": STAGE[stage]}
        if f"sig-{sig}" in sigs:
            values["SIG"] = f"sig-{sig}"
        board.add_issue(issue, values)


def demo_board_write() -> int | None:
    """The current release's board is the fake's, read-write, linked to nothing yet (the
    fake starts empty each run), with a write of each of its requests in the ledger (the
    worker sends them). The number of requests; None without the release (no demo data)."""
    from exceptions.models import ExceptionRequest
    from github.models import Board, BoardItem
    from github.writes import board_write_record
    from releasecal import tz
    from releasecal.models import Release

    release = Release.objects.filter(slug=CURRENT).first()
    if release is None:
        return None
    with transaction.atomic():
        Board.objects.filter(owner="kubernetes", number=241).exclude(release=release).delete()
        board, _ = Board.objects.update_or_create(
            release=release, defaults={"owner": "kubernetes", "number": 241, "mode": Board.Mode.READ_WRITE}
        )
        BoardItem.objects.filter(board=board).delete()
        started = tz.isoformat_utc(tz.utc_now())
        requests = ExceptionRequest.objects.filter(release=release).exclude(state=ExceptionRequest.State.WITHDRAWN)
        for request in requests.order_by("submitted_at", "pk"):
            board_write_record(request=request, event=f"demo:{started}")
    return requests.count()


class Command(BaseCommand):
    help = "Serve the test suite's fake GitHub on 127.0.0.1 with the demo's release tracking board."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8766, help="0: any free port (printed)")
        parser.add_argument("--once", action="store_true", help="print the settings and stop (a check)")
        parser.add_argument(
            "--write",
            action="store_true",
            help=f"make this the {CURRENT} release's board, read-write, and write each of its requests to it "
            "(make run's demo: the worker sends the writes)",
        )

    def handle(self, *args, port: int, once: bool, write: bool = False, **options):
        try:
            from tests.support.fake_github import FakeGitHub
        except ImportError as error:  # the fake needs the test requirements and node_modules
            raise CommandError(f"the fake GitHub needs `make install node_modules/.installed` ({error})") from error
        fake = FakeGitHub(port=port)
        build_demo(fake)
        token = fake.token("releasecal-bot", scopes=("repo", "project", "read:org"))
        try:
            fake.start()
        except OSError as error:
            raise CommandError(f"cannot listen on 127.0.0.1:{port}: {error}") from error
        lines = {
            "GITHUB_URL": fake.url,
            "GITHUB_API_URL": fake.api_url,
            "GITHUB_GRAPHQL_URL": fake.graphql_url,
            "GITHUB_TOKEN": token,
            "GITHUB_BOARD": "kubernetes/241",
        }
        for key, value in lines.items():
            self.stdout.write(f"{key}={value}")
        self.stdout.flush()
        self.stderr.write(f"fake GitHub: the board at {fake.url}/_fake/board/kubernetes/241")
        if write:
            count = demo_board_write()
            if count is None:
                self.stderr.write(f"fake GitHub: no release {CURRENT} (manage.py seed_demo): nothing to write")
            else:
                self.stderr.write(f"fake GitHub: {CURRENT}'s board is read-write; {count} requests to write")
        if once:
            fake.stop()
            return
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        fake.stop()
