from celery import shared_task

from apps.posts.content_plan import content_plan_run


@shared_task(name="posts.content_plan", ignore_result=True)
def run_content_plan() -> int:
    return content_plan_run().moved
