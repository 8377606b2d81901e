"""``manage.py import_sigs FILE``: SIG chairs and technical leads from sigs.yaml."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from releasecal.importers.sigs import sigs_import


class Command(BaseCommand):
    help = "Import SIG chairs and technical leads from kubernetes/community's sigs.yaml (who may sign off)."

    def add_arguments(self, parser):
        parser.add_argument("path", help="sigs.yaml (kubernetes/community)")

    def handle(self, *args, **options):
        try:
            result = sigs_import(path=options["path"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"{len(result.sigs)} SIGs, {result.leads} leads ({result.linked} linked to a user), "
            f"{result.removed} former leads removed"
        )
