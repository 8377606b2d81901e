from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "notices"
    verbose_name = "Schedule change notices"

    def ready(self) -> None:
        # The tasks module is imported so every process (web too) has the send task
        # registered under its name.
        from notices import hooks, tasks  # noqa: F401

        hooks.register()
