"""AnyOf, the content plan's filter on a batch's ids: the same rows as `__in`, through relations too."""

import pytest

from apps.core.lookups import AnyOf
from apps.posts.models import Post, Tag
from tests.factories import PostFactory, TagFactory

pytestmark = pytest.mark.django_db


def test_any_of_picks_exactly_the_posts_named():
    posts = PostFactory.create_batch(4)
    named = [posts[0].pk, posts[2].pk]
    assert sorted(Post.objects.filter(AnyOf("id", named)).values_list("pk", flat=True)) == named


def test_any_of_no_ids_picks_nothing():
    PostFactory()
    assert not Post.objects.filter(AnyOf("id", [])).exists()


def test_any_of_follows_a_relation_as_in_does():
    tag, other = TagFactory(), TagFactory()
    post = PostFactory(tags=[tag])
    PostFactory(tags=[other])
    assert list(Tag.objects.filter(AnyOf("posts__id", [post.pk]))) == list(Tag.objects.filter(posts__in=[post.pk]))
