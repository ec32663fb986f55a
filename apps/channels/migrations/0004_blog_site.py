"""The settings of a blog channel's public site (apps/blog), and a handle for every blog channel
there is: made from its title, as Channel.save() makes one for a new blog channel. On SQLite, the
triggers on the channels table are dropped around the table's remaking (posts 0004's wrapper)."""

import importlib

import apps.channels.models
import django.core.validators
from django.db import migrations, models


sqlite_triggers = importlib.import_module("apps.posts.migrations.0004_sqlite_posts_count")


def give_blogs_handles(apps, schema_editor):
    from django.utils.text import slugify

    Channel = apps.get_model("channels", "Channel")
    taken = set(Channel.objects.exclude(handle=None).values_list("handle", flat=True))
    for channel in Channel.objects.filter(platform="blog", handle=None).order_by("id").only("title"):
        base = slugify(channel.title)[:52].strip("-") or "blog"
        handle, number = base, 1
        while handle in taken or handle in apps_reserved():
            number += 1
            handle = f"{base}-{number}"
        taken.add(handle)
        Channel.objects.filter(pk=channel.pk).update(handle=handle)


def apps_reserved():
    return apps.channels.models.RESERVED_HANDLES


class Migration(migrations.Migration):

    dependencies = [
        ('channels', '0003_posts_count'),
        ('posts', '0004_sqlite_posts_count'),
    ]

    operations = sqlite_triggers.around_sqlite_table_change("channels_channel", [
        migrations.AddField(
            model_name='channel',
            name='accent_color',
            field=models.CharField(db_default='#2563eb', default='#2563eb', help_text="Blogs: the colour of links and the header's line, as #rrggbb.", max_length=7, validators=[django.core.validators.RegexValidator('^#[0-9a-fA-F]{6}$', 'Enter a colour as #rrggbb, for example #2563eb.')]),
        ),
        migrations.AddField(
            model_name='channel',
            name='description',
            field=models.CharField(blank=True, db_default='', default='', help_text="Blogs: one line under the blog's name, and its feed's subtitle.", max_length=300),
        ),
        migrations.AddField(
            model_name='channel',
            name='domain',
            field=models.CharField(blank=True, help_text="Blogs: a host name of the blog's own (blog.example.com), whose DNS points at the service; the blog is then at its root. See docs/blog.md.", max_length=253, null=True, unique=True, validators=[apps.channels.models.validate_domain]),
        ),
        migrations.AddField(
            model_name='channel',
            name='handle',
            field=models.SlugField(blank=True, help_text="Blogs: the address /blog/<handle>/ on the service's host. Left empty, it is made from the title.", max_length=60, null=True, unique=True, validators=[apps.channels.models.validate_handle]),
        ),
        migrations.AddField(
            model_name='channel',
            name='language',
            field=models.CharField(db_default='en', default='en', help_text='Blogs: the language of its pages.', max_length=35, validators=[django.core.validators.RegexValidator('^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', 'Enter a language tag such as en, de or pt-BR.')]),
        ),
        migrations.AddField(
            model_name='channel',
            name='logo_url',
            field=models.URLField(blank=True, db_default='', default='', help_text="Blogs: an https:// image shown beside the blog's name (about 48 pixels high).", max_length=2000, validators=[django.core.validators.URLValidator(schemes=['https'])]),
        ),
        migrations.AddField(
            model_name='channel',
            name='time_zone',
            field=models.CharField(db_default='UTC', default='UTC', help_text='Blogs: dates are shown in this zone.', max_length=64, validators=[apps.channels.models.validate_time_zone]),
        ),
        migrations.RunPython(give_blogs_handles, migrations.RunPython.noop),
    ])
