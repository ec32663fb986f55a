"""The channels' half of the shared cache's invalidation (apps/core/coherence.py): the database
notifies the writing session of every channel whose version it renews, of every channel it
deletes (by id, and by the handle and domain its public site is found by), and of every post it moves to another channel (the post's entry names its channel).

The version's own trigger is the one place every change of a channel's representations passes
through (channels 0002: the posts, tags, media and teams triggers all UPDATE the channel), so one
notification there covers them all. PostgreSQL only: SQLite has no notifications, and without
them the entries are not used.
"""

from django.db import migrations

POSTGRES_CREATE = [
    # The channel is named after the writing session's own backend, which alone LISTENs on it.
    """
    CREATE FUNCTION cps_cache_invalidate(payload text) RETURNS void LANGUAGE sql AS $$
        SELECT pg_notify('cps_inval_' || pg_backend_pid(), payload)
    $$
    """,
    # A channel's entries: by id (its version), and by the handle and domain its blog is found by.
    """
    CREATE FUNCTION cps_channel_forget(channel channels_channel) RETURNS void LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_cache_invalidate('c:' || channel.id);
        IF channel.handle IS NOT NULL AND channel.handle <> '' THEN
            PERFORM cps_cache_invalidate('h:' || channel.handle);
        END IF;
        IF channel.domain IS NOT NULL AND channel.domain <> '' THEN
            PERFORM cps_cache_invalidate('d:' || channel.domain);
        END IF;
    END $$
    """,
    """
    CREATE OR REPLACE FUNCTION cps_channel_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.version := floor(random() * 4503599627370496)::bigint;
        PERFORM cps_channel_forget(OLD);
        RETURN NEW;
    END $$
    """,
    """
    CREATE FUNCTION cps_channel_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_channel_forget(OLD);
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_channel_deleted AFTER DELETE ON channels_channel "
    "FOR EACH ROW EXECUTE FUNCTION cps_channel_deleted()",
    """
    CREATE FUNCTION cps_post_moved() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_cache_invalidate('p:' || OLD.id);
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_post_moved AFTER UPDATE OF channel_id ON posts_post FOR EACH ROW "
    "WHEN (OLD.channel_id IS DISTINCT FROM NEW.channel_id) EXECUTE FUNCTION cps_post_moved()",
]

POSTGRES_DROP = [
    "DROP FUNCTION cps_post_moved() CASCADE",
    "DROP FUNCTION cps_channel_deleted() CASCADE",
    """
    CREATE OR REPLACE FUNCTION cps_channel_new_version() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        NEW.version := floor(random() * 4503599627370496)::bigint;
        RETURN NEW;
    END $$
    """,
    "DROP FUNCTION cps_channel_forget(channels_channel)",
    "DROP FUNCTION cps_cache_invalidate(text)",
]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_CREATE:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        for statement in POSTGRES_DROP:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("channels", "0006_posts_ids_version"), ("posts", "0005_blog_order")]

    operations = [migrations.RunPython(forwards, backwards)]
