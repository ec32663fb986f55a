from celery import shared_task

from apps.accounts import services


@shared_task(name="accounts.prune_sso_tokens", ignore_result=True)
def prune_sso_tokens() -> int:
    return services.sso_tokens_prune()
