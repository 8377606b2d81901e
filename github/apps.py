from django.apps import AppConfig


class GitHubBoardConfig(AppConfig):
    """The release board on GitHub (Projects v2). Label ``github_board``: allauth's GitHub
    provider already holds the label ``github``."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "github"
    label = "github_board"
    verbose_name = "GitHub board"
    # Shown by check_services (config.health.run_reports); never decides health.
    status_report_name = "github board"

    def ready(self) -> None:
        # The board hears the exception workflow (receivers listed in exceptions/signals.py).
        # The tasks module is imported so every process (web too, not only workers) has
        # the send task to queue by name.
        from exceptions import signals as workflow
        from github import receivers, tasks  # noqa: F401
        from releasecal import signals as schedule

        for signal, receiver in (
            (workflow.exception_request_submitted, receivers.exception_request_submitted),
            (workflow.exception_request_amended, receivers.exception_request_amended),
            (workflow.exception_request_decided, receivers.exception_request_decided),
            (workflow.exception_decision_corrected, receivers.exception_decision_corrected),
            (workflow.exception_request_liaison_changed, receivers.exception_request_liaison_changed),
            (workflow.exception_request_slack_thread_linked, receivers.exception_request_slack_thread_linked),
            (workflow.exception_grant_reevaluated, receivers.exception_grant_reevaluated),
            (schedule.tracking_status_changed, receivers.tracking_status_changed),
        ):
            signal.connect(receiver, dispatch_uid=f"github.{receiver.__name__}")

    def status_report(self) -> str:
        from github.services import board_status_check

        return board_status_check()
