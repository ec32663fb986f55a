"""The error pages: the admin's own look in the Settings area (with the user's menu), the web pages'
look elsewhere, JSON under /v1; a 500 without a traceback; an editor's 403 inside the admin; a
refused change answered by its error alone.

This module is also the URL conf of the tests that need a view that fails (ROOT_URLCONF below):
the service's own, with a few such views in front, and its own error handlers."""

import re

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.urls import path
from django.views import defaults
from rest_framework.views import APIView

from apps.core import error_pages
from apps.posts.models import Post
from apps.users.models import Role, Status, User
from config import urls as service_urls
from tests.blog.test_browser import Watched
from tests.blog.test_html_validity import JAVA, VNU_JAR, validation_errors
from tests.conftest import admin_session, needs_chromium
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ChannelFactory,
    OperatorFactory,
    PostFactory,
    UserFactory,
)
from tests.posts.test_post_admin import change_url, form_data
from tests.users.test_users_admin import change_form

# Text that only a leaked exception would put on a page.
SECRET = "internal detail 7f3a9c"


def _raises(exception: Exception):
    def view(request):
        raise exception

    return view


class FailingApiView(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request):
        raise RuntimeError(SECRET)


urlpatterns = [
    path(f"{django_settings.ADMIN_URL}boom/", _raises(RuntimeError(SECRET))),
    path("v1/boom", _raises(RuntimeError(SECRET))),
    path("v1/boom-in-a-drf-view", FailingApiView.as_view()),
    path("v1/forbidden", _raises(PermissionDenied(SECRET))),
    path("boom/", _raises(RuntimeError(SECRET))),
    path("forbidden/", _raises(PermissionDenied(SECRET))),
    *service_urls.urlpatterns,
]
handler400 = service_urls.handler400
handler403 = service_urls.handler403
handler404 = service_urls.handler404
handler500 = service_urls.handler500

pytestmark = pytest.mark.django_db

ADMIN = f"/{django_settings.ADMIN_URL}"
# The marks of each look: the web pages' base template, and the admin's header and menu.
WEB_PAGE = '<meta name="referrer" content="no-referrer">'
ADMIN_HEADER = '<header id="header">'
ADMIN_MENU = 'id="nav-sidebar"'


@pytest.fixture
def failing_views(settings):
    settings.ROOT_URLCONF = __name__


@pytest.fixture
def browser_client():
    """A client that gets the answer to an exception, as a browser would (not the exception)."""
    return Client(raise_request_exception=False)


def html(response) -> str:
    assert response["Content-Type"].startswith("text/html"), response["Content-Type"]
    return response.content.decode()


def error_of(response) -> dict:
    assert response["Content-Type"] == "application/json", response["Content-Type"]
    return response.json()["error"]


# --- 404 ---


def test_an_unknown_address_gets_the_web_pages_404(client):
    page = html(client.get("/no-such-page/"))
    assert WEB_PAGE in page
    assert "<h1>Page not found</h1>" in page
    assert ADMIN_HEADER not in page


def test_a_blog_that_does_not_exist_gets_the_web_pages_404(client):
    response = client.get("/blog/no-such-blog/")
    assert response.status_code == 404
    assert "<h1>Page not found</h1>" in html(response)


def test_an_unknown_page_of_the_settings_area_is_the_admins_own_404_with_the_users_menu():
    editor = UserFactory(role=Role.EDITOR, account=AccountFactory(name="Acme"))
    response = admin_session(editor).get(f"{ADMIN}no-such-page/")
    assert response.status_code == 404
    page = html(response)
    assert "<h1>Page not found</h1>" in page
    assert ADMIN_HEADER in page and ADMIN_MENU in page
    assert "Acme · Content" in page  # the header of the editor's other pages
    assert f'href="{ADMIN}posts/post/"' in page
    assert editor.email in page  # the user tools: who is signed in, and Log out
    assert 'action="/admin/logout/"' in page


def test_an_unknown_address_under_v1_is_still_json(client):
    response = client.get("/v1/no-such-resource")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


# --- 403 ---


@pytest.mark.parametrize(
    "page_of_admins",
    ["users/user/", "accounts/apikey/", "webhooks/webhookendpoint/", "webhooks/delivery/", "accounts/apikey/add/"],
)
def test_an_editor_opening_a_page_of_the_accounts_admins_gets_the_admins_own_403(page_of_admins):
    editor = UserFactory(role=Role.EDITOR, account=AccountFactory(name="Acme"))
    response = admin_session(editor).get(f"{ADMIN}{page_of_admins}")
    assert response.status_code == 403
    page = html(response)
    assert "You don't have permission to view this page" in page
    assert "Your role in Acme (editor) does not include it" in page
    assert ADMIN_HEADER in page and ADMIN_MENU in page
    # The menu is the editor's own: content, not the admins' pages.
    assert f'href="{ADMIN}posts/post/"' in page
    assert f'href="{ADMIN}users/user/"' not in page


