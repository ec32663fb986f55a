"""Every model's JSON field holds to the input policy: refused on the way in (model validation, so the
admin and the services alike), repaired on the way out, so no stored value can break a page."""

import json

import pytest
from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import connection
from django.db import models as django_models

from apps.core.fields import JSONField
from apps.users.models import User
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, ApiKeyFactory, UserFactory
from tests.users.test_users_admin import change_form

pytestmark = pytest.mark.django_db


def test_every_json_field_of_every_model_is_the_policy_field():
    plain = [
        f"{model._meta.label}.{field.name}"
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if isinstance(field, django_models.JSONField) and not isinstance(field, JSONField)
    ]
    assert plain == []


@pytest.mark.parametrize(
    ("metadata", "rule"),
    [
        ({"a": "x\x00"}, "null_character"),
        ({"a": "\ud800"}, "lone_surrogate"),
        ({"a": float("nan")}, "number_out_of_range"),
        ({"a": 10**400}, "number_out_of_range"),
    ],
)
def test_model_validation_refuses_values_that_break_the_policy(metadata, rule):
    user = UserFactory.build(metadata=metadata)
    with pytest.raises(ValidationError) as refused:
        user.clean_fields(exclude=[f.name for f in User._meta.fields if f.name != "metadata"])
    assert [error.code for error in refused.value.error_dict["metadata"]] == [rule]


def store_raw(user: User, field: str, text: str) -> None:
    """Write JSON text straight into the column, past every validation (as data written before the policy)."""
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        sql = f"UPDATE {User._meta.db_table} SET {field} = %s{cast} WHERE id = %s"  # noqa: S608 (names, not input)
        cursor.execute(sql, [text, user.pk])


def deep_metadata(depth: int) -> str:
    return '{"deep": ' + "[" * depth + '"leaf"' + "]" * depth + ', "kept": 1}'


def test_a_stored_value_too_deep_for_the_policy_is_read_repaired_and_every_page_shows_it(client_for):
    admin = AdminUserFactory()
    user = UserFactory(account=admin.account)
    store_raw(user, "metadata", deep_metadata(900))

    user.refresh_from_db()
    assert user.metadata["kept"] == 1
    assert json.dumps(user.metadata)  # within the policy's depth, so any encoder can write it
    assert admin_session(admin).get(f"/admin/users/user/{user.pk}/change/").status_code == 200
    response = client_for(ApiKeyFactory(user=admin)).get(f"/v1/users/{user.pk}")
    assert response.status_code == 200
    assert response.json()["metadata"]["kept"] == 1


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ('{"a": ' + "[" * 2000 + "]" * 2000 + "}", "too_deep"),
        ('{"a": "x\\u0000"}', "null_character"),
        ('{"a": "\\udad8"}', "lone_surrogate"),
        ('{"a": 1e999}', "number_out_of_range"),
    ],
)
def test_the_admin_form_refuses_json_that_breaks_the_policy_with_its_rule(text, rule):
    admin = AdminUserFactory()
    user = UserFactory(account=admin.account, metadata={"before": True})
    response = admin_session(admin).post(f"/admin/users/user/{user.pk}/change/", change_form(user, metadata=text))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors.as_data()["metadata"]
    assert [error.code for error in errors] == [rule]
    user.refresh_from_db()
    assert user.metadata == {"before": True}
