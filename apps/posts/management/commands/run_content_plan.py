from django.core.management.base import BaseCommand

from apps.posts.content_plan import content_plan_run


class Command(BaseCommand):
    help = "Move every scheduled post whose time has come on, once (what Celery beat runs periodically)."

    def handle(self, *args, **options):
        result = content_plan_run()
        self.stdout.write(
            f"Moved {result.moved} post(s): {result.publishing_pending} to publishing_pending, "
            f"{result.published} to published."
        )
