"""One pagination vocabulary on every list: `page`, `per_page` and its shorthand `limit`, with the
same default, maximum and 400s; each list keeps the response key the spec shows for it."""

import pytest

from tests.factories import ChannelFactory, PostFactory, UserFactory

pytestmark = pytest.mark.django_db

TOTAL = 25


def channels(account) -> str:
    ChannelFactory.create_batch(TOTAL, account=account)
    return "/v1/channels"


def posts(account) -> str:
    channel = ChannelFactory(account=account)
    PostFactory.create_batch(TOTAL, channel=channel)
    return f"/v1/channels/{channel.pk}/posts"


def users(account) -> str:
    UserFactory.create_batch(TOTAL - 1, account=account)  # with the key's owner
    return "/v1/users"


LISTS = {
    "channels": (channels, "meta", "per_page", "count"),
    "posts": (posts, "meta", "per_page", "count"),
    "users": (users, "pagination", "limit", "total"),
}


@pytest.fixture(params=LISTS)
def listing(request, admin_key, client_for):
    make, key, size, total = LISTS[request.param]
    path = make(admin_key.account)
    client = client_for(admin_key)

    def get(query: str):
        return client.get(f"{path}?{query}")

    def page(query: str) -> tuple[int, int, int]:
        """(items, page size answered, total answered)"""
        body = get(query).json()
        assert set(body) == {"data", key}
        return len(body["data"]), body[key][size], body[key][total]

    get.page = page
    return get


def test_the_default_page_holds_20(listing):
    assert listing.page("") == (20, 20, TOTAL)


@pytest.mark.parametrize("name", ["per_page", "limit"])
def test_per_page_and_limit_both_set_the_page_size(listing, name):
    assert listing.page(f"{name}=10") == (10, 10, TOTAL)
    assert listing.page(f"{name}=10&page=3") == (5, 10, TOTAL)


def test_per_page_wins_over_limit(listing):
    assert listing.page("limit=5&per_page=7")[:2] == (7, 7)


@pytest.mark.parametrize("name", ["per_page", "limit"])
def test_a_size_over_100_is_capped(listing, name):
    assert listing.page(f"{name}=1000")[1] == 100


@pytest.mark.parametrize("query", ["per_page=0", "limit=0", "limit=x", "per_page=-1", "page=0", "limit=1.5"])
def test_bad_values_are_400s_naming_the_parameter(listing, query):
    response = listing(query)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "VALIDATION_ERROR"
    assert error["details"]["field"] == query.split("=")[0]
