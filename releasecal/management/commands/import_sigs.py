"""``manage.py import_sigs FILE``: SIG chairs, technical leads and mailing lists from sigs.yaml."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from releasecal.importers.sigs import sigs_import


class Command(BaseCommand):
    help = (
        "Import SIG chairs and technical leads (who may sign off) and each SIG's mailing list from "
        "kubernetes/community's sigs.yaml."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="sigs.yaml (kubernetes/community)")

    def handle(self, *args, **options):
        try:
            result = sigs_import(path=options["path"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"{len(result.sigs)} SIGs, {result.leads} leads ({result.linked} linked to a user), "
            f"{result.removed} former leads removed, {result.lists} mailing list addresses"
        )
        if result.lists_without_address:
            self.stdout.write(
                "No email address follows exactly from the mailing_list of: "
                + ", ".join(result.lists_without_address)
                + " (fill it in under SIG contacts in the admin)"
            )
