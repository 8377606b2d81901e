from django.apps import AppConfig


class ReleasecalConfig(AppConfig):
    name = "releasecal"
    verbose_name = "Release schedule"

    def ready(self) -> None:
        from releasecal import feed_generation

        feed_generation.connect()  # every write to a feed's tables changes the feed generation
