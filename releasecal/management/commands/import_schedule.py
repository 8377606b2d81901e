"""``manage.py import_schedule FILE``: load a release schedule (see docs/schedule-format.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from releasecal.importers.schedule import schedule_import


class Command(BaseCommand):
    help = (
        "Import a release schedule: our YAML format, the Kubernetes schedule-builder YAML "
        "(releases[].timeline[]) or the JSON shape of shared/data/k8s-schedules.json. "
        "Re-importing updates milestones in place (matched on release + title)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to the schedule file (YAML or JSON)")
        parser.add_argument("--release", dest="release", help="Import only this release (slug, e.g. 1.31)")
        parser.add_argument(
            "--zone", help="Zone for times without a label and for new releases (default: the file's, else LA)"
        )
        parser.add_argument("--dry-run", action="store_true", help="Read and check everything, save nothing")

    def handle(self, *args, **options):
        try:
            result = schedule_import(
                path=options["file"], release_slug=options["release"], zone=options["zone"], dry_run=options["dry_run"]
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(f"WARNING: {warning}"))
        self.stdout.write(self.style.SUCCESS(result.summary()))
