"""The measures the house keeps (issue 40): a module of apps/ a newcomer can read at one sitting,
and no function too tangled to follow (radon's cyclomatic complexity, at most 15: grade C's middle)."""

from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class

APPS = Path(__file__).resolve().parents[2] / "apps"
MAX_LINES = 400
MAX_COMPLEXITY = 15


def modules() -> list[Path]:
    return sorted(path for path in APPS.rglob("*.py") if "migrations" not in path.parts)


def functions(blocks):
    """Every function radon measured: module functions, methods, closures, inner classes' methods."""
    for block in blocks:
        if isinstance(block, Class):
            yield from functions([*block.methods, *block.inner_classes])
        else:
            yield block
            yield from functions(block.closures)


def test_the_measures_read_every_module_of_apps():
    assert len(modules()) > 100
    assert any(block.fullname == "code_digest" for block in functions(cc_visit((APPS / "blog/pages.py").read_text())))


def test_no_module_of_apps_is_longer_than_400_lines():
    lengths = {str(path.relative_to(APPS)): len(path.read_text().splitlines()) for path in modules()}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_no_function_of_apps_is_more_complex_than_15():
    tangled = {
        f"{path.relative_to(APPS)}:{block.lineno} {block.fullname}": block.complexity
        for path in modules()
        for block in functions(cc_visit(path.read_text()))
        if block.complexity > MAX_COMPLEXITY
    }
    assert tangled == {}
