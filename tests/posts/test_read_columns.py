"""The read path's column plan (apps/posts/selectors.py) and the forms that render its rows
(apps/posts/serializers.py) name the same fields: a field added to a form without its column, or a
column no form renders, fails here rather than as an AttributeError in a response (or a column
read for nothing)."""

from rest_framework.serializers import BaseSerializer

from apps.core.serializers import fields_of
from apps.posts.selectors import (
    CONTENT_COLUMNS,
    DETAIL_COLUMNS,
    DETAIL_COMPUTED,
    LIST_COLUMNS,
    MEDIA_COLUMNS,
    NESTED,
    REFERENCES,
    TAG_COLUMNS,
)
from apps.posts.serializers import (
    MediaSerializer,
    PostContentSerializer,
    PostDetailSerializer,
    PostListItemSerializer,
    TagSerializer,
)


def rendered(form: type) -> set[str]:
    return set(fields_of(form))


def read(columns: tuple[str, ...], *added: str) -> set[str]:
    assert len(set(columns)) == len(columns), f"a column is read twice: {columns}"
    return {*columns, *added}


def test_the_list_form_renders_exactly_the_columns_the_list_reads_and_the_channel():
    assert rendered(PostListItemSerializer) == read(LIST_COLUMNS, "channel")


def test_a_tag_and_a_media_item_render_exactly_their_columns():
    assert rendered(TagSerializer) == read(TAG_COLUMNS)
    assert rendered(MediaSerializer) == read(MEDIA_COLUMNS)


def test_the_full_post_renders_exactly_its_columns_and_its_nested_forms():
    assert rendered(PostContentSerializer) == read(CONTENT_COLUMNS.own, *NESTED)
    assert (CONTENT_COLUMNS.tags, CONTENT_COLUMNS.media) == (TAG_COLUMNS, MEDIA_COLUMNS)


def test_the_single_post_form_renders_exactly_its_columns_its_nested_forms_and_what_post_details_computes():
    assert rendered(PostDetailSerializer) == read(DETAIL_COLUMNS.own, *NESTED, *DETAIL_COMPUTED)
    assert (DETAIL_COLUMNS.tags, DETAIL_COLUMNS.media) == (TAG_COLUMNS, MEDIA_COLUMNS)


def test_the_nested_forms_are_the_ones_the_rows_carry_after_their_own_columns():
    nested = {name for name, field in fields_of(PostContentSerializer).items() if isinstance(field, BaseSerializer)}
    # A reference (the post's story, `{"id": ...}`) is one of its own columns, read through a relation.
    assert nested == set(NESTED) | REFERENCES
