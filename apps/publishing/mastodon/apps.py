from django.apps import AppConfig


class MastodonPublishingConfig(AppConfig):
    name = "apps.publishing.mastodon"
    label = "publishing_mastodon"
    verbose_name = "Publishing: Mastodon"

    def ready(self) -> None:
        from apps.core.destinations import register
        from apps.publishing.mastodon.destination import KIND

        register(KIND)
