from django.apps import AppConfig


class ChannelsConfig(AppConfig):
    name = "apps.channels"
    label = "channels"

    def ready(self) -> None:
        from apps.core import coherence

        # Every process that writes channels (web, worker, beat, commands) must hear its own
        # invalidations: on each new database connection.
        coherence.install()
