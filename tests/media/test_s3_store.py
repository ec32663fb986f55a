"""Uploads in an S3-compatible store (MEDIA_STORAGE_URL=s3://...): tried against a real S3 server on
this machine (moto's server mode), through the API, the worker's copies and deletion."""

import hashlib
import io
import json
import mimetypes

import boto3
import pytest
import requests
from moto.server import ThreadedMotoServer
from PIL import Image

from apps.media.models import Medium
from apps.media.storage import storage_from_environment
from apps.media.variants import variants_make
from tests.conftest import free_port
from tests.factories import ApiKeyFactory
from tests.media import images

pytestmark = pytest.mark.django_db

BUCKET = "cps-media"
PUBLIC_READ = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{BUCKET}/*"}
    ],
}
YEAR = "public, max-age=31536000, immutable"


@pytest.fixture(scope="module")
def s3_server():
    """A local S3 (moto) with the bucket, started once for the module; its address."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    s3 = boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="test", aws_secret_access_key="test"
    )
    s3.create_bucket(Bucket=BUCKET)
    # Readers fetch the files without credentials: the bucket's policy docs/media.md gives.
    s3.put_bucket_policy(Bucket=BUCKET, Policy=json.dumps(PUBLIC_READ))
    yield endpoint, s3
    server.stop()


@pytest.fixture
def bucket(s3_server, settings, monkeypatch):
    """The bucket, emptied, as the store uploads go to; the store is configured from its URL, as at
    start-up. Call with a prefix to store under it."""
    endpoint, s3 = s3_server
    for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", []):
        s3.delete_object(Bucket=BUCKET, Key=item["Key"])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    monkeypatch.delenv("MEDIA_URL", raising=False)

    def store(prefix: str = ""):
        monkeypatch.setenv("MEDIA_STORAGE_URL", f"s3://{BUCKET}/{prefix}?endpoint_url={endpoint}&region_name=us-east-1")
        _, settings.MEDIA_URL, settings.MEDIA_STORAGE = storage_from_environment()
        return s3

    return store


@pytest.fixture
def writer(client_for):
    return client_for(ApiKeyFactory(scopes=["read:media", "write:media"]))


def upload(client, data: bytes, name: str) -> dict:
    file = io.BytesIO(data)
    file.name = name
    response = client.post("/v1/media", {"file": file}, format="multipart")
    assert response.status_code == 201, response.content
    return response.json()["data"]


def keys(s3) -> set[str]:
    return {item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}


def test_an_upload_lands_in_the_bucket_stripped_typed_and_cacheable_for_a_year(bucket, writer):
    s3 = bucket()
    data = upload(writer, images.jpeg_with_gps(), "holiday.jpg")
    name = Medium.objects.get(pk=data["id"]).name

    stored = s3.get_object(Bucket=BUCKET, Key=name)
    body = stored["Body"].read()

    assert keys(s3) == {name}
    assert name == f"{hashlib.sha256(body).hexdigest()}.jpg"
    assert Image.open(io.BytesIO(body)).getexif() == {}
    assert stored["ContentType"] == "image/jpeg"
    assert stored["CacheControl"] == YEAR
    # Shown, never saved as a download, as the web process serves it.
    assert stored["ContentDisposition"] == "inline"
    assert data["bytes"] == len(body)


def test_an_uploads_url_is_the_stores_public_address_and_serves_the_image(bucket, writer):
    s3 = bucket()
    data = upload(writer, images.png(320, 200), "chart.png")

    served = requests.get(data["url"], timeout=10)

    assert data["url"].startswith(s3.meta.endpoint_url) and "Signature" not in data["url"]
    assert served.status_code == 200
    assert served.headers["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(served.content)).size == (320, 200)


def test_the_web_process_serves_the_stores_files_when_media_url_is_its_own_path(bucket, writer, client, settings):
    bucket()
    settings.MEDIA_URL = "/media/"
    data = upload(writer, images.png(64, 48), "icon.png")

    response = client.get(data["url"].removeprefix(settings.SITE_URL))

    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(b"".join(response.streaming_content))).size == (64, 48)


def test_the_workers_copies_land_in_the_bucket_with_their_types_even_where_mimetypes_knows_none(
    bucket, writer, monkeypatch, settings
):
    settings.MEDIA_VARIANT_WIDTHS = [480, 960]
    s3 = bucket()
    # A machine without /etc/mime.types: Python's own table lacks WebP.
    monkeypatch.setattr(mimetypes, "guess_type", lambda *args, **kwargs: (None, None))
    data = upload(writer, images.png(1000, 500), "wide.png")

    assert variants_make(data["id"]) is True

    medium = Medium.objects.get(pk=data["id"])
    stem = medium.name.removesuffix(".png")
    assert keys(s3) == {medium.name, f"{stem}-480w.webp", f"{stem}-480w.png", f"{stem}-960w.webp", f"{stem}-960w.png"}
    for variant in medium.variants:
        stored = s3.get_object(Bucket=BUCKET, Key=variant["name"])
        assert (stored["ContentType"], stored["CacheControl"]) == (variant["mime_type"], YEAR)
        assert Image.open(stored["Body"]).width == variant["width"]
    assert s3.head_object(Bucket=BUCKET, Key=medium.name)["ContentType"] == "image/png"


def test_deleting_a_medium_removes_its_file_and_copies_from_the_bucket(
    bucket, writer, django_capture_on_commit_callbacks, settings
):
    settings.MEDIA_VARIANT_WIDTHS = [480, 960]
    s3 = bucket()
    kept = upload(writer, images.png(200, 100), "kept.png")
    data = upload(writer, images.png(1000, 500), "gone.png")
    variants_make(data["id"])
    assert len(keys(s3)) == 6

    with django_capture_on_commit_callbacks(execute=True):
        assert writer.delete(f"/v1/media/{data['id']}").status_code == 204

    assert keys(s3) == {Medium.objects.get(pk=kept["id"]).name}


def test_a_prefix_in_the_url_holds_every_file_and_is_in_their_addresses(bucket, writer):
    s3 = bucket("site/uploads/")
    data = upload(writer, images.png(600, 300), "banner.png")
    variants_make(data["id"])
    medium = Medium.objects.get(pk=data["id"])

    assert keys(s3) == {f"site/uploads/{name}" for name in [medium.name, *(v["name"] for v in medium.variants)]}
    assert data["url"].endswith(f"/{BUCKET}/site/uploads/{medium.name}")
    assert requests.get(data["url"], timeout=10).status_code == 200
