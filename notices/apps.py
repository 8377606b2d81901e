from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "notices"
    verbose_name = "Schedule change notices"  # and approval announcements

    def ready(self) -> None:
        # Notices follow the schedule (receivers listed in releasecal/signals.py). The
        # tasks module is imported so every process (web too) has the send task
        # registered under its name.
        from exceptions import signals as workflow
        from notices import receivers, tasks  # noqa: F401
        from releasecal import signals as schedule

        schedule.milestone_moved.connect(receivers.milestone_moved, dispatch_uid="notices.milestone_moved")
        schedule.release_hard_stop_moved.connect(
            receivers.release_hard_stop_moved, dispatch_uid="notices.release_hard_stop_moved"
        )
        # Approvals are announced to the release's lists (receivers listed in exceptions/signals.py).
        workflow.exception_request_decided.connect(
            receivers.exception_request_decided, dispatch_uid="notices.exception_request_decided"
        )
        workflow.exception_decision_corrected.connect(
            receivers.exception_decision_corrected, dispatch_uid="notices.exception_decision_corrected"
        )
