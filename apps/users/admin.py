from django.contrib import admin

from apps.users.models import User


@admin.register(User)
class UserAdmin(admin.ModelAdmin):
    list_display = ("email", "name", "account", "role", "status", "last_login", "is_staff")
    list_filter = ("role", "status", "account", "is_staff")
    search_fields = ("email", "name")
    list_select_related = ("account",)
    readonly_fields = ("last_login", "created_at", "updated_at", "invitation_sent_at")
    fieldsets = (
        (None, {"fields": ("email", "name", "account")}),
        ("Access", {"fields": ("role", "status", "permissions", "is_staff", "is_superuser")}),
        ("Profile", {"fields": ("timezone", "language", "notification_preferences", "metadata")}),
        ("Dates", {"fields": ("last_login", "invitation_sent_at", "created_at", "updated_at")}),
    )
