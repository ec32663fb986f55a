"""The admin site: the operator's console and every account's Settings area in one.

Who gets in follows the user's role and status on every request (User.admin_area): the operator
sees every account; an account's admins get its Settings area, its editors its content; viewers
and users who are not active get no admin. What a user may do inside follows their permissions
(apps/settings_area/access.py). Every registered model admin is scoped to the user's account: the site
takes no admin class of an account's data that is not built on AccountScopedAdmin
(apps/core/admin.py). Sign-ins are reported as user.login events (the house rule keeps events out
of signals, so the login view reports them).
Installed by `SettingsAreaConfig` (apps/settings_area/apps.py) in place of django.contrib.admin.
"""

from functools import cache, update_wrapper

from django.contrib import admin
from django.core.exceptions import ImproperlyConfigured
from django.db.models import CASCADE, Q
from django.db.models.base import ModelBase
from django.urls import path, reverse
from django.utils.decorators import method_decorator
from django.views.decorators.debug import sensitive_post_parameters

from apps.channels.models import Channel, Platform
from apps.core import step_up
from apps.core.admin import page_state
from apps.core.admin_scoping import AccountScopedAdmin
from apps.core.scoping import account_path
from apps.settings_area import views
from apps.stories.admin_calendar import calendar_urls
from apps.stories.admin_feed import feed_urls
from apps.users.models import AREA_ROLES, OPERATOR, LoginMethod, Role, default_permissions_for
from apps.users.services import user_record_login

AREA_NAMES = {
    OPERATOR: "Operator console",
    Role.ADMIN: "Settings",
    Role.EDITOR: "Content",
}


