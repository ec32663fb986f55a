# The start-up checks are registered wherever the settings are loaded (config.settings imports this
# package first): every process runs them (config/checks.py).
from config import checks  # noqa: F401
from config.celery import app as celery_app

__all__ = ("celery_app",)
