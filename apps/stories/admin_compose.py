"""A story's page in the Settings area: the form that composes it once (its text, its channels as
checkboxes, each channel's overrides in its destination's words) and saves it through
story_create / story_update, and each channel's preview as its destination shows it.

The form saves in its `clean`: a refusal of the services (InvalidInput, a DomainError) is then an
error on the form, shown with everything typed kept, where Django's admin could only show it as a
message after a redirect that loses the page."""

from dataclasses import dataclass, replace

from django import forms
from django.utils import timezone
from django.utils.html import format_html

from apps.channels.models import Channel
from apps.core.admin import add_input_error, post_preview
from apps.core.destinations import Document, kind_for
from apps.core.errors import DomainError, InvalidInput
from apps.posts.admin import TextareaField, blog_preview_url
from apps.posts.models import Post, Tag
from apps.posts.pipeline_subject import PostSubject
from apps.posts.serializers import description
from apps.posts.writing import Writer
from apps.stories.models import OVERRIDABLE, Story, StoryPost
from apps.stories.services import ChannelChoice, story_create, story_update

# The story's long texts, which their overrides are too.
LONG = ("body", "teaser", "meta_description")
# What the form asks of a story; the status fields are read-only without articles.publish.
STATUS_FIELDS = ("publication_status", "scheduled_at")


def override_name(channel_id: int, name: str) -> str:
    return f"override_{channel_id}_{name}"


def field_label(platform: str, name: str) -> str:
    """A post's field in its channel's destination's words (DestinationKind.field_labels), else its
    plain name."""
    kind = kind_for(platform)
    own = kind.field_labels.get(name) if kind is not None else None
    return own or str(Story._meta.get_field(name).verbose_name).capitalize()


@dataclass(frozen=True)
class Composer:
    """Who composes, as the services ask it: the account, may they publish, may they take a
    channel off (which deletes its post), and who they are (a new story's author)."""

    account_id: int
    writer: Writer
    may_delete: bool
    user: object


