"""A newsletter edition's recipient counts are part of its post's API representation (the
publication's `recipients`), so a change of an edition renews its channel's version, as a change
of a publication job does (publishing 0002; the function of channels 0002 that reads channel_id).
The counters change once per batch sent. A later migration that alters this table on SQLite must
drop and recreate these (see channels 0002's around_sqlite_table_change)."""

import importlib

from django.db import migrations

channel_versions = importlib.import_module("apps.channels.migrations.0002_channel_version")

TABLE = "publishing_newsletter_edition"

POSTGRES_CREATE = [
    f"CREATE TRIGGER cps_{TABLE}_inserted AFTER INSERT ON {TABLE} "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_posts_changed()",
    f"CREATE TRIGGER cps_{TABLE}_updated AFTER UPDATE ON {TABLE} "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_posts_changed()",
    f"CREATE TRIGGER cps_{TABLE}_deleted AFTER DELETE ON {TABLE} "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION cps_posts_changed()",
]
POSTGRES_DROP = [f"DROP TRIGGER cps_{TABLE}_{event} ON {TABLE}" for event in ("inserted", "updated", "deleted")]

SQLITE_CREATE = [
    channel_versions._sqlite_trigger(f"cps_{TABLE}_inserted", "INSERT", TABLE, "NEW.channel_id"),
    channel_versions._sqlite_trigger(f"cps_{TABLE}_updated", "UPDATE", TABLE, "OLD.channel_id, NEW.channel_id"),
    channel_versions._sqlite_trigger(f"cps_{TABLE}_deleted", "DELETE", TABLE, "OLD.channel_id"),
]
SQLITE_DROP = [f"DROP TRIGGER cps_{TABLE}_{event}" for event in ("inserted", "updated", "deleted")]


class Migration(migrations.Migration):
    dependencies = [
        ("publishing", "0003_job_locked_by"),
        ("publishing_newsletter", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(
            channel_versions._run({"postgresql": POSTGRES_CREATE, "sqlite": SQLITE_CREATE}),
            channel_versions._run({"postgresql": POSTGRES_DROP, "sqlite": SQLITE_DROP}),
        ),
    ]
