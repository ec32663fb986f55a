import json
import re
import zoneinfo
from datetime import datetime
from functools import cache

from django.contrib.auth import get_backends
from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.core.exceptions import ValidationError
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models import Q

from apps.core.fields import JSONField


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    EDITOR = "editor", "Editor"
    VIEWER = "viewer", "Viewer"


# Higher is more: a role "above" another may do all it may and more.
ROLE_RANK = {Role.VIEWER: 0, Role.EDITOR: 1, Role.ADMIN: 2}


class Status(models.TextChoices):
    ACTIVE = "active", "Active"
    INACTIVE = "inactive", "Inactive"
    INVITED = "invited", "Invited"
    SUSPENDED = "suspended", "Suspended"


class LoginMethod(models.TextChoices):
    """How a user signed in: the `via` of the user.login event."""

    SSO = "sso", "Single sign-on token"
    ADMIN = "admin", "Admin site"
    PASSWORD = "password", "Password sign-in page"


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


# Who enters the admin (the Settings area) follows the role: an account's admins get its Settings
# area, its editors its content (the header says which); viewers get none. What they may do there
# follows their permissions (apps/settings_area/access.py), the role giving only the defaults.
AREA_ROLES = (Role.ADMIN, Role.EDITOR)
OPERATOR = "operator"

ROLE_DEFAULT_PERMISSIONS: dict[str, list[str]] = {
    Role.ADMIN: [p.value for p in Permission],
    Role.EDITOR: [Permission.ARTICLES_READ, Permission.ARTICLES_WRITE, Permission.ARTICLES_PUBLISH],
    Role.VIEWER: [Permission.ARTICLES_READ, Permission.ANALYTICS_READ],
}


def default_permissions_for(role: str) -> list[str]:
    return [str(p) for p in ROLE_DEFAULT_PERMISSIONS[role]]


def default_notification_preferences() -> dict:
    return {"email": True, "push": False}


NOTIFICATION_CHANNELS = ("email", "push")
METADATA_MAX_BYTES = 16 * 1024
# BCP 47 without the rarely used extlang and extension subtags: language, optional script,
# optional region, variants, optional private use ("en", "en-GB", "zh-Hant-TW", "de-CH-1996").
LANGUAGE_TAG_MAX_LENGTH = 35
LANGUAGE_TAG = re.compile(
    r"^[A-Za-z]{2,3}(-[A-Za-z]{4})?(-(?:[A-Za-z]{2}|[0-9]{3}))?(-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*"
    r"(-x(-[A-Za-z0-9]{1,8})+)?$"
)


@cache
def _timezones() -> frozenset[str]:
    # available_timezones() walks the tz database on every call.
    return frozenset(zoneinfo.available_timezones())


def timezone_names() -> list[str]:
    """Every IANA zone name `validate_timezone` accepts, sorted (the schema fuzzer draws from them)."""
    return sorted(_timezones())


def validate_timezone(value: str) -> None:
    if value not in _timezones():
        raise ValidationError(f"'{value}' is not an IANA time zone (e.g. 'Europe/Berlin').", code="timezone")


def validate_language(value: str) -> None:
    # fullmatch: with match, the pattern's `$` would also accept a tag followed by a newline.
    if len(value) > LANGUAGE_TAG_MAX_LENGTH or not LANGUAGE_TAG.fullmatch(value):
        raise ValidationError(f"'{value}' is not a language tag (e.g. 'en', 'en-GB').", code="language_tag")


def validate_permissions(value) -> None:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise ValidationError("Permissions must be a list of permission names.", code="not_a_list")
    unknown = sorted(set(value) - set(Permission.values))
    if unknown:
        raise ValidationError(f"Unknown permissions: {', '.join(unknown)}.", code="invalid_choice")


def validate_metadata(value) -> None:
    if not isinstance(value, dict):
        raise ValidationError("Metadata must be a JSON object.", code="not_a_dict")
    size = len(
        json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":")).encode(
            errors="surrogatepass"
        )
    )
    if size > METADATA_MAX_BYTES:
        raise ValidationError(
            f"Metadata is {size} bytes of JSON; at most {METADATA_MAX_BYTES} are allowed.", code="max_size"
        )


def validate_notification_preferences(value) -> None:
    if (
        not isinstance(value, dict)
        or set(value) != set(NOTIFICATION_CHANNELS)
        or not all(isinstance(v, bool) for v in value.values())
    ):
        raise ValidationError(
            "Notification preferences must be an object with the booleans 'email' and 'push'.", code="invalid"
        )


def canonical_permissions(permissions: list[str]) -> list[str]:
    """Without repeats, known ones in the order of the permission list; unknown ones are kept (at
    the end) so that validation still sees them."""
    chosen = set(permissions)
    return [p for p in Permission.values if p in chosen] + sorted(chosen - set(Permission.values))


