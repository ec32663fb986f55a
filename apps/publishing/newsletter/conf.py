"""The newsletter's settings (docs/newsletter.md), read from the environment at start-up: config/settings
adds the UPPER_CASE names of this module to Django's settings (`settings.NEWSLETTER_SEND_RATE`)."""

from apps.core import env

# Messages per second each newsletter channel sends at most (0: as fast as the mail server takes them).
NEWSLETTER_SEND_RATE = env.non_negative_int("NEWSLETTER_SEND_RATE", 50)
# Recipients a sender takes at a time (one mail-server connection each).
NEWSLETTER_BATCH_SIZE = env.int_between("NEWSLETTER_BATCH_SIZE", 100, 1, 10000)
# How long the link of a confirmation e-mail confirms; past it, the person subscribes again on the form.
NEWSLETTER_CONFIRM_TTL = env.duration("NEWSLETTER_CONFIRM_TTL", "P7D")
# Subscriptions the public form takes per client address (count, seconds); bots get the same page.
NEWSLETTER_SUBSCRIBE_RATE = env.rate("NEWSLETTER_SUBSCRIBE_RATE", "10/h")

# The mail providers' tracking webhooks (bounces, complaints: tracking.py) take only calls with the
# basic-auth secret (ANYMAIL_WEBHOOK_SECRET, read with the other ANYMAIL_* settings), or the provider's
# signature. Production serves them only once that secret is set (a start-up check asks for it when a
# provider sends the mail: unanswered bounces ruin a sender's name).
NEWSLETTER_TRACKING_WEBHOOKS = bool(env.text("ANYMAIL_WEBHOOK_SECRET", "").strip()) or env.environment() != "production"
