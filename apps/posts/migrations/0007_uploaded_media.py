"""A post's media items may name an uploaded medium (apps/media), and a post knows the media its body
shows. On SQLite, adding the column rebuilds posts_media, which drops the triggers earlier migrations
put on it (the channel's version, the change feed): around_sqlite_table_change puts them back."""

import importlib

import django.db.models.deletion
from django.db import migrations, models

change_feed = importlib.import_module("apps.posts.migrations.0006_change_feed")


class Migration(migrations.Migration):
    dependencies = [
        ("media", "0001_initial"),
        ("posts", "0006_change_feed"),
    ]

    operations = [
        *change_feed.around_sqlite_table_change(
            "posts_media",
            [
                migrations.AddField(
                    model_name="media",
                    name="medium",
                    field=models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="attachments",
                        to="media.medium",
                    ),
                ),
            ],
        ),
        migrations.AddField(
            model_name="post",
            name="body_media",
            field=models.ManyToManyField(blank=True, editable=False, related_name="shown_in", to="media.medium"),
        ),
    ]
