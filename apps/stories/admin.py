"""Settings → Stories: a story composed once and sent to the account's channels (apps/stories/
admin_compose.py), a state row per destination, "Retry failed", and the list of stories with their
state. Every change goes through the story services."""

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from apps.channels.models import Channel
from apps.core.admin import DomainErrorsAsMessages, ObjectButton, ObjectButtonsAdmin, also_read_only
from apps.core.admin_scoping import OwnFiltersChangeList
from apps.core.http import content_length
from apps.posts.writing import Writer
from apps.stories.admin_compose import STATUS_FIELDS, Composer, StoryForm, channel_preview, preview_texts
from apps.stories.models import DestinationState, Story
from apps.stories.selectors import with_destinations
from apps.stories.services import story_delete, story_retry_failed


def _with_state(story: Story) -> Story:
    """The story with its destinations and state, read once per object."""
    if not hasattr(story, "destinations"):
        with_destinations([story])
    return story


def _failed(story: Story) -> bool:
    return any(destination.state == DestinationState.FAILED for destination in _with_state(story).destinations)


def _retry_failed(story: Story) -> int:
    return len(story_retry_failed(story_id=story.pk, account_id=story.account_id))


RETRY_FAILED = ObjectButton(
    "retry-failed",
    "Retry failed",
    _retry_failed,
    "{result} failed destination(s) handed over again; the others are not sent again.",
    permission="publish",
    shown=_failed,
)


class StoryChangeList(OwnFiltersChangeList, ChangeList):
    """The list's stories, each with its state, read for the whole page at once; from its address
    only what the list offers, as every list of the Settings area (apps/core/admin_scoping.py)."""

    def get_results(self, request):
        super().get_results(request)
        self.result_list = with_destinations(list(self.result_list))


