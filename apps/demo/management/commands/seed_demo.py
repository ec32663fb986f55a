from django.conf import settings
from django.core.management.base import CommandParser

from apps.accounts.models import Account
from apps.core.commands import JsonCommand
from apps.demo.seed import seed_demo

NOT_SEEDED = "Database already has data; not seeding (run python manage.py seed_demo for fresh keys)."
# A login whose password an earlier run printed (make run's): kept, so what was printed still works.
KEPT = "(password unchanged: the one printed when it was set)"


class Command(JsonCommand):
    help = (
        "Create or refresh the demo accounts, users and data; print fresh demo API keys. Passwords printed "
        "by an earlier run are kept (--new-passwords gives every demo user a fresh one)."
    )

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--if-empty", action="store_true", help="do nothing when any account exists")
        parser.add_argument(
            "--new-passwords", action="store_true", help="give every demo user and the operator a fresh password"
        )

    def run(self, options) -> dict | None:
        if options["if_empty"] and Account.objects.exists():
            return None
        return seed_demo(new_passwords=options["new_passwords"])

    def as_json(self, result: dict | None) -> dict:
        # Not seeded: the same shape, with no fresh keys or logins to show. site_url: where the keys
        # and the blogs' addresses are used (SITE_URL, which follows PORT and BIND unless set).
        return {"site_url": settings.SITE_URL, **(result or {"accounts": [], "admin_login": None})}

    def as_text(self, result: dict | None) -> str:
        if result is None:
            return NOT_SEEDED
        lines = ["Demo data ready. Fresh API keys (shown once):"]
        for account in result["accounts"]:
            lines.append(f"  {account['name']} (account {account['id']}, plan {account['plan']})")
            for label, key in account["keys"].items():
                lines.append(f"    {label:8} {key}")
            if "channels" in account:
                channels = ", ".join(f"{label} {pk}" for label, pk in account["channels"].items())
                lines.append(f"    channels: {channels}")
                posts = ", ".join(f"{label} {pk}" for label, pk in account["posts"].items())
                lines.append(f"    api channel posts: {posts}")
            if account.get("blog_url"):
                lines.append(f"    blog: {account['blog_url']}")
            if account.get("newsletter_url"):
                lines.append(f"    newsletter (subscribe form and archive): {account['newsletter_url']}")
            if account.get("git_repository"):
                lines.append(f"    git channel commits to {account['git_repository']} (try: git -C ... log)")
            for role, login in account["logins"].items():
                lines.append(f"    {role + ' login':12} {login['username']} / {login['password'] or KEPT}")
        login = result["admin_login"]
        # Addresses from SITE_URL, which follows PORT and BIND unless set: they reach this deployment.
        lines.append(f"Admin site: {settings.SITE_URL}/{settings.ADMIN_URL}")
        lines.append(f"Admin site login: {login['username']} / {login['password'] or KEPT}")
        first_key = result["accounts"][0]["keys"]["all"]
        lines.append(f"Try: curl -H 'Authorization: Bearer {first_key}' {settings.SITE_URL}/v1/me")
        return "\n".join(lines)
