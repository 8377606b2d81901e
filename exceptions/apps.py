from django.apps import AppConfig


class ExceptionsConfig(AppConfig):
    name = "exceptions"
    verbose_name = "Exception requests"
