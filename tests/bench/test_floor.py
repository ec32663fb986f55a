"""The blog part's floor (bench/floor.py) renders a blog's pages with the blog's own code and no
page cache: its pages are byte for byte the service's, so the part's ratio is what the cache saves.
Run here because the floor reaches into the blog's modules, which a refactor may move."""

import pytest
from django.test import RequestFactory

from bench import floor
from tests.blog.test_public_site import blog, published

pytestmark = pytest.mark.django_db


@pytest.fixture
def blog_post():
    channel = blog()
    return channel, published(channel)


def test_the_floors_blog_index_and_post_page_are_the_services_pages(client, blog_post):
    channel, post = blog_post
    index, page = f"/blog/{channel.handle}/", f"/blog/{channel.handle}/{post.slug}/"
    served_index, served_page = client.get(index), client.get(page)
    assert served_index.status_code == served_page.status_code == 200
    floor_index = floor.blog_index(RequestFactory().get(index), channel.handle)
    floor_page = floor.blog_post(RequestFactory().get(page), channel.handle, post.slug)
    assert floor_index.content == served_index.content
    assert floor_page.content == served_page.content
