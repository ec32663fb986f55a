"""The measures the house keeps (issue 40): a module of apps/ or config/ a newcomer can read at one
sitting, a settings module shorter still, and no function too tangled to follow (radon's cyclomatic
complexity, at most 15: grade C's middle)."""

import ast
import configparser
import re
import subprocess
import sys
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class

APPS = Path(__file__).resolve().parents[2] / "apps"
CONFIG = APPS.parent / "config"
MAX_LINES = 400
MAX_SETTINGS_LINES = 300
MAX_COMPLEXITY = 15


def modules() -> list[Path]:
    return sorted(path for path in APPS.rglob("*.py") if "migrations" not in path.parts)


def config_modules() -> list[Path]:
    return sorted(CONFIG.rglob("*.py"))


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


def test_no_module_of_config_is_longer_than_400_lines():
    assert CONFIG / "settings" / "__init__.py" in config_modules()
    lengths = {str(path.relative_to(CONFIG)): len(path.read_text().splitlines()) for path in config_modules()}
    assert {name: n for name, n in lengths.items() if n > MAX_LINES} == {}


def test_each_settings_module_is_shorter_than_300_lines():
    """One module per concern (config/settings/__init__.py lists them), each read at a glance."""
    settings_modules = sorted((CONFIG / "settings").glob("*.py"))
    assert len(settings_modules) > 10
    lengths = {path.name: len(path.read_text().splitlines()) for path in settings_modules}
    assert {name: n for name, n in lengths.items() if n >= MAX_SETTINGS_LINES} == {}


def test_no_function_of_apps_or_config_is_more_complex_than_15():
    tangled = {
        f"{path.relative_to(APPS.parent)}:{block.lineno} {block.fullname}": block.complexity
        for path in [*modules(), *config_modules()]
        for block in functions(cc_visit(path.read_text()))
        if block.complexity > MAX_COMPLEXITY
    }
    assert tangled == {}


# --- import cycles: the contracts of .importlinter, which `make lint` checks, are kept, and the
# acyclic contract accepts no exception but the services <-> tasks pairs: the HTTP layer's plumbing
# imports no app, so the HTTP modules' use of it makes no cycle (docs/architecture.md, "Import
# contracts").

ROOT = APPS.parent
ACCEPTED_CYCLE_EXCEPTIONS = {
    "apps.webhooks.services -> apps.webhooks.tasks",
    "apps.publishing.services -> apps.publishing.tasks",
    "apps.publishing.*.services -> apps.publishing.*.tasks",
    "apps.media.services -> apps.media.tasks",
}


def test_every_import_contract_is_kept():
    # In a process of its own: importlinter's command line sets up logging for the process it runs
    # in, which disables every logger already made (later tests would read no log records).
    lint = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True))"
    )
    result = subprocess.run(
        [sys.executable, "-c", lint, str(ROOT / ".importlinter")], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_only_import_cycles_accepted_are_an_apps_services_and_tasks():
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    ignored = config["importlinter:contract:acyclic"]["ignore_imports"].split("\n")
    assert {line.strip() for line in ignored if line.strip()} == ACCEPTED_CYCLE_EXCEPTIONS


# --- the formatter's output everywhere (issue 54): a hand-kept layout only where a table reads better
# than the formatter's, said so on the line above it.


HAND_FORMATTED = re.compile(r"#\s*fmt:\s*(skip|off)\s*$")


def test_every_hand_formatted_statement_says_why_on_the_line_above():
    unexplained = []
    for path in sorted(ROOT.glob("[!.]*/**/*.py")):
        if ".venv" in path.parts or "var" in path.parts:
            continue
        lines = path.read_text().splitlines()
        for number, line in enumerate(lines):
            if HAND_FORMATTED.search(line):
                above = lines[number - 1].strip() if number else ""
                if not above.startswith("#") or "fmt:" in above:
                    unexplained.append(f"{path.relative_to(ROOT)}:{number + 1}")
    assert unexplained == []


# --- the web server glue (issue 54): a package split by what each part does, each module short enough
# to read at once and saying on its first lines why it exists (which library lacks what).

SERVER = ROOT / "config" / "server"
MAX_SERVER_LINES = 150


def test_every_module_of_the_web_server_package_is_under_150_lines():
    lengths = {path.name: len(path.read_text().splitlines()) for path in sorted(SERVER.glob("*.py"))}
    assert {"limits.py", "environ.py", "streaming.py", "asgi.py"} <= set(lengths)
    assert {name: n for name, n in lengths.items() if n >= MAX_SERVER_LINES} == {}


def test_every_module_of_the_web_server_package_says_why_it_exists():
    undocumented = [
        path.name
        for path in sorted(SERVER.glob("*.py"))
        if "Why it exists" not in (ast.get_docstring(ast.parse(path.read_text())) or "")
    ]
    assert undocumented == []
