from django.contrib.auth.models import Group

from apps.accounts.models import Account
from apps.channels.models import Channel, Team
from apps.core.scoping import account_path, of_account
from apps.posts.models import ApiPublication, Media, Post, Tag
from apps.users.models import ApiKey, SsoToken, User
from apps.webhooks.models import Attempt, Delivery, Event, WebhookEndpoint
from tests.factories import MediaFactory


def test_every_model_finds_its_account_through_its_foreign_keys():
    assert {model: account_path(model) for model in (Account, ApiKey, SsoToken, User, Team, Channel, Tag)} == {
        Account: "pk",
        ApiKey: "account",
        SsoToken: "account",
        User: "account",
        Team: "account",
        Channel: "account",
        Tag: "account",
    }
    assert account_path(Post) == "channel__account"
    assert account_path(Media) == account_path(ApiPublication) == "post__channel__account"
    assert account_path(Event) == account_path(WebhookEndpoint) == "account"
    assert account_path(Delivery) == "event__account"
    assert account_path(Attempt) == "delivery__event__account"


def test_a_model_without_an_account_belongs_to_no_one(db):
    assert account_path(Group) is None
    Group.objects.create(name="anything")
    assert not of_account(Group.objects.all(), 1).exists()


def test_rows_are_those_of_the_account(db):
    mine, theirs = MediaFactory(), MediaFactory()
    account_id = mine.post.channel.account_id
    assert list(of_account(Media.objects.all(), account_id)) == [mine]
    assert theirs not in of_account(Media.objects.all(), account_id)
    assert not of_account(Media.objects.all(), None).exists()
