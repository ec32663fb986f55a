import importlib.util

import pytest

from apps.core import source


@pytest.fixture
def tree(tmp_path, monkeypatch):
    (tmp_path / "posts").mkdir()
    (tmp_path / "posts" / "serializers.py").write_text("TITLE = 'title'\n")
    monkeypatch.setattr(source, "SOURCE", tmp_path)
    source.source_digest.cache_clear()
    yield tmp_path
    source.source_digest.cache_clear()


def _fresh() -> str:
    source.source_digest.cache_clear()
    return source.source_digest()


def test_the_digest_changes_when_a_module_changes(tree):
    before = _fresh()
    (tree / "posts" / "serializers.py").write_text("TITLE = 'headline'\n")
    assert _fresh() != before


def test_a_new_module_that_shapes_a_post_changes_the_digest_without_being_listed_anywhere(tree):
    before = _fresh()
    (tree / "posts" / "shapes.py").write_text("def shape(post): return post\n")
    assert _fresh() != before


def test_moving_code_between_modules_changes_the_digest(tree):
    (tree / "posts" / "a.py").write_text("X = 1\n")
    before = _fresh()
    (tree / "posts" / "a.py").rename(tree / "posts" / "b.py")
    assert _fresh() != before


def test_the_digest_is_the_same_for_the_same_code(tree):
    assert _fresh() == _fresh()


def test_the_service_s_own_tree_is_what_is_digested():
    assert (source.SOURCE / "posts" / "serializers.py").is_file()


def test_the_shaping_modules_are_every_module_of_the_service_none_listed_by_hand():
    assert {"apps.posts.serializers", "apps.channels.serializers", "apps.api.representations", "apps.blog.site"} <= set(
        source.SHAPING_MODULES
    )
    assert len(source.SHAPING_MODULES) == len(list(source.SOURCE.rglob("*.py")))
    # Each names a module Python can import: the digest covers the code that runs.
    assert all(
        importlib.util.find_spec(name) is not None for name in source.SHAPING_MODULES if "migrations" not in name
    )
