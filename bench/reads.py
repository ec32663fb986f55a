"""Reads through Django's test client in the benchmark's process, for the scale and blog parts:
timed in turns, and what one request costs in queries and memory."""

import math
import statistics
import time
import tracemalloc
from dataclasses import dataclass


@dataclass(frozen=True)
class Rounds:
    """How long reads are timed: `warmup` untimed rounds, then up to `most` rounds, stopped early
    (after at least `least`) once they have run for `seconds`, so slow reads cannot stretch a part."""

    warmup: int
    most: int
    least: int
    seconds: float


def time_reads(client, paths: dict, rounds: Rounds) -> tuple[dict, int]:
    """Median and p90 of each read (ms), the reads taking turns so that whatever else the machine
    does weighs on all alike; and the number of rounds."""
    for _ in range(rounds.warmup):
        for path in paths.values():
            client.get(path)
    times: dict = {key: [] for key in paths}
    done, started = 0, time.monotonic()
    while done < rounds.most and (done < rounds.least or time.monotonic() - started < rounds.seconds):
        for key, path in paths.items():
            before = time.perf_counter()
            response = client.get(path)
            times[key].append((time.perf_counter() - before) * 1000)
            if response.status_code != 200:
                raise RuntimeError(f"{path} answered {response.status_code}: {response.content[:500]!r}")
        done += 1
    figures = {
        key: {"median_ms": statistics.median(values), "p90_ms": percentile(values, 90)} for key, values in times.items()
    }
    return figures, done


def percentile(values: list[float], percent: float) -> float:
    """Nearest rank."""
    return sorted(values)[max(1, math.ceil(len(values) * percent / 100)) - 1]


def footprint(client, path: str) -> dict:
    """Queries of one request and the peak of Python memory it allocated, each in a request of
    its own (tracing memory slows a request down many times; neither is timed)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        client.get(path)
    # Counted now: the next request's start empties the connection's query log the count reads.
    count = len(queries)
    tracemalloc.start()
    try:
        client.get(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {"queries": count, "peak_kib": peak / 1024}
