"""Every list page of the admin (the operator's console, an account's Settings area, an editor's
content) with hostile values in everything its address takes (issue 30, point 4): each list filter's
parameters, the date links, search, ordering, pages and the admin's own flags, and the autocomplete's
term. The answer is the list (200), the admin's own "?e=1" redirect, or its 400 for a lookup the page
does not offer; never a 500. The pages are walked from the admin site's registry, so a model
registered later is walked too; every failure is reported at once, and each request runs in a
savepoint so that one failure (PostgreSQL aborts the transaction) does not hide the next."""

from urllib.parse import urlencode

import pytest
from django.contrib import admin
from django.db import transaction
from django.http import QueryDict
from django.test import RequestFactory

from apps.core.admin_scoping import LIST_VALUE_MAX_CHARS
from apps.posts.models import Post
from apps.webhooks import services as webhook_services
from tests.conftest import admin_session
from tests.factories import OperatorFactory, WebhookEndpointFactory
from tests.security.test_admin_access_matrix import build_side

pytestmark = pytest.mark.django_db

# What an attacker types, as it travels in the address (percent-encoded, invalid UTF-8 included).
# NUL (the 500) goes into every parameter of every list, for every role.
EVERYWHERE = {"a word with NUL": "draft%00"}
# The other values each where it means something: answered by the list (200, maybe empty) or by
# the admin's own error. Invalid UTF-8 arrives as U+FFFD; "%uD800" is text, not an escape.
LONG = {"10,000 characters": "x" * 10_000}
READ = {
    "filter": {
        **LONG,
        "invalid UTF-8 (a lone surrogate's bytes)": "%ED%A0%80",
        "an unknown choice": "no-such-choice",
        "a 30-digit number": "9" * 30,
        "a digit int() refuses": "%C2%B2",
    },
    "isnull": {"a word, not a truth value": "xyz"},
    "date": {
        **LONG,
        "the last year": "9999",
        "a 30-digit number": "9" * 30,
        "a negative number": "-1",
        "nothing": "",
        "a digit int() refuses": "%C2%B2",
    },
    "q": {
        **LONG,
        "a broken regular expression": "(",
        "a %u escape of a lone surrogate": "%uD800",
        "a digit int() refuses": "%C2%B2",
        "500 words": "a+" * 499 + "a",
    },
    "o": {"a column that does not exist": "999", "junk": "-x.1.-"},
    "p": {"a 30-digit page": "9" * 30, "junk": "x"},
    "_to_field": {"a field no relation uses": "password"},
    "flag": {},  # all, _facets, _popup, e: only whether they are there counts
}
# Django's own answers to a bad address (and the autocomplete's: 403 to a user who may not see the
# related list, 404 to a page that does not exist).
ADMIN_ANSWERS = {200, 400, 403, 404}
# Lookups of a model's own fields that Django allows: one reads a column letter by letter, the
# others fail in the database for some values (a bare name is `__exact`).
LOOKUPS_NOT_OFFERED = ("__startswith", "__regex", "__range", "__year", "__contains", "")


def request_of(user):
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def lists_of(user):
    """(model admin, its list's URL) for each list the user may open."""
    for model, model_admin in admin.site._registry.items():
        if model_admin.has_view_or_change_permission(request_of(user)):
            yield model_admin, f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


def offered_parameters(model_admin, user) -> dict[str, str]:
    """What the user's list page takes from its address, each with its kind (READ): its filters'
    parameters (as this user's list has them), its date links (`year`, then `month` within a year,
    `day` within a month), search, ordering, pages and the admin's flags. Each is a query string
    the value is appended to."""
    changelist = model_admin.get_changelist_instance(request_of(user))
    offered = {
        name: "isnull" if name.endswith("__isnull") else "filter"
        for spec in changelist.filter_specs
        for name in spec.expected_parameters()
    }
    if field := model_admin.date_hierarchy:
        year = f"{field}__year"
        for parameter in (year, f"{year}=2024&{field}__month", f"{year}=2024&{field}__month=2&{field}__day"):
            offered[parameter] = "date"
    return {**offered, "q": "q", "o": "o", "p": "p", "_to_field": "_to_field"} | dict.fromkeys(
        ("all", "_facets", "_popup", "e"), "flag"
    )


