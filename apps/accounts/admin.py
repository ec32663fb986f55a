"""The accounts in the Settings area (operators only, docs/security.md). Their API keys and SSO
tokens are in apps/users/admin.py, beside the users who hold them."""

from django.contrib import admin

from apps.accounts.models import Account
from apps.core.admin import SettingsModelAdmin


@admin.register(Account)
class AccountAdmin(SettingsModelAdmin):
    list_display = ("id", "name", "plan", "created_at")
    list_filter = ("plan",)
    search_fields = ("name",)
