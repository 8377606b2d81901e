"""Exit 0 when the database and Redis answer, 1 otherwise (container health checks)."""

from django.core.management.base import BaseCommand, CommandError

from config.health import run_checks, run_reports


class Command(BaseCommand):
    help = "Check that the database and Redis answer; exit 1 naming the one that does not."

    def handle(self, *args, **options):
        healthy, checks = run_checks()
        summary = ", ".join(f"{name}: {state}" for name, state in checks.items())
        if not healthy:
            raise CommandError(f"unhealthy ({summary})")
        self.stdout.write(f"healthy ({summary})")
        # Reported, never fatal: a mailbox with a wrong password is not an unhealthy service.
        for name, line in run_reports().items():
            self.stdout.write(f"{name}: {line}")
