from django.apps import AppConfig


class SlackIntegrationConfig(AppConfig):
    name = "slack_integration"
    verbose_name = "Slack"

    def ready(self) -> None:
        from slack_integration import hooks

        hooks.register()
