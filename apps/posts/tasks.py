from celery import shared_task

from apps.posts.changes import tombstones_sweep
from apps.posts.content_plan import content_plan_run


@shared_task(name="posts.content_plan", ignore_result=True)
def run_content_plan() -> int:
    return content_plan_run().moved


@shared_task(name="posts.sweep_changes", ignore_result=True)
def sweep_changes() -> int:
    return tombstones_sweep()
