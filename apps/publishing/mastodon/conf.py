"""The Mastodon destination's settings (docs/mastodon.md), read from the environment at start-up:
config/settings adds the UPPER_CASE names of this module to Django's settings."""

from apps.core import env

# Instances on this machine or a private network, and plain http:// ones: development and the tests'
# local fakes only. Off, an instance's address must be https:// and resolve to public addresses only
# (checked when it is typed and on every connection made to it: the address guard).
MASTODON_ALLOW_LOCAL_INSTANCES = env.boolean("MASTODON_ALLOW_LOCAL_INSTANCES", default=False)
# The name the service registers its app with on each instance (shown to people under a status).
MASTODON_CLIENT_NAME = env.text("MASTODON_CLIENT_NAME", "Publishing service").strip() or "Publishing service"
# An instance's limits (characters, link length, images per status) are read again when older than this.
MASTODON_LIMITS_MAX_AGE = env.duration("MASTODON_LIMITS_MAX_AGE", "P1D")
