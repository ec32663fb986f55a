from celery import shared_task

from apps.users import credentials, idempotency


# The task keeps the name it was scheduled under (config/settings/worker.py, beat) when keys lived in accounts.
@shared_task(name="accounts.prune_sso_tokens", ignore_result=True)
def prune_sso_tokens() -> int:
    return credentials.sso_tokens_prune()


@shared_task(name="users.sweep_idempotency_records", ignore_result=True)
def sweep_idempotency_records() -> int:
    return idempotency.records_sweep()
