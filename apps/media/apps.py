from django.apps import AppConfig


class MediaConfig(AppConfig):
    name = "apps.media"
    label = "media"
    verbose_name = "Media library"

    def ready(self) -> None:
        # Pillow's own limit, set explicitly: it refuses (DecompressionBombError) an image of more
        # than twice MAX_IMAGE_PIXELS and only warns above it; processing.py refuses anything above
        # MEDIA_MAX_PIXELS itself, before decoding a pixel.
        from django.conf import settings
        from PIL import Image

        Image.MAX_IMAGE_PIXELS = settings.MEDIA_MAX_PIXELS
