from django.apps import AppConfig


class CoreConfig(AppConfig):
    """apps/core has no models; as an app it hooks what every connection of the process needs."""

    name = "apps.core"

    def ready(self) -> None:
        from apps.core import dates

        dates.connect()
