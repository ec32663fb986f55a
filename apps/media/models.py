from django.conf import settings
from django.db import models

from apps.core.fields import JSONField

ALT_TEXT_MAX_LENGTH = 500
ORIGINAL_NAME_MAX_LENGTH = 255


class MediumKind(models.TextChoices):
    IMAGE = "image", "Image"


class Medium(models.Model):
    """An uploaded file of an account's media library: stored once under its content-addressed
    `name`, its responsive copies listed in `variants` once the worker made them."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="media")
    # "<sha256 of the stored bytes>.<extension>": the file's name in the store, the same for the
    # same bytes only. Two uploads of one picture share the file.
    name = models.CharField(max_length=80, editable=False)
    # The uploader's file name, for finding it in the library; never used to store or serve it.
    original_name = models.CharField(max_length=ORIGINAL_NAME_MAX_LENGTH, blank=True, default="")
    kind = models.CharField(max_length=16, choices=MediumKind.choices, default=MediumKind.IMAGE, editable=False)
    mime_type = models.CharField(max_length=40, editable=False)
    width = models.PositiveIntegerField(editable=False)
    height = models.PositiveIntegerField(editable=False)
    size = models.PositiveBigIntegerField(editable=False, help_text="Bytes of the stored file.")
    frames = models.PositiveIntegerField(default=1, editable=False)
    alt_text = models.CharField(
        max_length=ALT_TEXT_MAX_LENGTH, blank=True, default="", help_text="What the image shows, for screen readers."
    )
    # [{"width", "height", "mime_type", "name"}], narrowest first; set once, by the worker.
    variants = JSONField(default=list, blank=True, editable=False)
    variants_made_at = models.DateTimeField(null=True, blank=True, editable=False)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "medium"
        verbose_name_plural = "media library"
        indexes = [
            models.Index(fields=["account", "-id"], name="medium_account_newest"),
            # Whether another row still uses a stored file, before the file is deleted.
            models.Index(fields=["name"], name="medium_name"),
            # The sweeper's scan for uploads whose copies were never made.
            models.Index(fields=["variants_made_at", "created_at"], name="medium_variants_pending"),
        ]

    def __str__(self) -> str:
        return self.original_name or self.name
