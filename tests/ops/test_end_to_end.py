"""The whole publishing workflow with its webhooks, through real processes."""

import json
import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from apps.posts.content_plan import content_plan_run
from apps.posts.services import post_update_content
from tests.conftest import requires_broker
from tests.factories import ApiKeyFactory, ChannelFactory, PostFactory, UserFactory, WebhookEndpointFactory
from tests.webhooks.test_delivery import verify


@requires_broker
@pytest.mark.django_db(transaction=True)
def test_scheduled_api_post_walks_the_whole_workflow_with_signed_events(client_for, receiver, start_worker):
    admin = UserFactory(role="admin")
    key = ApiKeyFactory(user=admin, account=admin.account)
    channel = ChannelFactory(account=admin.account, platform="api")
    endpoint = WebhookEndpointFactory(account=admin.account, url=receiver.url)
    post = PostFactory(
        channel=channel, publication_status="scheduled", scheduled_at=timezone.now() - timedelta(seconds=1)
    )
    start_worker()
    api = client_for(key)
    url = f"/v1/channels/{channel.id}/posts/{post.id}"

    assert content_plan_run().publishing_pending == 1
    receiver.wait_for(1)
    body = {"post": {"external_id": "ext-42", "external_url": "https://partner.example.com/p/42"}}
    published = api.patch(f"{url}/publish", body, format="json")
    assert published.status_code == 200, published.content
    receiver.wait_for(2)
    post_update_content(post=post, title="Edited after publishing")
    receiver.wait_for(3)
    assert api.patch(f"{url}/unpublish").status_code == 200
    requests = receiver.wait_for(4)

    kinds = [r.headers["X-Service-Event"] for r in requests]
    assert kinds == ["post.publishing_pending", "post.published", "post.updated", "post.unpublished"]
    assert all(verify(endpoint.secret, r.headers, r.body) for r in requests)
    assert len({r.headers["X-Service-Delivery"] for r in requests}) == 4
    bodies = [json.loads(r.body) for r in requests]
    assert [b["event"] for b in bodies] == kinds
    assert [b["data"]["post"]["publication_status"] for b in bodies] == [
        "publishing_pending",
        "published",
        "published",
        "draft",
    ]
    assert bodies[1]["data"]["post"]["published_at"] is not None
    assert bodies[2]["data"]["post"]["title"] == "Edited after publishing"
    assert bodies[3]["data"]["post"]["published_at"] is None
    assert all(b["data"]["post"]["id"] == post.id for b in bodies)


def test_embedded_defaults_run_content_plan_and_deliver_without_servers(tmp_path, receiver):
    """SQLite and the filesystem broker: beat runs the content plan, the worker delivers."""
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'trial.sqlite3'}",
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "filesystem://",
        "FILESYSTEM_BROKER_DIR": str(tmp_path / "broker"),
        "CONTENT_PLAN_INTERVAL": "1",
        "WEBHOOK_SWEEP_INTERVAL": "1",
        "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true",
    }

    def manage(*args: str) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args],
            env=env,
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        return result.stdout

    manage("migrate", "--noinput", "-v0")
    setup = f"""
from datetime import timedelta
from django.utils import timezone
from apps.accounts.models import Account
from apps.channels.models import Channel
from apps.posts.models import Post
from apps.webhooks.services import endpoint_save
account = Account.objects.create(name="Trial")
channel = Channel.objects.create(account=account, title="Ext", platform="api")
Post.objects.create(channel=channel, title="Due", slug="due", publication_status="scheduled",
                    scheduled_at=timezone.now() - timedelta(seconds=1))
endpoint_save(account=account, url="{receiver.url}")
"""
    manage("shell", "-c", setup)
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *args],
            env=env,
            cwd=settings.BASE_DIR,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for args in (
            ["worker", "--concurrency", "1", "--without-gossip", "--without-mingle"],
            ["beat", "--schedule", str(tmp_path / "beat-schedule")],
        )
    ]
    try:
        [request] = receiver.wait_for(1, timeout=60)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
    assert request.headers["X-Service-Event"] == "post.publishing_pending"
    assert json.loads(request.body)["data"]["post"]["title"] == "Due"
