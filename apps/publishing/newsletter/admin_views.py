"""The newsletter's own Settings pages beside Django's, as model admin mixins: a list's import and
export (subscribers), the Lift page (a suppression), an edition's buttons (Send test, Send to
uncertain), and the preview and test of a post not mailed yet. apps/publishing/newsletter/admin.py
declares the model admins that use them."""

import csv
import io
import logging
from datetime import UTC

from django.contrib import messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html

from apps.channels.models import Channel
from apps.core import step_up
from apps.core.admin import add_input_error, page_url
from apps.core.admin_scoping import scoped
from apps.core.destinations import Document, subject
from apps.core.errors import DomainError, InvalidInput
from apps.publishing.newsletter import editions, message, services
from apps.publishing.newsletter.admin_forms import ImportForm, LiftForm
from apps.publishing.newsletter.csv_import import OPEN_OPTIONS, import_csv
from apps.publishing.newsletter.models import PLATFORM, Edition, Newsletter

logger = logging.getLogger(__name__)

# The import's page lists at most this many bad lines, with the count of the rest.
INVALID_SHOWN = 100
EXPORT_COLUMNS = ("email", "name", "status", "created_at", "confirmed_at", "channel")
# A spreadsheet takes a cell that starts with one of these for a formula (CSV injection): the
# export starts such a cell with a quote, which spreadsheets show as text.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# The e-mail as sent, in the Settings area: no script, form or navigation of the page (sandbox="")
# and the admin's own Content-Security-Policy, which a srcdoc frame inherits.
PREVIEW_FRAME = '<iframe class="newsletter-preview" sandbox="" title="{}" srcdoc="{}" style="{}"></iframe>'
PREVIEW_STYLE = "width:760px;max-width:100%;height:640px;border:1px solid #ccc;background:#fff"


def admin_url(model_admin, name: str, *args) -> str:
    return reverse(f"admin:{name}", args=args, current_app=model_admin.admin_site.name)


def _utc(value) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if value else ""


def csv_cell(value) -> str:
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_START) else text


def preview_frame(shown: message.Rendered) -> str:
    """The HTML part of message.preview()'s parts, in the page."""
    return format_html(PREVIEW_FRAME, f"The e-mail “{shown.subject}”", shown.html, PREVIEW_STYLE)


class Echo:
    """csv.writer's file: each row written is handed back, for a streamed answer."""

    def write(self, value: str) -> str:
        return value


