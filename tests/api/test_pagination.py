import pytest
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from apps.accounts.models import Account
from apps.api.pagination import PagePagination
from tests.factories import UserFactory

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.api.urls")]


@pytest.fixture
def users(api_key):
    # api_key's owner is one user; 44 more make 45.
    return [api_key.user, *UserFactory.create_batch(44)]


def test_defaults_are_page_1_of_20(authed, users):
    body = authed.get("/v1/_test/paged").json()
    assert body["meta"] == {"page": 1, "pages": 3, "count": 45, "per_page": 20}
    assert len(body["data"]) == 20


def test_last_page_holds_the_rest(authed, users):
    body = authed.get("/v1/_test/paged?page=3").json()
    assert [row["id"] for row in body["data"]] == [u.id for u in sorted(users, key=lambda u: u.id)][40:]


def test_page_past_the_last_is_empty_with_true_meta(authed, users):
    body = authed.get("/v1/_test/paged?page=9").json()
    assert body == {"data": [], "meta": {"page": 9, "pages": 3, "count": 45, "per_page": 20}}


def test_huge_page_number_is_empty_not_an_error(authed, users):
    response = authed.get(f"/v1/_test/paged?page={10**30}")
    assert response.status_code == 200
    assert response.json()["data"] == []


def test_per_page_over_100_is_capped(authed, users):
    UserFactory.create_batch(80)
    body = authed.get("/v1/_test/paged?per_page=500").json()
    assert body["meta"]["per_page"] == 100
    assert len(body["data"]) == 100


def test_limit_alias_and_per_page_precedence(authed, users):
    assert authed.get("/v1/_test/paged?limit=5").json()["meta"]["per_page"] == 5
    assert authed.get("/v1/_test/paged?limit=5&per_page=7").json()["meta"]["per_page"] == 7


@pytest.mark.parametrize("query", ["page=0", "page=-1", "page=abc", "page=1.5", "per_page=0", "per_page=x", "limit=-3"])
def test_bad_page_parameters_are_validation_errors(authed, users, query):
    response = authed.get(f"/v1/_test/paged?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == query.split("=")[0]


def test_empty_list_has_zero_pages():
    paginator = PagePagination()
    request = Request(APIRequestFactory().get("/v1/anything"))
    assert paginator.paginate_queryset(Account.objects.none(), request) == []
    assert paginator.get_paginated_response([]).data == {
        "data": [],
        "meta": {"page": 1, "pages": 0, "count": 0, "per_page": 20},
    }
