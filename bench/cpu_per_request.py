"""CPU time per request of each benchmarked endpoint and of its floor, measured in this process
through Django's test client (no network, no wrk): the figures behind the API benchmark's ratios,
steadier than req/s on a busy machine. Run after `make bench`, which seeds the bench database.

    .venv/bin/python bench/cpu_per_request.py [REQUESTS]

For where the time goes: `.venv/bin/py-spy record -o profile.svg -- .venv/bin/python
bench/cpu_per_request.py` (py-spy from PyPI; not a requirement of the project).
"""

import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
import bench.run  # noqa: E402, F401 - the benchmark's environment: its database, Redis db and settings

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"

import django  # noqa: E402

django.setup()
logging.getLogger("cps.request").setLevel(logging.WARNING)

from django.test import Client  # noqa: E402

from bench.run import WORK, api_endpoints  # noqa: E402


def cpu_ms(client: Client, paths: tuple[str, str], requests: int) -> tuple[float, float]:
    """The least CPU time per request of each path over seven rounds, the two taking turns (the
    other rounds were disturbed by whatever else the machine did)."""
    best = [float("inf"), float("inf")]
    for path in paths:
        for _ in range(10):
            client.get(path)
    for _ in range(7):
        for index, path in enumerate(paths):
            started = time.process_time()
            for _ in range(requests):
                client.get(path)
            best[index] = min(best[index], (time.process_time() - started) / requests * 1000)
    return best[0], best[1]


def main() -> None:
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    seed = json.loads((WORK / "seed.json").read_text())
    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {seed['key']}")
    print(f"{'endpoint':45} {'API ms':>8} {'floor ms':>9} {'ratio':>6}")
    for label, path, floor_path in api_endpoints(seed):
        api, floor = cpu_ms(client, (path, floor_path), requests)
        print(f"{label:45} {api:8.2f} {floor:9.2f} {floor / api:6.2f}")


if __name__ == "__main__":
    main()
