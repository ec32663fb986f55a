"""One content plan run in a process of its own, for the benchmark: prints a JSON line with the
seconds the run took, how many posts it moved where and the process's peak resident memory.

    python -m bench.content_plan_child
"""

import json
import os
import resource
import time
from pathlib import Path


def peak_rss_mb() -> float:
    """The process's peak resident memory. VmHWM is this process's own; ru_maxrss would start from
    the parent's resident size at fork (Linux keeps it across exec), here the benchmark's."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def main() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from apps.posts.content_plan import content_plan_run

    before = peak_rss_mb()
    started = time.perf_counter()
    result = content_plan_run()
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": seconds,
                "moved": result.moved,
                "publishing_pending": result.publishing_pending,
                "published": result.published,
                "handed_over": result.handed_over,
                "peak_rss_mb": peak_rss_mb(),
                "rss_before_run_mb": before,
            }
        )
    )


if __name__ == "__main__":
    main()
