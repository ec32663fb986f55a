"""Setting a git channel up: every check of the set-up in one place, for the Settings area and
`manage.py connect_git` alike. Credentials are encrypted before they are stored and never
returned."""

from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from apps.channels.models import Channel
from apps.core import crypto
from apps.core.destinations import PublishError
from apps.core.errors import DomainError
from apps.core.keep import KEEP, Keep
from apps.core.validation import field_error
from apps.publishing.git import repository
from apps.publishing.git.destination import GitPublisher
from apps.publishing.git.models import (
    DEFAULT_MEDIA_PATH,
    DEFAULT_MEDIA_URL,
    DEFAULT_PATH_TEMPLATE,
    DEFAULT_TOKEN_USERNAME,
    PLATFORM,
    GitDestination,
)
from apps.publishing.git.remote import keyscan_command, parse_remote
from apps.publishing.git.templates import check_media_path, check_media_url, check_path_template


@dataclass(frozen=True)
class GitSettings:
    repository_url: str
    branch: str = "main"
    path_template: str = DEFAULT_PATH_TEMPLATE
    media_path: str = DEFAULT_MEDIA_PATH
    media_url: str = DEFAULT_MEDIA_URL
    author_name: str = "Content Publishing"
    author_email: str = "publishing@example.com"
    token_username: str = DEFAULT_TOKEN_USERNAME
    known_hosts: str = ""
    unpublish_keeps_file: bool = False
    post_url_template: str = ""
    commit_url_template: str = ""


def git_settings_check(settings: GitSettings) -> None:
    """InvalidInput naming the field of the first thing wrong with the set-up."""
    try:
        remote = parse_remote(settings.repository_url)
    except PublishError as exc:
        raise field_error("repository_url", "invalid", exc.message) from None
    problem = repository.check_host(remote)
    if problem:
        raise field_error("repository_url", "address", f"The repository's host is not allowed: {problem}")
    branch = settings.branch.strip()
    if not branch or branch.startswith(("-", "/")) or ".." in branch or any(c in branch for c in " ~^:?*[\\"):
        raise field_error("branch", "invalid", f"{settings.branch!r} is not a valid branch name.")
    for name, check in (
        ("path_template", check_path_template),
        ("media_path", check_media_path),
        ("media_url", check_media_url),
    ):
        try:
            check(getattr(settings, name))
        except PublishError as exc:
            raise field_error(name, "invalid", exc.message) from None
    try:
        validate_email(settings.author_email)
    except ValidationError:
        raise field_error("author_email", "invalid", "Enter a valid e-mail address for the commit author.") from None
    for name in ("post_url_template", "commit_url_template"):
        value = getattr(settings, name).strip()
        if value and not value.startswith(("https://", "http://")):
            raise field_error(name, "invalid", "Enter an http(s):// address, or leave it empty.")


@transaction.atomic
def git_destination_save(
    *,
    channel: Channel,
    settings: GitSettings,
    token: str | Keep | None = KEEP,
    ssh_key: str | Keep | None = KEEP,
) -> GitDestination:
    """Set the channel's repository up (or change it). `token` and `ssh_key`: a new value, None to
    clear it, KEEP to leave the stored one."""
    if channel.platform != PLATFORM:
        raise DomainError(
            f"Only git channels publish to a repository; this channel is {channel.platform}.", code="invalid_platform"
        )
    git_settings_check(settings)
    destination = GitDestination.objects.select_for_update().filter(channel=channel).first() or GitDestination(
        channel=channel
    )
    for name, value in vars(settings).items():
        setattr(destination, name, value.strip() if isinstance(value, str) else value)
    if not isinstance(token, Keep):
        destination.token_encrypted = crypto.encrypt(token.strip()) if token and token.strip() else ""
    if not isinstance(ssh_key, Keep):
        key = (ssh_key or "").strip()
        if key and "PRIVATE KEY" not in key:
            raise field_error("ssh_key", "invalid", "Paste the whole private key (-----BEGIN ... PRIVATE KEY-----).")
        destination.ssh_key_encrypted = crypto.encrypt(key) if key else ""
    remote = parse_remote(destination.repository_url)
    if remote.kind == "ssh" and not destination.known_hosts.strip():
        raise field_error(
            "known_hosts",
            "required",
            f"An ssh repository needs its host's public key: paste the output of {keyscan_command(remote)}.",
        )
    destination.save()
    return destination


def git_destination_check(*, destination: GitDestination) -> str:
    """ "Test connection": reach the repository with the stored set-up and describe the branch's
    head; DomainError with the sentence of what went wrong."""
    try:
        return GitPublisher(destination).check()
    except PublishError as exc:
        raise DomainError(exc.message, code="connection_failed") from None
    except crypto.CredentialUnreadable as exc:
        raise DomainError(str(exc), code="connection_failed") from None
