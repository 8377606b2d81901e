from django.apps import AppConfig


class PeopleConfig(AppConfig):
    name = "people"
    verbose_name = "People (GitHub sign-in)"

    def ready(self) -> None:
        from people import signals  # noqa: F401  (connects the sign-in receivers)
