"""The account: what every app's data hangs off. This module imports no other app, so any app may
import it (its keys and SSO tokens, which know users, live in apps/users/models/credentials.py)."""

from django.db import models


class Plan(models.TextChoices):
    FREE = "free", "Free"
    STARTER = "starter", "Starter"
    PROFESSIONAL = "professional", "Professional"
    ENTERPRISE = "enterprise", "Enterprise"


class Scope(models.TextChoices):
    READ_CHANNELS = "read:channels"
    READ_POSTS = "read:posts"
    READ_MEDIA = "read:media"
    # Beyond the spec's list: uploads to the media library (POST /media and its changes).
    WRITE_MEDIA = "write:media"
    WRITE_POSTS = "write:posts"
    WRITE_SSO = "write:sso"
    # Beyond the spec's list: the Users endpoints, whose "admin only" rules still apply on top.
    READ_USERS = "read:users"
    WRITE_USERS = "write:users"
    # The people a channel mails its posts to: their addresses are personal data, which read:posts does not reach.
    READ_SUBSCRIBERS = "read:subscribers"
    WRITE_SUBSCRIBERS = "write:subscribers"


ALL_SCOPES: list[str] = [s.value for s in Scope]


class Account(models.Model):
    """The account (the specification's "organisation"): owns users, channels, API keys and webhook
    endpoints."""

    name = models.CharField(max_length=200)
    plan = models.CharField(max_length=16, choices=Plan.choices, default=Plan.FREE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name
