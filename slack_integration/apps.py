from django.apps import AppConfig


class SlackIntegrationConfig(AppConfig):
    name = "slack_integration"
    verbose_name = "Slack"

    def ready(self) -> None:
        # Slack hears the exception workflow (receivers listed in exceptions/signals.py).
        from exceptions import signals as workflow

        # The tasks module is imported so every process (web too) has the ledger's send
        # task registered under its name (slack_integration.outbox queues it by name).
        from slack_integration import receivers, tasks  # noqa: F401

        for signal, receiver in (
            (workflow.exception_request_submitted, receivers.exception_request_submitted),
            (workflow.exception_request_amended, receivers.exception_request_changed),
            (workflow.exception_request_decided, receivers.exception_request_decided),
            (workflow.exception_request_withdrawn, receivers.exception_request_changed),
            (workflow.exception_grant_moved, receivers.exception_request_changed),
            (workflow.exception_decision_corrected, receivers.exception_request_changed),
        ):
            signal.connect(receiver, dispatch_uid=f"slack_integration.{receiver.__name__}")
