"""An upload through the Procfile's web process (issue 55): a body over the 1 MB default is taken on
`POST /v1/media` only, spooled to a temporary file as it arrives, never held whole in memory; other
endpoints keep the default, and a body over MEDIA_MAX_BYTES and its framing is refused unread."""

import asyncio
import json
import os
import socket
from pathlib import Path

import pytest
import requests
from django.conf import settings

from apps.media.models import Medium
from bench.media import photo_jpeg
from config.server.streaming import SPOOL_AFTER_BYTES, read_body
from tests.factories import ApiKeyFactory


def with_web(test):
    """The marks of a test that starts the web process on the test database, its rows committed."""
    test = pytest.mark.django_db(transaction=True)(test)
    reason = "the web process needs the test database on PostgreSQL"
    test = pytest.mark.skipif(not settings.IS_POSTGRES, reason=reason)(test)
    return pytest.mark.postgres(test)


@pytest.fixture
def broker_dir(tmp_path) -> Path:
    return tmp_path / "broker"


@pytest.fixture
def web(start_web, broker_dir):
    """The web process storing into this test's media folder, its tasks queued in a folder of the test's."""
    return start_web(
        MEDIA_STORAGE_URL=f"file://{settings.MEDIA_ROOT}",
        CELERY_BROKER_URL="filesystem://",
        FILESYSTEM_BROKER_DIR=broker_dir,
        RATE_LIMIT_FREE=1_000_000,  # the counters on Redis outlive a test run, and account ids repeat
    )


def refused_unread(web, path: str, declared: int, **headers) -> tuple[int, dict, bytes]:
    """A POST declaring `declared` bytes of which only the first 64 KiB are sent: the answer, read
    without sending the rest (which a server reading the body would wait for)."""
    host, port = web.url.removeprefix("http://").split(":")
    fields = "".join(f"{name.replace('_', '-')}: {value}\r\n" for name, value in headers.items())
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {declared}\r\n{fields}\r\n"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(head.encode() + b"x" * 65_536)
        raw = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:  # closed with the rest of the body unread
                break
            if not chunk:
                break
            raw += chunk
    assert raw, "no answer"
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    answer_headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    return int(status_line.split(" ")[1]), answer_headers, body


@with_web
def test_a_5_mb_photograph_is_uploaded_through_the_web_process_and_served_back(web, broker_dir):
    key = ApiKeyFactory(scopes=["read:media", "write:media"])
    photo = photo_jpeg()
    assert len(photo) > 4 * SPOOL_AFTER_BYTES  # over the 1 MB every other endpoint takes

    response = requests.post(
        f"{web.url}/v1/media",
        headers={"Authorization": f"Bearer {key.raw}"},
        files={"file": ("holiday.jpg", photo, "image/jpeg")},
        data={"alt_text": "A field at dusk"},
        timeout=60,
    )

    assert response.status_code == 201, response.text[:2000]
    data = response.json()["data"]
    assert (data["width"], data["height"], data["mime_type"]) == (4000, 3000, "image/jpeg")
    medium = Medium.objects.get(pk=data["id"])
    assert medium.original_name == "holiday.jpg"
    served = requests.get(f"{web.url}/media/{medium.name}", timeout=30)
    assert served.status_code == 200
    assert served.content == (Path(settings.MEDIA_ROOT) / medium.name).read_bytes()
    assert b"Bench Camera" not in served.content  # the EXIF went with the re-encoding
    queued = [path.read_text() for path in (broker_dir / "queue").glob("*.msg")]
    assert any("media.make_variants" in message for message in queued)


@with_web
def test_a_body_over_1_mb_to_another_endpoint_still_answers_413(web):
    key = ApiKeyFactory()
    status, headers, body = refused_unread(
        web, "/v1/channels", 1_500_000, Authorization=f"Bearer {key.raw}", Content_Type="application/json"
    )

    assert status == 413
    assert json.loads(body)["error"]["code"] == "payload_too_large"
    assert headers["connection"] == "close"


@with_web
def test_an_upload_over_media_max_bytes_and_its_framing_answers_413_without_being_read(web):
    key = ApiKeyFactory(scopes=["read:media", "write:media"])
    limit = settings.REQUEST_BODY_LIMITS["/v1/media"]
    status, headers, body = refused_unread(
        web,
        "/v1/media",
        limit + 1,
        Authorization=f"Bearer {key.raw}",
        Content_Type="multipart/form-data; boundary=x",
    )

    assert status == 413
    assert json.loads(body)["error"]["code"] == "payload_too_large"
    assert headers["connection"] == "close"
    assert not Medium.objects.exists()


def received(payload: bytes, chunk: int = 65_536):
    """A fake ASGI receive() handing over `payload` in chunks, as granian does."""
    parts = [payload[start : start + chunk] for start in range(0, len(payload), chunk)]
    messages = iter(
        [{"type": "http.request", "body": part, "more_body": n < len(parts) - 1} for n, part in enumerate(parts)]
    )

    async def receive():
        return next(messages)

    return receive


def body_of(payload: bytes):
    environ = {"CONTENT_LENGTH": str(len(payload))}
    return asyncio.run(read_body(environ, received(payload), max_body=len(payload), timeout=10))


def test_a_large_body_is_spooled_to_a_file_on_disk_not_held_in_memory():
    payload = os.urandom(3 * SPOOL_AFTER_BYTES)

    body, close = body_of(payload)

    with body:
        assert close is False
        # A spooled file has a descriptor (its `name`) only once it rolled over to a real file.
        assert isinstance(body.name, int)
        assert os.fstat(body.name).st_size == len(payload)
        assert body.read() == payload


def test_a_small_body_stays_in_memory():
    payload = os.urandom(SPOOL_AFTER_BYTES // 2)

    body, _ = body_of(payload)

    with body:
        assert body.name is None
        assert body.read() == payload
