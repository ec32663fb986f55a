"""`posts_ids_version`: a name for the positions of a channel's posts in id order, renewed by the
database whenever a post of the channel takes another position, and only then (see
Channel.posts_ids_version and apps/posts/page_anchors.py, which keeps deep pages' starting points
under it). A post changes its position when one with a lower id arrives (insert, or a move from
another channel) or leaves (delete, or a move away). Appending (a new post with the highest id of
its channel, how posts are created) and deleting the newest posts move no other post, and content
edits move none, so none of them renews it.

The rule is the database's, as for `version` and `posts_count` (channels 0002 and 0003), so that
every path renews it (services, admin, bulk SQL, cascades). Whatever writes another value into the
column gets a new random one instead: a channel saved from a copy read earlier cannot bring back a
value that named an earlier order.

PostgreSQL: the posts' statement trigger of channels 0003 looks, after taking the channels' row
locks, for a post of the channel above the lowest id inserted or deleted. Every other writer of
the channel's posts holds that lock from its own trigger to its commit, so the look sees every
post committed before: a post inserted late with a lower id than one committed meanwhile renews it.
A move renews both channels. SQLite (one writer at a time): row triggers doing the same per row.

Also on PostgreSQL: newsletter editions (publishing 0004) renew their channel's version through the
posts' function, which since channels 0003 counted each of them as a post too. They no longer
count, and the channels that have editions are counted again.
"""

import importlib

from django.db import migrations, models

import apps.channels.models

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")
posts_count = importlib.import_module("apps.channels.migrations.0003_posts_count")
sqlite_triggers = importlib.import_module("apps.posts.migrations.0004_sqlite_posts_count")
job_triggers = importlib.import_module("apps.publishing.migrations.0002_channel_version")
edition_triggers = importlib.import_module("apps.publishing.migrations.0004_edition_channel_version")

RANDOM_VERSION_SQL = "floor(random() * 4503599627370496)::bigint"

