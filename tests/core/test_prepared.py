"""A PreparedLookup answers what the ORM answers, in one query, with its related objects."""

import uuid

import pytest
from django.db import transaction

from apps.core.prepared import PreparedLookup
from apps.users.models import ApiKey
from apps.users.selectors import api_key_find
from apps.webhooks.models import Delivery
from apps.webhooks.services import event_emit
from tests.factories import ApiKeyFactory, WebhookEndpointFactory

pytestmark = pytest.mark.django_db


by_prefix = PreparedLookup(
    ApiKey,
    "prefix",
    ("00000000", "11111111"),
    lambda prefix: ApiKey.objects.select_related("account", "user").filter(prefix=prefix).order_by()[:1],
)


def test_prepared_lookup_builds_the_objects_the_orm_builds(django_assert_num_queries):
    ApiKeyFactory.create_batch(3)
    key = ApiKeyFactory(scopes=["read:posts"])
    expected = ApiKey.objects.select_related("account", "user").get(pk=key.pk)
    with django_assert_num_queries(1):
        found = by_prefix.first(key.prefix)
        # The account and the user came with the key.
        assert (found.account.name, found.user.email) == (expected.account.name, expected.user.email)
    for model_field in ApiKey._meta.concrete_fields:
        assert getattr(found, model_field.attname) == getattr(expected, model_field.attname), model_field.name
    assert found.scopes == ["read:posts"]  # JSON decoded, as the ORM decodes it
    assert found.user.permissions == expected.user.permissions
    assert found.expires_at == expected.expires_at and found.expires_at.tzinfo is not None
    assert not found._state.adding and found._state.db == "default"


def test_prepared_lookup_answers_none_for_no_row():
    assert by_prefix.first("00000000") is None


def test_prepared_lookup_runs_again_with_each_value():
    first, second = ApiKeyFactory(), ApiKeyFactory()
    assert by_prefix.first(first.prefix).pk == first.pk
    assert by_prefix.first(second.prefix).pk == second.pk


def test_prepared_lookup_refuses_a_queryset_that_transforms_its_parameter():
    upper = PreparedLookup(ApiKey, "prefix", ("a", "b"), lambda prefix: ApiKey.objects.filter(prefix__icontains=prefix))
    with pytest.raises(ValueError, match="exactly once"):
        upper.first("abc")


def test_prepared_lookup_converts_the_value_as_the_orm_does(django_assert_num_queries):
    """A UUID primary key is stored as hex text on SQLite and natively on PostgreSQL."""
    endpoint = WebhookEndpointFactory()
    with transaction.atomic():
        delivery = event_emit(account=endpoint.account, kind="post.published", data={}).deliveries.get()
    by_id = PreparedLookup(
        Delivery, "id", (uuid.UUID(int=1), uuid.UUID(int=2)), lambda pk: Delivery.objects.filter(pk=pk)[:1]
    )
    with django_assert_num_queries(1):
        assert by_id.first(delivery.pk).pk == delivery.pk
    assert by_id.first(str(delivery.pk)).pk == delivery.pk
    assert by_id.first(uuid.uuid4()) is None


def test_api_key_find_checks_the_whole_secret():
    key = ApiKeyFactory()
    assert api_key_find(key.raw).pk == key.pk
    assert api_key_find(key.raw[:-1] + ("A" if key.raw[-1] != "A" else "B")) is None
    assert api_key_find("not-a-key") is None


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_prepared_lookup_answers_none_for_an_integer_outside_the_columns_range(value, django_assert_num_queries):
    by_id = PreparedLookup(ApiKey, "id", (1, 2), lambda pk: ApiKey.objects.filter(pk=pk)[:1])
    with django_assert_num_queries(0):
        assert by_id.first(value) is None
    key = ApiKeyFactory()
    assert by_id.first(key.pk).pk == key.pk
