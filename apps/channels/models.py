import re
import secrets
import zoneinfo
from collections.abc import Set as AbcSet
from functools import cache

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator, URLValidator
from django.db import models
from django.urls import reverse
from django.utils.text import slugify

from apps.core.destinations import kinds


class Platform(models.TextChoices):
    """The platforms the service publishes itself; each destination package adds its own
    (apps.core.destinations), so `platform_choices()`, not this, lists them all."""

    BLOG = "blog", "Blog"
    API = "api", "API (external publishing)"


def platform_choices() -> list[tuple[str, str]]:
    """Every platform a channel may have: the blog, each installed destination's (by platform), and
    `api`. A callable, so a new destination needs no migration of the field."""
    destinations = [(kind.platform, kind.label or kind.platform) for kind in kinds()]
    return [(Platform.BLOG.value, Platform.BLOG.label), *destinations, (Platform.API.value, Platform.API.label)]


class _RegisteredPlatforms(AbcSet):
    """The installed destinations' platforms, read from the registry whenever asked: no hand-kept
    copy of it (the kinds register themselves once the apps are ready, after this module loads)."""

    def _platforms(self) -> frozenset[str]:
        return frozenset(kind.platform for kind in kinds())

    def __contains__(self, platform: object) -> bool:
        return platform in self._platforms()

    def __iter__(self):
        return iter(sorted(self._platforms()))

    def __len__(self) -> int:
        return len(self._platforms())


# Platforms whose posts go out through an installed destination (apps/publishing); see
# through_destination for a channel whose kind is not installed here.
DESTINATION_PLATFORMS = _RegisteredPlatforms()


def through_destination(platform: str) -> bool:
    """Whether a channel of `platform` publishes through a destination set up for it
    (apps/publishing): a post is `published` once the destination confirms. Blog channels are their
    own destination and `api` channels have the external workflow; any other platform has a
    destination, installed or not (a channel of a kind whose package is not installed here fails
    its jobs, saying so, rather than being published as a blog post)."""
    return platform not in (Platform.BLOG, Platform.API)


def site_platforms() -> frozenset[str]:
    """Platforms with a public site (apps/blog): blogs, and the destinations that declare public pages."""
    return frozenset({Platform.BLOG.value, *(kind.platform for kind in kinds() if kind.site)})


DEFAULT_IMAGE_WIDTH = 1200
DEFAULT_ACCENT_COLOR = "#2563eb"
HANDLE_MAX_LENGTH = 60
# Paths under /blog/ that are not a blog (apps/blog/urls.py), and words kept for later ones.
RESERVED_HANDLES = frozenset({"preview", "static", "feed", "sitemap", "robots", "admin", "api", "www"})
# The public site's URL names (apps/blog/urls.py on the service's host, apps/blog/domain_urls.py on
# a blog's own domain: the same names, without the handle).
DOMAIN_URLCONF = "apps.blog.domain_urls"


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def validate_time_zone(value: str) -> None:
    if value not in _time_zones():
        raise ValidationError("Not a time zone name of the IANA database (for example Europe/Berlin or UTC).")


def validate_handle(value: str) -> None:
    if value in RESERVED_HANDLES:
        raise ValidationError(f"“{value}” is reserved; choose another handle.")


DOMAIN = re.compile(r"(?=.{4,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}")


def normalize_domain(value: str | None) -> str | None:
    """A host name as people type it and as it is stored: no spaces, lower-case, no trailing dot."""
    return (value or "").strip().lower().rstrip(".") or None


def validate_domain(value: str) -> None:
    if not DOMAIN.fullmatch(value):
        raise ValidationError("Enter a host name such as blog.example.com: lower-case, no scheme, port or path.")
    # A name the service answers to already (".example.com" in ALLOWED_HOSTS: that name and its subdomains).
    wildcards = [host[1:] for host in settings.ALLOWED_HOSTS if host.startswith(".")]
    if value in settings.ALLOWED_HOSTS or any(value == host or value.endswith(f".{host}") for host in wildcards):
        raise ValidationError("This host name is the service's own; a blog needs a domain of its own.")


