from django.apps import AppConfig


class RemindersConfig(AppConfig):
    name = "reminders"
    verbose_name = "Reminders"
    status_report_name = "reminders"

    def status_report(self) -> str:
        """check_services' line; alerts the release team once when the sweep stalled."""
        from reminders.liveness import sweep_stall_check, sweep_status

        sweep_stall_check()
        return sweep_status()[1]

    def ready(self) -> None:
        # The ledger follows deadlines: register with the two services that move them.
        # The tasks module is imported here so every process (web too, not only workers)
        # has the send task registered: services queue it by name.
        from reminders import hooks, tasks  # noqa: F401

        hooks.register()
