"""``manage.py github_opt_in_reminders --release 1.38 [--dry-run]``: at the start of a
cycle, the opt-in reminder for every open KEP issue in the release's milestone without
``lead-opted-in``. ``--dry-run`` prints the plan; the real run records each comment
(posted or listed as the release's setting says; never twice when run twice)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from github.sweeps import SweepRefused, opt_in_plan, sweep_record


class Command(BaseCommand):
    help = "Remind the SIG leads of the open KEP issues in a milestone without lead-opted-in to opt them in."

    def add_arguments(self, parser):
        parser.add_argument("--release", required=True, help="Release slug, e.g. 1.38.")
        parser.add_argument("--dry-run", action="store_true", help="Print the plan; record nothing.")

    def handle(self, *args, **options):
        try:
            plan = opt_in_plan(release_slug=options["release"])
            for line in plan.lines(dry_run=options["dry_run"]):
                self.stdout.write(line)
            if not options["dry_run"]:
                made = sweep_record(plan=plan)
                self.stdout.write(f"{len(made)} comment{'s' if len(made) != 1 else ''} recorded.")
        except SweepRefused as exc:
            raise CommandError(exc.message) from None
