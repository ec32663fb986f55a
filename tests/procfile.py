"""The Procfile's lines run as a process manager runs them (tests/ops and bench/embedded.py)."""

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path


def procfile_lines(checkout: Path) -> dict[str, str]:
    lines = [line for line in (checkout / "Procfile").read_text().splitlines() if not line.startswith("#")]
    return {name: command.strip() for name, _, command in (line.partition(":") for line in lines) if command}


class ProcfileProcess:
    """One Procfile line run through `bash -c` in the checkout, in its own process group, its output
    in a log file."""

    def __init__(self, name: str, command: str, checkout: Path, env: dict[str, str], logs: Path) -> None:
        self.name = name
        self.log_path = logs / f"{name}.log"
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=checkout,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def has_exited(self) -> bool:
        return self.process.poll() is not None

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signum)

    def wait_then_kill(self, deadline: float) -> None:
        """Wait for the process until `deadline`, then kill its whole group (pool children included)."""
        if self._log.closed:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        self.signal_group(signal.SIGKILL)
        self.process.wait(timeout=10)
        self._log.close()

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM to the group, as honcho sends it; SIGKILL to what is left after `timeout`."""
        if not self._log.closed:
            self.signal_group(signal.SIGTERM)
        self.wait_then_kill(time.monotonic() + timeout)
