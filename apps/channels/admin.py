from django import forms
from django.contrib import admin
from django.core.exceptions import ObjectDoesNotExist
from django.urls import reverse
from django.utils.html import format_html

from apps.channels.models import Channel, Platform, Team
from apps.core.counts import count_of


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "account", "channel_count", "created_at")
    list_filter = ("account",)
    search_fields = ("name",)
    list_select_related = ("account",)
    readonly_fields = ("created_at", "updated_at")

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(channel_count=count_of(Channel, "team"))

    @admin.display(description="channels", ordering="channel_count")
    def channel_count(self, obj: Team) -> int:
        return obj.channel_count

    def get_readonly_fields(self, request, obj=None):
        # A team's channels belong to its account; moving the team would mix accounts.
        return (*self.readonly_fields, "account") if obj else self.readonly_fields


class ChannelForm(forms.ModelForm):
    class Meta:
        model = Channel
        fields = ("account", "team", "title", "platform", "image_width")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        team = self.fields.get("team")
        if team is not None and self.instance.pk:
            team.queryset = team.queryset.filter(account_id=self.instance.account_id)


@admin.register(Channel)
class ChannelAdmin(admin.ModelAdmin):
    form = ChannelForm
    autocomplete_fields = ("team",)
    list_display = ("title", "platform", "team", "account", "posts_count", "updated_at")
    list_filter = ("platform", "team", "account")
    search_fields = ("title", "team__name")
    list_select_related = ("account", "team")
    readonly_fields = ("posts_count", "publishing", "created_at", "updated_at")

    @admin.display(description="publishes to")
    def publishing(self, obj: Channel) -> str:
        """Where a git channel's posts go, with the link to set it up (the publishing apps' pages,
        reached by URL name: this app does not import them)."""
        if obj is None or obj.pk is None or obj.platform != Platform.GIT:
            return "—"
        try:
            destination = obj.git_destination
        except ObjectDoesNotExist:
            url = reverse("admin:publishing_git_gitdestination_add", current_app=self.admin_site.name)
            return format_html('Nowhere yet: <a href="{}?channel={}">set up its repository</a>', url, obj.pk)
        url = reverse(
            "admin:publishing_git_gitdestination_change", args=[destination.pk], current_app=self.admin_site.name
        )
        return format_html('<a href="{}">{} ({})</a>', url, destination.repository_url, destination.branch)

    def get_readonly_fields(self, request, obj=None):
        fields = list(self.readonly_fields)
        if obj:
            # Moving a channel would hand its posts to another account.
            fields.append("account")
            if obj.posts.exists():
                # Posts' statuses and publication records depend on how the channel publishes.
                fields.append("platform")
        return fields
