"""The embedded broker (`filesystem://`, the local default without Redis): a worker polling its folder
never takes a message before it is written whole (config/broker.py)."""

from queue import Empty

import pytest
from kombu import Connection

import config.broker as broker
from tests.conftest import settings_loaded


@pytest.fixture
def channel(tmp_path):
    folders = {name: tmp_path / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir()
    options = {
        "data_folder_in": str(folders["queue"]),
        "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]),
        "control_folder": str(folders["control"]),
        "store_processed": False,
    }
    with Connection("filesystem://", transport="config.broker:Transport", transport_options=options) as connection:
        yield connection.channel()


def test_a_worker_looking_while_a_message_is_written_finds_nothing_then_the_whole_message(channel, monkeypatch):
    seen = []
    serialize = broker.dumps

    def dumps_while_a_worker_looks(payload):
        # kombu's own transport has created the message file by now, empty: its consumer would take
        # it and fail to decode it, which stops a Celery worker's consumer for good.
        try:
            seen.append(channel._get("celery"))
        except Empty:
            seen.append(None)
        return serialize(payload)

    monkeypatch.setattr(broker, "dumps", dumps_while_a_worker_looks)
    channel._put("celery", {"body": "a task"})
    assert seen == [None]
    assert channel._get("celery") == {"body": "a task"}
    with pytest.raises(Empty):
        channel._get("celery")


def test_messages_are_taken_oldest_first_and_only_by_their_queue(channel):
    for n in range(3):
        channel._put("celery", {"n": n})
    channel._put("other", {"n": "other"})
    assert [channel._get("celery")["n"] for _ in range(3)] == [0, 1, 2]
    assert channel._get("other") == {"n": "other"}


def test_the_embedded_default_sends_tasks_through_it_and_a_redis_broker_does_not():
    show = "import config.settings as s; print(getattr(s, 'CELERY_BROKER_TRANSPORT', None))"
    embedded = settings_loaded(show, {"REDIS_URL": ""}, unset=("CELERY_",))
    assert embedded.stdout.strip() == "config.broker:Transport", embedded.stderr
    redis = settings_loaded(show, {"REDIS_URL": "redis://127.0.0.1:6379/0"}, unset=("CELERY_",))
    assert redis.stdout.strip() == "None", redis.stderr


ENQUEUE = """
import django
django.setup()
from config.celery import app
for _ in range(2):
    app.send_task("posts.content_plan")
print(app.connection_for_write().as_uri())
"""


def test_enqueueing_on_the_embedded_default_warns_of_no_missing_host(tmp_path):
    """kombu warned "No hostname was supplied" at every connection to a broker URL without a host,
    which filesystem:// is (a folder has none)."""
    result = settings_loaded(
        ENQUEUE, {"REDIS_URL": "", "FILESYSTEM_BROKER_DIR": str(tmp_path), "LOG_LEVEL": "DEBUG"}, unset=("CELERY_",)
    )
    assert result.returncode == 0, result.stderr
    assert len(list((tmp_path / "queue").glob("*.msg"))) == 2
    assert "hostname" not in result.stdout + result.stderr
