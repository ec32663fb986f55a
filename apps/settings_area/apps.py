from django.contrib.admin.apps import AdminConfig


class SettingsAreaConfig(AdminConfig):
    """django.contrib.admin with the service's admin site: every app's `admin.register` lands there."""

    default_site = "apps.settings_area.site.ServiceAdminSite"
