from django.apps import AppConfig


class ExceptionsConfig(AppConfig):
    name = "exceptions"
    verbose_name = "Exception requests"

    def ready(self) -> None:
        from exceptions.selectors import grant_conflicts
        from releasecal.services import milestone_warning_hooks

        def grant_warnings(milestone) -> list[str]:
            return [f"KEP-{d.keps[0]}: {d.warning}" for d in grant_conflicts(milestone=milestone)]

        if not any(getattr(hook, "__name__", "") == "grant_warnings" for hook in milestone_warning_hooks):
            milestone_warning_hooks.append(grant_warnings)
