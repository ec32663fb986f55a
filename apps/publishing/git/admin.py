"""Settings → Publishing: git → Git destinations: where each git channel commits its posts. The token
and the private key are write-only: the page says whether one is stored, never what it is."""

from django import forms
from django.contrib import admin

from apps.core.admin import (
    DomainErrorsAsMessages,
    ObjectButton,
    ObjectButtonsAdmin,
    SetupLink,
    add_input_error,
)
from apps.core.errors import InvalidInput
from apps.core.keep import KEEP
from apps.core.step_up import StepUp
from apps.publishing.git import services
from apps.publishing.git.models import PLATFORM, GitDestination

SETTINGS_FIELDS = tuple(services.GitSettings.__dataclass_fields__)
CREDENTIAL_FIELDS = ("credentials", "token_username", "token", "clear_token", "ssh_key", "clear_ssh_key", "known_hosts")
CREDENTIALS_FIELDSET = ("Credentials (stored encrypted, never shown again)", {"fields": CREDENTIAL_FIELDS})


class GitDestinationForm(forms.ModelForm):
    token = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="For https:// repositories: a token that may push (the publishing guide says which scope, for "
        "each host). Left empty, the stored token is kept.",
    )
    clear_token = forms.BooleanField(required=False, label="Remove the stored token")
    ssh_key = forms.CharField(
        label="SSH private key",
        required=False,
        widget=forms.Textarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"}),
        help_text="For ssh repositories: a deploy key with write access (-----BEGIN OPENSSH PRIVATE KEY-----...). "
        "Left empty, the stored key is kept.",
    )
    clear_ssh_key = forms.BooleanField(required=False, label="Remove the stored SSH key")

    class Meta:
        model = GitDestination
        fields = ("channel", *SETTINGS_FIELDS)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        channel = self.fields.get("channel")
        if channel is not None:
            # A channel has one destination: those set up already are changed on their own page.
            channel.queryset = channel.queryset.filter(platform=PLATFORM, git_destination__isnull=True)

    def git_settings(self) -> services.GitSettings:
        values = {name: self.cleaned_data.get(name) for name in SETTINGS_FIELDS}
        return services.GitSettings(**{name: value if value is not None else "" for name, value in values.items()})

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            services.git_settings_check(self.git_settings())
        except InvalidInput as exc:
            add_input_error(self, exc)
        return cleaned


@admin.register(GitDestination)
class GitDestinationAdmin(DomainErrorsAsMessages, ObjectButtonsAdmin):
    form = GitDestinationForm
    list_display = ("channel", "repository_url", "branch", "path_template", "credentials", "updated_at")
    list_select_related = ("channel",)
    search_fields = ("channel__title", "repository_url")
    readonly_fields = ("credentials", "media_folder", "public_folder", "created_at", "updated_at")
    # Where a channel publishes, with its credentials: an SSO session confirms its password first.
    step_up = StepUp.ALL_BUT_THE_LIST
    fieldsets = (
        (None, {"fields": ("channel", "repository_url", "branch", "path_template", "media_path", "media_url")}),
        # What a Decap CMS config of the same site names these folders (derived from the templates).
        ("Decap CMS", {"fields": ("media_folder", "public_folder")}),
        ("Commits", {"fields": ("author_name", "author_email")}),
        CREDENTIALS_FIELDSET,
        ("Pages", {"fields": ("post_url_template", "commit_url_template", "unpublish_keeps_file")}),
        ("Dates", {"fields": ("created_at", "updated_at")}),
    )
    object_buttons = (
        ObjectButton(
            "test-connection",
            "Test connection",
            lambda destination: services.git_destination_check(destination=destination),
            "{result}",
            permission="view",
        ),
    )

    @admin.display(description="media_folder")
    def media_folder(self, obj: GitDestination) -> str:
        return obj.media_folder if obj.pk else ""

    @admin.display(description="public_folder")
    def public_folder(self, obj: GitDestination) -> str:
        return obj.public_folder if obj.pk else ""

    @admin.display(description="stored credentials")
    def credentials(self, obj: GitDestination) -> str:
        stored = [name for name, present in (("a token", obj.has_token), ("an SSH key", obj.has_ssh_key)) if present]
        return " and ".join(stored) if stored else "none"

    def get_readonly_fields(self, request, obj=None):
        # A destination stays with its channel (its jobs and files belong to it).
        return (*self.readonly_fields, "channel") if obj else self.readonly_fields

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        token = None if data.get("clear_token") else (data.get("token") or KEEP)
        ssh_key = None if data.get("clear_ssh_key") else (data.get("ssh_key") or KEEP)
        saved = services.git_destination_save(
            channel=obj.channel, settings=form.git_settings(), token=token, ssh_key=ssh_key
        )
        obj.pk, obj._state.adding = saved.pk, False


def setup_link(channel_id: int) -> SetupLink:
    setup = GitDestination.objects.filter(channel_id=channel_id).only("pk", "repository_url", "branch").first()
    if setup is None:
        return SetupLink(
            "Nowhere yet:", "publishing_git_gitdestination_add", "set up its repository", query=f"channel={channel_id}"
        )
    link_text = f"{setup.repository_url} ({setup.branch})"
    return SetupLink("", "publishing_git_gitdestination_change", link_text, (setup.pk,))
