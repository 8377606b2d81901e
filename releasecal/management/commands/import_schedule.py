"""``manage.py import_schedule PATH...``: load release schedules (see docs/schedule-format.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from releasecal.importers.schedule import schedule_import


class Command(BaseCommand):
    help = (
        "Import release schedules: our YAML format, the Kubernetes schedule-builder YAML "
        "(releases[].timeline[]), the JSON shape of shared/data/k8s-schedules.json, or a "
        "sig-release README's timeline table. Give files or directories: everything is "
        "imported in one transaction, or nothing. Re-importing updates milestones in place "
        "(matched on release + title)."
    )

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", metavar="PATH", help="Schedule files, or directories of them")
        parser.add_argument("--release", dest="release", help="Import only this release (slug, e.g. 1.31)")
        parser.add_argument(
            "--zone", help="Zone for times without a label and for new releases (default: the file's, else LA)"
        )
        parser.add_argument("--dry-run", action="store_true", help="Read and check everything, save nothing")
        parser.add_argument("--strict", action="store_true", help="Treat every warning as a problem: import nothing")

    def handle(self, *args, **options):
        paths = options["paths"]
        try:
            result = schedule_import(
                path=paths[0] if len(paths) == 1 else None,
                paths=paths if len(paths) > 1 else None,
                release_slug=options["release"],
                zone=options["zone"],
                dry_run=options["dry_run"],
                strict=options["strict"],
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        for warning in result.warnings:
            self.stderr.write(self.style.WARNING(f"WARNING: {warning}"))
        self.stdout.write(self.style.SUCCESS(result.summary()))
        if len(result.per_release) > 1 or any(c.undated for c in result.per_release.values()):
            for line in result.release_lines():
                self.stdout.write(line)
        if result.warnings:
            kinds = ", ".join(f"{kind} {count}" for kind, count in result.warnings_by_kind().items())
            self.stdout.write(f"Warnings by kind: {kinds}.")
