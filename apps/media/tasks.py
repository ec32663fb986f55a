from celery import shared_task

from apps.media.variants import variants_make, variants_pending


@shared_task(name="media.make_variants", acks_late=True, ignore_result=True)
def make_variants(medium_id: int) -> bool:
    return variants_make(medium_id)


@shared_task(name="media.sweep_variants", ignore_result=True)
def sweep_variants() -> int:
    pending = variants_pending()
    for medium_id in pending:
        make_variants.delay(medium_id)
    return len(pending)
