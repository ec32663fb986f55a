from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    EDITOR = "editor", "Editor"
    VIEWER = "viewer", "Viewer"


class Status(models.TextChoices):
    ACTIVE = "active", "Active"
    INACTIVE = "inactive", "Inactive"
    INVITED = "invited", "Invited"
    SUSPENDED = "suspended", "Suspended"


class Permission(models.TextChoices):
    ARTICLES_READ = "articles.read"
    ARTICLES_WRITE = "articles.write"
    ARTICLES_PUBLISH = "articles.publish"
    ARTICLES_DELETE = "articles.delete"
    USERS_READ = "users.read"
    USERS_WRITE = "users.write"
    USERS_DELETE = "users.delete"
    ANALYTICS_READ = "analytics.read"
    ANALYTICS_EXPORT = "analytics.export"
    SYSTEM_SETTINGS = "system.settings"
    SYSTEM_BILLING = "system.billing"
    SYSTEM_API_KEYS = "system.api_keys"


ROLE_DEFAULT_PERMISSIONS: dict[str, list[str]] = {
    Role.ADMIN: [p.value for p in Permission],
    Role.EDITOR: [Permission.ARTICLES_READ, Permission.ARTICLES_WRITE, Permission.ARTICLES_PUBLISH],
    Role.VIEWER: [Permission.ARTICLES_READ, Permission.ANALYTICS_READ],
}


def default_permissions_for(role: str) -> list[str]:
    return [str(p) for p in ROLE_DEFAULT_PERMISSIONS[role]]


def default_notification_preferences() -> dict:
    return {"email": True, "push": False}


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **fields):
        if not email:
            raise ValueError("email is required")
        role = fields.setdefault("role", Role.VIEWER)
        fields.setdefault("permissions", default_permissions_for(role))
        user = self.model(email=self.normalize_email(email).lower(), **fields)
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **fields):
        fields.update(is_staff=True, is_superuser=True, role=Role.ADMIN, status=Status.ACTIVE)
        return self.create_user(email, password, **fields)


class User(AbstractBaseUser, PermissionsMixin):
    """A person: an organisation member of the Users API and, when staff, an admin-site user."""

    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="users",
        null=True,
        blank=True,
        help_text="The organisation the user belongs to; empty only for site operators.",
    )
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    permissions = models.JSONField(default=list, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    language = models.CharField(max_length=35, default="en")
    notification_preferences = models.JSONField(default=default_notification_preferences)
    invitation_sent_at = models.DateTimeField(null=True, blank=True)
    is_staff = models.BooleanField(default=False, help_text="May log in to the admin site.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["account", "role", "status"])]

    def __str__(self) -> str:
        return self.email

    @property
    def is_active(self) -> bool:
        # Django's auth backends refuse users whose is_active is false, so inactive, suspended
        # and not-yet-accepted users can neither log in nor use a session.
        return self.status == Status.ACTIVE

    def set_role(self, role: str, permissions: list[str] | None = None) -> None:
        self.role = role
        self.permissions = list(permissions) if permissions is not None else default_permissions_for(role)
