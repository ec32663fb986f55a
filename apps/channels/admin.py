from django import forms
from django.contrib import admin
from django.db import models
from django.urls import reverse
from django.utils.html import format_html

from apps.channels.models import Channel, Team, normalize_domain, platform_choices, site_platforms
from apps.core.admin import SettingsModelAdmin, also_read_only, channel_setup
from apps.core.counts import count_of
from apps.core.destinations import kind_for


@admin.register(Team)
class TeamAdmin(SettingsModelAdmin):
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
        fields = super().get_readonly_fields(request, obj)
        return also_read_only(fields, "account") if obj else fields


# A blog channel's public site (apps/blog), which some destinations' channels have too (their site_platforms):
# shown and saved for those channels only.
BLOG_FIELDS = ("handle", "domain", "description", "language", "time_zone", "accent_color", "logo_url")
# Settings with a default that an empty field stands for (a form posted without them, a field cleared).
DEFAULTED_FIELDS = ("language", "time_zone", "accent_color")


def _form_field(db_field, **kwargs):
    # A logo typed without a scheme is on https (the model refuses http). The form's own fields are
    # made when the class is; the admin makes them again with its formfield_overrides below.
    if isinstance(db_field, models.URLField):
        kwargs.setdefault("assume_scheme", "https")
    return db_field.formfield(**kwargs)


class ChannelForm(forms.ModelForm):
    class Meta:
        model = Channel
        fields = ("account", "team", "title", "platform", "image_width", *BLOG_FIELDS)
        formfield_callback = _form_field
        widgets = {
            "accent_color": forms.TextInput(attrs={"type": "color"}),
            "time_zone": forms.TextInput(attrs={"placeholder": "UTC", "autocomplete": "off"}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        team = self.fields.get("team")
        if team is not None and self.instance.pk:
            team.queryset = team.queryset.filter(account_id=self.instance.account_id)
        for name in DEFAULTED_FIELDS:
            if name in self.fields:
                self.fields[name].required = False
                self.fields[name].help_text += f" Left empty: {Channel._meta.get_field(name).get_default()}."

    def _defaulted(self, name: str) -> str:
        return self.cleaned_data.get(name) or Channel._meta.get_field(name).get_default()

    def clean_language(self) -> str:
        return self._defaulted("language")

    def clean_time_zone(self) -> str:
        return self._defaulted("time_zone")

    def clean_accent_color(self) -> str:
        return self._defaulted("accent_color").lower()

    def clean_handle(self) -> str | None:
        # Left empty, the model makes one from the title; addresses are lower-case.
        return (self.cleaned_data.get("handle") or "").lower() or None

    def clean_domain(self) -> str | None:
        # As people type a host name: the model's check then wants it bare and lower-case.
        return normalize_domain(self.cleaned_data.get("domain"))

    def clean(self):
        cleaned = super().clean()
        platform = cleaned.get("platform") or self.instance.platform
        if platform not in site_platforms():
            # Other platforms have no public site: what was typed for one is not kept (nor checked
            # against other blogs' handles and domains).
            for name in BLOG_FIELDS:
                if name in self.fields:
                    cleaned[name] = getattr(self.instance, name)
                    self.errors.pop(name, None)
        return cleaned


def site_platform_names() -> str:
    """The platforms with a public site, as a sentence names them ("blog, x and y")."""
    labels = dict(platform_choices())
    names = [labels[platform].lower() for platform in sorted(site_platforms(), key=list(labels).index)]
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


@admin.register(Channel)
class ChannelAdmin(SettingsModelAdmin):
    form = ChannelForm
    autocomplete_fields = ("team",)
    list_display = ("title", "platform", "team", "account", "posts_count", "site", "updated_at")
    list_filter = ("platform", "team", "account")
    search_fields = ("title", "team__name", "handle", "domain")
    list_select_related = ("account", "team")
    readonly_fields = ("posts_count", "publishing", "public_address", "created_at", "updated_at")
    # A logo typed without a scheme is on https (the model refuses http).
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def get_fieldsets(self, request, obj=None):
        main = (None, {"fields": ("account", "team", "title", "platform", "image_width", "posts_count", "publishing")})
        dates = ("Dates", {"fields": ("created_at", "updated_at")})
        if obj is None:
            # The platform is chosen on this page: the blog's settings wait, folded, for blog channels.
            blog = {
                "fields": BLOG_FIELDS,
                "classes": ("collapse",),
                "description": f"For {site_platform_names()} channels (their public site); the others ignore these.",
            }
            return (main, ("Blog", blog), dates)
        if obj.platform not in site_platforms():
            return (main, dates)
        kind = kind_for(obj.platform)
        if kind is not None:
            site = "Public page", kind.site_summary or "Its public page."
        else:
            site = "Blog", "The blog's public site."
        return (main, (site[0], {"fields": ("public_address", *BLOG_FIELDS), "description": site[1]}), dates)

    def view_on_site(self, obj: Channel) -> str | None:
        return obj.public_url()

    @admin.display(description="public address")
    def public_address(self, obj: Channel) -> str:
        url = obj.public_url() if obj is not None and obj.pk is not None else None
        if url is None:
            return "—"
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, url)

    @admin.display(description="site", ordering="handle")
    def site(self, obj: Channel) -> str:
        url = obj.public_url()
        if url is None:
            return "—"
        return format_html('<a href="{}" target="_blank" rel="noopener">{}</a>', url, obj.domain or obj.handle)

    @admin.display(description="publishes to")
    def publishing(self, obj: Channel) -> str:
        """Where the channel's posts go, with the link to set it up (each destination says, by the
        URL name of its own page: this app does not import them)."""
        link = channel_setup(channel_id=obj.pk, platform=obj.platform) if obj is not None and obj.pk else None
        if link is None:
            return "—"
        url = reverse(f"admin:{link.url_name}", args=link.args, current_app=self.admin_site.name)
        url = f"{url}?{link.query}" if link.query else url
        warning = format_html(' <strong class="errornote">{}</strong>', link.warning) if link.warning else ""
        kind = "button" if link.button else ""
        return format_html('{} <a class="{}" href="{}">{}</a>{}', link.text, kind, url, link.link_text, warning)

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        if obj:
            # Moving a channel would hand its posts to another account.
            fields = also_read_only(fields, "account")
            if obj.posts.exists():
                # Posts' statuses and publication records depend on how the channel publishes.
                fields = also_read_only(fields, "platform")
        return fields