class StoryForm(forms.ModelForm):
    channels = forms.ModelMultipleChoiceField(
        queryset=Channel.objects.none(),
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Each channel chosen gets its post of the story; taking one off deletes its post.",
    )
    # Set by StoryAdmin.get_form for the request.
    composer: Composer

    class Meta:
        model = Story
        fields = ("title", "body", "teaser", "tags", "meta_title", "meta_description", *STATUS_FIELDS, "planned_for")
        field_classes = {name: TextareaField for name in LONG}
        widgets = {
            "teaser": forms.Textarea(attrs={"rows": 3}),
            "meta_description": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        account_id = self.composer.account_id
        self.account_channels = list(Channel.objects.filter(account_id=account_id).order_by("title", "id"))
        self.fields["channels"].queryset = Channel.objects.filter(account_id=account_id).order_by("title", "id")
        if "tags" in self.fields:
            self.fields["tags"].queryset = Tag.objects.filter(account_id=account_id)
        links = list(self.instance.links.select_related("post")) if self.instance.pk else []
        overrides = {link.post.channel_id: link.overrides for link in links}
        self.initial.setdefault("channels", [link.post.channel_id for link in links])
        for channel in self.account_channels:
            for name in OVERRIDABLE:
                self.fields[override_name(channel.pk, name)] = self._override_field(channel, name)
                self.initial.setdefault(override_name(channel.pk, name), overrides.get(channel.pk, {}).get(name, ""))

    def _override_field(self, channel: Channel, name: str) -> forms.Field:
        long = name in LONG
        field_class = TextareaField if long else forms.CharField
        return field_class(
            required=False,
            label=field_label(channel.platform, name),
            max_length=Story._meta.get_field(name).max_length,
            widget=forms.Textarea(attrs={"rows": 3 if name != "body" else 8}) if long else forms.TextInput(),
        )

    def sections(self) -> list[dict]:
        """A section per channel of the account: its overrides (each showing the story's text as
        its placeholder) and its preview. The script shows those of the chosen channels as tabs."""
        story_id = self.instance.pk
        found = []
        for channel in self.account_channels:
            fields = [self[override_name(channel.pk, name)] for name in OVERRIDABLE]
            for name, field in zip(OVERRIDABLE, fields, strict=True):
                field.field.widget.attrs.update({"placeholder": self._value(name), "data-falls-back-to": name})
            texts = {name: self._value(override_name(channel.pk, name)) or self._value(name) for name in OVERRIDABLE}
            kind = kind_for(channel.platform)
            found.append(
                {
                    "channel": channel,
                    "label": kind.label if kind is not None else None,
                    "fields": fields,
                    "preview": channel_preview(
                        channel, story_id, texts, viewer_account_id=self.composer.user.account_id
                    ),
                }
            )
        return found

    def _value(self, name: str) -> str:
        value = self[name].value() if name in self.fields else getattr(self.instance, name, "")
        return value or ""

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        try:
            self.instance = self._save(cleaned)
        except InvalidInput as exc:
            add_input_error(self, exc)
        except DomainError as exc:
            self.add_error(None, exc.message)
        return cleaned

    def _save(self, cleaned: dict) -> Story:
        composer = self.composer
        given = {name: cleaned[name] for name in (*OVERRIDABLE, "planned_for", *STATUS_FIELDS) if name in cleaned}
        if "tags" in cleaned:
            given["tag_names"] = [tag.name for tag in cleaned["tags"]]
        choices = [
            ChannelChoice(
                channel.pk, overrides={name: cleaned.get(override_name(channel.pk, name)) for name in OVERRIDABLE}
            )
            for channel in cleaned["channels"]
        ]
        if self.instance.pk:
            return story_update(
                story_id=self.instance.pk,
                account_id=composer.account_id,
                writer=composer.writer,
                may_delete=composer.may_delete,
                channels=choices,
                **given,
            )
        return story_create(
            account_id=composer.account_id,
            writer=composer.writer,
            channels=choices,
            created_by=composer.user,
            **given,
        )


# --- Previews ---------------------------------------------------------------------------------


def _document(channel: Channel, story_id: int | None, texts: dict) -> tuple[Document, int | None]:
    """The post of the story on `channel` as its destination would get it with these texts (the
    post as saved, for its link, tags and images; a bare one before the story has a post there)."""
    post_id = (
        StoryPost.objects.filter(story_id=story_id, post__channel=channel).values_list("post_id", flat=True).first()
        if story_id
        else None
    )
    saved = PostSubject().document(post_id=post_id, action="publish", published_at=None) if post_id else None
    if saved is None:
        saved = Document(post_id=0, title="", slug="", body="", published_at=timezone.now())
    unsaved = Post(**{name: texts.get(name, "") for name in OVERRIDABLE})
    typed = replace(
        saved, title=unsaved.title, body=unsaved.body, teaser=unsaved.teaser, description=description(unsaved)
    )
    return typed, post_id


def channel_preview(channel: Channel, story_id: int | None, texts: dict, *, viewer_account_id: int | None) -> str:
    """The story on `channel` as its destination shows it (HTML): the destination's own preview
    (the post page's, through the registry), or the blog's page preview once the post exists."""
    document, post_id = _document(channel, story_id, texts)
    preview = post_preview(channel.platform)
    if preview is not None:
        return preview(document)
    if post_id is not None:
        url = blog_preview_url(channel, post_id, viewer_account_id)
        if url:
            return format_html(
                '<a href="{}" class="previewlink" target="_blank" rel="noopener">{}</a> (as saved)',
                url,
                "The page as its readers will see it",
            )
    return format_html("<p>{}</p>", "No preview: saved, the post's page shows it." if not post_id else "No preview.")


def preview_texts(data, channel_id: int) -> dict:
    """The texts a channel's post gets from a form's data: its overrides, else the story's."""
    return {name: data.get(override_name(channel_id, name)) or data.get(name, "") for name in OVERRIDABLE}
