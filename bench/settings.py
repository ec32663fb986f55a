"""Settings of the benchmark's web server: the production settings plus the floor's routes.

Only `make bench` uses this module; the floor views never reach the service's own URLs.
"""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
