"""The ledger of framework internals (docs/architecture.md, "Framework internals we rely on") stays
true: each row's files exist and use the internal it names, each row is guarded by tests that exist,
and an internal greppable by a distinctive name is used nowhere the ledger does not say. A file moved
or a new use added without its row fails here, so the ledger cannot drift."""

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(settings.BASE_DIR)
LEDGER = ROOT / "docs" / "architecture.md"
GUARDS = ROOT / "tests" / "core" / "test_framework_internals.py"
PATH = re.compile(r"\b(?:apps|config|tests)/[\w/]+\.py\b|\bMakefile\b")

# The internals that a distinctive name finds in the code: the words that name each in the ledger's
# first column, and what its use looks like in a file.
DISTINCTIVE = {
    "concrete_fields": r"_meta\.concrete_fields\b",
    "Model._meta.fields": r"_meta\.fields\b",
    "related_objects": r"_meta\.related_objects\b",
    "Request._request": r"\brequest\._request\b",
    "_expire_info": r"\b_expire_info\b",
    "_get_validation_exclusions": r"\b_get_validation_exclusions\b",
    "_get_obj_does_not_exist_redirect": r"\b_get_obj_does_not_exist_redirect\b",
    "_map_basic_serializer": r"\b_map_basic_serializer\b",
    "get_compiler": r"\.get_compiler\(",
    "get_related_populators": r"\bget_related_populators\b",
    "integer_field_range": r"\binteger_field_range\b",
    "set_rollback": r"\bviews import\b.*\bset_rollback\b",
    "get_filters": r"\.get_filters\(",
    "IncorrectLookupParameters": r"\bIncorrectLookupParameters\b",
    "DisallowedModelAdminLookup": r"\bDisallowedModelAdminLookup\b",
    "django.contrib.admin.utils": r"\bdjango\.contrib\.admin\.utils\b",
    "add_preserved_filters": r"\badd_preserved_filters\b",
    "split_domain_port": r"\bsplit_domain_port\b",
    "validate_host": r"\bvalidate_host\b",
    "get_conditional_response": r"\bget_conditional_response\b",
    "set_response_etag": r"\bset_response_etag\b",
    "log_response": r"\bdjango\.utils\.log import\b.*\blog_response\b",
    "get_app_template_dirs": r"\bget_app_template_dirs\b",
    "InvalidJSONInput": r"\bInvalidJSONInput\b",
    "sanitize_address": r"\bsanitize_address\b",
    "forbid_multi_line_headers": r"\bforbid_multi_line_headers\b",
    "AxesCacheHandler": r"\bAxesCacheHandler\b",
    "get_client_username": r"\bget_client_username\b",
    "get_client_cache_keys": r"\bget_client_cache_keys\b",
    "_new_conn": r"\b_new_conn\b",
    "_dns_host": r"\b_dns_host\b",
    "pool_classes_by_scheme": r"\bpool_classes_by_scheme\b",
    "db_returning": r"\bdb_returning\b",
    "Channel._put": r"\bdef _put\(",
    "default_connection_params": r"\bdefault_connection_params\b",
    "log_dictconfig": r"\blog_dictconfig\b",
    "stored_name": r"\bstored_name\b",
    "KILL_WAIT": r"\bKILL_WAIT\b",
    "SMTP.sock": r"\.connection\.(?:sock|sendmail)\b",
}


@dataclass(frozen=True)
class Row:
    internal: str
    where: str
    guarded_by: str

    @property
    def files(self) -> list[str]:
        return PATH.findall(self.where)

    @property
    def names(self) -> set[str]:
        """The names the code uses: the last part of each dotted name in backticks."""
        spans = re.findall(r"`([^`]+)`", self.internal)
        return {part for span in spans for part in re.findall(r"\w+", span.split(".")[-1])[:1]}


@cache
def ledger() -> tuple[Row, ...]:
    text = LEDGER.read_text()
    section = text.split("## Framework internals we rely on", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 4 and cells[0] != "Internal":
            rows.append(Row(cells[0], cells[1], cells[3]))
    return tuple(rows)


@cache
def code_files() -> dict[str, str]:
    """Every file of the service's own code (apps/, config/ and the Makefile), by path."""
    paths = [*ROOT.glob("apps/**/*.py"), *ROOT.glob("config/**/*.py"), ROOT / "Makefile"]
    return {path.relative_to(ROOT).as_posix(): path.read_text() for path in paths}


def test_the_ledger_is_read_whole():
    assert len(ledger()) >= 25
    assert all(row.files for row in ledger()), [row.internal for row in ledger() if not row.files]


@pytest.mark.parametrize("row", ledger(), ids=lambda row: row.internal[:50])
def test_each_file_a_row_names_exists_and_uses_the_internal(row):
    for path in row.files:
        assert (ROOT / path).is_file(), f"{path} (ledger row {row.internal!r}) does not exist: the ledger names it"
        if row.names:
            text = (ROOT / path).read_text()
            used = [name for name in row.names if re.search(rf"\b{re.escape(name)}\b", text)]
            assert used, f"{path} no longer uses {row.internal!r}: take it out of the row's Where"


@pytest.mark.parametrize("row", ledger(), ids=lambda row: row.internal[:50])
def test_each_row_is_guarded_by_tests_that_exist(row):
    guards = GUARDS.read_text()
    tests = re.findall(r"`(test_\w+)`", row.guarded_by)
    paths = PATH.findall(row.guarded_by)
    assert tests or paths, f"{row.internal!r} names no test that guards it"
    for name in tests:
        assert re.search(rf"^def {name}\(", guards, re.MULTILINE), f"{name} is not in {GUARDS.name}"
    for path in paths:
        assert (ROOT / path).is_file(), f"{path} (guarding {row.internal!r}) does not exist"


@pytest.mark.parametrize("key", DISTINCTIVE)
def test_an_internal_with_a_distinctive_name_is_used_only_where_its_row_says(key):
    rows = [row for row in ledger() if key in row.internal]
    assert rows, f"no ledger row names {key!r}"
    listed = {path for row in rows for path in row.files}
    using = {path for path, text in code_files().items() if re.search(DISTINCTIVE[key], text)}
    assert using, f"nothing uses {key!r} any more: take its row out of the ledger"
    assert using <= listed, f"{sorted(using - listed)} use {key!r} without being in its ledger row's Where"
