"""``manage.py setup_defaults``: the default milestone kinds, reminder channels and rules
on any database (a fresh production one included); running it again changes nothing.

Under production settings it refuses an example release-team address (the default
``REMINDERS_RELEASE_TEAM_EMAIL``): set the team's real one first. ``seed_demo`` calls it
with ``--allow-example-address``.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from releasecal.errors import DomainError
from reminders.services import reminder_defaults_setup


class Command(BaseCommand):
    help = "Create the default reminder channels and rules (idempotent); refuses an example address in production."

    def add_arguments(self, parser):
        parser.add_argument(
            "--allow-example-address",
            action="store_true",
            help="Accept an example release-team address under production settings (a demo).",
        )

    def handle(self, *args, **options):
        try:
            result = reminder_defaults_setup(allow_example_address=options["allow_example_address"])
        except DomainError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Reminder channels: {result.channels_total} ({result.channels_created} created). "
            f"Reminder rules: {result.rules_total} ({result.rules_created} created). "
            "Edit them in the admin under Reminders."
        )
