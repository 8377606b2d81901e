from django.apps import AppConfig


class NoticesConfig(AppConfig):
    name = "notices"
    verbose_name = "Schedule change notices"

    def ready(self) -> None:
        # Notices follow the schedule (receivers listed in releasecal/signals.py). The
        # tasks module is imported so every process (web too) has the send task
        # registered under its name.
        from notices import receivers, tasks  # noqa: F401
        from releasecal import signals as schedule

        schedule.milestone_moved.connect(receivers.milestone_moved, dispatch_uid="notices.milestone_moved")
        schedule.release_hard_stop_moved.connect(
            receivers.release_hard_stop_moved, dispatch_uid="notices.release_hard_stop_moved"
        )