POSTGRES_CREATE = [
    f"""
    CREATE FUNCTION cps_channel_new_posts_ids_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.posts_ids_version := {RANDOM_VERSION_SQL};
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER cps_channel_posts_ids_version BEFORE UPDATE OF posts_ids_version ON channels_channel "
    "FOR EACH ROW WHEN (OLD.posts_ids_version IS DISTINCT FROM NEW.posts_ids_version) "
    "EXECUTE FUNCTION cps_channel_new_posts_ids_version()",
    """
    CREATE OR REPLACE FUNCTION cps_posts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        ids bigint[];
        deltas bigint[];
        shifted bigint[];
    BEGIN
        IF TG_OP = 'INSERT' THEN
            SELECT array_agg(channel_id), array_agg(n) INTO ids, deltas
            FROM (SELECT channel_id, count(*) AS n FROM new_rows GROUP BY channel_id) counted;
        ELSIF TG_OP = 'DELETE' THEN
            SELECT array_agg(channel_id), array_agg(-n) INTO ids, deltas
            FROM (SELECT channel_id, count(*) AS n FROM old_rows GROUP BY channel_id) counted;
        ELSE
            -- A post moved to another channel counts -1 there and +1 here; every channel named
            -- gets a new version, moved or not.
            SELECT array_agg(channel_id), array_agg(n) INTO ids, deltas
            FROM (
                SELECT channel_id, sum(n) AS n
                FROM (SELECT channel_id, 1 AS n FROM new_rows UNION ALL SELECT channel_id, -1 FROM old_rows) moved
                GROUP BY channel_id
            ) counted;
        END IF;
        IF TG_TABLE_NAME <> 'posts_post' THEN
            -- Newsletter editions renew their channel's version through this function too
            -- (publishing 0004); they are not posts, so they neither count nor move any.
            PERFORM cps_channels_touch(ids);
            RETURN NULL;
        END IF;
        PERFORM cps_channels_count(ids, deltas);
        -- From here the channels are locked, and each query sees what was committed before.
        IF TG_OP = 'INSERT' THEN
            -- Later posts than the lowest inserted one that are not among the inserted ones: above
            -- the highest, or more posts between the lowest and the highest than were inserted
            -- (one pass over the index, never a search of the inserted rows per post; none when
            -- the inserted ids leave no gap, as a bulk insert's usually do).
            SELECT array_agg(channel_id) INTO shifted
            FROM (
                SELECT channel_id, min(id) AS low, max(id) AS high, count(*) AS n FROM new_rows GROUP BY channel_id
            ) added
            WHERE EXISTS (SELECT FROM posts_post post WHERE post.channel_id = added.channel_id AND post.id > added.high)
               OR (added.high - added.low + 1 > added.n
                   AND (SELECT count(*) FROM posts_post post
                        WHERE post.channel_id = added.channel_id AND post.id BETWEEN added.low AND added.high) > added.n);
        ELSIF TG_OP = 'DELETE' THEN
            SELECT array_agg(channel_id) INTO shifted
            FROM (SELECT channel_id, min(id) AS low FROM old_rows GROUP BY channel_id) removed
            WHERE EXISTS (SELECT FROM posts_post post WHERE post.channel_id = removed.channel_id AND post.id > removed.low);
        ELSE
            -- The channels a post entered or left (a changed id is a post leaving and another entering).
            SELECT array_agg(DISTINCT coalesce(before.channel_id, after.channel_id)) INTO shifted
            FROM old_rows before FULL JOIN new_rows after ON after.id = before.id AND after.channel_id = before.channel_id
            WHERE before.id IS NULL OR after.id IS NULL;
        END IF;
        IF shifted IS NOT NULL THEN
            -- Any other value: cps_channel_posts_ids_version draws the new one.
            UPDATE channels_channel SET posts_ids_version = posts_ids_version + 1 WHERE id = ANY(shifted);
        END IF;
        RETURN NULL;
    END $$
    """,
]

# Until now each newsletter edition inserted (or deleted) counted as a post of its channel: those
# channels are counted again.
POSTGRES_RECOUNT = (
    f"{posts_count.FILL} WHERE channels_channel.id IN (SELECT channel_id FROM publishing_newsletter_edition)"
)

# The posts function as channels 0003 made it, for going back.
POSTGRES_DROP = [
    next(statement for statement in posts_count.POSTGRES_CREATE if "FUNCTION cps_posts_changed()" in statement),
    "DROP FUNCTION cps_channel_new_posts_ids_version() CASCADE",
]


def _later_posts(channel: str, post_id: str) -> str:
    return f"EXISTS (SELECT 1 FROM posts_post WHERE channel_id = {channel} AND id > {post_id})"


def _shift(channels: str) -> str:
    return f"UPDATE channels_channel SET posts_ids_version = posts_ids_version + 1 WHERE id IN ({channels}); END"


# SQLite runs no trigger recursively unless told to, so the channel's trigger writes the random
# value with an UPDATE of its own, as channels 0002's does for `version`.
SQLITE_CREATE = [
    "CREATE TRIGGER cps_channel_posts_ids_version AFTER UPDATE OF posts_ids_version ON channels_channel "
    "FOR EACH ROW WHEN NEW.posts_ids_version IS NOT OLD.posts_ids_version BEGIN "
    "UPDATE channels_channel SET posts_ids_version = abs(random() % 4503599627370496) WHERE id = NEW.id; END",
    "CREATE TRIGGER cps_posts_shifted_inserted AFTER INSERT ON posts_post FOR EACH ROW "
    f"WHEN {_later_posts('NEW.channel_id', 'NEW.id')} BEGIN {_shift('NEW.channel_id')}",
    "CREATE TRIGGER cps_posts_shifted_deleted AFTER DELETE ON posts_post FOR EACH ROW "
    f"WHEN {_later_posts('OLD.channel_id', 'OLD.id')} BEGIN {_shift('OLD.channel_id')}",
    "CREATE TRIGGER cps_posts_shifted_moved AFTER UPDATE OF id, channel_id ON posts_post FOR EACH ROW "
    "WHEN OLD.channel_id IS NOT NEW.channel_id OR OLD.id IS NOT NEW.id "
    f"BEGIN {_shift('OLD.channel_id, NEW.channel_id')}",
]
SQLITE_DROP = [f"DROP TRIGGER {channel_versions._trigger_name(statement)}" for statement in SQLITE_CREATE]

# Every trigger so far, for later migrations that alter a table on SQLite.
SQLITE_TRIGGERS_BEFORE = [*sqlite_triggers.SQLITE_TRIGGERS, *job_triggers.SQLITE_CREATE, *edition_triggers.SQLITE_CREATE]
SQLITE_TRIGGERS = [*SQLITE_TRIGGERS_BEFORE, *SQLITE_CREATE]


def around_sqlite_table_change(table: str, operations: list) -> list:
    """Channels 0002's function of this name, knowing the triggers of this migration too: a later
    migration that alters channels_channel or posts_post on SQLite takes this one."""
    return channel_versions.around_sqlite_table_change(table, operations, SQLITE_TRIGGERS)


class Migration(migrations.Migration):
    dependencies = [
        ("channels", "0005_newsletter_platform"),
        ("posts", "0005_blog_order"),
        ("publishing", "0004_edition_channel_version"),
    ]

    operations = [
        # The tables' triggers that name channels_channel, posts 0004's and publishing's (posts
        # 0004's wrapper knows only its own).
        *channel_versions.around_sqlite_table_change(
            "channels_channel",
            [
                # Existing channels get a random value (one for all: the anchors' keys name the
                # channel too); then rows inserted by raw SQL get 0, which names no anchors.
                migrations.AddField(
                    model_name="channel",
                    name="posts_ids_version",
                    field=models.BigIntegerField(default=apps.channels.models.new_version, editable=False),
                ),
                migrations.AlterField(
                    model_name="channel",
                    name="posts_ids_version",
                    field=models.BigIntegerField(
                        db_default=0, default=apps.channels.models.new_version, editable=False
                    ),
                ),
            ],
            SQLITE_TRIGGERS_BEFORE,
        ),
        migrations.RunPython(
            channel_versions._run({"postgresql": [*POSTGRES_CREATE, POSTGRES_RECOUNT], "sqlite": SQLITE_CREATE}),
            channel_versions._run({"postgresql": POSTGRES_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
