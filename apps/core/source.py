"""A digest of the service's own code, for the caches of rendered responses and pages: a deploy
that changes any module under apps/ starts new entries, so no module that shapes what is cached can
be left out of a hand-kept list."""

import hashlib
from functools import cache
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent


@cache
def source_digest() -> str:
    digest = hashlib.sha256()
    for source in sorted(SOURCE.rglob("*.py")):
        digest.update(source.relative_to(SOURCE).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()
