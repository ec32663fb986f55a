from datetime import timedelta

import factory
from django.utils import timezone

from apps.accounts.models import ALL_SCOPES, Account, ApiKey
from apps.users.models import Role, User, default_permissions_for


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account

    name = factory.Sequence(lambda n: f"Account {n}")
    plan = "free"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    account = factory.SubFactory(AccountFactory)
    email = factory.Sequence(lambda n: f"user{n}@example.com")
    name = factory.Faker("name")
    role = Role.EDITOR
    status = "active"
    permissions = factory.LazyAttribute(lambda o: default_permissions_for(o.role))


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """Builds a key through the model's own secret generation; the raw key is on `.raw`."""

    class Meta:
        model = ApiKey
        exclude = ("raw",)

    user = factory.SubFactory(UserFactory)
    account = factory.SelfAttribute("user.account")
    name = factory.Sequence(lambda n: f"key {n}")
    scopes = factory.LazyFunction(lambda: list(ALL_SCOPES))
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(days=30))

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        api_key = model_class(*args, **kwargs)
        raw = api_key.set_new_secret()
        api_key.save()
        api_key.raw = raw
        return api_key


class WebhookEndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "webhooks.WebhookEndpoint"

    account = factory.SubFactory(AccountFactory)
    url = "https://hooks.example.com/receive"
    events = factory.LazyFunction(list)
    enabled = True
