from django.contrib.admin.apps import AdminConfig


class ServiceAdminConfig(AdminConfig):
    """django.contrib.admin with the service's admin site (sign-ins reported as user.login)."""

    default_site = "apps.users.admin_site.ServiceAdminSite"
