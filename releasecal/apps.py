from django.apps import AppConfig


class ReleasecalConfig(AppConfig):
    name = "releasecal"
    verbose_name = "Release schedule"
    status_report_name = "zones"

    def status_report(self) -> str:
        """check_services' line: rows whose zone this tzdata cannot load."""
        from releasecal.selectors import unknown_zones_report

        return unknown_zones_report()
