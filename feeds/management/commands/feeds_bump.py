"""Change the feed version by hand, after writes made with the database triggers
disabled (session_replication_role = replica, pg_restore --disable-triggers): every
cached calendar feed is rebuilt on its next request. Writes through Django, the admin
or psql need nothing: the triggers change the version in their transaction."""

from django.core.management.base import BaseCommand

from feeds.cache import feed_version_bump


class Command(BaseCommand):
    help = "Invalidate every cached calendar feed (after writes made with triggers disabled)."

    def handle(self, *args, **options) -> None:
        version = feed_version_bump()
        self.stdout.write(f"Feed version is now {version}: every feed is rebuilt on its next request.")
