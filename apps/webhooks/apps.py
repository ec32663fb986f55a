from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "apps.webhooks"
    label = "webhooks"
    # The admin shows webhooks under "Settings", where the spec places them.
    verbose_name = "Settings"
