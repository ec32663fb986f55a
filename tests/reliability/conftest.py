from dataclasses import dataclass, field

import pytest

from tests.factories import ApiKeyFactory, ApiPublicationFactory, ChannelFactory, WebhookEndpointFactory


@dataclass
class Workflow:
    """An account with an `api` channel, a key with every scope, and webhook endpoints on the test receiver
    (told apart by the last part of their paths)."""

    client_for: object
    receiver_url: str
    key: object = field(default_factory=ApiKeyFactory)

    def __post_init__(self):
        self.account = self.key.account
        self.channel = ChannelFactory(account=self.account, platform="api")
        self.endpoints = {
            name: WebhookEndpointFactory(account=self.account, url=f"{self.receiver_url}/{name}")
            for name in ("first", "second")
        }

    def pending(self):
        """A post awaiting publication, with its API publication record."""
        return ApiPublicationFactory(post__channel=self.channel).post

    def publish(self, post):
        return self.client_for(self.key).patch(f"/v1/channels/{self.channel.id}/posts/{post.id}/publish")


@pytest.fixture
def workflow(receiver, private_targets, client_for):
    return Workflow(client_for=client_for, receiver_url=receiver.url)
