from celery import shared_task

from apps.core.outbox import retry_delay
from apps.publishing.newsletter import services

# The confirmation e-mail is retried while the mail server is away (about an hour in all).
CONFIRMATION_RETRIES = (30, 120, 600, 1800)


@shared_task(name="newsletter.send_confirmations", bind=True, ignore_result=True, max_retries=len(CONFIRMATION_RETRIES))
def send_confirmations(self, subscriber_ids: list[int]) -> int:
    try:
        return services.confirmations_send(subscriber_ids=subscriber_ids)
    except Exception as exc:  # smtplib, socket and providers' errors vary by backend
        delay = retry_delay(self.request.retries + 1, CONFIRMATION_RETRIES, capped=True)
        raise self.retry(exc=exc, countdown=delay) from None
