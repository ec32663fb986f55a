from datetime import timedelta

import factory
from django.utils import timezone

from apps.accounts.models import ALL_SCOPES, Account
from apps.core import crypto
from apps.users.models import ApiKey, Role, User, default_permissions_for


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
        return _create_with_secret(model_class, *args, **kwargs)


def _create_with_secret(model_class, *args, **kwargs):
    obj = model_class(*args, **kwargs)
    raw = obj.set_new_secret()
    obj.save()
    obj.raw = raw
    return obj


class AdminUserFactory(UserFactory):
    role = Role.ADMIN


class SsoTokenFactory(factory.django.DjangoModelFactory):
    """An unused, unexpired token; the raw token is on `.raw`."""

    class Meta:
        model = "accounts.SsoToken"
        exclude = ("raw",)

    user = factory.SubFactory(UserFactory)
    account = factory.SelfAttribute("user.account")
    redirect_to = ""
    expires_at = factory.LazyFunction(lambda: timezone.now() + timedelta(minutes=5))

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return _create_with_secret(model_class, *args, **kwargs)


class WebhookEndpointFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "webhooks.WebhookEndpoint"

    account = factory.SubFactory(AccountFactory)
    url = "https://hooks.example.com/receive"
    events = factory.LazyFunction(list)
    enabled = True


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "channels.Team"

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"Team {n}")


class ChannelFactory(factory.django.DjangoModelFactory):
    """A blog channel with a team of the same account; `team=None` for one without."""

    class Meta:
        model = "channels.Channel"

    account = factory.SubFactory(AccountFactory)
    team = factory.SubFactory(TeamFactory, account=factory.SelfAttribute("..account"))
    title = factory.Sequence(lambda n: f"Channel {n}")
    platform = "blog"
    image_width = 1200


class TagFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "posts.Tag"

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"tag-{n}")


class PostFactory(factory.django.DjangoModelFactory):
    """A draft post. Other states: pass publication_status (and published_at...), or use
    ApiPublicationFactory for the record of an `api` channel's post."""

    class Meta:
        model = "posts.Post"
        skip_postgeneration_save = True

    channel = factory.SubFactory(ChannelFactory)
    title = factory.Sequence(lambda n: f"Post {n}")
    body = factory.Faker("paragraph")
    teaser = factory.Faker("sentence")
    slug = factory.Sequence(lambda n: f"post-{n}")
    publication_status = "draft"

    @factory.post_generation
    def tags(self, create, extracted, **kwargs):
        if create and extracted:
            self.tags.set(extracted)


class MediaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "posts.Media"

    post = factory.SubFactory(PostFactory)
    kind = "image"
    url = factory.Sequence(lambda n: f"https://cdn.example.com/media/{n}.jpg")
    alt_text = "An image"
    width = 800
    height = 600


class ApiPublicationFactory(factory.django.DjangoModelFactory):
    """The publication record; by default of a publishing_pending post on an `api` channel."""

    class Meta:
        model = "posts.ApiPublication"

    post = factory.SubFactory(
        PostFactory, publication_status="publishing_pending", channel=factory.SubFactory(ChannelFactory, platform="api")
    )


class OperatorFactory(UserFactory):
    """An operator of the service: a superuser of no account."""

    account = None
    is_superuser = True
    role = Role.ADMIN


class GitDestinationFactory(factory.django.DjangoModelFactory):
    """A git channel's repository; `token` (a plain value) is stored encrypted, as the service does."""

    class Meta:
        model = "publishing_git.GitDestination"
        exclude = ("token",)

    channel = factory.SubFactory(ChannelFactory, platform="git")
    repository_url = "https://git.example.com/site.git"
    token = ""
    token_encrypted = factory.LazyAttribute(lambda o: crypto.encrypt(o.token) if o.token else "")


class PublicationJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "publishing.PublicationJob"

    channel = factory.SubFactory(ChannelFactory, platform="git")
    post_id = factory.LazyAttribute(lambda o: PostFactory(channel=o.channel).pk)
    title = "A post"
    action = "publish"


class NewsletterChannelFactory(ChannelFactory):
    """A newsletter channel (its public page is /blog/<handle>/, made from the title)."""

    platform = "newsletter"


class SubscriberFactory(factory.django.DjangoModelFactory):
    """A confirmed subscriber of a newsletter channel (`status="unconfirmed"` for one who has not)."""

    class Meta:
        model = "publishing_newsletter.Subscriber"

    channel = factory.SubFactory(NewsletterChannelFactory)
    email = factory.Sequence(lambda n: f"reader{n}@example.com")
    name = factory.Sequence(lambda n: f"Reader {n}")
    status = "confirmed"
    confirmed_at = factory.LazyAttribute(lambda o: timezone.now() if o.status == "confirmed" else None)


class MediumFactory(factory.django.DjangoModelFactory):
    """A row of the media library (no file in the store: tests that read the file upload one)."""

    class Meta:
        model = "media.Medium"

    account = factory.SubFactory(AccountFactory)
    name = factory.Sequence(lambda n: f"{n:064x}.png")
    original_name = factory.Sequence(lambda n: f"picture-{n}.png")
    mime_type = "image/png"
    width = 1200
    height = 800
    size = 123_456
    alt_text = "A picture"
