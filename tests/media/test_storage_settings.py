"""Where uploads are stored is read from the environment at start-up (apps/media/storage.py): the local
folder by default, an S3-compatible store by MEDIA_STORAGE_URL or the AWS_* variables; a value that
cannot be used stops the start-up with a sentence naming it."""

import json
import subprocess

import pytest
from django.conf import settings
from django.test import override_settings

from config.checks import production_shares_its_media
from tests.conftest import settings_loaded

# Everything these tests set is unset first, so the machine's environment cannot leak in.
UNSET = ("MEDIA_", "AWS_")
SHOW = (
    "import json, config.settings as s; "
    "print(json.dumps({'root': str(s.MEDIA_ROOT), 'url': s.MEDIA_URL, 'storage': s.MEDIA_STORAGE}))"
)
ENDPOINT = "http://127.0.0.1:9000"


def start(**env) -> subprocess.CompletedProcess:
    return settings_loaded(SHOW, env, unset=UNSET)


def loaded(**env) -> dict:
    result = start(**env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_a_store_uploads_stay_in_var_media_served_by_the_web_process_at_media():
    assert loaded() == {
        "root": str(settings.BASE_DIR / "var" / "media"),
        "url": "/media/",
        "storage": {
            "BACKEND": "apps.media.storage.AtomicFileSystemStorage",
            "OPTIONS": {"location": str(settings.BASE_DIR / "var" / "media"), "base_url": "/media/"},
        },
    }


def test_a_local_folder_may_be_named_by_media_root_or_a_file_url_and_put_behind_a_cdn():
    by_root = loaded(MEDIA_ROOT="/srv/media", MEDIA_URL="https://cdn.example.com/media/")
    by_url = loaded(MEDIA_STORAGE_URL="file:///srv/media", MEDIA_URL="https://cdn.example.com/media/")

    assert by_root == by_url
    assert by_root["storage"]["OPTIONS"] == {"location": "/srv/media", "base_url": "https://cdn.example.com/media/"}


def test_an_s3_url_names_the_bucket_its_prefix_and_options_and_objects_are_public_and_immutable():
    found = loaded(MEDIA_STORAGE_URL=f"s3://cps-media/site/uploads/?endpoint_url={ENDPOINT}&region_name=auto")

    # None: the store's own addresses (Django reads an empty MEDIA_URL as "/").
    assert found["url"] is None
    assert found["storage"] == {
        "BACKEND": "apps.media.s3.MediaS3Storage",
        "OPTIONS": {
            "bucket_name": "cps-media",
            "location": "site/uploads",
            "querystring_auth": False,
            "file_overwrite": True,
            "object_parameters": {
                "CacheControl": "public, max-age=31536000, immutable",
                "ContentDisposition": "inline",
            },
            "endpoint_url": ENDPOINT,
            "region_name": "auto",
        },
    }


def test_the_aws_variables_name_the_same_store_as_the_url():
    by_url = loaded(
        MEDIA_STORAGE_URL=f"s3://cps-media/site?endpoint_url={ENDPOINT}&addressing_style=path"
        "&custom_domain=media.example.com&signature_version=s3v4&region_name=eu-west-3",
        MEDIA_URL="https://cdn.example.com/",
    )
    by_variables = loaded(
        AWS_STORAGE_BUCKET_NAME="cps-media",
        AWS_LOCATION="site",
        AWS_S3_ENDPOINT_URL=ENDPOINT,
        AWS_S3_ADDRESSING_STYLE="path",
        AWS_S3_CUSTOM_DOMAIN="media.example.com",
        AWS_S3_SIGNATURE_VERSION="s3v4",
        AWS_S3_REGION_NAME="eu-west-3",
        MEDIA_URL="https://cdn.example.com/",
    )

    assert by_url == by_variables
    assert by_url["url"] == "https://cdn.example.com/"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"MEDIA_STORAGE_URL": "https://cps-media.s3.amazonaws.com"}, "MEDIA_STORAGE_URL must be file:///"),
        ({"MEDIA_STORAGE_URL": "file://relative/folder"}, "MEDIA_STORAGE_URL must be file:///"),
        ({"MEDIA_STORAGE_URL": "s3://CPS_Media"}, "bucket's name must be 3 to 63 lowercase"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media:9000"}, "host and port go in endpoint_url"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media/a/../b"}, "prefix must be a plain folder path"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media?acl=public-read"}, "names 'acl' which it does not take"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media?region_name=a&region_name=b"}, "names 'region_name' twice"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media?endpoint_url=minio:9000"}, "endpoint_url must be the store's http(s)"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media?region_name="}, "region_name must be a region's name"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media?custom_domain=https://cdn.example.com"}, "host name without scheme"),
        ({"AWS_STORAGE_BUCKET_NAME": "cps-media", "AWS_S3_ADDRESSING_STYLE": "dns"}, "auto, virtual or path"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media", "AWS_STORAGE_BUCKET_NAME": "other"}, "unset AWS_STORAGE_BUCKET"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media", "MEDIA_ROOT": "/srv/media"}, "unset MEDIA_ROOT"),
        ({"AWS_STORAGE_BUCKET_NAME": "cps-media", "MEDIA_ROOT": "/srv/media"}, "unset MEDIA_ROOT"),
        ({"AWS_S3_ENDPOINT_URL": ENDPOINT}, "AWS_S3_ENDPOINT_URL set without AWS_STORAGE_BUCKET_NAME"),
        ({"MEDIA_STORAGE_URL": "s3://cps-media", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}, "without AWS_SECRET_ACCESS_KEY"),
        ({"MEDIA_URL": "/files/"}, "MEDIA_URL must be /media/"),
        ({"MEDIA_URL": "https://cdn.example.com/media"}, "ending with a slash"),
        ({"MEDIA_URL": "//cdn.example.com/media/"}, "absolute address"),
    ],
)
def test_a_store_that_cannot_be_used_stops_the_start_up_with_its_reason(env, message):
    result = start(**env)

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and message in result.stderr, result.stderr


