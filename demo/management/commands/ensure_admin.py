"""``manage.py ensure_admin``: create or reset the ``admin`` superuser and print the login."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.db import transaction

from config import env

USERNAME = "admin"
PASSWORD_ENV = "RELEASECAL_ADMIN_PASSWORD"  # noqa: S105 (the variable's name, not a password)


class Command(BaseCommand):
    help = (
        f"Create the superuser '{USERNAME}' or reset its password: {PASSWORD_ENV} when set, "
        "else a new random one. Prints the login URL and credentials."
    )

    def handle(self, *args, **options):
        chosen = env.read(PASSWORD_ENV)
        password = chosen or secrets.token_urlsafe(12)
        with transaction.atomic():
            user, created = User.objects.get_or_create(username=USERNAME, defaults={"email": "admin@example.com"})
            user.is_staff = user.is_superuser = user.is_active = True
            user.set_password(password)
            user.save()
        origin = getattr(settings, "SITE_URL", "http://127.0.0.1:8000").rstrip("/")
        source = f"from {PASSWORD_ENV}" if chosen else "random; set " + PASSWORD_ENV + " to fix it"
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Admin login {'created' if created else 'reset'}:"))
        self.stdout.write(f"  URL:      {origin}/admin/")
        self.stdout.write(f"  Username: {USERNAME}")
        self.stdout.write(f"  Password: {password}   ({source})")
        self.stdout.write("")
