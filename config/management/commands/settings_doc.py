"""``manage.py settings_doc [--check]``: write docs/settings.md and docker/.env.example
from the declaration of every environment variable (config/env.py); ``--check`` writes
nothing and exits 1 naming each file that differs from it."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from config import env


def generated() -> dict[Path, str]:
    return {
        Path(settings.BASE_DIR) / "docs" / "settings.md": env.markdown(),
        Path(settings.BASE_DIR) / "docker" / ".env.example": env.env_example(),
    }


class Command(BaseCommand):
    help = "Write docs/settings.md and docker/.env.example from config/env.py (--check: only compare)."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Write nothing; exit 1 if a file differs.")

    def handle(self, *args, **options):
        stale = []
        for path, text in generated().items():
            current = path.read_text() if path.exists() else None
            if current == text:
                continue
            if options["check"]:
                stale.append(str(path.relative_to(settings.BASE_DIR)))
            else:
                path.write_text(text)
                self.stdout.write(f"wrote {path.relative_to(settings.BASE_DIR)}")
        if stale:
            raise CommandError(
                f"{', '.join(stale)} differ from config/env.py: run `manage.py settings_doc` and commit the result."
            )
