"""Print a user's API token (``Authorization: Token <key>``), creating it if needed."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of a user, creating one if needed. --rotate replaces it."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--rotate", action="store_true", help="Revoke the current token and issue a new one")

    @transaction.atomic
    def handle(self, *args, username: str, rotate: bool, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}. Create it first (manage.py createsuperuser or the admin).")
        if not user.is_active:
            raise CommandError(f"User {username!r} is inactive; its token would be refused.")
        if rotate:
            Token.objects.filter(user=user).delete()
        token, created = Token.objects.get_or_create(user=user)
        self.stderr.write(f"{'New' if created else 'Existing'} token for {username}; use it as:")
        self.stderr.write(f"  Authorization: Token {token.key}")
        self.stdout.write(token.key)
