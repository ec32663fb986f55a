"""The spec's types: `teaser` is a string ("" when empty) and every post has a slug (filled by
0002), unique in its channel."""

import importlib

from django.db import migrations, models

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")


class Migration(migrations.Migration):

    dependencies = [
        ('channels', '0002_channel_version'),
        ('posts', '0002_fill_teaser_and_slug'),
    ]

    operations = channel_versions.around_sqlite_table_change("posts_post", [
        migrations.RemoveConstraint(
            model_name='post',
            name='post_unique_slug_per_channel',
        ),
        migrations.AlterField(
            model_name='post',
            name='slug',
            field=models.SlugField(blank=True, help_text='Unique within the channel. Left empty, it is made from the title.', max_length=200),
        ),
        migrations.AlterField(
            model_name='post',
            name='teaser',
            field=models.CharField(blank=True, default='', max_length=2000),
        ),
        migrations.AddConstraint(
            model_name='post',
            constraint=models.UniqueConstraint(fields=('channel', 'slug'), name='post_unique_slug_per_channel', violation_error_code='unique', violation_error_message='Another post of this channel already has this slug.'),
        ),
        migrations.AddConstraint(
            model_name='post',
            constraint=models.CheckConstraint(condition=models.Q(('slug', ''), _negated=True), name='post_slug_not_empty', violation_error_code='required', violation_error_message='A post needs a slug.'),
        ),
    ])