class SubscriberFiles:
    """SubscriberAdmin's import and export pages, linked from its list."""

    def get_urls(self):
        view = self.admin_site.admin_view
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path("import/", view(self.import_view), name=self._url_name("import")),
            path("export/", view(self.export_view), name=self._url_name("export")),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        # The export takes the list's own filters and search, as the list shows them.
        query = request.GET.copy()
        query.pop("p", None)
        export = f"{page_url(self, 'export')}?{query.urlencode()}" if query else page_url(self, "export")
        context = {"export_url": export, "import_url": page_url(self, "import"), **(extra_context or {})}
        return super().changelist_view(request, context)

    def import_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied
        posted = request.method == "POST"
        channel = request.GET.get("channel", "")
        form = ImportForm(
            request.POST if posted else None,
            request.FILES if posted else None,
            channels=scoped(request, Channel.objects.filter(platform=PLATFORM)),
            initial={"channel": channel} if channel.isdigit() else None,
        )
        result = self._import(request, form) if form.is_valid() else None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Import subscribers",
            "form": form,
            "result": result,
            "invalid": result.invalid[:INVALID_SHOWN] if result else [],
            "invalid_more": max(len(result.invalid) - INVALID_SHOWN, 0) if result else 0,
        }
        return TemplateResponse(request, "admin/publishing_newsletter/subscriber_import.html", context)

    def _import(self, request, form) -> services.ImportResult | None:
        """The uploaded file's people into the list, streamed from the file (kept on disk when large)."""
        data = form.cleaned_data
        try:
            # The form offers the user's newsletter channels only.
            result = import_csv(
                channel=data["channel"],
                file=io.TextIOWrapper(data["file"].file, **OPEN_OPTIONS),
                confirmed=data["confirmed"],
            )
        except InvalidInput as exc:  # no header row naming `email`: the file, not a line of it, is wrong
            form.add_error("file", exc.message)
            return None
        self.message_user(
            request,
            f"{data['channel'].title}: {result.created:,} added, {result.skipped:,} skipped, "
            f"{len(result.invalid):,} invalid line(s).",
            messages.WARNING if result.invalid else messages.SUCCESS,
        )
        return result

    def export_view(self, request):
        if not self.has_view_permission(request):
            raise PermissionDenied
        query = request.GET.copy()
        query.pop("p", None)  # the whole list, not the page the list showed
        request.GET = query
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseRedirect(f"{page_url(self, 'changelist')}?e=1")
        rows = changelist.queryset.values_list(
            "email", "name", "status", "created_at", "confirmed_at", "channel__title"
        ).iterator(chunk_size=2000)
        response = StreamingHttpResponse(self._csv_lines(rows), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="subscribers-{timezone.now():%Y-%m-%d}.csv"'
        response["Cache-Control"] = "no-store"  # personal data: no copy kept on the way
        return response

    @staticmethod
    def _csv_lines(rows):
        writer = csv.writer(Echo())
        yield writer.writerow(EXPORT_COLUMNS)
        for email, name, status, created_at, confirmed_at, channel in rows:
            yield writer.writerow(
                [csv_cell(email), csv_cell(name), status, _utc(created_at), _utc(confirmed_at), csv_cell(channel)]
            )


class LiftPage:
    """SuppressionAdmin's delete page, as "Lift"."""

    def delete_view(self, request, object_id, extra_context=None):
        """Django's delete page, as "Lift": the address may be mailed again, for a reason that is
        logged with who gave it (the account's admins, and the operator on their behalf)."""
        # The order of Django's own: no permission, no word on whether the id exists.
        if not self.has_delete_permission(request):
            raise PermissionDenied
        suppression = self.get_object(request, unquote(object_id))
        if suppression is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        form = LiftForm(request.POST if request.method == "POST" else None)
        if form.is_valid():
            try:
                services.suppression_lift(
                    suppression=suppression, reason=form.cleaned_data["reason"], by=request.user.email
                )
            except InvalidInput as exc:
                add_input_error(form, exc)
            else:
                self.message_user(
                    request,
                    f"Lifted: the address may be mailed again ({suppression.get_reason_display().lower()}). It is "
                    "mailed once it is a confirmed subscriber.",
                    messages.SUCCESS,
                )
                return HttpResponseRedirect(page_url(self, "changelist"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Lift a suppression",
            "suppression": suppression,
            "applies_to": self.applies_to(suppression),
            "form": form,
        }
        return TemplateResponse(request, "admin/publishing_newsletter/suppression_lift.html", context)


class EditionPages:
    """EditionAdmin's buttons, and the preview and test of a post not mailed yet (its page links here)."""

    def _may_decide(self, request, obj=None) -> bool:
        """Send to uncertain: an edition's "change" permission (the account's admins)."""
        return super().has_change_permission(request, obj)

    def get_urls(self):
        view = self.admin_site.admin_view
        # Ahead of Django's own: its "<path:object_id>/" catch-all would take these URLs.
        return [
            path("post/<int:post_id>/preview/", view(self.post_preview_view), name=self._url_name("post_preview")),
            path("post/<int:post_id>/send-test/", view(self.post_send_test_view), name=self._url_name("post_test")),
            path("<path:object_id>/send-test/", view(self.send_test_view), name=self._url_name("send_test")),
            path("<path:object_id>/send-uncertain/", view(self.send_uncertain_view), name=self._url_name("uncertain")),
            *super().get_urls(),
        ]

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        if obj is not None:
            context["send_test_url"] = page_url(self, "send_test", quote(obj.pk))
            if obj.uncertain and self._may_decide(request, obj):
                context["send_uncertain_url"] = page_url(self, "uncertain", quote(obj.pk))
        return super().render_change_form(request, context, add, change, form_url, obj)

    def _edition(self, request, object_id, may) -> Edition:
        # The order of Django's change view: no permission, no word on whether the id exists.
        if not may(request):
            raise PermissionDenied
        edition = self.get_object(request, unquote(object_id))
        if edition is None:
            raise Http404("No such edition.")
        return edition

    def _send_test(self, request, *, edition, channel: Channel) -> None:
        """One message marked [Test] to the signed-in member's own address only (no address is
        typed in: the button cannot mail anyone else); nothing is recorded as sent. `edition`: an
        Edition, or the Rendered parts of a post not sent yet."""
        newsletter = services.newsletter_of(channel)
        try:
            message.send_test(edition_or_rendered=edition, newsletter=newsletter, to_email=request.user.email)
        except Exception as exc:  # smtplib's, sockets' and providers' errors vary by backend
            logger.warning("newsletter test not sent channel=%s: %r", channel.pk, exc)
            self.message_user(request, f"The test was not sent: the mail server said {exc}", messages.ERROR)
        else:
            self.message_user(request, f"A test was sent to {request.user.email} (only).", messages.SUCCESS)

    def send_test_view(self, request, object_id):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        edition = self._edition(request, object_id, self.has_view_permission)
        self._send_test(request, edition=edition, channel=edition.channel)
        return HttpResponseRedirect(page_url(self, "change", quote(edition.pk)))

    def send_uncertain_view(self, request, object_id):
        edition = self._edition(request, object_id, self._may_decide)
        if request.method == "POST":
            try:
                count = editions.edition_send_uncertain(edition=edition)
            except DomainError as exc:
                self.message_user(request, f"Nothing was sent: {exc.message}", messages.ERROR)
            else:
                self.message_user(
                    request, f"{count:,} uncertain recipient(s) are being sent the edition again.", messages.SUCCESS
                )
            return HttpResponseRedirect(page_url(self, "change", quote(edition.pk)))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Send to uncertain recipients",
            "edition": edition,
            "change_url": page_url(self, "change", quote(edition.pk)),
        }
        return TemplateResponse(request, "admin/publishing_newsletter/edition_send_uncertain.html", context)

    # --- A post not mailed yet (its own page links here) ---

    def _post(self, request, post_id: int) -> tuple[Channel, Document]:
        """The newsletter post of the user's account, as it would be mailed now, for whoever may
        change posts."""
        if not request.user.has_perm("posts.change_post"):
            raise PermissionDenied
        channel = scoped(request, Channel.objects.filter(platform=PLATFORM, posts__pk=post_id)).first()
        document = subject().document(post_id=post_id, action="publish", published_at=None) if channel else None
        if document is None:
            raise Http404("No such newsletter post.")
        return channel, document

    @step_up.not_needed
    def post_preview_view(self, request, post_id: int):
        channel, document = self._post(request, post_id)
        shown = message.preview(channel=channel, document=document)
        newsletter = Newsletter.objects.filter(channel=channel).first() or Newsletter(channel=channel)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"E-mail preview: {shown.subject}",
            "shown": shown,
            "sender": services.sender_address(newsletter),
            "reply_to": newsletter.reply_to,
            "frame": preview_frame(shown),
            "post_url": admin_url(self, "posts_post_change", post_id),
            "send_test_url": page_url(self, "post_test", post_id),
            "edition": Edition.objects.filter(post_id=post_id).first(),
        }
        return TemplateResponse(request, "admin/publishing_newsletter/post_preview.html", context)

    @step_up.not_needed
    def post_send_test_view(self, request, post_id: int):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        channel, document = self._post(request, post_id)
        self._send_test(request, edition=message.render(channel=channel, document=document), channel=channel)
        return HttpResponseRedirect(page_url(self, "post_preview", post_id))
