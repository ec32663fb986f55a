"""The publication part of a post's page in the Settings area: Publish now (the button, the list's
action and the sentence of what it does for the post's channel, apps/posts/publish_now.py) and the
post's latest publication jobs, each naming its destination's reference (a commit, a social post,
an edition)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from apps.core.admin import ObjectButton
from apps.posts.models import Post, PublicationStatus
from apps.posts.publish_now import post_publish_now_offer, publish_now
from apps.publishing.models import PublicationJob
from apps.publishing.selectors import job_related, reference_kind, reference_link

RECENT_JOBS = 5


def _publish_now(post: Post) -> str:
    return publish_now(post_id=post.pk)


def _unavailable(post: Post) -> str:
    offer = post_publish_now_offer(post)
    return offer.unavailable if offer is not None else ""


PUBLISH_NOW = ObjectButton(
    "publish-now",
    "Publish now",
    _publish_now,
    "{result}",
    permission="publish",
    shown=lambda post: post_publish_now_offer(post) is not None,
    unavailable=_unavailable,
)


class PublicationAdmin:
    """PostAdmin's publication fields and its Publish now action."""

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if self.has_publish_permission(request, obj):
            return fieldsets
        # Publish now is not theirs to press: the page does not speak of it.
        return [
            (name, {**options, "fields": [field for field in options["fields"] if field != "publish_now_does"]})
            for name, options in fieldsets
        ]

    @admin.display(description="publish now")
    def publish_now_does(self, obj: Post) -> str:
        """What Publish now does for this post, or why it is not offered or cannot be pressed."""
        if obj is None or obj.pk is None:
            return "—"
        offer = post_publish_now_offer(obj)
        if offer is None:
            if obj.publication_status == PublicationStatus.PUBLISHED:
                return "Not offered: the post is published."
            return "Not offered: the post awaits the external system's confirmation."
        if offer.unavailable:
            return format_html('<strong class="errornote">Not available: {}</strong>', offer.unavailable)
        return offer.does

    @admin.display(description="publication jobs")
    def publication(self, obj: Post) -> str:
        """The post's latest jobs on its destination: state, attempts, error, reference."""
        if obj is None or obj.pk is None:
            return "—"
        jobs = list(PublicationJob.objects.filter(post_id=obj.pk).select_related(*job_related())[:RECENT_JOBS])
        if not jobs:
            return "None yet."
        rows = (
            (
                reverse("admin:publishing_publicationjob_change", args=[job.pk], current_app=self.admin_site.name),
                job.get_action_display(),
                job.get_state_display(),
                job.attempts,
                job.last_error or "",
                reference_kind(job),
                reference_link(job),
                job.updated_at.strftime("%Y-%m-%d %H:%M UTC"),
            )
            for job in jobs
        )
        return format_html(
            "<ul>{}</ul>",
            format_html_join("", '<li><a href="{}">{}: {}</a>, {} attempt(s) {} · {} {} · {}</li>', rows),
        )

    @admin.action(description="Publish now (each post as its channel publishes)", permissions=["publish"])
    def publish_now(self, request, queryset):
        self._run_on_selected(request, queryset, _publish_now, "handed over for publishing")