def test_an_editor_posting_to_a_page_of_the_admins_is_told_they_may_not_do_it():
    editor = UserFactory(role=Role.EDITOR)
    response = admin_session(editor).post(f"{ADMIN}users/user/add/", {"email": "new@example.com"})
    assert response.status_code == 403
    assert "You don't have permission to do this" in html(response)
    assert not User.objects.filter(email="new@example.com").exists()


def test_the_operator_refused_a_page_that_nobody_may_use_gets_the_admins_403():
    response = admin_session(OperatorFactory()).get(f"{ADMIN}webhooks/delivery/add/")
    assert response.status_code == 403
    page = html(response)
    assert ADMIN_MENU in page
    assert "The operator console does not offer it." in page


def test_a_refusal_outside_the_settings_area_gets_the_web_pages_403(failing_views, client):
    response = client.get("/forbidden/")
    assert response.status_code == 403
    page = html(response)
    assert WEB_PAGE in page
    assert "You don't have permission to view this page" in page
    assert SECRET not in page


def test_a_refusal_under_v1_is_still_json(failing_views, client):
    response = client.get("/v1/forbidden")
    assert response.status_code == 403
    assert error_of(response) == {
        "code": "permission_denied",
        "message": "You do not have permission to perform this action.",
    }


def a_form_sent_with_a_stale_token():
    """A sign-in form sent with a token from before the session's last sign-in (another tab's)."""
    browser = Client(enforce_csrf_checks=True)
    browser.get(f"{ADMIN}login/")  # sets the CSRF cookie
    return browser.post(f"{ADMIN}login/", {"csrfmiddlewaretoken": "x" * 64, "username": "a@example.com"})


def test_a_form_sent_with_a_stale_token_gets_the_web_pages_403_that_says_what_to_do():
    response = a_form_sent_with_a_stale_token()
    assert response.status_code == 403
    page = html(response)
    assert WEB_PAGE in page
    assert "<h1>This form could not be sent</h1>" in page
    assert "opened before you last signed in or out" in page


# --- 400 ---


def test_a_list_filter_the_page_does_not_offer_gets_the_admins_400(admin_client):
    response = admin_client.get(f"{ADMIN}users/user/?password__startswith=a")
    assert response.status_code == 400
    page = html(response)
    assert ADMIN_MENU in page
    assert "<h1>This request cannot be answered</h1>" in page


def test_a_host_the_service_does_not_serve_gets_the_web_pages_400(client):
    response = client.get("/", HTTP_HOST="not-ours.example")
    assert response.status_code == 400
    assert WEB_PAGE in html(response)


# --- 500 ---


def test_a_failure_on_a_web_page_gets_the_500_page_without_a_traceback(failing_views, browser_client):
    response = browser_client.get("/boom/")
    assert response.status_code == 500
    page = html(response)
    assert WEB_PAGE in page
    assert "Something went wrong on our side" in page
    assert SECRET not in page and "Traceback" not in page and "RuntimeError" not in page
    # The reference it gives is the request's id, which the error's log lines carry.
    assert f"<code>{response['X-Request-ID']}</code>" in page
    assert '<a href="/">Go to the home page</a>' in page


def test_a_failure_in_the_settings_area_gets_the_500_page_leading_back_to_it(failing_views, browser_client):
    response = browser_client.get(f"{ADMIN}boom/")
    assert response.status_code == 500
    page = html(response)
    assert f'<a href="{ADMIN}">Back to the Settings area</a>' in page
    assert SECRET not in page and "Traceback" not in page


@pytest.mark.parametrize("address", ["/v1/boom", "/v1/boom-in-a-drf-view"])
def test_a_failure_under_v1_is_still_json(failing_views, browser_client, address):
    response = browser_client.get(address)
    assert response.status_code == 500
    assert error_of(response) == {"code": "internal_error", "message": "Internal server error."}
    assert SECRET not in response.content.decode()


def test_the_500_page_reads_nothing_from_the_database(django_assert_num_queries):
    """The error may be the database's."""
    request = RequestFactory().get("/boom/")
    with django_assert_num_queries(0):
        response = error_pages.server_error(request)
    assert response.status_code == 500
    assert WEB_PAGE in response.content.decode()


