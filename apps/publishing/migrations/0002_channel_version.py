"""A post's publication (its latest job) is part of the post's API representation, so a change of
a job renews its channel's version, as changes of tags and media do (channels 0002): the same
trigger function on PostgreSQL, row triggers on SQLite. A later migration that alters this table
on SQLite must drop and recreate these (see channels 0002's around_sqlite_table_change)."""

import importlib

from django.db import migrations

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")

TABLE = "publishing_publicationjob"

POSTGRES_CREATE = [
    f"CREATE TRIGGER cps_{TABLE}_inserted AFTER INSERT ON {TABLE} "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_post_parts_changed()",
    f"CREATE TRIGGER cps_{TABLE}_updated AFTER UPDATE ON {TABLE} "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_post_parts_changed()",
    f"CREATE TRIGGER cps_{TABLE}_deleted AFTER DELETE ON {TABLE} "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_post_parts_changed()",
]
POSTGRES_DROP = [f"DROP TRIGGER cps_{TABLE}_{event} ON {TABLE}" for event in ("inserted", "updated", "deleted")]


def _sqlite_trigger(event: str, posts: str) -> str:
    name = {"INSERT": "inserted", "UPDATE": "updated", "DELETE": "deleted"}[event]
    return (
        f"CREATE TRIGGER cps_{TABLE}_{name} AFTER {event} ON {TABLE} FOR EACH ROW BEGIN "
        f"UPDATE channels_channel SET version = version WHERE id IN (SELECT channel_id FROM posts_post WHERE id IN ({posts})); END"
    )


SQLITE_CREATE = [
    _sqlite_trigger("INSERT", "NEW.post_id"),
    _sqlite_trigger("UPDATE", "OLD.post_id, NEW.post_id"),
    _sqlite_trigger("DELETE", "OLD.post_id"),
]
SQLITE_DROP = [f"DROP TRIGGER cps_{TABLE}_{event}" for event in ("inserted", "updated", "deleted")]


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0001_initial"),
        ("posts", "0004_sqlite_posts_count"),
    ]

    operations = [
        migrations.RunPython(
            channel_versions._run({"postgresql": POSTGRES_CREATE, "sqlite": SQLITE_CREATE}),
            channel_versions._run({"postgresql": POSTGRES_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
