"""``manage.py import_keps DIR``: upsert KEPs from kep.yaml files."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from releasecal.importers.keps import keps_import


class Command(BaseCommand):
    help = "Import KEPs from every kep.yaml under DIR (kubernetes/enhancements layout); bad files are reported."

    def add_arguments(self, parser):
        parser.add_argument("directory", help="Directory searched recursively for kep.yaml files")
        parser.add_argument("--release", dest="release", help="Also track each KEP in this release with its stage")

    def handle(self, *args, **options):
        try:
            result = keps_import(directory=options["directory"], release_slug=options["release"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        for item in result.imported:
            self.stdout.write(f"KEP-{item.number}: {item.title}")
        for item in result.failed:
            self.stderr.write(self.style.ERROR(f"ERROR {item.path}: {item.error}"))
        summary = f"{len(result.imported)} KEPs imported, {len(result.failed)} files failed"
        if options["release"]:
            summary += f", {result.tracked} tracked in {options['release']}"
        if result.failed:
            raise CommandError(summary + ".")
        self.stdout.write(self.style.SUCCESS(summary + "."))
