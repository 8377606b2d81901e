from django.apps import AppConfig
from django.db.models.signals import post_migrate


class FeedsConfig(AppConfig):
    name = "feeds"
    verbose_name = "Calendar feeds"

    def ready(self) -> None:
        from feeds import triggers

        # After every migrate: the feed-version trigger on every table a feed shows,
        # tables added since included (feeds/triggers.py).
        post_migrate.connect(triggers.on_post_migrate, sender=self, dispatch_uid="feeds.triggers")
