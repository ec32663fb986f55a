"""Demo data for trying the service and for tests: `python manage.py seed_demo`.

Running it again updates the same accounts and users instead of adding new ones, revokes the
earlier demo keys and prints fresh ones, and keeps every password it printed before (`make run`
printed them, and the README's tour runs the seed again): only a user who has none yet, or every
demo user when asked (`new_passwords`), gets a fresh one.
"""

import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from apps.accounts.models import ALL_SCOPES, Account, Plan, Scope
from apps.demo.content import seed_content
from apps.users.credentials import api_key_create, api_key_revoke
from apps.users.models import ApiKey, Role, User, default_permissions_for

DEMO_KEY_PREFIX = "demo:"
OPERATOR_EMAIL = "operator@example.com"

DEMO_ACCOUNTS = [
    {
        "name": "Acme Publishing",
        "plan": Plan.FREE,
        "domain": "acme.example.com",
        "users": {
            Role.ADMIN: ("Ada Admin", "Europe/London", {"department": "management"}),
            Role.EDITOR: ("Eddie Editor", "America/New_York", {"department": "editorial"}),
            Role.VIEWER: ("Vera Viewer", "Asia/Tokyo", {"department": "analytics"}),
        },
    },
    {
        "name": "Globex Media",
        "plan": Plan.PROFESSIONAL,
        "domain": "globex.example.com",
        "users": {
            Role.ADMIN: ("Grace Admin", "Europe/Berlin", {"department": "management"}),
            Role.EDITOR: ("Gil Editor", "America/Chicago", {"department": "editorial"}),
            Role.VIEWER: ("Gus Viewer", "Australia/Sydney", {"department": "sales"}),
        },
    },
]


def _seed_user(account: Account, role: str, email: str, name: str, tz: str, metadata: dict) -> User:
    user, created = User.objects.get_or_create(
        email=email,
        defaults={"account": account, "role": role, "name": name, "permissions": default_permissions_for(role)},
    )
    if not created:
        user.account, user.name = account, name
        user.set_role(role)
    user.status = "active"
    user.timezone, user.metadata = tz, {**metadata, "demo": True}
    user.save()
    return user


def _fresh_keys(account: Account, users: dict[str, User]) -> dict[str, str]:
    for old in ApiKey.objects.filter(account=account, name__startswith=DEMO_KEY_PREFIX, revoked_at__isnull=True):
        api_key_revoke(api_key=old)
    admin, viewer = users[Role.ADMIN], users[Role.VIEWER]
    specs = {
        "all": (admin, ALL_SCOPES, None),
        "read": (admin, [Scope.READ_CHANNELS, Scope.READ_POSTS], None),
        "none": (admin, [], None),
        "expired": (admin, ALL_SCOPES, timezone.now() - timedelta(days=1)),
        "viewer": (viewer, ALL_SCOPES, None),
    }
    keys = {}
    for label, (user, scopes, expires_at) in specs.items():
        _, keys[label] = api_key_create(
            account=account, user=user, name=f"{DEMO_KEY_PREFIX}{label}", scopes=list(scopes), expires_at=expires_at
        )
    return keys


def _login(user: User, *, new_password: bool) -> dict[str, str | None]:
    """The user's login; its password only when this run set it (None: the one printed before)."""
    if user.has_usable_password() and user.password and not new_password:
        return {"username": user.email, "password": None}
    password = secrets.token_urlsafe(12)
    user.set_password(password)
    user.save(update_fields=["password"])
    return {"username": user.email, "password": password}


@transaction.atomic
def seed_demo(*, new_passwords: bool = False) -> dict:
    accounts = []
    for spec in DEMO_ACCOUNTS:
        account, _ = Account.objects.get_or_create(name=spec["name"], defaults={"plan": spec["plan"]})
        users = {
            role: _seed_user(account, role, f"{role}@{spec['domain']}", name, tz, metadata)
            for role, (name, tz, metadata) in spec["users"].items()
        }
        accounts.append(
            {
                "id": account.id,
                "name": account.name,
                "plan": account.plan,
                "users": {str(role): user.email for role, user in users.items()},
                "keys": _fresh_keys(account, users),
                # "channels": {platform: id}, "posts": {case of the api channel: id}
                **seed_content(account),
                "logins": {str(role): _login(user, new_password=new_passwords) for role, user in users.items()},
            }
        )
    operator = User.objects.filter(email=OPERATOR_EMAIL).first()
    if operator is None:
        operator = User.objects.create_superuser(OPERATOR_EMAIL, None, name="Site Operator")
    return {"accounts": accounts, "admin_login": _login(operator, new_password=new_passwords)}
