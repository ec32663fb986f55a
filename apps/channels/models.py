import secrets

from django.core.exceptions import ValidationError
from django.db import models


class Platform(models.TextChoices):
    BLOG = "blog", "Blog"
    GIT = "git", "Git"
    LINKEDIN = "linkedin", "LinkedIn"
    API = "api", "API (external publishing)"


# Platforms whose posts go out through a destination set up for the channel (apps/publishing): a
# post is `published` once the destination confirms. Blog channels are their own destination.
DESTINATION_PLATFORMS = frozenset({Platform.GIT, Platform.LINKEDIN})

DEFAULT_IMAGE_WIDTH = 1200


def new_version() -> int:
    """A channel's first version. Versions are random, not counted: a number never names two
    states, even after a database is recreated or restored beside a cache that outlived it."""
    return secrets.randbits(52)


class Team(models.Model):
    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["account", "name"], name="team_unique_name_per_account")]

    def __str__(self) -> str:
        return self.name


class ChannelQuerySet(models.QuerySet):
    def of_account(self, account_id: int) -> "ChannelQuerySet":
        return self.filter(account_id=account_id)

    def listed(self) -> "ChannelQuerySet":
        """The list form: with its team (`posts_count` is a column of the row)."""
        return self.select_related("team")


class Channel(models.Model):
    """A publishing destination of an account. Its platform decides how its posts get published:
    `api` channels through the external confirmation workflow, the others directly."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="channels")
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="channels")
    title = models.CharField(max_length=200)
    platform = models.CharField(max_length=16, choices=Platform.choices)
    image_width = models.PositiveIntegerField(
        default=DEFAULT_IMAGE_WIDTH, help_text="Default image width in pixels for this channel."
    )
    # Names the state of the channel and of everything its API representations show: its team,
    # its posts with their tags and media, their number. The database's triggers (migration
    # channels 0002) give it a new value in the transaction of every change of any of them,
    # whatever the path (services, admin, bulk SQL, cascades); whatever value Django writes here is
    # replaced. Cached representations are stored under it (apps.api.representations).
    version = models.BigIntegerField(default=new_version, editable=False)
    # The number of the channel's posts, kept by the database's triggers (migration channels 0003)
    # in the transaction of every insert, delete or move of posts, whatever the path: one UPDATE
    # that adds each statement's change to the stored number (`posts_count + n`, as an F()
    # expression would), never a number read earlier and written back. Reads never count; the
    # `recount_posts` command finds and mends drift. `db_default`: rows inserted by raw SQL too.
    posts_count = models.IntegerField("posts", default=0, db_default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["account", "id"], name="channel_account_id")]

    def __str__(self) -> str:
        return f"{self.title} ({self.platform})"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding and kwargs.get("update_fields") is None:
            # A channel saved after it was read (the admin's form) would otherwise write back the
            # posts_count it read, undoing the posts created or deleted in between.
            fields = self._meta.concrete_fields
            kwargs["update_fields"] = [f.name for f in fields if not f.primary_key and f.name != "posts_count"]
        super().save(*args, **kwargs)

    @property
    def publishes_externally(self) -> bool:
        return self.platform == Platform.API

    @property
    def publishes_through_destination(self) -> bool:
        return self.platform in DESTINATION_PLATFORMS

    def clean(self) -> None:
        if self.team_id and self.account_id and self.team.account_id != self.account_id:
            raise ValidationError({"team": "The team must belong to the channel's account."})
