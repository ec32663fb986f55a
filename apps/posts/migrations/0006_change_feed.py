"""The change feed (apps/posts/changes.py): every post's `change_position`, renewed by the database in
the transaction of every change of what the post's single form shows, and a tombstone
(`PostDeletion`) for every post that leaves a channel. Triggers rather than calls in the services,
as for the channels' versions (channels 0002): every path must count (the services, the admin,
bulk statements, Django's cascades, raw SQL), and a forgotten one would be a change no reader sees.

PostgreSQL: a position is the writing transaction's 64-bit id. A reader hands out only positions
below the oldest transaction still running when its snapshot was taken, so a transaction that
commits later can never land behind a cursor. A row trigger sets the post's position; a change of
its parts (tag links, media) or a tag's rename UPDATEs the posts (statement triggers, one UPDATE per
statement, the posts locked in id order). These are named to fire before the channel-version
triggers of the same tables (PostgreSQL fires a table's triggers in name order), so every writer
locks posts before channels, as the services do (the post's row first): no deadlock between them.

SQLite (one writer at a time): a position is a counter (ChangeFeedState.clock), ticked by row
triggers; recursive_triggers is off, so a trigger's UPDATE of the post it fired for does not fire it
again.

The publication job's progress, also shown in the single form, does not move the post: a job's
state changes while the worker holds the job's row, and locking the post there could deadlock with
a delete (post first, then its jobs).
"""

import importlib

from django.db import migrations, models

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")
posts_ids_version = importlib.import_module("apps.channels.migrations.0006_posts_ids_version")

# Tables whose changed rows name their post (post_id).
POST_PARTS = ("posts_post_tags", "posts_media")
TOMBSTONES = "posts_postdeletion"
STATE = "posts_changefeedstate"

POSTGRES_CREATE = [
    # xid8 has no cast to bigint; its text has (a 64-bit id, epoch included, never wraps).
    "CREATE FUNCTION cps_feed_position() RETURNS bigint LANGUAGE sql VOLATILE AS $$ "
    "SELECT pg_current_xact_id()::text::bigint $$",
    """
    CREATE FUNCTION cps_feed_post_written() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.change_position := cps_feed_position();
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER cps_feed_post_written BEFORE INSERT OR UPDATE ON posts_post "
    "FOR EACH ROW EXECUTE FUNCTION cps_feed_post_written()",
    f"""
    CREATE FUNCTION cps_feed_posts_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TOMBSTONES} (post_id, channel_id, deleted_at, position)
        SELECT id, channel_id, statement_timestamp(), cps_feed_position() FROM old_rows;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_feed_posts_deleted AFTER DELETE ON posts_post "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_feed_posts_deleted()",
    # A move is a deletion in the channel left; in the channel entered, the post's own position
    # tells it, and a tombstone of an earlier stay there would contradict it.
    f"""
    CREATE FUNCTION cps_feed_post_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TOMBSTONES} (post_id, channel_id, deleted_at, position)
        VALUES (OLD.id, OLD.channel_id, statement_timestamp(), cps_feed_position());
        DELETE FROM {TOMBSTONES} WHERE post_id = NEW.id AND channel_id = NEW.channel_id;
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_feed_post_moved AFTER UPDATE OF channel_id ON posts_post FOR EACH ROW "
    "WHEN (OLD.channel_id IS DISTINCT FROM NEW.channel_id) EXECUTE FUNCTION cps_feed_post_moved()",
    # Posts already moved by this transaction are left alone (a service saves the post and sets
    # its tags in one transaction).
    """
    CREATE FUNCTION cps_feed_posts_touch(ids bigint[]) RETURNS void LANGUAGE sql AS $$
        UPDATE posts_post SET change_position = change_position
        WHERE id IN (
            SELECT id FROM posts_post WHERE id = ANY(ids) AND change_position <> cps_feed_position()
            ORDER BY id FOR NO KEY UPDATE
        )
    $$
    """,
    """
    CREATE FUNCTION cps_feed_parts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM cps_feed_posts_touch(ARRAY(SELECT DISTINCT post_id FROM new_rows));
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM cps_feed_posts_touch(ARRAY(SELECT DISTINCT post_id FROM old_rows));
        ELSE
            PERFORM cps_feed_posts_touch(ARRAY(SELECT post_id FROM new_rows UNION SELECT post_id FROM old_rows));
        END IF;
        RETURN NULL;
    END $$
    """,
    # Only the name shows in a post's form.
    """
    CREATE FUNCTION cps_feed_tags_renamed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_feed_posts_touch(ARRAY(
            SELECT DISTINCT link.post_id FROM posts_post_tags link
            JOIN new_rows renamed ON renamed.id = link.tag_id
            JOIN old_rows before ON before.id = renamed.id
            WHERE renamed.name IS DISTINCT FROM before.name));
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_feed_tags_renamed AFTER UPDATE ON posts_tag "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_feed_tags_renamed()",
]
for _table in POST_PARTS:
    POSTGRES_CREATE += [
        f"CREATE TRIGGER cps_feed_{_table}_inserted AFTER INSERT ON {_table} "
        "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_feed_parts_changed()",
        f"CREATE TRIGGER cps_feed_{_table}_updated AFTER UPDATE ON {_table} "
        "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_feed_parts_changed()",
        f"CREATE TRIGGER cps_feed_{_table}_deleted AFTER DELETE ON {_table} "
        "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_feed_parts_changed()",
    ]

