"""The git destination's settings, read from the environment at start-up: config/settings adds the
UPPER_CASE names of this module to Django's settings (`settings.GIT_CACHE_DIR`)."""

from pathlib import Path

from apps.core import env

# Local repositories (a path or file://) and plain http:// remotes: development and tests only.
GIT_ALLOW_LOCAL_REPOSITORIES = env.boolean("GIT_ALLOW_LOCAL_REPOSITORIES", default=False)
# Each worker keeps a bare copy of the repositories it publishes to, so a job fetches only what
# is new; losing it costs one full fetch.
GIT_CACHE_DIR = Path(env.text("GIT_CACHE_DIR", str(env.VAR_DIR / "git-cache")))