# Longer numbers overflow the database's 64-bit key instead of simply matching nothing.
USER_ID_MAX_DIGITS = 18


def parse_user_id(value) -> int | None:
    """The API's user id is the integer key as a string; anything else names no user."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    text = str(value)
    if not (text.isascii() and text.isdigit()) or len(text) > USER_ID_MAX_DIGITS:
        return None
    return int(text)


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
        """An operator of the service: every account in the admin, and a member of none."""
        if fields.get("account") is not None:
            raise ValueError("An operator belongs to no account.")
        fields.update(is_superuser=True, role=Role.ADMIN, status=Status.ACTIVE)
        return self.create_user(email, password, **fields)

    def active_admins(self):
        """Who administers an account (through its `users`, as `account.users.active_admins()`)."""
        return self.filter(role=Role.ADMIN, status=Status.ACTIVE)


class User(AbstractBaseUser):
    """A person: a member of an account (the Users API; the admin by role and permissions), or an
    operator of the service (superuser, no account).

    Admin access is read on every request: `is_staff` follows the role and status (AREA_ROLES),
    `has_perm` the user's `permissions` (the Settings area's access table,
    apps/settings_area/access.py), so there is no flag or group to tick by hand, and a suspension or
    a change of role or permissions takes effect at the next request.
    """

    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="users",
        null=True,
        blank=True,
        help_text="The account the user belongs to; empty only for site operators.",
    )
    email = models.EmailField(unique=True)
    name = models.CharField(max_length=200, blank=True)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.VIEWER)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    permissions = JSONField(default=list, blank=True, validators=[validate_permissions])
    metadata = JSONField(default=dict, blank=True, validators=[validate_metadata])
    timezone = models.CharField(max_length=64, default="UTC", validators=[validate_timezone])
    language = models.CharField(max_length=35, default="en", validators=[validate_language])
    notification_preferences = JSONField(
        default=default_notification_preferences, validators=[validate_notification_preferences]
    )
    invitation_sent_at = models.DateTimeField(null=True, blank=True)
    is_superuser = models.BooleanField(
        default=False, help_text="An operator of the service: sees every account in the admin; belongs to none."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["account", "role", "status"])]
        constraints = [
            # Enforced by the database, whatever form or script saves the user.
            models.CheckConstraint(
                condition=Q(is_superuser=False) | Q(account__isnull=True), name="operators_belong_to_no_account"
            )
        ]

    def __str__(self) -> str:
        return self.email

    @property
    def is_active(self) -> bool:
        # Django's auth backends refuse users whose is_active is false, so inactive, suspended
        # and not-yet-accepted users can neither log in nor use a session.
        return self.status == Status.ACTIVE

    @property
    def admin_area(self) -> str | None:
        """Which part of the admin the user gets: OPERATOR (all of it), Role.ADMIN (their account's
        Settings area), Role.EDITOR (their account's content), or None (no admin)."""
        if not self.is_active:
            return None
        if self.is_superuser:
            return OPERATOR
        if self.account_id is not None and self.role in AREA_ROLES:
            return self.role
        return None

    @property
    def is_staff(self) -> bool:
        # What Django's admin asks before every page.
        return self.admin_area is not None

    # As PermissionsMixin does, without its tables: the authentication backends answer (the
    # Settings area's AccessBackend, from its access table).
    def has_perm(self, perm: str, obj=None) -> bool:
        return any(hasattr(backend, "has_perm") and backend.has_perm(self, perm, obj) for backend in get_backends())

    def has_perms(self, perm_list, obj=None) -> bool:
        return all(self.has_perm(perm, obj) for perm in perm_list)

    def has_module_perms(self, app_label: str) -> bool:
        return any(
            hasattr(backend, "has_module_perms") and backend.has_module_perms(self, app_label)
            for backend in get_backends()
        )

    def clean(self) -> None:
        super().clean()
        if self.is_superuser and self.account_id is not None:
            raise ValidationError("An operator (superuser) belongs to no account.")

    @property
    def is_account_admin(self) -> bool:
        """Has role admin in their account: what the API's "admin only" endpoints ask of a key's owner."""
        return self.role == Role.ADMIN

    @property
    def is_active_admin(self) -> bool:
        return self.role == Role.ADMIN and self.status == Status.ACTIVE

    def set_role(self, role: str, permissions: list[str] | None = None) -> None:
        self.role = role
        self.permissions = (
            canonical_permissions(permissions) if permissions is not None else default_permissions_for(role)
        )

    def mark_invited(self, at: datetime) -> None:
        self.status = Status.INVITED
        self.invitation_sent_at = at

    def accept_invitation(self, raw_password: str) -> None:
        self.set_password(raw_password)
        self.status = Status.ACTIVE