language_validator = RegexValidator(
    r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$", "Enter a language tag such as en, de or pt-BR."
)
accent_color_validator = RegexValidator(r"^#[0-9a-fA-F]{6}$", "Enter a colour as #rrggbb, for example #2563eb.")


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
    platform = models.CharField(max_length=16, choices=platform_choices)
    image_width = models.PositiveIntegerField(
        default=DEFAULT_IMAGE_WIDTH, help_text="Default image width in pixels for this channel."
    )
    # The public site of a blog channel (apps/blog). Other platforms leave these alone.
    handle = models.SlugField(
        max_length=HANDLE_MAX_LENGTH,
        null=True,
        blank=True,
        unique=True,
        validators=[validate_handle],
        help_text="Channels with a public site: the address /blog/<handle>/ on the service's host. Left empty, it "
        "is made from the title.",
    )
    domain = models.CharField(
        max_length=253,
        null=True,
        blank=True,
        unique=True,
        validators=[validate_domain],
        help_text="Channels with a public site: a host name of the blog's own (blog.example.com), whose DNS points "
        "at the service; the blog is then at its root.",
    )
    # db_default on each: rows inserted by raw SQL (or an older release's code mid-deploy) get them too.
    description = models.CharField(
        max_length=300,
        blank=True,
        default="",
        db_default="",
        help_text="Channels with a public site: one line under the blog's name, and its feed's subtitle.",
    )
    language = models.CharField(
        max_length=35,
        default="en",
        db_default="en",
        validators=[language_validator],
        help_text="Channels with a public site: the language of its pages.",
    )
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        db_default="UTC",
        validators=[validate_time_zone],
        help_text="Channels with a public site: dates are shown in this zone.",
    )
    accent_color = models.CharField(
        max_length=7,
        default=DEFAULT_ACCENT_COLOR,
        db_default=DEFAULT_ACCENT_COLOR,
        validators=[accent_color_validator],
        help_text="Channels with a public site: the colour of links and the header's line, as #rrggbb.",
    )
    logo_url = models.URLField(
        max_length=2000,
        blank=True,
        default="",
        db_default="",
        validators=[URLValidator(schemes=["https"])],
        help_text="Channels with a public site: an https:// image shown beside the blog's name (about 48 pixels high).",
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
    # Names the positions of the channel's posts in id order: the database's triggers (migration
    # channels 0006) give it a new random value in the transaction of every change that moves a post
    # to another position (a post inserted or moved in below another, one deleted or moved out from
    # below another), and of nothing else: appending posts and editing them keep it. Any other value
    # written here is replaced by a new random one. Deep pages' starting points are cached under it
    # (apps.posts.page_anchors). A row inserted by raw SQL starts at 0, under which none are kept.
    posts_ids_version = models.BigIntegerField(default=new_version, db_default=0, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["account", "id"], name="channel_account_id")]

    def __str__(self) -> str:
        return f"{self.title} ({self.platform})"

    def save(self, *args, **kwargs) -> None:
        if self.platform in site_platforms() and not self.handle:
            self.handle = self.free_handle()
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "handle"}
        self.domain = normalize_domain(self.domain)
        if not self._state.adding and kwargs.get("update_fields") is None:
            # A channel saved after it was read (the admin's form) would otherwise write back the
            # posts_count it read, undoing the posts created or deleted in between.
            fields = self._meta.concrete_fields
            kwargs["update_fields"] = [f.name for f in fields if not f.primary_key and f.name != "posts_count"]
        super().save(*args, **kwargs)

    def free_handle(self) -> str:
        """A handle made from the title that no other channel has (a unique constraint settles a race)."""
        base = slugify(self.title)[: HANDLE_MAX_LENGTH - 8].strip("-") or "blog"
        if base in RESERVED_HANDLES:
            base = f"{base}-blog"
        taken = set(
            Channel.objects.filter(handle__startswith=base).exclude(pk=self.pk).values_list("handle", flat=True)
        )
        candidate, number = base, 1
        while candidate in taken:
            number += 1
            candidate = f"{base}-{number}"
        return candidate

    @property
    def has_public_site(self) -> bool:
        return self.platform in site_platforms() and bool(self.handle or self.domain)

    def public_url(self, name: str = "blog:index", **kwargs) -> str | None:
        """The absolute address of one of the blog's pages (by its URL name in apps/blog), on its
        own domain when it has one; None for a channel without a public site."""
        if not self.has_public_site:
            return None
        if self.domain:
            return (
                f"{settings.BLOG_DOMAIN_SCHEME}://{self.domain}{reverse(name, urlconf=DOMAIN_URLCONF, kwargs=kwargs)}"
            )
        return f"{settings.SITE_URL}{reverse(name, kwargs={'handle': self.handle, **kwargs})}"

    @property
    def url(self) -> str | None:
        """The channel's public address (the API's `url`)."""
        return self.public_url()

    def post_url(self, slug: str) -> str | None:
        """The address of the page of the channel's post with this slug (when published)."""
        return self.public_url("blog:post", slug=slug)

    @property
    def publishes_externally(self) -> bool:
        return self.platform == Platform.API

    @property
    def publishes_through_destination(self) -> bool:
        return through_destination(self.platform)

    def clean(self) -> None:
        if self.team_id and self.account_id and self.team.account_id != self.account_id:
            raise ValidationError({"team": "The team must belong to the channel's account."})
