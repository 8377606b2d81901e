from django.apps import AppConfig


class RemindersConfig(AppConfig):
    name = "reminders"
    verbose_name = "Reminders"

    def ready(self) -> None:
        # The ledger follows deadlines: register with the two services that move them.
        from reminders import hooks

        hooks.register()
