"""Settings → Publishing: every publication job of the account, filterable by state, action and
channel, with "Retry now" (one job, or the selected ones). Jobs are written by the pipeline only."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from apps.core.admin import ObjectButton, ObjectButtonsAdmin, run_on_selected
from apps.core.destinations import PublishError
from apps.core.errors import DomainError
from apps.publishing.models import PublicationJob
from apps.publishing.selectors import job_related, reference_kind, reference_link
from apps.publishing.services import job_retry_now


def retry(job: PublicationJob) -> PublicationJob:
    try:
        return job_retry_now(job=job)
    except PublishError as exc:
        raise DomainError(exc.message) from None


@admin.register(PublicationJob)
class PublicationJobAdmin(ObjectButtonsAdmin):
    list_display = (
        "__str__",
        "channel",
        "action",
        "state",
        "attempts",
        "next_attempt_at",
        "error",
        "reference_shown",
        "updated_at",
    )
    list_filter = ("state", "action", "channel")
    search_fields = ("title", "last_error", "reference", "path")

    def get_list_select_related(self, request):
        # Asked per page: the destinations register what their references read once the apps are ready.
        return job_related()

    readonly_fields = (
        "post_link",
        "channel",
        "title",
        "action",
        "state",
        "attempts",
        "next_attempt_at",
        "locked_until",
        "last_error",
        "reference_shown",
        "path",
        "url",
        "published_at",
        "scheduled_for",
        "created_at",
        "updated_at",
        "finished_at",
    )
    fields = readonly_fields
    actions = ["retry_selected"]
    object_buttons = (ObjectButton("retry", "Retry now", retry, "The job is queued to run now."),)

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="last error")
    def error(self, job: PublicationJob) -> str:
        return Truncator(job.last_error).chars(120) or "—"

    @admin.display(description="reference")
    def reference_shown(self, job: PublicationJob) -> str:
        """The reference in its destination's words: a commit, a social post, an edition."""
        return format_html("{} {}", reference_kind(job), reference_link(job)) if job.reference else "—"

    @admin.display(description="post")
    def post_link(self, job: PublicationJob) -> str:
        url = reverse("admin:posts_post_change", args=[job.post_id], current_app=self.admin_site.name)
        return format_html('<a href="{}">{}</a> (post {})', url, job.title, job.post_id)

    @admin.action(description="Retry the selected jobs now", permissions=["change"])
    def retry_selected(self, request, queryset):
        run_on_selected(self, request, queryset, retry, done="{count} job(s) queued to run now.", label=str)