class ServiceAdminSite(admin.AdminSite):
    site_title = "Content Publishing admin"
    login_form = views.SettingsAuthenticationForm
    index_template = "admin/service_index.html"

    def register(self, model_or_iterable, admin_class=None, **options):
        # The house rule: every account's data is scoped by one mechanism. A model admin that is not
        # built on it would show every account's rows to whoever may see the model. A model with no
        # way to an account (Django's groups, django-axes' records) is the operator's alone: the
        # access table gives it to no one else, so its library's own admin may stay.
        models = [model_or_iterable] if isinstance(model_or_iterable, ModelBase) else model_or_iterable
        scoped = admin_class is not None and issubclass(admin_class, AccountScopedAdmin)
        if not scoped and any(account_path(model) is not None for model in models):
            name = getattr(admin_class, "__qualname__", "ModelAdmin")
            raise ImproperlyConfigured(
                f"{name}: a model admin of an account's data inherits AccountScopedAdmin "
                "(apps/core/admin.py: SettingsModelAdmin)."
            )
        super().register(model_or_iterable, admin_class, **options)

    def each_context(self, request):
        context = super().each_context(request)
        user = request.user
        area = getattr(user, "admin_area", None)
        context["admin_area"] = area
        context["site_header"] = self._header(user, area)
        if area in AREA_ROLES:
            context["area_account"] = user.account
            if set(user.permissions) != set(default_permissions_for(user.role)):
                # The index's words describe the role's defaults; say when the user's own differ.
                context["permissions_of_their_own"] = user.permissions
        if area != OPERATOR:
            # "View site": the operator's is the service's home page (Django's); a member's, their blog.
            context["site_url"] = self._members_site_url(request, user.account_id) if area else None
        context["step_up_needed"] = user.is_authenticated and step_up.is_limited(request.session)
        return context

    @staticmethod
    def _members_site_url(request, account_id: int) -> str | None:
        """The public address of the account's first blog channel (by id) that has one, or None
        (no link). Read once per request, however many times a page builds its context."""
        state = page_state(request)
        if not state.site_url_known:
            blog = (
                Channel.objects.filter(account_id=account_id, platform=Platform.BLOG)
                .filter(Q(handle__isnull=False) | Q(domain__isnull=False))
                .order_by("id")
                .only("platform", "handle", "domain")
                .first()
            )
            state.site_url, state.site_url_known = (blog.public_url() if blog is not None else None), True
        return state.site_url

    @staticmethod
    def _header(user, area) -> str:
        if area in AREA_ROLES:
            return f"{user.account} · {AREA_NAMES[area]}"
        return "Content Publishing administration"

    def admin_view(self, view, cacheable=False):
        inner = super().admin_view(view, cacheable)

        def signed_in_without_access(request, *args, **kwargs):
            if self._signed_in_without_access(request):
                if request.path == reverse("admin:logout", current_app=self.name):
                    return view(request, *args, **kwargs)  # LogoutView: POST with a CSRF token only
                # Django would send them back to the login form without a word; say why.
                return self.no_access(request)
            if self._needs_step_up(request, view):
                return self.ask_for_password(request)
            return inner(request, *args, **kwargs)

        return update_wrapper(signed_in_without_access, inner)

    @staticmethod
    def _needs_step_up(request, view) -> bool:
        """A page of a ModelAdmin whose `step_up` covers it, in a session an SSO link started and no
        password has raised since. ModelAdmin pages arrive here as the model admin's bound methods;
        other views (buttons) carry the model admin as `model_admin`."""
        model_admin = getattr(view, "__self__", None) or getattr(view, "model_admin", None)
        policy = getattr(model_admin, "step_up", None)
        if not (request.user.is_authenticated and step_up.is_limited(request.session)):
            return False
        if policy is not None and step_up.applies(policy, view, request.method):
            return True
        return model_admin is not None and _deletion_page(view, request) and _deletes_guarded_rows(model_admin)

    def ask_for_password(self, request):
        return views.ask_for_password(self, request)

    def get_urls(self):
        return [
            path("confirm-password/", self.admin_view(self.confirm_password), name="confirm_password"),
            *calendar_urls(self),
            *feed_urls(self),
            *super().get_urls(),
        ]

    @method_decorator(sensitive_post_parameters("password"))
    def confirm_password(self, request):
        return views.confirm_password(self, request)

    def _signed_in_without_access(self, request) -> bool:
        return request.user.is_authenticated and not self.has_permission(request)

    def no_access(self, request):
        return views.no_access(self, request)

    def login(self, request, extra_context=None):
        if request.method == "GET" and self._signed_in_without_access(request):
            return self.no_access(request)
        response = super().login(request, extra_context)
        # Django's LoginView answers a POST with a redirect only when the credentials were valid
        # and the user has been logged in; a failed attempt re-renders the form (200).
        if request.method == "POST" and response.status_code == 302 and request.user.is_authenticated:
            step_up.mark_started_with_password(request.session)
            user_record_login(user=request.user, via=LoginMethod.ADMIN)
        return response


def _deletion_page(view, request) -> bool:
    """Django's delete page of an object, or its list's "delete selected" action (both list what goes)."""
    name = getattr(view, "__name__", "")
    return name == "delete_view" or (
        name == "changelist_view" and request.method == "POST" and request.POST.get("action") == "delete_selected"
    )


def _deletes_guarded_rows(model_admin) -> bool:
    """Whether deleting the model admin's rows takes rows of a model whose every page is behind the
    step-up (StepUp.EVERY_PAGE): Django's delete page names each row it takes (the people
    a channel mails, by address), so it asks for the password as those rows' own pages do."""
    site = model_admin.admin_site
    return any(
        site.is_registered(model) and getattr(site.get_model_admin(model), "step_up", None) is step_up.StepUp.EVERY_PAGE
        for model in _cascades_to(model_admin.model)
    )


@cache
def _cascades_to(model) -> frozenset:
    """Every model whose rows the deletion of `model`'s rows deletes too (CASCADE, at any depth)."""
    found, todo = set(), [model]
    while todo:
        for relation in todo.pop()._meta.related_objects:
            related = relation.related_model
            if relation.on_delete is CASCADE and related not in found:
                found.add(related)
                todo.append(related)
    return frozenset(found)
