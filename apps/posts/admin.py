"""The content side of the web app. Every change of a post goes through the post services:
content through post_create / post_update_content (one call per save, so a save is one content
change), status and schedule through post_set_status, the `api` workflow through its functions."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseNotAllowed
from django.urls import path, reverse
from django.utils.html import format_html

from apps.channels.models import Platform
from apps.core.admin import (
    DomainErrorsAsMessages,
    ObjectButtonsAdmin,
    SettingsModelAdmin,
    also_read_only,
    post_preview,
    run_on_selected,
)
from apps.core.errors import DomainError
from apps.core.http import content_length
from apps.core.markdown import render_markdown
from apps.posts.admin_media import MediaInline, media_inputs
from apps.posts.admin_publication import PUBLISH_NOW, PublicationAdmin
from apps.posts.api_workflow import post_mark_publishing_pending, post_publish, post_unpublish
from apps.posts.editor_status import post_set_status
from apps.posts.models import ApiPublication, Post, Tag
from apps.posts.pipeline_subject import PostSubject
from apps.posts.selectors import page_url
from apps.posts.services import (
    CONTENT_FIELDS,
    check_tags_of_account,
    one_line_end,
    post_create,
    post_delete,
    post_update_content,
)
from apps.publishing.selectors import latest_publications


@admin.register(Tag)
class TagAdmin(SettingsModelAdmin):
    list_display = ("name", "account", "created_at")
    list_filter = ("account",)
    search_fields = ("name",)
    list_select_related = ("account",)


class ApiPublicationInline(admin.StackedInline):
    """The API publication record, read-only: only the workflow writes it."""

    model = ApiPublication
    fields = readonly_fields = ("created_at", "confirmed_at", "external_id", "external_url")
    can_delete = False
    extra = 0

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class TextareaField(forms.CharField):
    """A textarea's text as the editor left it. A browser sends a textarea's line ends as CRLF,
    and stripping would drop a body's final newline: either would make a post saved unchanged
    differ from the stored one (a `post.updated`, an update job, a commit)."""

    def __init__(self, *args, **kwargs):
        kwargs["strip"] = False
        super().__init__(*args, **kwargs)

    def to_python(self, value):
        # Before the length checks, as the service stores it.
        return super().to_python(one_line_end(value) if isinstance(value, str) else value)


class PostForm(forms.ModelForm):
    class Meta:
        model = Post
        fields = ("channel", *CONTENT_FIELDS, "tags", "publication_status", "scheduled_at")
        field_classes = {"body": TextareaField, "teaser": TextareaField, "meta_description": TextareaField}
        widgets = {
            "teaser": forms.Textarea(attrs={"rows": 3}),
            "meta_description": forms.Textarea(attrs={"rows": 3}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        tags = self.fields.get("tags")
        if tags is None:
            return
        if self.instance.pk:
            tags.queryset = tags.queryset.filter(account_id=self.instance.channel.account_id)

    def _get_validation_exclusions(self):
        exclude = super()._get_validation_exclusions()
        if not self.cleaned_data.get("slug"):
            # Left empty, the slug is made from the title when the service saves the post; the
            # model's own check (a post has a slug) would refuse the form before that.
            exclude.add("slug")
        return exclude

    def clean(self):
        cleaned = super().clean()
        channel = cleaned.get("channel") or (self.instance.channel if self.instance.pk else None)
        if channel is not None and cleaned.get("tags") is not None:
            try:
                check_tags_of_account(cleaned["tags"], channel.account_id)
            except DomainError as exc:
                self.add_error("tags", exc.message)
        return cleaned


# What a user without articles.publish may not change on a post's page (apps/settings_area/access.py).
PUBLICATION_FIELDS = ("publication_status", "scheduled_at")
# What the page says of the post's publishing (admin_publication.py).
PUBLISHING_FIELDS = ("publish_now_does", "publication", "as_posted")


@admin.register(Post)
class PostAdmin(PublicationAdmin, DomainErrorsAsMessages, ObjectButtonsAdmin):
    form = PostForm
    # The object buttons' page, with the blog preview's link beside them.
    change_form_template = "admin/posts/post_change_form.html"
    inlines = [MediaInline, ApiPublicationInline]
    list_display = (
        "title",
        "channel",
        "platform",
        "team",
        "publication_status",
        "scheduled_at",
        "published_at",
        "updated_at",
    )
    list_filter = ("publication_status", "channel__platform", "channel__team", "channel")
    search_fields = ("title", "slug", "teaser", "external_id")
    list_select_related = ("channel", "channel__team")
    filter_horizontal = ("tags",)
    # Searched as typed (through the channel admin, so only the user's own channels are found).
    autocomplete_fields = ("channel",)
    prepopulated_fields = {"slug": ("title",)}
    readonly_fields = (
        "published_at",
        "publish_now_does",
        "publication",
        "as_posted",
        "external_id",
        "external_url",
        "created_at",
        "updated_at",
        "part_of_story",
    )
    fieldsets = (
        (None, {"fields": ("channel", "title", "slug", "teaser", "body", "tags")}),
        ("SEO", {"fields": ("meta_title", "meta_description")}),
        ("Scheduling and publication", {"fields": (*PUBLICATION_FIELDS, "published_at", *PUBLISHING_FIELDS)}),
        ("External publication (api channels)", {"fields": ("external_id", "external_url")}),
        ("Dates", {"fields": ("created_at", "updated_at")}),
    )
    actions = ["publish_now", "mark_publishing_pending", "confirm_publication", "unpublish"]
    object_buttons = (PUBLISH_NOW,)

    class Media:
        # The body's live Markdown preview, and its pasted or dropped images uploaded to the media
        # library (static files only: the admin's CSP allows no inline script).
        js = ("posts/markdown_preview.js", "posts/body_images.js")
        css = {"all": ("posts/markdown_preview.css",)}

    def get_urls(self):
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take this URL.
        preview = self.admin_site.admin_view(self.markdown_preview_view)
        return [path("markdown-preview/", preview, name=self._url_name("markdown_preview")), *super().get_urls()]

    def markdown_preview_view(self, request):
        """A body (POSTed as the form field `body`) as the sanitized HTML its blog page shows, for
        the editor's live preview: for those who may write posts, within the request body limit."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not (self.has_change_permission(request) or self.has_add_permission(request)):
            raise PermissionDenied
        # Django refuses a larger form body when it is read (400); say what it is before reading it.
        if content_length(request) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return HttpResponse("The body is too large to preview.", status=413, content_type="text/plain")
        html = render_markdown(one_line_end(request.POST.get("body", "")))
        return HttpResponse(html, content_type="text/html; charset=utf-8", headers={"Cache-Control": "no-store"})

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        field = super().formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "body" and field is not None:
            # Where markdown_preview.js posts the body, and the page it shows the answer in; without the
            # script the textarea is all there is.
            field.widget.attrs["data-markdown-preview"] = reverse(
                f"admin:{self._url_name('markdown_preview')}", current_app=self.admin_site.name
            )
            field.widget.attrs["data-markdown-preview-frame"] = reverse("blog:preview_frame")
            if request.user.has_perm("media.add_medium"):
                # Where body_images.js uploads an image pasted or dropped on the body, and the library it opens.
                field.widget.attrs["data-media-upload"] = reverse(
                    "admin:media_medium_upload", current_app=self.admin_site.name
                )
                field.widget.attrs["data-media-library"] = reverse(
                    "admin:media_medium_changelist", current_app=self.admin_site.name
                )
        return field

    def view_on_site(self, obj: Post) -> str | None:
        """Where readers find the published post (the API's `url`); nothing before it is published."""
        destined = obj.channel.publishes_through_destination
        return page_url(obj, latest_publications([obj.pk]).get(obj.pk) if destined else None)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        preview = blog_preview_url(obj.channel, obj.pk, request.user.account_id) if obj is not None else None
        if preview is not None:
            context["preview_url"] = preview
        return super().render_change_form(request, context, add, change, form_url, obj)

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if obj is None or getattr(obj, "story_link", None) is None:
            return fieldsets
        (name, options), *rest = fieldsets
        return [(name, {**options, "fields": ["part_of_story", *options["fields"]]}), *rest]

    @admin.display(description="part of story")
    def part_of_story(self, obj: Post) -> str:
        """The story the post is one channel's part of (its text and status are the story's to change)."""
        story = obj.story_link.story
        url = reverse("admin:stories_story_change", args=[story.pk], current_app=self.admin_site.name)
        return format_html('Part of story <a href="{}">{}</a>', url, story.title)

    @admin.display(description="as it will be posted")
    def as_posted(self, obj: Post) -> str:
        """The post as its channel's destination will post it (a social post's text), where the
        destination shows that (as saved: saving again shows an edit)."""
        preview = post_preview(obj.channel.platform) if obj is not None and obj.pk is not None else None
        if preview is None:
            return "—"
        document = PostSubject().document(post_id=obj.pk, action="publish", published_at=None)
        return preview(document) if document is not None else "—"

    def delete_model(self, request, obj):
        post_delete(post_id=obj.pk)

    def delete_queryset(self, request, queryset):
        for post_id in queryset.values_list("pk", flat=True):
            post_delete(post_id=post_id)

    def has_publish_permission(self, request, obj=None) -> bool:
        """Publish, schedule and unpublish: articles.publish."""
        return request.user.has_perm(f"{self.opts.app_label}.publish_{self.opts.model_name}")

    @admin.display(ordering="channel__platform")
    def platform(self, obj: Post) -> str:
        return obj.channel.get_platform_display()

    @admin.display(ordering="channel__team__name")
    def team(self, obj: Post) -> str:
        return obj.channel.team.name if obj.channel.team else "—"

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        if not self.has_publish_permission(request, obj):
            fields = also_read_only(fields, *PUBLICATION_FIELDS)
        # A post stays in its channel: its status and record depend on the channel's platform.
        return also_read_only(fields, "channel") if obj else fields

    def save_model(self, request, obj, form, change):
        """The post through the services: its content (tags and media too) in one change, then its
        status where the page changed it."""
        post = self._save_content(obj, form, change)
        data = form.cleaned_data
        if "publication_status" not in data:
            return  # not on the page (no articles.publish)
        if change and not set(PUBLICATION_FIELDS) & set(form.changed_data):
            return
        try:
            post_set_status(post_id=post.pk, status=data["publication_status"], scheduled_at=data.get("scheduled_at"))
        except DomainError as exc:
            # The content is saved (the status service rolled back only its own part).
            self.message_user(request, f"The status was not changed: {exc.message}", messages.ERROR)
        else:
            if change:
                form.service_changes.append("publication_status")

    @staticmethod
    def _save_content(obj: Post, form, change: bool) -> Post:
        data = form.cleaned_data
        # Only what the page showed: a part the editor could not see (no permission for the
        # media inline, say) is left as it is, not emptied.
        content = {name: data[name] for name in (*CONTENT_FIELDS, "tags") if name in data}
        media_formset = getattr(obj, "media_formset", None)
        if media_formset is not None:
            content["media"] = media_inputs(media_formset)
        if change:
            post, form.service_changes = post_update_content(post=obj, **content)
            return post
        post = post_create(channel=data["channel"], **content)
        obj.pk, obj._state.adding = post.pk, False
        return post

    def save_related(self, request, form, formsets, change):
        """Nothing: save_model gave the tags and media to the service with the rest of the post."""

    def construct_change_message(self, request, form, formsets, add=False):
        if add:
            return [{"added": {}}]
        changed = getattr(form, "service_changes", [])
        return [{"changed": {"fields": changed}}] if changed else []

    def _run_on_selected(self, request, queryset, service, done: str):
        selected = queryset.select_related("channel__account")
        run_on_selected(self, request, selected, service, done=f"{{count}} post(s) {done}.", label=_quoted_title)

    @admin.action(
        description="Hand over to the external system (publishing_pending; api channels)", permissions=["publish"]
    )
    def mark_publishing_pending(self, request, queryset):
        self._run_on_selected(
            request, queryset, lambda post: post_mark_publishing_pending(post_id=post.pk), "now await publication"
        )

    @admin.action(description="Confirm publication (as the publish endpoint; api channels)", permissions=["publish"])
    def confirm_publication(self, request, queryset):
        self._run_on_selected(request, queryset, _as_the_endpoint(post_publish), "published")

    @admin.action(description="Unpublish to draft (as the unpublish endpoint; api channels)", permissions=["publish"])
    def unpublish(self, request, queryset):
        self._run_on_selected(request, queryset, _as_the_endpoint(post_unpublish), "unpublished")


def blog_preview_url(channel, post_id: int, viewer_account_id: int | None) -> str | None:
    """The preview page of a blog's post as its readers will see it, whatever its status: for the
    members of its account only (an operator belongs to none)."""
    if channel.platform == Platform.BLOG and channel.account_id == viewer_account_id:
        return reverse("blog:preview", kwargs={"post_id": post_id})
    return None


def _quoted_title(post: Post) -> str:
    return f"“{post.title}”"


def _as_the_endpoint(service):
    """Call a workflow service as its endpoint does, with the post's own channel and account."""
    return lambda post: service(post_id=post.pk, channel_id=post.channel_id, account=post.channel.account)
