from django.apps import AppConfig


class GitPublishingConfig(AppConfig):
    name = "apps.publishing.git"
    label = "publishing_git"
    verbose_name = "Publishing: git"

    def ready(self) -> None:
        from apps.core.destinations import register
        from apps.publishing.git.destination import KIND

        register(KIND)
