from django.apps import AppConfig


class NewsletterPublishingConfig(AppConfig):
    name = "apps.publishing.newsletter"
    label = "publishing_newsletter"
    verbose_name = "Publishing: newsletter"

    def ready(self) -> None:
        from apps.core.destinations import register
        from apps.publishing.newsletter import tracking
        from apps.publishing.newsletter.destination import KIND

        register(KIND)
        tracking.connect()
