"""A digest of the service's own code, for the caches of rendered responses and pages: a deploy
that changes any module under apps/ starts new entries. Which modules shape what is cached is
derived from the tree (SHAPING_MODULES: all of them), never kept by hand, so a new module that
shapes a post cannot be left out and serve stale bytes."""

import hashlib
from functools import cache
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent


def shaping_files(root: Path) -> list[Path]:
    """The modules under `root`, in a fixed order."""
    return sorted(root.rglob("*.py"))


# The modules whose code shapes the cached bytes, as dotted names (apps.posts.serializers, ...).
SHAPING_MODULES: tuple[str, ...] = tuple(
    ".".join((SOURCE.name, *path.relative_to(SOURCE).with_suffix("").parts)) for path in shaping_files(SOURCE)
)


@cache
def source_digest() -> str:
    digest = hashlib.sha256()
    for source in shaping_files(SOURCE):
        digest.update(source.relative_to(SOURCE).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()
