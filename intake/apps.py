from django.apps import AppConfig


class IntakeConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "intake"
    verbose_name = "Mailbox intake"
    # Shown by check_services (config.health.run_reports); never decides health.
    status_report_name = "intake mailbox"

    def status_report(self) -> str:
        from intake.selectors import mailbox_status

        return mailbox_status()
