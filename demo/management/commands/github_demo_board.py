"""``manage.py github_demo_board [--port 8766]``: the fake GitHub of the test suite
(tests/support/fake_github) on 127.0.0.1 with the demo's board, for ``make run``.

It holds kubernetes/enhancements with the demo's KEP issues (demo.data.KEPS), a
"v1.36 Release Tracking" board (project 241) with every field of the handbook and an
item per KEP, and a token with the board and issue scopes. It prints the settings to
source (``KEY=value`` lines) and serves until stopped (SIGTERM, SIGINT). The board as a
person sees it: ``/_fake/board/kubernetes/241`` (it refreshes itself), every change
written: ``/_fake/changes``.
"""

from __future__ import annotations

import signal
import threading

from django.core.management.base import BaseCommand, CommandError

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


class Command(BaseCommand):
    help = "Serve the test suite's fake GitHub on 127.0.0.1 with the demo's release tracking board."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8766, help="0: any free port (printed)")
        parser.add_argument("--once", action="store_true", help="print the settings and stop (a check)")

    def handle(self, *args, port: int, once: bool, **options):
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
        self.stderr.write(f"fake GitHub: the board at {fake.url}/_fake/board/kubernetes/241")
        if once:
            fake.stop()
            return
        stop = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        stop.wait()
        fake.stop()
