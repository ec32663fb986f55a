from celery import shared_task

from apps.webhooks import services


@shared_task(name="webhooks.deliver", acks_late=True, ignore_result=True)
def deliver_webhook(delivery_id: str, manual: bool = False) -> None:
    services.delivery_attempt(delivery_id=delivery_id, manual=manual)


@shared_task(name="webhooks.deliver_batch", acks_late=True, ignore_result=True)
def deliver_webhooks(delivery_ids: list[str]) -> None:
    services.deliveries_attempt(delivery_ids=delivery_ids)


@shared_task(name="webhooks.sweep", ignore_result=True)
def sweep_webhook_deliveries() -> int:
    return services.deliveries_sweep()


@shared_task(name="webhooks.prune_history", ignore_result=True)
def prune_webhook_history() -> int:
    return services.history_prune()
