"""Webhooks: how deliveries are sent, retried, held back by an endpoint's breaker, and kept."""

from apps.core import env

WEBHOOK_TIMEOUT = env.positive_int("WEBHOOK_TIMEOUT", 10)
WEBHOOK_RETRY_DELAYS = env.int_list("WEBHOOK_RETRY_DELAYS", "60,300,1800,7200")
WEBHOOK_SWEEP_INTERVAL = env.positive_int("WEBHOOK_SWEEP_INTERVAL", 30)
# A delivery handed to the broker this long ago and still not attempted is handed over again
# (the broker lost it, or the worker that had it died).
WEBHOOK_REQUEUE_AFTER = env.positive_int("WEBHOOK_REQUEUE_AFTER", 300)
WEBHOOK_HISTORY_DAYS = env.positive_int("WEBHOOK_HISTORY_DAYS", 30)
# Deliveries handed to the broker in one task, sent one after the other by one worker process:
# one claim, one read and one write for all of them instead of for each. At 50 a batch's fixed
# costs (its task, its nine statements) were a sixth of a worker's CPU; a batch still starts no
# attempt after WEBHOOK_TIMEOUT, and a worker killed mid-batch leaves at most this many to be sent
# again (receivers deduplicate by delivery id).
WEBHOOK_BATCH_SIZE = env.positive_int("WEBHOOK_BATCH_SIZE", 100)
WEBHOOK_ALLOW_PRIVATE_TARGETS = env.boolean("WEBHOOK_ALLOW_PRIVATE_TARGETS", default=False)
# Attempts in flight at once per worker process (threads), so a receiver that hangs holds up a
# thread, not the worker; and batches in flight at once per endpoint, over all workers, so one
# endpoint's backlog or hang never takes more than that many of them.
WEBHOOK_SENDERS = env.positive_int("WEBHOOK_SENDERS", 16)
WEBHOOK_ENDPOINT_CONCURRENCY = env.positive_int("WEBHOOK_ENDPOINT_CONCURRENCY", 2)
# After this many failed attempts in a row an endpoint is held back: its other deliveries wait, and
# one probe goes out after each of these delays in turn (the last repeated), whatever the retry delays.
WEBHOOK_BREAKER_THRESHOLD = env.positive_int("WEBHOOK_BREAKER_THRESHOLD", 5)
WEBHOOK_BREAKER_PROBE_DELAYS = env.int_list("WEBHOOK_BREAKER_PROBE_DELAYS", "60,300,1800,7200", at_least_one=True)
# An endpoint whose every attempt failed for this long is disabled and its account's admins told.
WEBHOOK_DISABLE_AFTER = env.duration("WEBHOOK_DISABLE_AFTER", "P5D")
# After a rotation the replaced secret still signs deliveries for this long, beside the new one.
WEBHOOK_SECRET_OVERLAP = env.duration("WEBHOOK_SECRET_OVERLAP", "PT24H")
# A delivery held back by its endpoint's breaker for longer than this is failed (not sent).
WEBHOOK_MAX_AGE = env.duration("WEBHOOK_MAX_AGE", "P3D")
