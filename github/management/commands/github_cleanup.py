"""``manage.py github_cleanup --release 1.37 --next 1.38 [--dry-run]``: at the end of a
cycle, every KEP issue labelled ``lead-opted-in`` and not in the next milestone,
classified as the handbook does (closed; stable with kep.yaml ``implemented``: close;
stable not yet implemented: ask; other: clear labels and milestone), each with its
comment. ``--dry-run`` prints the plan; the real run records each comment (posted or
listed as the release's setting says; never twice when run twice)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from github.sweeps import SweepRefused, cleanup_plan, sweep_record


class Command(BaseCommand):
    help = "Clean up a released milestone's lead-opted-in KEP issues as the Enhancements handbook says."

    def add_arguments(self, parser):
        parser.add_argument("--release", required=True, help="The release that ended, e.g. 1.37.")
        parser.add_argument("--next", required=True, help="The next release, e.g. 1.38.")
        parser.add_argument("--dry-run", action="store_true", help="Print the plan; record nothing.")

    def handle(self, *args, **options):
        try:
            plan = cleanup_plan(release_slug=options["release"], next_slug=options["next"])
            for line in plan.lines(dry_run=options["dry_run"]):
                self.stdout.write(line)
            if not options["dry_run"]:
                made = sweep_record(plan=plan)
                self.stdout.write(f"{len(made)} comment{'s' if len(made) != 1 else ''} recorded.")
        except SweepRefused as exc:
            raise CommandError(exc.message) from None
