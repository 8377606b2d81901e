"""``manage.py seed_demo``: load the demo releases, KEPs and exception requests (idempotent)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from demo.data import demo_seed
from releasecal.errors import DomainError
from reminders.services import reminder_rules_seed_defaults


class Command(BaseCommand):
    help = "Load Kubernetes 1.29/1.30/1.33, a current demo cycle, KEPs and exception requests in every state."

    def handle(self, *args, **options):
        try:
            summary = demo_seed()
        except DomainError as exc:
            raise CommandError(f"The demo could not be loaded: {exc.message}") from None
        for line in summary.lines():
            self.stdout.write(line)
        rules = reminder_rules_seed_defaults()
        self.stdout.write(f"Reminder rules: {len(rules)} (the Kubernetes defaults; edit them in the admin).")
        self.stdout.write(self.style.SUCCESS("Demo data loaded."))
