from celery import shared_task

from apps.publishing.linkedin import services


@shared_task(name="publishing.linkedin_expiry", ignore_result=True)
def linkedin_expiry() -> dict[str, int]:
    return services.expiring_check()
