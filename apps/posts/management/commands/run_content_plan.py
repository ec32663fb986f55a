from dataclasses import asdict

from apps.core.commands import JsonCommand
from apps.posts.content_plan import ContentPlanResult, content_plan_run


class Command(JsonCommand):
    help = "Move every scheduled post whose time has come on, once (what Celery beat runs periodically)."
    json_help = "print what moved as JSON: moved, publishing_pending, published, handed_over (errors on stderr)"

    def run(self, options) -> ContentPlanResult:
        return content_plan_run()

    def as_json(self, result: ContentPlanResult) -> dict:
        return {"moved": result.moved, **asdict(result)}

    def as_text(self, result: ContentPlanResult) -> str:
        # Posts of channels with a destination stay scheduled until their destination confirms.
        handed_over = f", {result.handed_over} handed to their destination" if result.handed_over else ""
        return (
            f"Moved {result.moved} post(s): {result.publishing_pending} to publishing_pending, "
            f"{result.published} to published{handed_over}."
        )