def values_for(who: str, kind: str) -> dict[str, str]:
    """EVERYWHERE values everywhere; READ values where the code that reads them differs: the list
    filters as the operator has them (Django's) and as an account's users have them (scoped; an
    editor's are its admin's), search, ordering and pages (the same for every role) as the operator's."""
    reads = who == "operator" or (who == "admin" and kind in ("filter", "isnull", "date"))
    return EVERYWHERE | (READ[kind] if reads else {})


class Walk:
    """Requests made, and every answer that is not the admin's own, reported together."""

    def __init__(self):
        self.requests = 0
        self.failures: list[str] = []

    def get(self, client, url: str, what: str):
        self.requests += 1
        try:
            with transaction.atomic():
                response = client.get(url)
        except Exception as exc:  # the test client re-raises what a 500 would have been
            self.failures.append(f"{what}: raised {type(exc).__name__}: {str(exc)[:200]}")
            return None
        status = response.status_code
        if status == 302 and response["Location"].endswith("?e=1"):
            return response
        if status not in ADMIN_ANSWERS:
            self.failures.append(f"{what}: {status} {response.get('Location', '')}")
        return response

    def assert_clean(self):
        assert not self.failures, f"{len(self.failures)} of {self.requests} answers:\n" + "\n".join(self.failures)


@pytest.fixture
def people(monkeypatch):
    monkeypatch.setattr(webhook_services, "enqueue", lambda ids, manual=False: None)
    side = build_side("Alpha")
    WebhookEndpointFactory(account=side.account)  # so that the deliveries' endpoint filter shows
    build_side("Zulu")  # the operator's lists then have two accounts to filter by
    return {"operator": OperatorFactory(email="root@service.example"), "admin": side.admin, "editor": side.editor}


def test_no_list_answers_a_hostile_value_with_a_server_error(people):
    walk, walked = Walk(), set()
    for who, user in people.items():
        client = admin_session(user)
        for model_admin, url in lists_of(user):
            label = model_admin.opts.label_lower
            for parameter, kind in offered_parameters(model_admin, user).items():
                walked.add((who, label, parameter))
                for name, value in values_for(who, kind).items():
                    walk.get(client, f"{url}?{parameter}={value}", f"{who} {label} {parameter}= {name}")
    walk.assert_clean()
    # Not vacuous: every role walked its lists' filters, the issue's own URL among them.
    for who in people:
        assert (who, "posts.post", "publication_status__exact") in walked
    assert ("operator", "webhooks.delivery", "created_at__year") in walked
    assert ("admin", "users.user", "role__exact") in walked
    assert ("admin", "webhooks.delivery", "endpoint__id__exact") in walked
    assert len({(label, parameter) for _, label, parameter in walked}) >= 150
    assert walk.requests >= 750


def test_the_attackers_url_answers_the_admins_own_error_and_an_unknown_choice_an_empty_list(people):
    client = admin_session(people["editor"])
    response = client.get("/admin/posts/post/?publication_status__exact=%00")
    assert response.status_code == 302
    assert response["Location"] == "/admin/posts/post/?e=1"
    assert client.get(response["Location"]).status_code == 200

    unknown = client.get("/admin/posts/post/?publication_status__exact=no-such-choice")
    assert unknown.status_code == 200
    assert unknown.context["cl"].result_count == 0


def test_a_value_just_within_the_length_limit_is_filtered_by_and_one_beyond_is_refused(people):
    client = admin_session(people["admin"])
    within = client.get("/admin/users/user/", {"q": "x" * LIST_VALUE_MAX_CHARS})
    assert within.status_code == 200
    assert within.context["cl"].result_count == 0
    beyond = client.get("/admin/users/user/", {"q": "x" * (LIST_VALUE_MAX_CHARS + 1)})
    assert (beyond.status_code, beyond["Location"]) == (302, "/admin/users/user/?e=1")


