"""A version for every channel, renewed by the database in the transaction of every change of what
the channel's API representations show (see apps/api/representations.py and docs/benchmarks.md).

The rule is one, in the database: any UPDATE of a channel row gives it a new random version,
whatever the statement wrote into the column; every other table whose rows a representation shows
(posts, their tag links and media, tags, teams) UPDATEs the channels its changed rows belong to.
Triggers rather than calls in the services, because every path must bump (the services, the
admin, bulk statements, Django's cascades, raw SQL) and a forgotten call would serve stale data.

PostgreSQL: statement-level triggers with transition tables, so a bulk statement (the content
plan's batch, a seed of 100,000 posts) bumps each channel once, with the channels locked in id order
(no deadlock between two bulk writers). SQLite (the embedded default) has row-level triggers only.
"""

import re

from django.db import migrations, models

import apps.channels.models

# Tables whose changed rows name their post (post_id).
POST_PARTS = ("posts_post_tags", "posts_media")

POSTGRES_CREATE = [
    """
    CREATE FUNCTION cps_channel_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.version := floor(random() * 4503599627370496)::bigint;
        RETURN NEW;
    END $$
    """,
    "CREATE TRIGGER cps_channel_version BEFORE UPDATE ON channels_channel "
    "FOR EACH ROW EXECUTE FUNCTION cps_channel_new_version()",
    """
    CREATE FUNCTION cps_channels_touch(ids bigint[]) RETURNS void LANGUAGE sql AS $$
        UPDATE channels_channel SET version = version
        WHERE id IN (SELECT id FROM channels_channel WHERE id = ANY(ids) ORDER BY id FOR UPDATE)
    $$
    """,
    """
    CREATE FUNCTION cps_posts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM cps_channels_touch(ARRAY(SELECT DISTINCT channel_id FROM new_rows));
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM cps_channels_touch(ARRAY(SELECT DISTINCT channel_id FROM old_rows));
        ELSE
            PERFORM cps_channels_touch(ARRAY(SELECT channel_id FROM new_rows UNION SELECT channel_id FROM old_rows));
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION cps_post_parts_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            PERFORM cps_channels_touch(ARRAY(
                SELECT DISTINCT channel_id FROM posts_post WHERE id IN (SELECT post_id FROM new_rows)));
        ELSIF TG_OP = 'DELETE' THEN
            PERFORM cps_channels_touch(ARRAY(
                SELECT DISTINCT channel_id FROM posts_post WHERE id IN (SELECT post_id FROM old_rows)));
        ELSE
            PERFORM cps_channels_touch(ARRAY(
                SELECT DISTINCT channel_id FROM posts_post
                WHERE id IN (SELECT post_id FROM new_rows UNION SELECT post_id FROM old_rows)));
        END IF;
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION cps_tags_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_channels_touch(ARRAY(
            SELECT DISTINCT post.channel_id FROM posts_post post
            JOIN posts_post_tags link ON link.post_id = post.id
            WHERE link.tag_id IN (SELECT id FROM new_rows)));
        RETURN NULL;
    END $$
    """,
    """
    CREATE FUNCTION cps_teams_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_channels_touch(ARRAY(
            SELECT id FROM channels_channel WHERE team_id IN (SELECT id FROM new_rows)));
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_tags_updated AFTER UPDATE ON posts_tag "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_tags_changed()",
    "CREATE TRIGGER cps_teams_updated AFTER UPDATE ON channels_team "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_teams_changed()",
]
for _table, _function in (("posts_post", "cps_posts_changed"), *((t, "cps_post_parts_changed") for t in POST_PARTS)):
    POSTGRES_CREATE += [
        f"CREATE TRIGGER cps_{_table}_inserted AFTER INSERT ON {_table} "
        f"REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {_function}()",
        f"CREATE TRIGGER cps_{_table}_updated AFTER UPDATE ON {_table} "
        f"REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {_function}()",
        f"CREATE TRIGGER cps_{_table}_deleted AFTER DELETE ON {_table} "
        f"REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {_function}()",
    ]

POSTGRES_DROP = [
    "DROP FUNCTION cps_channel_new_version() CASCADE",
    "DROP FUNCTION cps_posts_changed() CASCADE",
    "DROP FUNCTION cps_post_parts_changed() CASCADE",
    "DROP FUNCTION cps_tags_changed() CASCADE",
    "DROP FUNCTION cps_teams_changed() CASCADE",
    "DROP FUNCTION cps_channels_touch(bigint[])",
]


def _sqlite_trigger(name: str, event: str, table: str, channels: str) -> str:
    return (
        f"CREATE TRIGGER {name} AFTER {event} ON {table} FOR EACH ROW BEGIN "
        f"UPDATE channels_channel SET version = version WHERE id IN ({channels}); END"
    )


# SQLite's triggers cannot change NEW, so the channel's own trigger writes the new version with an
# UPDATE of its own (SQLite runs no trigger recursively unless told to).
SQLITE_CREATE = [
    "CREATE TRIGGER cps_channel_version AFTER UPDATE ON channels_channel FOR EACH ROW BEGIN "
    "UPDATE channels_channel SET version = abs(random() % 4503599627370496) WHERE id = NEW.id; END",
    _sqlite_trigger("cps_posts_post_inserted", "INSERT", "posts_post", "NEW.channel_id"),
    _sqlite_trigger("cps_posts_post_updated", "UPDATE", "posts_post", "OLD.channel_id, NEW.channel_id"),
    _sqlite_trigger("cps_posts_post_deleted", "DELETE", "posts_post", "OLD.channel_id"),
    _sqlite_trigger(
        "cps_tags_updated",
        "UPDATE",
        "posts_tag",
        "SELECT post.channel_id FROM posts_post post JOIN posts_post_tags link ON link.post_id = post.id "
        "WHERE link.tag_id = NEW.id",
    ),
    _sqlite_trigger("cps_teams_updated", "UPDATE", "channels_team", "SELECT id FROM channels_channel WHERE team_id = NEW.id"),
]
for _table in POST_PARTS:
    SQLITE_CREATE += [
        _sqlite_trigger(
            f"cps_{_table}_inserted", "INSERT", _table, "SELECT channel_id FROM posts_post WHERE id = NEW.post_id"
        ),
        _sqlite_trigger(
            f"cps_{_table}_updated",
            "UPDATE",
            _table,
            "SELECT channel_id FROM posts_post WHERE id IN (OLD.post_id, NEW.post_id)",
        ),
        _sqlite_trigger(
            f"cps_{_table}_deleted", "DELETE", _table, "SELECT channel_id FROM posts_post WHERE id = OLD.post_id"
        ),
    ]
def _trigger_name(statement: str) -> str:
    return statement.split()[2]  # CREATE TRIGGER <name> ...


SQLITE_DROP = [f"DROP TRIGGER {_trigger_name(statement)}" for statement in SQLITE_CREATE]


def around_sqlite_table_change(table: str, operations: list, triggers: list[str] = SQLITE_CREATE) -> list:
    """`operations` of a later migration that alter `table`, wrapped for SQLite: Django alters a
    SQLite table by copying it into a new one and renaming that, which drops the old table's
    triggers and fails while any trigger names the table. So the triggers that name it (of the
    CREATE TRIGGER statements `triggers`) are dropped before and created again after (PostgreSQL
    keeps them; nothing is done there). Later migrations take the wrapper of the latest migration
    that adds triggers (posts 0004), which knows them all."""
    names = re.compile(rf"\b{table}\b")
    statements = [statement for statement in triggers if names.search(statement)]

    def create(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement.replace("CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS ", 1))

    def drop(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {_trigger_name(statement)}")

    return [migrations.RunPython(drop, create), *operations, migrations.RunPython(create, drop)]


def _run(statements_by_vendor: dict):
    def run(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(f"channel versions have no triggers for {schema_editor.connection.vendor}")
        for statement in statements:
            schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("channels", "0001_initial"),
        ("posts", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="channel",
            name="version",
            field=models.BigIntegerField(default=apps.channels.models.new_version, editable=False),
        ),
        migrations.RunPython(
            _run({"postgresql": POSTGRES_CREATE, "sqlite": SQLITE_CREATE}),
            _run({"postgresql": POSTGRES_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
