"""A post's media in its Settings-area page: the media inline, where an item is an uploaded medium
of the post's account (its address and size then come from the library: MediaInput.medium) or an
external address, and the inline read back as the posts service's list."""

from functools import partial

from django import forms
from django.contrib import admin
from django.db import models

from apps.core.admin_scoping import scoped
from apps.media.models import Medium
from apps.media.selectors import media_of_account
from apps.posts.models import Media
from apps.posts.services import MEDIA_INPUT_FIELDS, MediaInput

MEDIA_FIELDS = ("position", "medium", *MEDIA_INPUT_FIELDS)


class MediaForm(forms.ModelForm):
    """An item is a medium of the library or an address: the address is needed only without one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["url"].required = False

    def clean(self):
        cleaned = super().clean()
        if not (cleaned.get("medium") or cleaned.get("url") or cleaned.get("DELETE") or "url" in self.errors):
            self.add_error("url", "Give the file's address, or choose a medium of the library.")
        return cleaned


class MediaInline(admin.TabularInline):
    model = Media
    form = MediaForm
    fields = MEDIA_FIELDS
    extra = 0
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}

    def get_formset(self, request, obj=None, **kwargs):
        kwargs["formfield_callback"] = partial(self._formfield, request=request, post=obj)
        formset = super().get_formset(request, obj, **kwargs)

        class HandedToThePost(formset):
            """Hands itself to its post: PostAdmin.save_model gives the media to the posts service
            with the rest of the content, in one change."""

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.instance.media_formset = self

        return HandedToThePost

    def _formfield(self, db_field, request, post=None, **kwargs):
        field = self.formfield_for_dbfield(db_field, request, **kwargs)
        if db_field.name == "medium" and field is not None:
            # The post's account's media (an inline is not scoped by the site's mixin); a new post's
            # account is the user's (an operator's choice is checked by the service).
            if post is not None:
                field.queryset = media_of_account(account_id=post.channel.account_id)
            else:
                field.queryset = scoped(request, Medium.objects.order_by("-id"))
            # The library is its own page (upload, alt text): no pop-ups from a post's row.
            widget = field.widget
            widget.can_add_related = widget.can_change_related = widget.can_delete_related = False
        return field


def media_inputs(formset) -> list[MediaInput]:
    """The media inline as the service's list: kept and new items, in the editor's order."""
    items = []
    for index, form in enumerate(formset.forms):
        if not form.has_changed() and form.instance.pk is None:
            continue  # an empty extra row
        data = form.cleaned_data
        if data.get("DELETE"):
            continue
        medium = data.get("medium")
        values = {name: data.get(name) for name in MEDIA_INPUT_FIELDS}
        item = MediaInput(id=form.instance.pk, medium=medium.pk if medium else None, **values)
        items.append((data.get("position") or 0, index, item))
    return [item for _, _, item in sorted(items, key=lambda entry: entry[:2])]
