"""The benchmark is a package run with `python -m bench`: importing any of its modules changes
nothing (no environment, import path or registered modules set at import time); bench/__main__.py
sets the benchmark's environment when it runs."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: Django set up first (its settings read .env into the environment),
# then every module of bench/ imported, and what changed reported as JSON.
IMPORT_ALL = """
import json, os, pkgutil, sys
import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()
import bench

environ, path, modules = dict(os.environ), list(sys.path), dict(sys.modules)
names = sorted(f"bench.{info.name}" for info in pkgutil.iter_modules(bench.__path__))
for name in names:
    __import__(name)
bench_dir = os.path.dirname(bench.__file__)
print(json.dumps({
    "imported": names,
    "environ": sorted(k for k in environ.keys() | os.environ.keys() if environ.get(k) != os.environ.get(k)),
    "path": path != sys.path,
    "replaced": sorted(k for k, m in modules.items() if sys.modules.get(k) is not m),
    "aliases": sorted(
        k for k, m in sys.modules.items()
        if getattr(m, "__name__", k) != k and str(getattr(m, "__file__", "")).startswith(bench_dir)
    ),
}))
"""


def run_python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_importing_every_bench_module_changes_neither_environment_nor_import_path_nor_modules():
    result = run_python("-c", IMPORT_ALL)
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"bench.__main__", "bench.common", "bench.api", "bench.scale", "bench.isolation"} <= set(found["imported"])
    assert found["environ"] == []
    assert found["path"] is False
    assert found["replaced"] == []
    assert found["aliases"] == []


def test_python_m_bench_help_exits_zero_and_names_every_flag():
    result = run_python("-m", "bench", "--help")
    assert result.returncode == 0, result.stderr[-3000:]
    for flag in (
        "--only",
        "--quick",
        "--duration",
        "--sweep",
        "--sweep-rounds",
        "--sweep-seconds",
        "--webhook-events",
        "--scale-sizes",
        "--publishing-posts",
        "--blog-sizes",
        "--newsletter-subscribers",
        "--feed-sizes",
        "--media-uploads",
    ):
        assert flag in result.stdout
