"""``manage.py seed_demo``: load the demo releases, KEPs and exception requests (idempotent)."""

from __future__ import annotations

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from demo.data import demo_seed
from releasecal.errors import DomainError


class Command(BaseCommand):
    help = "Load Kubernetes 1.29/1.30/1.33, a current demo cycle, KEPs and exception requests in every state."

    def handle(self, *args, **options):
        try:
            summary = demo_seed()
        except DomainError as exc:
            raise CommandError(f"The demo could not be loaded: {exc.message}") from None
        for line in summary.lines():
            self.stdout.write(line)
        # The same defaults as a deployment's; a demo may keep the example address.
        call_command("setup_defaults", allow_example_address=True, stdout=self.stdout, stderr=self.stderr)
        self.stdout.write(self.style.SUCCESS("Demo data loaded."))
