import pytest

from apps.core import paging
from apps.core.paging import Window
from apps.posts.models import Post
from tests.factories import ChannelFactory, PostFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def posts():
    channel = ChannelFactory()
    return Post.objects.filter(pk__in=[PostFactory(channel=channel).pk for _ in range(7)]).order_by("id")


def ids(rows) -> list[int]:
    return [post.pk for post in rows]


def test_a_page_by_number_holds_the_rows_from_its_offset(posts):
    everything = ids(posts)
    assert ids(paging.rows(posts, Window(size=3, offset=3), count=7)) == everything[3:6]


def test_a_page_near_the_end_is_counted_from_the_end_and_holds_the_same_rows(posts):
    everything = ids(posts)
    assert paging.skipped(Window(size=2, offset=5), 7) == 0
    assert ids(paging.rows(posts, Window(size=2, offset=5), count=7)) == everything[5:7]


def test_a_page_past_the_end_is_empty_without_a_query(posts, django_assert_num_queries):
    with django_assert_num_queries(0):
        assert paging.rows(posts, Window(size=3, offset=7), count=7) == []


def test_a_page_after_a_cursor_holds_one_row_more_to_tell_that_more_follow(posts):
    everything = ids(posts)
    assert ids(paging.rows(posts, Window(size=2, after=everything[1]), count=7)) == everything[2:5]
    assert ids(paging.rows(posts, Window(size=2, after=everything[5]), count=7)) == everything[6:]


def test_a_page_starts_from_the_row_its_start_names(posts):
    everything = ids(posts)
    assert ids(paging.rows(posts, Window(size=2, offset=4), count=7, start=(everything[3], 1))) == everything[4:6]


def test_what_a_read_without_a_start_skips_is_the_nearer_end(posts):
    assert paging.skipped(Window(size=2, offset=1), 7) == 1
    assert paging.skipped(Window(size=2, offset=3), 7) == 2
