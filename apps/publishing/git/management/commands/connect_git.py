import os
from pathlib import Path

from django.core.management.base import CommandParser

from apps.channels.models import Channel
from apps.core.commands import Failure, JsonCommand
from apps.core.errors import DomainError
from apps.core.keep import KEEP
from apps.publishing.git.models import DEFAULT_MEDIA_PATH, DEFAULT_MEDIA_URL, DEFAULT_PATH_TEMPLATE, GitDestination
from apps.publishing.git.services import GitSettings, git_destination_save

# The options that set a field of the set-up (option -> field); one left out keeps what is set up.
OPTION_FIELDS = {
    "branch": "branch",
    "path": "path_template",
    "media_path": "media_path",
    "media_url": "media_url",
    "author_name": "author_name",
    "author_email": "author_email",
    "token_username": "token_username",
}


def destination_data(destination: GitDestination) -> dict:
    """The set-up as scripts see it: everything but the secrets (which are only said to be there)."""
    return {
        "channel_id": destination.channel_id,
        "repository_url": destination.repository_url,
        "branch": destination.branch,
        "path_template": destination.path_template,
        "media_path": destination.media_path,
        "media_url": destination.media_url,
        "media_folder": destination.media_folder,
        "public_folder": destination.public_folder,
        "author_name": destination.author_name,
        "author_email": destination.author_email,
        "token_username": destination.token_username,
        "has_token": destination.has_token,
        "has_ssh_key": destination.has_ssh_key,
        "has_known_hosts": bool(destination.known_hosts.strip()),
        "unpublish_keeps_file": destination.unpublish_keeps_file,
        "post_url_template": destination.post_url_template,
        "commit_url_template": destination.commit_url_template,
    }


class Command(JsonCommand):
    help = (
        "Set a git channel up to commit its posts to a repository (token from an environment variable, or an "
        "SSH deploy key with the host's known_hosts lines). Secrets are stored encrypted and never printed."
    )
    json_help = "print the destination as JSON (errors on stderr)"

    def add_command_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("channel_id", type=int)
        parser.add_argument("--url", required=True, help="https://..., ssh://... or git@host:path")
        # Left out on a second run, what is set up stays (defaults: main, content/posts/{slug}.md).
        parser.add_argument("--branch", default=None)
        parser.add_argument("--path", default=None, help=f"path template (default {DEFAULT_PATH_TEMPLATE})")
        parser.add_argument(
            "--media-path", default=None, help=f"where uploaded images go (default {DEFAULT_MEDIA_PATH})"
        )
        parser.add_argument(
            "--media-url", default=None, help=f"where the site serves them (default {DEFAULT_MEDIA_URL})"
        )
        parser.add_argument("--token-username", default=None, help="user name sent with the token (x-access-token)")
        parser.add_argument("--author-name", default=None)
        parser.add_argument("--author-email", default=None)
        credentials = parser.add_mutually_exclusive_group()
        credentials.add_argument("--token-env", metavar="VAR", help="the environment variable holding the token")
        credentials.add_argument("--ssh-key-file", metavar="F", help="a file holding the SSH private key")
        parser.add_argument("--known-hosts-file", metavar="F", help="known_hosts lines of the ssh host")

    def as_json(self, destination: GitDestination) -> dict:
        return destination_data(destination)

    def as_text(self, destination: GitDestination) -> str:
        return (
            f"Channel {destination.channel_id} commits to {destination.repository_url} "
            f"({destination.branch}, {destination.path_template})."
        )

    def run(self, options) -> GitDestination:
        channel = Channel.objects.filter(pk=options["channel_id"]).first()
        if channel is None:
            raise Failure("not_found", f"No channel with id {options['channel_id']}.")
        token, ssh_key = KEEP, KEEP
        if options["token_env"]:
            token = os.environ.get(options["token_env"], "")
            if not token.strip():
                raise Failure("missing_token", f"The environment variable {options['token_env']} is not set or empty.")
        if options["ssh_key_file"]:
            ssh_key = self._read(options["ssh_key_file"], "SSH key")
        known_hosts = self._read(options["known_hosts_file"], "known hosts") if options["known_hosts_file"] else None
        # What the options leave out stays as set up (or takes the default on a first run).
        base = GitDestination.objects.filter(channel=channel).first() or GitSettings(repository_url="")
        kept = {name: getattr(base, name) for name in GitSettings.__dataclass_fields__}
        given = {field: options[option] for option, field in OPTION_FIELDS.items() if options[option]}
        if known_hosts is not None:
            given["known_hosts"] = known_hosts
        settings = GitSettings(**(kept | given | {"repository_url": options["url"]}))
        try:
            return git_destination_save(channel=channel, settings=settings, token=token, ssh_key=ssh_key)
        except DomainError as exc:
            raise Failure(exc.code, exc.message, exc.details) from None

    def _read(self, path: str, what: str) -> str:
        try:
            return Path(path).read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise Failure("unreadable_file", f"Cannot read the {what} file {path}: {exc}.") from None
