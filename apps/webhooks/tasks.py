from celery import shared_task
from celery.signals import worker_process_shutdown

from apps.webhooks import attempt_threads, services, upkeep

# How long a task waits for its attempts (on the process's sender threads) before it returns and
# frees its worker process for the next task. Attempts to a working receiver end well within it;
# one that hangs carries on alone and records its own outcome, holding up no other endpoint.
PATIENCE = 0.25


@shared_task(name="webhooks.deliver", acks_late=True, ignore_result=True)
def deliver_webhook(delivery_id: str, manual: bool = False) -> None:
    services.delivery_attempt(delivery_id=delivery_id, manual=manual, pool=attempt_threads.pool(), patience=PATIENCE)


@shared_task(name="webhooks.deliver_batch", acks_late=True, ignore_result=True)
def deliver_webhooks(delivery_ids: list[str]) -> None:
    services.deliveries_attempt(delivery_ids=delivery_ids, pool=attempt_threads.pool(), patience=PATIENCE)


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep_webhook_deliveries() -> int:
    return services.deliveries_sweep()


@shared_task(name="webhooks.prune_history", ignore_result=True)
def prune_webhook_history() -> int:
    return upkeep.history_prune()


@worker_process_shutdown.connect
def _finish_attempts(**kwargs) -> None:
    """A worker stopping lets its attempts in flight end and be recorded (at most WEBHOOK_TIMEOUT)."""
    attempt_threads.finish()
