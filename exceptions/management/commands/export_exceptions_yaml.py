"""``manage.py export_exceptions_yaml --release 1.36 [--output FILE]``: the release's
requests and decisions in sig-release's exceptions.yaml format (stdout by default)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from exceptions.yaml_format import RecordFileError
from exceptions.yaml_sync import exceptions_yaml_export
from releasecal.errors import DomainError
from releasecal.selectors import release_get


class Command(BaseCommand):
    help = "Write a release's exception requests and decisions as sig-release's exceptions.yaml."

    def add_arguments(self, parser):
        parser.add_argument("--release", required=True, help="Release slug, e.g. 1.36.")
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args, **options):
        try:
            release = release_get(slug=options["release"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        try:
            text = exceptions_yaml_export(release=release)
        except RecordFileError as exc:
            raise CommandError(str(exc)) from None
        if options["output"]:
            Path(options["output"]).write_text(text, encoding="utf-8")
            self.stderr.write(f"Wrote {options['output']}.")
        else:
            self.stdout.write(text, ending="")
