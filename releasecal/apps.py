from django.apps import AppConfig


class ReleasecalConfig(AppConfig):
    name = "releasecal"
    verbose_name = "Release schedule"
