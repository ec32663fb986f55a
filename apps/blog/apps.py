from django.apps import AppConfig


class BlogConfig(AppConfig):
    """The public site of blog channels: index, post and tag pages, feed, sitemap, robots.txt."""

    name = "apps.blog"
    label = "blog"
    verbose_name = "Blogs"
