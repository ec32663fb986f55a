"""The S3 store of uploads (django-storages' S3Storage), chosen by MEDIA_STORAGE_URL or the AWS_*
variables (apps/media/storage.py); imported only when configured, boto3 with it."""

from storages.backends.s3 import S3Storage

from apps.media.processing import EXTENSIONS


class MediaS3Storage(S3Storage):
    """Every object carries the type its name says (decided from its content when it was stored):
    S3Storage would guess it from the name with Python's `mimetypes`, whose table lacks WebP unless
    the machine's /etc/mime.types has it, and write the rest as application/octet-stream."""

    def get_object_parameters(self, name: str) -> dict:
        parameters = super().get_object_parameters(name)
        mime_type = EXTENSIONS.get(name.rsplit(".", 1)[-1])
        if mime_type:
            parameters["ContentType"] = mime_type
        return parameters
