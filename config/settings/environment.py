"""Where the service runs: its folders, development or production, its secret and host names.

The `.env` file beside manage.py is read here, first, so every other module sees its variables.
"""

from apps.core import env
from apps.core.hosts import AllowedHosts

BASE_DIR = env.BASE_DIR
VAR_DIR = env.VAR_DIR

env.read_dotenv(BASE_DIR / ".env")

ENVIRONMENT = env.environment()
IS_PRODUCTION = ENVIRONMENT == "production"
DEBUG = env.boolean("DEBUG", default=False)

# Outside development a real secret is mandatory; the development default only ever signs local
# sessions on a developer's machine. Production's rules for it are a start-up check (config/checks.py).
SECRET_KEY = (
    env.text("SECRET_KEY")
    if IS_PRODUCTION
    else env.text("SECRET_KEY", "insecure-development-key-do-not-use-in-production")
)
SECRET_KEY_MIN_LENGTH = 50

# The service's own host names. A blog's own domain (a channel setting) is accepted as well, for the
# requests that name it, without being listed here (apps/core/hosts.py).
ALLOWED_HOSTS = AllowedHosts(env.words("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"]))
CSRF_TRUSTED_ORIGINS = env.words("CSRF_TRUSTED_ORIGINS", [])
ADMIN_URL = env.admin_url()
