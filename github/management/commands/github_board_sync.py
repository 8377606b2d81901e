"""``manage.py github_board_sync --release 1.37 [--dry-run] [--backfill]``: read the
release's board on GitHub and say, field by field, what releasecal would write there.

``--dry-run`` keeps nothing (not the report, not ``last_synced_at``, no link);
``--backfill`` is the one-time linking of a board's existing exception items to
releasecal's requests (with ``--dry-run``: the links it would make). Exits 1 with one
line when the board is off, unset, misconfigured or GitHub cannot be asked.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from github.models import Board
from github.report import report_lines
from github.services import BoardRefused, board_sync


class Command(BaseCommand):
    help = "Read a release's GitHub board and report what releasecal would write, field by field."

    def add_arguments(self, parser):
        parser.add_argument("--release", required=True, help="Release slug, e.g. 1.37.")
        parser.add_argument("--dry-run", action="store_true", help="Read and report; keep nothing.")
        parser.add_argument(
            "--backfill", action="store_true", help="Link the board's existing exception items to the requests (once)."
        )

    def handle(self, *args, **options):
        board = Board.objects.select_related("release").filter(release__slug=options["release"]).first()
        if board is None:
            raise CommandError(f"Release {options['release']!r} has no GitHub board: set one in the admin.")
        try:
            report = board_sync(board=board, dry_run=options["dry_run"], backfill=options["backfill"])
        except BoardRefused as exc:
            raise CommandError(exc.message) from None
        for line in report_lines(report, dry_run=options["dry_run"]):
            self.stdout.write(line)
