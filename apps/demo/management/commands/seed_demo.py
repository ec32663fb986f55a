import json

from django.core.management.base import BaseCommand

from apps.accounts.models import Account
from apps.demo.seed import seed_demo


class Command(BaseCommand):
    help = "Create or refresh the demo accounts, users and data; print fresh demo API keys and logins."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="print the result as JSON")
        parser.add_argument("--if-empty", action="store_true", help="do nothing when any account exists")

    def handle(self, *args, **options):
        if options["if_empty"] and Account.objects.exists():
            self.stdout.write("Database already has data; not seeding (run `python manage.py seed_demo` to refresh).")
            return
        result = seed_demo()
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write("Demo data ready. Fresh API keys (shown once):")
        for account in result["accounts"]:
            self.stdout.write(f"  {account['name']} (account {account['id']}, plan {account['plan']})")
            for label, key in account["keys"].items():
                self.stdout.write(f"    {label:8} {key}")
            if "channels" in account:
                channels = ", ".join(f"{label} {pk}" for label, pk in account["channels"].items())
                self.stdout.write(f"    channels: {channels}")
                posts = ", ".join(f"{label} {pk}" for label, pk in account["posts"].items())
                self.stdout.write(f"    api channel posts: {posts}")
            if account.get("blog_url"):
                self.stdout.write(f"    blog: {account['blog_url']}")
            if account.get("git_repository"):
                self.stdout.write(f"    git channel commits to {account['git_repository']} (try: git -C ... log)")
            for role, login in account["logins"].items():
                self.stdout.write(f"    {role + ' login':12} {login['username']} / {login['password']}")
        login = result["admin_login"]
        self.stdout.write(f"Admin site login: {login['username']} / {login['password']}")
        first_key = result["accounts"][0]["keys"]["all"]
        self.stdout.write(f"Try: curl -H 'Authorization: Bearer {first_key}' http://127.0.0.1:8000/v1/me")