@admin.register(Story)
class StoryAdmin(DomainErrorsAsMessages, ObjectButtonsAdmin):
    form = StoryForm
    change_form_template = "admin/stories/story/change_form.html"
    list_display = ("title", "state", "scheduled_at", "planned_for", "channel_titles")
    search_fields = ("title",)
    filter_horizontal = ("tags",)
    readonly_fields = ("state", "destination_rows", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("title", "teaser", "body", "tags", "channels")}),
        ("SEO", {"fields": ("meta_title", "meta_description")}),
        ("Schedule", {"fields": (*STATUS_FIELDS, "planned_for")}),
        ("Destinations", {"fields": ("state", "destination_rows")}),
        ("Dates", {"fields": ("created_at", "updated_at")}),
    )
    object_buttons = (RETRY_FAILED,)

    class Media:
        # The channels' tabs, the overrides' placeholders and the live previews (static files: the
        # admin's CSP runs no inline script). Without them, the sections are one under another.
        js = ("stories/compose.js",)
        css = {"all": ("stories/compose.css",)}

    def get_changelist(self, request, **kwargs):
        return StoryChangeList

    def has_publish_permission(self, request, obj=None) -> bool:
        """Status, schedule and Retry failed: articles.publish."""
        return request.user.has_perm(f"{self.opts.app_label}.publish_{self.opts.model_name}")

    def has_add_permission(self, request):
        # A story is its account's: an operator, who belongs to none, composes none.
        return request.user.account_id is not None and super().has_add_permission(request)

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        return fields if self.has_publish_permission(request, obj) else also_read_only(fields, *STATUS_FIELDS)

    def get_fieldsets(self, request, obj=None):
        if obj is not None:
            return self.fieldsets
        return [(name, options) for name, options in self.fieldsets if name not in ("Destinations", "Dates")]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        composer = Composer(
            account_id=obj.account_id if obj is not None else request.user.account_id,
            writer=Writer(may_publish=self.has_publish_permission(request, obj)),
            may_delete=self.has_delete_permission(request, obj),
            user=request.user,
        )
        return type(form.__name__, (form,), {"composer": composer})

    def get_urls(self):
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take this URL.
        preview = self.admin_site.admin_view(self.preview_view)
        return [path("preview/", preview, name=self._url_name("preview")), *super().get_urls()]

    def preview_view(self, request):
        """One channel's preview of the form's data as POSTed (`preview_channel`, the story's `story`
        when saved): what compose.js shows as one types."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not (self.has_change_permission(request) or self.has_add_permission(request)):
            raise PermissionDenied
        if content_length(request) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            return HttpResponse("The story is too large to preview.", status=413, content_type="text/plain")
        account_id = request.user.account_id
        channel = Channel.objects.filter(account_id=account_id, pk=_number(request.POST.get("preview_channel"))).first()
        story_id = _number(request.POST.get("story"))
        if channel is None or (story_id and not self.get_queryset(request).filter(pk=story_id).exists()):
            raise Http404("No such channel or story.")
        html = channel_preview(channel, story_id, preview_texts(request.POST, channel.pk), viewer_account_id=account_id)
        return HttpResponse(html, content_type="text/html; charset=utf-8", headers={"Cache-Control": "no-store"})

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["channel_sections"] = context["adminform"].form.sections()
        context["story_preview_url"] = reverse(f"admin:{self._url_name('preview')}", current_app=self.admin_site.name)
        return super().render_change_form(request, context, add, change, form_url, obj)

    def save_model(self, request, obj, form, change):
        """Nothing: the form saved the story through the services (admin_compose.StoryForm.clean)."""

    def save_related(self, request, form, formsets, change):
        """Nothing: the services set the tags and the channels with the rest of the story."""

    def construct_change_message(self, request, form, formsets, add=False):
        return [{"added": {}}] if add else [{"changed": {"fields": form.changed_data}}]

    def delete_model(self, request, obj):
        story_delete(story_id=obj.pk, account_id=obj.account_id)

    def delete_queryset(self, request, queryset):
        for story_id, account_id in queryset.values_list("pk", "account_id"):
            story_delete(story_id=story_id, account_id=account_id)

    @admin.display(description="state")
    def state(self, obj: Story) -> str:
        if obj is None or obj.pk is None:
            return "—"
        story = _with_state(obj)
        return format_html('<span class="story-state story-state-{}">{}</span>', story.state, _label(story.state))

    @admin.display(description="channels")
    def channel_titles(self, obj: Story) -> str:
        return ", ".join(destination.channel.title for destination in _with_state(obj).destinations) or "—"

    @admin.display(description="each destination")
    def destination_rows(self, obj: Story) -> str:
        """A row per destination: its channel, its state, the post's status, its link once
        published, its last error when it failed."""
        if obj is None or obj.pk is None:
            return "—"
        destinations = _with_state(obj).destinations
        if not destinations:
            return "No channel chosen yet."
        rows = (
            (
                reverse("admin:posts_post_change", args=[destination.post_id], current_app=self.admin_site.name),
                destination.channel.title,
                destination.state,
                _label(destination.state),
                destination.publication_status.replace("_", " "),
                _link(destination.url),
                _error(destination),
            )
            for destination in destinations
        )
        return format_html(
            '<table class="story-destinations"><thead><tr><th>Channel</th><th>State</th><th>Post</th>'
            "<th>Link</th><th>Last error</th></tr></thead><tbody>{}</tbody></table>",
            format_html_join(
                "",
                '<tr><td><a href="{}">{}</a></td><td><span class="story-state story-state-{}">{}</span></td>'
                "<td>{}</td><td>{}</td><td>{}</td></tr>",
                rows,
            ),
        )


def _label(state: str) -> str:
    return state.replace("_", " ").capitalize()


def _link(url: str | None) -> str:
    return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url) if url else "—"


def _error(destination) -> str:
    failed = destination.state == DestinationState.FAILED and destination.publication is not None
    return (destination.publication.last_error or "") if failed else ""


def _number(value) -> int | None:
    return int(value) if isinstance(value, str) and value.isdigit() else None
