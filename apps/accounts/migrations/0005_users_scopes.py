"""The Users endpoints get scopes of their own (read:users, write:users). Until now any valid key
could use them, so a key that holds every scope there was keeps doing everything: it gets the two
new ones. A narrower key was issued for less and stays as it is."""

from django.db import migrations

# Frozen here: the scopes as they were before this migration, in their order of ALL_SCOPES.
EARLIER_SCOPES = ("read:channels", "read:posts", "read:media", "write:posts", "write:sso")
NEW_SCOPES = ("read:users", "write:users")


def grant_users_scopes(apps, schema_editor):
    ApiKey = apps.get_model("accounts", "ApiKey")
    for api_key in ApiKey.objects.only("scopes").iterator(chunk_size=1000):
        scopes = api_key.scopes if isinstance(api_key.scopes, list) else []
        if set(EARLIER_SCOPES) <= set(scopes) and not set(NEW_SCOPES) <= set(scopes):
            api_key.scopes = [*scopes, *(s for s in NEW_SCOPES if s not in scopes)]
            api_key.save(update_fields=["scopes"])


def revoke_users_scopes(apps, schema_editor):
    ApiKey = apps.get_model("accounts", "ApiKey")
    for api_key in ApiKey.objects.only("scopes").iterator(chunk_size=1000):
        scopes = api_key.scopes if isinstance(api_key.scopes, list) else []
        if any(s in NEW_SCOPES for s in scopes):
            api_key.scopes = [s for s in scopes if s not in NEW_SCOPES]
            api_key.save(update_fields=["scopes"])


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0004_json_input_policy"),
    ]

    operations = [
        migrations.RunPython(grant_users_scopes, revoke_users_scopes, elidable=False),
    ]