def test_the_500_page_renders_from_its_template_alone_as_djangos_own_handler_renders_it():
    """A blog's own domain has Django's handler, which renders 500.html with no values at all."""
    page = defaults.server_error(RequestFactory().get("/boom/")).content.decode()
    assert WEB_PAGE in page
    assert '<a href="/">Go to the home page</a>' in page
    assert "reference" not in page


def test_a_500_page_that_cannot_be_rendered_still_answers_in_html(failing_views, browser_client, monkeypatch):
    def broken(name):
        raise RuntimeError("the template directory is gone")

    monkeypatch.setattr(error_pages.loader, "get_template", broken)
    response = browser_client.get("/boom/")
    assert response.status_code == 500
    assert response.content.decode() == error_pages.LAST_RESORT_500


# --- A refused change is answered by its error alone ---


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_a_post_saved_with_a_refused_status_shows_the_refusal_without_a_success_message(admin_client):
    post = PostFactory(channel=ChannelFactory(platform="api"), publication_status="draft", title="Before")
    response = admin_client.post(
        change_url(post), form_data(post, title="After", publication_status="published"), follow=True
    )
    [message] = messages_of(response)
    assert message.startswith("The status was not changed:")
    post.refresh_from_db()
    assert (post.title, post.publication_status) == ("After", "draft")


def test_a_post_saved_without_a_refusal_still_says_it_was_changed(admin_client):
    post = PostFactory(channel=ChannelFactory(platform="blog"), publication_status="draft", title="Before")
    response = admin_client.post(change_url(post), form_data(post, title="After"), follow=True)
    [message] = messages_of(response)
    assert re.search(r"The post .*After.* was changed successfully", message)
    assert Post.objects.get(pk=post.pk).title == "After"


def test_a_change_a_rule_refuses_whole_shows_only_why():
    admin = AdminUserFactory()
    response = admin_session(admin).post(
        f"{ADMIN}users/user/{admin.pk}/change/", change_form(admin, status=Status.SUSPENDED), follow=True
    )
    [message] = messages_of(response)
    assert message.startswith("Nothing was changed:") and "last active admin" in message
    admin.refresh_from_db()
    assert admin.status == Status.ACTIVE


# --- Valid HTML, and what a browser shows ---


@pytest.mark.skipif(JAVA is None or VNU_JAR is None or not VNU_JAR.is_file(), reason="needs the Nu HTML Checker")
def test_the_error_pages_are_valid_html(failing_views, browser_client, tmp_path):
    editor = admin_session(UserFactory(role=Role.EDITOR))
    pages = {
        "404": browser_client.get("/no-such-page/"),
        "403": browser_client.get("/forbidden/"),
        "400": browser_client.get("/", HTTP_HOST="not-ours.example"),
        "500": browser_client.get("/boom/"),
        "403-csrf": a_form_sent_with_a_stale_token(),
        "admin-404": editor.get(f"{ADMIN}no-such-page/"),
        "admin-403": editor.get(f"{ADMIN}users/user/"),
    }
    errors = validation_errors({name: response.content for name, response in pages.items()}, tmp_path)
    assert errors == [], "\n".join(errors)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@needs_chromium
def test_a_browser_shows_the_404_page_in_the_sites_style(browser, live_server):
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    watched = Watched(page)
    answer = page.goto(f"{live_server.url}/no-such-page/")
    assert answer.status == 404
    assert page.title() == "Page not found · Content Publishing"
    assert page.locator("main h1").inner_text() == "Page not found"
    # The base template's style applies (the page's policy lets its own style in): a narrow
    # centred column in a sans-serif face, not the browser's default serif page edge to edge.
    assert "system-ui" in page.evaluate("getComputedStyle(document.body).fontFamily")
    left, width = page.locator("main").evaluate("main => [main.getBoundingClientRect().left, main.clientWidth]")
    assert width <= 32 * 16 and left > 200
    page.click("main a:text('Go to the home page')")
    page.wait_for_url(f"{live_server.url}/")
    # The page's own 404 (and the browser's look for /favicon.ico) are all that failed: the
    # Content-Security-Policy refused no style.
    not_found = "Failed to load resource: the server responded with a status of 404 (Not Found)"
    others = [problem for problem in watched.problems if problem != not_found]
    assert others == [f"{live_server.url}/no-such-page/"], "\n".join(watched.problems)
