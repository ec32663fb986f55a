"""Every post gets the strings the spec gives it: a missing teaser becomes "", and a missing or
empty slug is made from the title, unique in the channel ("title", "title-2", ...). Frozen here,
as migrations must be: the services' own rule for new posts lives in apps/posts/services.py."""

from django.db import migrations
from django.utils.text import slugify

SLUG_MAX_LENGTH = 200


def _slug_candidates(title: str):
    base = slugify(title)[:SLUG_MAX_LENGTH].strip("-_") or "post"
    yield base
    number = 2
    while True:
        suffix = f"-{number}"
        yield base[: SLUG_MAX_LENGTH - len(suffix)].rstrip("-_") + suffix
        number += 1


def fill(apps, schema_editor):
    Post = apps.get_model("posts", "Post")
    Post.objects.filter(teaser__isnull=True).update(teaser="")
    missing = Post.objects.filter(slug__isnull=True) | Post.objects.filter(slug="")
    channel_ids = sorted(set(missing.values_list("channel_id", flat=True)))
    for channel_id in channel_ids:
        taken = set(
            Post.objects.filter(channel_id=channel_id).exclude(slug__isnull=True).exclude(slug="").values_list("slug", flat=True)
        )
        posts = missing.filter(channel_id=channel_id).order_by("id").only("id", "title")
        for post in posts.iterator(chunk_size=1000):
            slug = next(candidate for candidate in _slug_candidates(post.title) if candidate not in taken)
            taken.add(slug)
            Post.objects.filter(pk=post.pk).update(slug=slug)


class Migration(migrations.Migration):
    dependencies = [
        ("posts", "0001_initial"),
        ("channels", "0002_channel_version"),
    ]

    # Nothing to undo: the filled values are valid under the earlier schema too.
    operations = [migrations.RunPython(fill, migrations.RunPython.noop, elidable=False)]
