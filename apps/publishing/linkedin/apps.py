from django.apps import AppConfig


class LinkedInPublishingConfig(AppConfig):
    name = "apps.publishing.linkedin"
    label = "publishing_linkedin"
    verbose_name = "Publishing: LinkedIn"

    def ready(self) -> None:
        from apps.core.destinations import register
        from apps.publishing.linkedin.destination import KIND

        register(KIND)
