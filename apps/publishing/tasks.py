from concurrent.futures import wait

from celery import shared_task
from celery.signals import celeryd_init, worker_process_shutdown, worker_ready
from django.conf import settings
from django.db import connections

from apps.core.threads import finish, process_pool
from apps.publishing import services, workers

POOL = "publisher"
# How long a task waits for its channel's run (on the process's publisher threads) before it
# returns and frees its worker process: a destination that hangs holds a thread, not the worker,
# so it delays no other channel's jobs and no webhook delivery.
PATIENCE = 0.25


@shared_task(name="publishing.run_channel", acks_late=True, ignore_result=True)
def run_channel(channel_id: int) -> None:
    future = process_pool(POOL, settings.PUBLISH_WORKERS).submit(services.channel_run, channel_id, block=False)
    if future is None:
        # Every thread of this process is busy: try again shortly (or another process takes it).
        run_channel.apply_async((channel_id,), countdown=1, retry=False)
        return
    wait([future], timeout=PATIENCE)


@shared_task(name="publishing.sweep", ignore_result=True)
def sweep_publication_jobs() -> int:
    return services.jobs_sweep()


@worker_process_shutdown.connect
def _finish_runs(**kwargs) -> None:
    """A worker stopping lets the jobs in flight end and be recorded (at most about 2x PUBLISH_TIMEOUT)."""
    finish(POOL)


@celeryd_init.connect
def _name_this_worker(sender=None, **kwargs) -> None:
    """The worker's identity (its node name, as celery@host, and this start), set in the main
    process before it forks its pool, so every job its processes claim says which worker holds it."""
    workers.worker_started(node_name=str(sender))


@worker_ready.connect
def _release_former_self(**kwargs) -> None:
    """A worker back after a crash (SIGKILL, a lost machine) carries on at once with the jobs its
    dead former self held, rather than after their leases (about 70 s): an edition's send resumes
    within a minute. The sweep hands their channels over now, not at beat's next round."""
    try:
        if workers.jobs_release_former(identity=workers.worker_identity()):
            services.jobs_sweep()
    finally:
        # The main process forks pool processes later (a replaced one): none may share its connection.
        connections.close_all()
