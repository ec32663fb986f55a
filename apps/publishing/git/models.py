from django.core.validators import MaxLengthValidator
from django.db import models

from apps.core import crypto
from apps.publishing.git.templates import fixed_folder

# The platform value of this kind's channels (Channel.platform).
PLATFORM = "git"
DEFAULT_PATH_TEMPLATE = "content/posts/{slug}.md"
# Hugo serves static/ at the site's root.
DEFAULT_MEDIA_PATH = "static/images/{year}/{name}"
DEFAULT_MEDIA_URL = "/images/{year}/{name}"
DEFAULT_TOKEN_USERNAME = "x-access-token"  # noqa: S105 (a user name, not a secret)


class GitDestination(models.Model):
    """Where a `git` channel's posts go: one Markdown file per post, committed to a branch.

    The token and the private key are stored encrypted (apps/core/crypto.py) and never shown again;
    the host keys are public and shown as entered.
    """

    channel = models.OneToOneField("channels.Channel", on_delete=models.CASCADE, related_name="git_destination")
    repository_url = models.CharField(
        "repository URL",
        max_length=500,
        help_text="https://host/owner/repo.git, ssh://git@host/owner/repo.git or git@host:owner/repo.git.",
    )
    branch = models.CharField(max_length=200, default="main")
    path_template = models.CharField(
        max_length=300,
        default=DEFAULT_PATH_TEMPLATE,
        help_text="Where each post's file goes. Placeholders: {slug}, {id}, {year}, {month}, {day}.",
    )
    media_path = models.CharField(
        "media path template",
        max_length=300,
        default=DEFAULT_MEDIA_PATH,
        help_text="Where each uploaded image a post shows goes, committed with the post. Placeholders: {name} "
        "(required), {year}, {month} (of the upload).",
    )
    media_url = models.CharField(
        "media URL template",
        max_length=500,
        default=DEFAULT_MEDIA_URL,
        help_text="The address the site serves those images at, which the post's Markdown points to (same "
        "placeholders), e.g. /images/{year}/{name} for Hugo's static/images/{year}/{name}.",
    )
    author_name = models.CharField("commit author name", max_length=200, default="Content Publishing")
    author_email = models.EmailField("commit author e-mail", default="publishing@example.com")
    token_username = models.CharField(
        max_length=100,
        default=DEFAULT_TOKEN_USERNAME,
        blank=True,
        help_text="The user name sent with the token over https (GitHub: x-access-token; GitLab: oauth2; "
        "Gitea and Forgejo: any).",
    )
    token_encrypted = models.TextField(blank=True, editable=False)
    ssh_key_encrypted = models.TextField(blank=True, editable=False)
    known_hosts = models.TextField(
        blank=True,
        validators=[MaxLengthValidator(20000)],
        help_text="For ssh: the host's public keys, as lines of a known_hosts file (ssh-keyscan HOST).",
    )
    unpublish_keeps_file = models.BooleanField(
        "on unpublish, keep the file as a draft",
        default=False,
        help_text="Unpublishing deletes the post's file; with this, the file stays, marked as a draft (draft: true).",
    )
    post_url_template = models.CharField(
        "post URL template",
        max_length=500,
        blank=True,
        help_text="The published page of a post, e.g. https://example.com/posts/{slug}/ (same placeholders).",
    )
    commit_url_template = models.CharField(
        "commit URL template",
        max_length=500,
        blank=True,
        help_text="A commit's page, e.g. https://github.com/owner/repo/commit/{commit}.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "git destination"

    def __str__(self) -> str:
        return f"{self.repository_url} ({self.branch})"

    @property
    def media_folder(self) -> str:
        """The repository folder the images go under (Decap CMS's `media_folder`)."""
        return fixed_folder(self.media_path)

    @property
    def public_folder(self) -> str:
        """The address the site serves that folder at (Decap CMS's `public_folder`)."""
        return fixed_folder(self.media_url)

    @property
    def has_token(self) -> bool:
        return bool(self.token_encrypted)

    @property
    def has_ssh_key(self) -> bool:
        return bool(self.ssh_key_encrypted)

    def token(self) -> str:
        return crypto.decrypt(self.token_encrypted) if self.token_encrypted else ""

    def ssh_key(self) -> str:
        return crypto.decrypt(self.ssh_key_encrypted) if self.ssh_key_encrypted else ""

    def commit_url(self, commit: str) -> str:
        return self.commit_url_template.replace("{commit}", commit) if self.commit_url_template and commit else ""
