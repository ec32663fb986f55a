from django.apps import AppConfig


class DemoConfig(AppConfig):
    """Demo data for trying the service and for tests: `python manage.py seed_demo`."""

    name = "apps.demo"
    label = "demo"
