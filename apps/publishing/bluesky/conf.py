"""The Bluesky destination's settings (docs/bluesky.md), read from the environment at start-up:
config/settings adds the UPPER_CASE names of this module to Django's settings."""

from apps.core import env

# Where a handle is resolved to its DID (`com.atproto.identity.resolveHandle`, which any AppView or
# PDS answers for every handle), then where a did:plc's document, which names the account's server
# (PDS), is read. Both are dialled through the address guard like the servers people name.
BLUESKY_RESOLVER_URL = env.base_url("BLUESKY_RESOLVER_URL", "https://public.api.bsky.app")
BLUESKY_DIRECTORY_URL = env.base_url("BLUESKY_DIRECTORY_URL", "https://plc.directory")
# Lets the addresses above, a server a person names and those a directory answers be this machine's
# or private ones (a local PDS in development, the tests' fakes), as GIT_ALLOW_LOCAL_REPOSITORIES does
# for repositories. Off in production: a handle's owner chooses where its DID document points.
BLUESKY_ALLOW_LOCAL_SERVERS = env.boolean("BLUESKY_ALLOW_LOCAL_SERVERS", default=False)
