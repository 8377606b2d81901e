"""``manage.py import_keps DIR``: upsert KEPs from kep.yaml files (docs/kep-import.md)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from releasecal.importers.keps import keps_import


class Command(BaseCommand):
    help = (
        "Import KEPs from every kep.yaml under DIR (kubernetes/enhancements' keps/ folder) with the PRR "
        "approvers of its prod-readiness/. One line per file refused or skipped, one per warning; exit 1 "
        "only when a file was refused."
    )

    def add_arguments(self, parser):
        parser.add_argument("directory", help="Directory searched recursively for kep.yaml files")
        parser.add_argument("--release", dest="release", help="Also track each KEP in this release with its stage")
        parser.add_argument("--quiet", action="store_true", help="No line per created or updated KEP")

    def handle(self, *args, **options):
        try:
            result = keps_import(directory=options["directory"], release_slug=options["release"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        root = Path(options["directory"])

        def shown(path: str) -> str:
            return str(Path(path).relative_to(root)) if path.startswith(str(root)) else path

        for item in result.imported:
            if item.outcome != "unchanged" and not options["quiet"]:
                self.stdout.write(f"{item.outcome} KEP-{item.number}: {item.title}")
        for item in result.skipped:
            self.stdout.write(f"skipped {shown(item.path)}: {item.skipped}")
        for path, warning in result.warnings:
            where = f"{shown(path)}: " if path else ""
            self.stderr.write(self.style.WARNING(f"WARNING ({warning.kind}) {where}{warning.text}"))
        for item in result.failed:
            self.stderr.write(self.style.ERROR(f"ERROR {item.path}: {item.error}"))
        outcomes = result.outcomes()
        summary = f"{len(result.imported)} KEPs imported, {len(result.failed)} files failed"
        if options["release"]:
            summary += f", {result.tracked} tracked in {options['release']}"
        details = [
            f"{len(result.files)} kep.yaml files: {outcomes['created']} created, {outcomes['updated']} updated, "
            f"{outcomes['unchanged']} unchanged, {len(result.skipped)} skipped, {len(result.failed)} refused; "
            f"{result.seconds:.1f} s.",
        ]
        if result.skipped:
            details.append(
                "Skipped by kind: " + ", ".join(f"{k} {n}" for k, n in result.skipped_by_kind().items()) + "."
            )
        if result.warnings:
            details.append(
                "Warnings by kind: " + ", ".join(f"{k} {n}" for k, n in result.warnings_by_kind().items()) + "."
            )
        for line in details:
            self.stdout.write(line)
        if result.failed:
            raise CommandError(summary + ".")
        self.stdout.write(self.style.SUCCESS(summary + "."))
