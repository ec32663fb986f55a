"""`posts_count` stored on the channel, filled from the posts, and kept by the database from then on
(see Channel.posts_count): every INSERT, DELETE or UPDATE of posts adds its change to the channels
its rows belong to, in the statement's transaction, whatever the path (the services, the admin,
bulk statements, Django's cascades, raw SQL).

PostgreSQL: the posts trigger of channels 0002 (statement level, with transition tables) now adds
each channel's change, `posts_count + n`, in the same UPDATE that gives the channel its new version,
with the channels locked in id order as before. The UPDATE reads the row it changes after taking
its lock, so two transactions adding posts to one channel at once both count.

SQLite: row-level triggers of their own, in posts 0004, after posts 0003 has remade the posts table
(which drops a table's triggers). This migration needs no more of posts than its table, so going
back in the posts app leaves the column in place.
"""

import importlib

from django.db import migrations, models

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")

POSTGRES_CREATE = [
    """
    CREATE FUNCTION cps_channels_count(ids bigint[], deltas bigint[]) RETURNS void LANGUAGE sql AS $$
        UPDATE channels_channel channel SET posts_count = channel.posts_count + change.delta
        FROM unnest(ids, deltas) AS change(id, delta)
        WHERE channel.id = change.id
          AND channel.id IN (SELECT id FROM channels_channel WHERE id = ANY(ids) ORDER BY id FOR UPDATE)
    $$
    """,
    """
    CREATE OR REPLACE FUNCTION cps_posts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
        ids bigint[];
        deltas bigint[];
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
        PERFORM cps_channels_count(ids, deltas);
        RETURN NULL;
    END $$
    """,
]

# The function as channels 0002 made it, for going back.
POSTGRES_DROP = [
    next(statement for statement in channel_versions.POSTGRES_CREATE if "FUNCTION cps_posts_changed()" in statement)
    .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1),
    "DROP FUNCTION cps_channels_count(bigint[], bigint[])",
]

FILL = (
    "UPDATE channels_channel SET posts_count = "
    "(SELECT count(*) FROM posts_post WHERE posts_post.channel_id = channels_channel.id)"
)


class Migration(migrations.Migration):

    dependencies = [
        ("channels", "0002_channel_version"),
        ("posts", "0001_initial"),
    ]

    operations = [
        # 0002's wrapper: the SQLite count triggers (posts 0004) come later.
        *channel_versions.around_sqlite_table_change("channels_channel", [
            migrations.AddField(
                model_name="channel",
                name="posts_count",
                field=models.IntegerField(db_default=0, default=0, editable=False, verbose_name="posts"),
            ),
        ]),
        # In the transaction that adds the column: a post written meanwhile waits for the
        # channel's row, which the column's ALTER TABLE holds, so no post is counted twice or not.
        migrations.RunSQL(FILL, migrations.RunSQL.noop),
        migrations.RunPython(
            channel_versions._run({"postgresql": POSTGRES_CREATE, "sqlite": []}),
            channel_versions._run({"postgresql": POSTGRES_DROP, "sqlite": []}),
        ),
    ]
