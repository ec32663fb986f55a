from django.apps import AppConfig


class BlueskyPublishingConfig(AppConfig):
    name = "apps.publishing.bluesky"
    label = "publishing_bluesky"
    verbose_name = "Publishing: Bluesky"

    def ready(self) -> None:
        from apps.core.destinations import register
        from apps.publishing.bluesky.destination import KIND

        register(KIND)