def test_credentials_in_the_url_are_refused_without_being_repeated():
    result = start(MEDIA_STORAGE_URL="s3://AKIDEXAMPLE:wJalrXUtnFEMI@cps-media/site")

    assert result.returncode != 0
    assert "must not hold credentials: they are read from AWS_ACCESS_KEY_ID" in result.stderr
    assert "wJalrXUtnFEMI" not in result.stderr


PRODUCTION = {"IS_PRODUCTION": True, "CELERY_BROKER_URL": "redis://redis.internal:6379/0"}


def warned() -> list[str]:
    return [warning.id for warning in production_shares_its_media()]


def test_production_warns_when_workers_on_other_machines_would_not_see_uploads_on_the_local_disk():
    local_default = {
        "MEDIA_ROOT": settings.BASE_DIR / "var" / "media",
        "MEDIA_STORAGE": {"BACKEND": "apps.media.storage.AtomicFileSystemStorage", "OPTIONS": {}},
    }
    with override_settings(**PRODUCTION, **local_default):
        assert warned() == ["cps.W001"]
    with override_settings(**{**PRODUCTION, **local_default, "CELERY_BROKER_URL": "filesystem://"}):
        assert warned() == []
    with override_settings(**{**PRODUCTION, **local_default, "IS_PRODUCTION": False}):
        assert warned() == []


def test_production_does_not_warn_with_a_shared_store_or_a_folder_named_on_purpose():
    s3 = {"BACKEND": "apps.media.s3.MediaS3Storage", "OPTIONS": {"bucket_name": "cps-media"}}
    with override_settings(**PRODUCTION, MEDIA_STORAGE=s3, MEDIA_ROOT=settings.BASE_DIR / "var" / "media"):
        assert warned() == []
    # The autouse fixture's own folder stands for a mounted one.
    with override_settings(**PRODUCTION):
        assert warned() == []
