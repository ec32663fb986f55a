"""Every process runs the start-up checks (config/checks.py) and refuses to start on an error, with
its message: manage.py's commands, the web process and Celery's worker and beat. One bad combination each
(production with DEBUG on); which combinations are refused: tests/ops/test_production_settings.py."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

from tests.ops.test_production_settings import PRODUCTION, UNSET

# The embedded database and broker, and the web process's defaults: the process stops before it
# would reach any of them.
WITHOUT = (*UNSET, "DATABASE_URL", "REDIS_URL", "CELERY_", "WEB_", "BIND", "PORT")


@pytest.mark.parametrize(
    ("command", "env"),
    [
        pytest.param(["manage.py", "check"], {}, id="manage.py"),
        pytest.param(["-m", "config.web"], {}, id="web"),
        # Its checks then run in a process of their own, so that its workers import the application.
        pytest.param(["-m", "config.web"], {"WEB_PRELOAD": "false"}, id="web-not-preloading"),
        pytest.param(["-m", "celery", "-A", "config", "worker", "--pool", "solo"], {}, id="worker"),
        pytest.param(["-m", "celery", "-A", "config", "beat", "--schedule", "/dev/null/never-written"], {}, id="beat"),
    ],
)
def test_a_bad_combination_stops_the_process_at_start_up_with_its_message(command, env):
    environment = {key: value for key, value in os.environ.items() if not key.startswith(WITHOUT)}
    result = subprocess.run(
        [sys.executable, *command],
        env={**environment, **PRODUCTION, "DEBUG": "true", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "(cps.E001) DEBUG must be false when ENVIRONMENT=production" in result.stderr
