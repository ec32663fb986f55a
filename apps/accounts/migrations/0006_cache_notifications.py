"""The API keys' half of the shared cache's invalidation (apps/core/coherence.py): an entry holds
a key with its account and user, so a change of any of the three rows notifies the writing
session of every key it touches (`k:<prefix>`). Whole rows are compared, so a column added later is
covered without a new trigger; a user's sign-in counts too (`/v1/users/profile` shows `last_login`).
A key's own `last_used_at` is in: the entry's copy is renewed when the key is touched, once per
API_KEY_LAST_USED_RESOLUTION. PostgreSQL only (channels 0007 defines cps_cache_invalidate).
"""

from django.db import migrations

POSTGRES_CREATE = [
    """
    CREATE FUNCTION cps_api_key_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        PERFORM cps_cache_invalidate('k:' || OLD.prefix);
        RETURN NULL;
    END $$
    """,
    "CREATE TRIGGER cps_api_key_updated AFTER UPDATE ON accounts_apikey FOR EACH ROW "
    "WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION cps_api_key_changed()",
    "CREATE TRIGGER cps_api_key_deleted AFTER DELETE ON accounts_apikey FOR EACH ROW "
    "EXECUTE FUNCTION cps_api_key_changed()",
    """
    CREATE FUNCTION cps_api_key_owner_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_TABLE_NAME = 'users_user' THEN
            PERFORM cps_cache_invalidate('k:' || prefix) FROM accounts_apikey WHERE user_id = OLD.id;
        ELSE
            PERFORM cps_cache_invalidate('k:' || prefix) FROM accounts_apikey WHERE account_id = OLD.id;
        END IF;
        RETURN OLD;
    END $$
    """,
    "CREATE TRIGGER cps_api_key_user_changed AFTER UPDATE ON users_user FOR EACH ROW "
    "WHEN (OLD.* IS DISTINCT FROM NEW.*) "
    "EXECUTE FUNCTION cps_api_key_owner_changed()",
    "CREATE TRIGGER cps_api_key_account_changed AFTER UPDATE ON accounts_account FOR EACH ROW "
    "WHEN (OLD.* IS DISTINCT FROM NEW.*) EXECUTE FUNCTION cps_api_key_owner_changed()",
    # Django deletes a user's or an account's keys before the row itself (their own trigger
    # notifies); these cover a deletion the database cascades.
    "CREATE TRIGGER cps_api_key_user_deleted BEFORE DELETE ON users_user FOR EACH ROW "
    "EXECUTE FUNCTION cps_api_key_owner_changed()",
    "CREATE TRIGGER cps_api_key_account_deleted BEFORE DELETE ON accounts_account FOR EACH ROW "
    "EXECUTE FUNCTION cps_api_key_owner_changed()",
]

POSTGRES_DROP = [
    "DROP FUNCTION cps_api_key_owner_changed() CASCADE",
    "DROP FUNCTION cps_api_key_changed() CASCADE",
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
    dependencies = [("accounts", "0005_users_scopes"), ("channels", "0007_cache_notifications")]

    operations = [migrations.RunPython(forwards, backwards)]
