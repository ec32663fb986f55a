"""The media library in the Settings area: a grid of the account's uploads, searched by file name and
alt text, uploaded by drag and drop (or a plain file input), their alt text edited, deleted, and
"Insert into post" (the Markdown a post's body shows an upload with). Every change goes through the
media services, as the API's do; the upload endpoint is the one the post form's body uses too."""

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.html import format_html

from apps.core.admin import DomainErrorsAsMessages, SettingsModelAdmin, first_message, page_url
from apps.core.admin_scoping import own_account_id
from apps.core.errors import DomainError, InvalidInput
from apps.core.validation import field_error
from apps.media.models import Medium
from apps.media.selectors import medium_markdown
from apps.media.services import medium_delete, medium_update, medium_upload
from apps.media.storage import public_src

# What the file input offers; the service decides from the content, whatever the browser says.
ACCEPTED_TYPES = "image/png,image/jpeg,image/gif,image/webp,image/avif"
NO_ACCOUNT = "An upload goes into an account's library: only the account's own users upload."


def thumbnail_src(medium: Medium) -> str:
    """The smallest copy of the medium (variants are narrowest first), or the upload itself."""
    return public_src(medium.variants[0]["name"] if medium.variants else medium.name)


class MediumForm(forms.ModelForm):
    class Meta:
        model = Medium
        fields = ("alt_text",)
        widgets = {"alt_text": forms.Textarea(attrs={"rows": 3})}


@admin.register(Medium)
class MediumAdmin(DomainErrorsAsMessages, SettingsModelAdmin):
    form = MediumForm
    change_list_template = "admin/media/medium/change_list.html"
    list_display = ("original_name", "size", "alt_text", "created_at")
    search_fields = ("original_name", "alt_text")
    list_per_page = 60
    # Deleting runs the service one medium at a time (its in_use refusal): no bulk deletion.
    actions = None
    fields = ("preview", "alt_text", "markdown", "original_name", "dimensions", "file_size", "mime_type", "created_at")
    readonly_fields = ("preview", "markdown", "original_name", "dimensions", "file_size", "mime_type", "created_at")

    class Media:
        js = ("media/library.js",)
        css = {"all": ("media/library.css",)}

    def get_urls(self):
        upload = self.admin_site.admin_view(self.upload_view)
        return [path("upload/", upload, name=self._url_name("upload")), *super().get_urls()]

    # --- the grid ---------------------------------------------------------------------------

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None)
        if context and "cl" in context:
            context["cards"] = [self._card(request, medium) for medium in context["cl"].result_list]
            context["upload_url"] = page_url(self, "upload")
            context["accepted_types"] = ACCEPTED_TYPES
            context["may_upload"] = self.has_add_permission(request)
        return response

    def _card(self, request, medium: Medium) -> dict:
        return {
            "id": medium.pk,
            "name": str(medium),
            "src": thumbnail_src(medium),
            "markdown": medium_markdown(medium),
            "alt_text": medium.alt_text,
            "size": filesizeformat(medium.size),
            "dimensions": f"{medium.width} x {medium.height}",
            "change_url": page_url(self, "change", medium.pk),
            "account": medium.account if request.user.is_superuser else None,
        }

    # --- upload -----------------------------------------------------------------------------

    def add_view(self, request, form_url="", extra_context=None):
        """The upload page (the list has the same form above its grid)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        if request.method == "POST":
            return self.upload_view(request)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Upload images",
            "upload_url": page_url(self, "upload"),
            "accepted_types": ACCEPTED_TYPES,
            "may_upload": True,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/media/medium/upload.html", context)

    def upload_view(self, request):
        """POST `file` (one or more) and `alt_text`. Asked for JSON (the scripts: the library's drop
        zone, the post body's paste and drop), it answers the medium or the refusal; a plain form
        comes back to the library with a message."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_add_permission(request):
            raise PermissionDenied
        wants_json = "application/json" in request.headers.get("Accept", "")
        uploaded, refusals = [], []
        for file in request.FILES.getlist("file") or [None]:
            try:
                uploaded.append(self._upload(request, file))
            except DomainError as exc:
                refusals.append((getattr(file, "name", ""), first_message(exc)))
        if wants_json:
            if refusals:
                return JsonResponse({"error": refusals[0][1]}, status=400)
            return JsonResponse(self._card(request, uploaded[0]), status=201)
        for name, message in refusals:
            self.message_user(request, f"{name or 'Nothing'} was not uploaded: {message}", messages.ERROR)
        if uploaded:
            names = ", ".join(f"“{medium}”" for medium in uploaded)
            self.message_user(request, f"Uploaded {names}.", messages.SUCCESS)
        return HttpResponseRedirect(page_url(self, "changelist"))

    def _upload(self, request, file) -> Medium:
        account_id = own_account_id(request)
        if account_id is None:
            raise InvalidInput(NO_ACCOUNT)
        if file is None:
            raise field_error("file", "required", "Choose an image to upload.")
        return medium_upload(
            account_id=account_id,
            file=file,
            size=file.size,
            original_name=file.name or "",
            alt_text=request.POST.get("alt_text", ""),
            uploaded_by_id=request.user.pk,
        )

    # --- one medium -------------------------------------------------------------------------

    @admin.display(description="image")
    def preview(self, medium: Medium) -> str:
        return format_html(
            '<img class="medium-preview" src="{}" alt="{}" width="{}" height="{}">',
            public_src(medium.name),
            medium.alt_text,
            medium.width,
            medium.height,
        )

    @admin.display(description="Markdown")
    def markdown(self, medium: Medium) -> str:
        return format_html(
            '<code class="medium-markdown">{}</code> '
            '<button type="button" class="button medium-insert" data-markdown="{}">Insert into post</button>',
            medium_markdown(medium),
            medium_markdown(medium),
        )

    @admin.display(description="size in pixels")
    def dimensions(self, medium: Medium) -> str:
        return f"{medium.width} x {medium.height}"

    @admin.display(description="file size", ordering="size")
    def file_size(self, medium: Medium) -> str:
        return filesizeformat(medium.size)

    def save_model(self, request, obj, form, change):
        # Only changes reach here: add_view is the upload.
        medium_update(account_id=obj.account_id, medium_id=obj.pk, alt_text=form.cleaned_data["alt_text"])

    def save_related(self, request, form, formsets, change):
        """Nothing: a medium has no related rows to save."""

    def delete_model(self, request, obj):
        medium_delete(account_id=obj.account_id, medium_id=obj.pk)
