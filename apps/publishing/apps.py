from django.apps import AppConfig


class PublishingConfig(AppConfig):
    name = "apps.publishing"
    label = "publishing"
    verbose_name = "Publishing"
