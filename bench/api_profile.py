"""In-process measurements behind the API benchmark's figures, in CPU time (steadier than req/s
on a busy machine): each endpoint and its floor per request through Django's test client.

    .venv/bin/python -m bench.api_profile [REQUESTS]     # after `make bench`, which seeds the database

Where the time goes, function by function: `.venv/bin/py-spy record -o profile.svg --
.venv/bin/python -m bench.api_profile` (py-spy from PyPI; not a requirement of the project).
"""

import json
import logging
import os
import sys
import time


def cpu_per_request(seed: dict, endpoints, requests: int = 50) -> dict:
    """label -> (API ms, floor ms): the two take turns, so whatever else runs weighs on both."""
    from django.test import Client

    client = Client(HTTP_HOST="127.0.0.1", HTTP_AUTHORIZATION=f"Bearer {seed['key']}")
    figures = {}
    for label, path, floor_path in endpoints:
        best = {path: float("inf"), floor_path: float("inf")}
        for url in best:
            for _ in range(10):
                client.get(url)
        for _ in range(7):
            for url in best:
                started = time.process_time()
                for _ in range(requests):
                    client.get(url)
                best[url] = min(best[url], (time.process_time() - started) / requests * 1000)
        figures[label] = (best[path], best[floor_path])
    return figures


def main() -> None:
    import django

    from bench.common import WORK, configure

    configure()  # the benchmark's environment: its database and Redis db
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"  # with the floor's routes
    django.setup()
    logging.getLogger("cps.request").setLevel(logging.WARNING)
    from bench.api_endpoints import api_endpoints

    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    seed = json.loads((WORK / "seed.json").read_text())
    print(f"{'CPU per request':45} {'API ms':>8} {'floor ms':>9} {'ratio':>6}")
    for label, (api, floor) in cpu_per_request(seed, api_endpoints(seed), requests).items():
        print(f"{label:45} {api:8.2f} {floor:9.2f} {floor / api:6.2f}")


if __name__ == "__main__":
    main()