def test_a_lookup_no_page_offers_is_refused_on_every_list(people):
    """Django allows any lookup on a model's own fields in a list's address. None of these is one a
    page's filters make; each is refused (400) before it reaches the database: every column of
    every list, each with one of the lookups in turn (`__startswith` reads a column letter by
    letter; the others fail in the database for some values)."""
    walk, refused = Walk(), 0
    client = admin_session(people["operator"])
    for model_admin, url in lists_of(people["operator"]):
        offered = set(offered_parameters(model_admin, people["operator"]))
        for index, field in enumerate(model_admin.opts.concrete_fields):
            parameter = f"{field.name}{LOOKUPS_NOT_OFFERED[index % len(LOOKUPS_NOT_OFFERED)]}"
            if parameter in offered:
                continue
            what = f"operator {model_admin.opts.label_lower} {parameter}=("
            response = walk.get(client, f"{url}?{parameter}=(", what)
            if response is not None and response.status_code == 400:
                refused += 1
            elif response is not None:
                walk.failures.append(f"{what}: {response.status_code}, not refused")
    walk.assert_clean()
    assert refused >= 120


@pytest.mark.parametrize(
    ("url", "lookup", "secret"),
    [
        ("/admin/users/user/", "password__startswith", lambda side: side.admin.password[:8]),
        ("/admin/accounts/apikey/", "key_hash__startswith", lambda side: side.objects["accounts.apikey"].key_hash[:4]),
        (
            "/admin/webhooks/webhookendpoint/",
            "secret_encrypted__startswith",
            lambda side: side.objects["webhooks.webhookendpoint"].secret_encrypted[:8],
        ),
    ],
    ids=["a password hash", "an API key's hash", "a webhook signing secret"],
)
def test_an_account_admin_cannot_read_a_secret_letter_by_letter_through_a_lists_address(
    monkeypatch, url, lookup, secret
):
    monkeypatch.setattr(webhook_services, "enqueue", lambda ids, manual=False: None)
    side = build_side("Alpha")
    client = admin_session(side.admin)
    assert client.get(url).status_code == 200
    # A right prefix would list the row and a wrong one not: one letter at a time, the whole secret.
    response = client.get(url, {lookup: secret(side)})
    assert response.status_code == 400


def test_a_lone_surrogate_that_reached_a_list_or_a_search_is_refused_without_a_query(people):
    """Django decodes invalid UTF-8 in an address to U+FFFD, so a lone surrogate cannot come in by
    HTTP today; the lists refuse one all the same (psycopg cannot encode it: a 500)."""
    model_admin = admin.site._registry[Post]
    request = RequestFactory().get("/admin/posts/post/")
    request.user = people["editor"]
    request.GET = QueryDict(mutable=True)
    request.GET["publication_status__exact"] = "draft\ud800"
    response = model_admin.changelist_view(request)
    assert (response.status_code, response["Location"]) == (302, "/admin/posts/post/?e=1")
    queryset, _ = model_admin.get_search_results(request, Post.objects.all(), "draft\ud800")
    assert list(queryset) == []


def test_the_autocomplete_answers_hostile_terms(people):
    walk = Walk()
    for who, user in people.items():
        client = admin_session(user)
        for model_admin, _url in lists_of(user):
            for field_name in model_admin.autocomplete_fields:
                query = (
                    urlencode({"app_label": model_admin.opts.app_label, "model_name": model_admin.opts.model_name})
                    + f"&field_name={field_name}"
                )
                for name, value in (EVERYWHERE | READ["q"]).items():
                    walk.get(client, f"/admin/autocomplete/?{query}&term={value}", f"{who} {query} term= {name}")
                    walk.get(client, f"/admin/autocomplete/?{query}&term=a&page={value}", f"{who} {query} page= {name}")
    walk.assert_clean()
    assert walk.requests >= 2 * len(EVERYWHERE | READ["q"]) * 3
