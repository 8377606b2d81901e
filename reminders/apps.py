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
        # The ledger follows deadlines and requests: its receivers of the schedule's and
        # the exception workflow's signals (listed where each signal is declared). The
        # tasks module is imported here so every process (web too, not only workers)
        # has the send task registered: services queue it by name.
        from exceptions import signals as workflow
        from releasecal import signals as schedule
        from reminders import receivers, tasks  # noqa: F401

        for signal, receiver in (
            (schedule.milestone_changed, receivers.milestone_changed),
            (schedule.enhancement_owners_changed, receivers.enhancement_owners_changed),
            (workflow.exception_request_submitted, receivers.exception_request_submitted),
            (workflow.exception_request_decided, receivers.exception_request_decided),
            (workflow.exception_request_withdrawn, receivers.exception_request_withdrawn),
            (workflow.exception_grant_moved, receivers.exception_grant_moved),
            (workflow.exception_decision_corrected, receivers.exception_decision_corrected),
            (workflow.exception_grant_ended, receivers.exception_grant_ended),
        ):
            signal.connect(receiver, dispatch_uid=f"reminders.{receiver.__name__}")
