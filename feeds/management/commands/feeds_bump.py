"""Change the feed generation by hand, after writes that bypassed Django (psql, another
program): every cached calendar feed is rebuilt on its next request."""

from django.core.management.base import BaseCommand

from feeds.cache import feed_generation_bump


class Command(BaseCommand):
    help = "Invalidate every cached calendar feed (after writes made outside Django)."

    def handle(self, *args, **options) -> None:
        feed_generation_bump()
        self.stdout.write("Feed generation bumped: every feed is rebuilt on its next request.")