POSTGRES_DROP = [
    "DROP FUNCTION cps_feed_post_written() CASCADE",
    "DROP FUNCTION cps_feed_posts_deleted() CASCADE",
    "DROP FUNCTION cps_feed_post_moved() CASCADE",
    "DROP FUNCTION cps_feed_parts_changed() CASCADE",
    "DROP FUNCTION cps_feed_tags_renamed() CASCADE",
    "DROP FUNCTION cps_feed_posts_touch(bigint[])",
    "DROP FUNCTION cps_feed_position()",
]

# The state's row is made by the first change that needs it (a flushed database has none).
_TICK = (
    f"INSERT OR IGNORE INTO {STATE} (id, floor, clock) VALUES (1, 0, 0); "
    f"UPDATE {STATE} SET clock = clock + 1 WHERE id = 1;"
)
_NOW = f"(SELECT clock FROM {STATE} WHERE id = 1)"
_MOVE_POST = f"{_TICK} UPDATE posts_post SET change_position = {_NOW} WHERE id = NEW.id; END"
_DELETED_AT = "strftime('%Y-%m-%d %H:%M:%f', 'now')"
_TOUCH = "UPDATE posts_post SET change_position = change_position WHERE id IN"


def _tombstone(post: str) -> str:
    return (
        f"INSERT INTO {TOMBSTONES} (post_id, channel_id, deleted_at, position) "
        f"VALUES ({post}.id, {post}.channel_id, {_DELETED_AT}, {_NOW});"
    )


SQLITE_CREATE = [
    f"CREATE TRIGGER cps_feed_post_inserted AFTER INSERT ON posts_post FOR EACH ROW BEGIN {_MOVE_POST}",
    f"CREATE TRIGGER cps_feed_post_updated AFTER UPDATE ON posts_post FOR EACH ROW BEGIN {_MOVE_POST}",
    f"CREATE TRIGGER cps_feed_post_deleted AFTER DELETE ON posts_post FOR EACH ROW BEGIN {_TICK} {_tombstone('OLD')} END",
    "CREATE TRIGGER cps_feed_post_moved AFTER UPDATE OF channel_id ON posts_post FOR EACH ROW "
    f"WHEN OLD.channel_id IS NOT NEW.channel_id BEGIN {_TICK} {_tombstone('OLD')} "
    f"DELETE FROM {TOMBSTONES} WHERE post_id = NEW.id AND channel_id = NEW.channel_id; END",
    # The post's own trigger (cps_feed_post_updated) gives it its position.
    "CREATE TRIGGER cps_feed_tags_renamed AFTER UPDATE OF name ON posts_tag FOR EACH ROW "
    f"WHEN OLD.name IS NOT NEW.name BEGIN {_TOUCH} (SELECT post_id FROM posts_post_tags WHERE tag_id = NEW.id); END",
]
for _table in POST_PARTS:
    SQLITE_CREATE += [
        f"CREATE TRIGGER cps_feed_{_table}_inserted AFTER INSERT ON {_table} FOR EACH ROW "
        f"BEGIN {_TOUCH} (NEW.post_id); END",
        f"CREATE TRIGGER cps_feed_{_table}_updated AFTER UPDATE ON {_table} FOR EACH ROW "
        f"BEGIN {_TOUCH} (OLD.post_id, NEW.post_id); END",
        f"CREATE TRIGGER cps_feed_{_table}_deleted AFTER DELETE ON {_table} FOR EACH ROW "
        f"BEGIN {_TOUCH} (OLD.post_id); END",
    ]
SQLITE_DROP = [f"DROP TRIGGER {channel_versions._trigger_name(statement)}" for statement in SQLITE_CREATE]

# Every trigger so far, for later migrations that alter a table on SQLite.
SQLITE_TRIGGERS = [*posts_ids_version.SQLITE_TRIGGERS, *SQLITE_CREATE]


def around_sqlite_table_change(table: str, operations: list) -> list:
    """Channels 0002's function of this name, knowing the triggers of this migration too: a later
    migration that alters posts_post, posts_tag or posts_media on SQLite takes this one."""
    return channel_versions.around_sqlite_table_change(table, operations, SQLITE_TRIGGERS)


class Migration(migrations.Migration):
    dependencies = [
        ("channels", "0008_domain_help_text"),
        ("posts", "0005_blog_order"),
    ]

    operations = [
        migrations.CreateModel(
            name="ChangeFeedState",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("floor", models.BigIntegerField(default=0)),
                ("clock", models.BigIntegerField(default=0)),
            ],
        ),
        migrations.CreateModel(
            name="PostDeletion",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("post_id", models.BigIntegerField()),
                ("channel_id", models.BigIntegerField()),
                ("deleted_at", models.DateTimeField()),
                ("position", models.BigIntegerField()),
            ],
            options={
                "indexes": [
                    models.Index(fields=["channel_id", "position", "post_id"], name="postdeletion_channel_feed"),
                    models.Index(fields=["post_id"], name="postdeletion_post"),
                    models.Index(fields=["deleted_at"], name="postdeletion_deleted_at"),
                ],
            },
        ),
        # Posts written before get position 0: a first sync hands them out first, in id order.
        *posts_ids_version.around_sqlite_table_change(
            "posts_post",
            [
                migrations.AddField(
                    model_name="post",
                    name="change_position",
                    field=models.BigIntegerField(db_default=0, default=0, editable=False),
                ),
            ],
        ),
        migrations.AddIndex(
            model_name="post",
            index=models.Index(fields=["channel", "change_position", "id"], name="post_channel_changes"),
        ),
        migrations.RunPython(
            channel_versions._run({"postgresql": POSTGRES_CREATE, "sqlite": SQLITE_CREATE}),
            channel_versions._run({"postgresql": POSTGRES_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
