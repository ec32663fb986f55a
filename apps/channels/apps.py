from django.apps import AppConfig


class ChannelsConfig(AppConfig):
    name = "apps.channels"
    label = "channels"
