from django.apps import AppConfig


class FeedsConfig(AppConfig):
    name = "feeds"
    verbose_name = "Calendar feeds"

    def ready(self) -> None:
        from feeds import cache

        cache.connect()  # every write to a feed's tables changes the feed generation
