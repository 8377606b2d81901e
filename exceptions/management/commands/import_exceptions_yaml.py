"""``manage.py import_exceptions_yaml FILE --release 1.31``: read sig-release's exceptions.yaml.

Every shape of the file since 1.10 (see ``exceptions.yaml_format``). Idempotent: a second
import of the same file changes nothing. Approvals are recorded as "granted, deadline
not recorded"; the file is kept so ``export_exceptions_yaml`` can edit it in place.
"""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from exceptions.yaml_format import RecordFileError
from exceptions.yaml_sync import exceptions_yaml_import
from releasecal.errors import DomainError
from releasecal.selectors import release_get

MAX_BYTES = 2_000_000


class Command(BaseCommand):
    help = "Import kubernetes/sig-release's releases/release-1.XX/exceptions.yaml into requests and decisions."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the exceptions.yaml file.")
        parser.add_argument("--release", required=True, help="Release slug, e.g. 1.31.")
        parser.add_argument("--user", help="Username of the release-team member importing it (recorded as actor).")

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        raw = path.read_bytes()
        if len(raw) > MAX_BYTES:
            raise CommandError(f"{path} is {len(raw):,} bytes; an exceptions.yaml is a few kilobytes.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path} is not UTF-8 text (byte {exc.start}).") from None
        try:
            release = release_get(slug=options["release"])
        except DomainError as exc:
            raise CommandError(f"{exc.message} Import its schedule first (import_schedule).") from None
        actor = None
        if options["user"]:
            actor = get_user_model().objects.filter(username=options["user"]).first()
            if actor is None:
                raise CommandError(f"No user {options['user']!r} (--user).")
        try:
            report = exceptions_yaml_import(release=release, text=text, file_name=path.name, actor=actor)
        except RecordFileError as exc:
            raise CommandError(f"{path}: {exc}") from None
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"{path.name} into {release.slug}: {len(report.created)} created, {len(report.decided)} decided, "
            f"{report.unchanged} unchanged, {len(report.skipped)} skipped."
        )
        for line in report.created:
            self.stdout.write(f"  created {line}")
        for line in report.decided:
            self.stdout.write(f"  decided {line}")
        for line in report.skipped:
            self.stdout.write(f"  skipped {line}")
        for line in report.notes:
            self.stdout.write(f"  note: {line}")
