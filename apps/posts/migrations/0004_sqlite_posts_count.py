"""SQLite's triggers that keep `channels_channel.posts_count` (PostgreSQL's are in channels 0003):
row-level, one UPDATE of the channel per post inserted, deleted or moved, adding to the stored
number. After posts 0003, which remade the posts table on SQLite (dropping the triggers on it).
The count is filled again first: between channels 0003 and this migration nothing kept it here."""

import importlib

from django.db import migrations

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")
posts_count = importlib.import_module("apps.channels.migrations.0003_posts_count")

SQLITE_CREATE = [
    "CREATE TRIGGER cps_posts_counted_inserted AFTER INSERT ON posts_post FOR EACH ROW BEGIN "
    "UPDATE channels_channel SET posts_count = posts_count + 1 WHERE id = NEW.channel_id; END",
    "CREATE TRIGGER cps_posts_counted_deleted AFTER DELETE ON posts_post FOR EACH ROW BEGIN "
    "UPDATE channels_channel SET posts_count = posts_count - 1 WHERE id = OLD.channel_id; END",
    "CREATE TRIGGER cps_posts_counted_moved AFTER UPDATE OF channel_id ON posts_post FOR EACH ROW "
    "WHEN OLD.channel_id <> NEW.channel_id BEGIN "
    "UPDATE channels_channel SET posts_count = posts_count - 1 WHERE id = OLD.channel_id; "
    "UPDATE channels_channel SET posts_count = posts_count + 1 WHERE id = NEW.channel_id; END",
]
SQLITE_DROP = [f"DROP TRIGGER {channel_versions._trigger_name(statement)}" for statement in SQLITE_CREATE]

# Every trigger so far, for later migrations that alter a table on SQLite.
SQLITE_TRIGGERS = [*channel_versions.SQLITE_CREATE, *SQLITE_CREATE]


def around_sqlite_table_change(table: str, operations: list) -> list:
    """Channels 0002's function of this name, knowing the triggers of both migrations."""
    return channel_versions.around_sqlite_table_change(table, operations, SQLITE_TRIGGERS)


class Migration(migrations.Migration):

    dependencies = [
        ("channels", "0003_posts_count"),
        ("posts", "0003_strings_for_teaser_and_slug"),
    ]

    operations = [
        migrations.RunPython(
            channel_versions._run({"postgresql": [], "sqlite": [posts_count.FILL, *SQLITE_CREATE]}),
            channel_versions._run({"postgresql": [], "sqlite": SQLITE_DROP}),
        ),
    ]
