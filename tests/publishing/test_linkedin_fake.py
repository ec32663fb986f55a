"""The LinkedIn fake itself: other tests trust it to refuse what LinkedIn refuses, so it is tried here
with plain `requests`, without the application."""

import threading
from urllib.parse import parse_qs, quote, urlsplit

import pytest
import requests

from tests.publishing import linkedin_fake
from tests.publishing.linkedin_fake import MAIN_FEED, FakeLinkedIn

linkedin = linkedin_fake.linkedin  # the fixture

ADA = "urn:li:person:abc123"


def rest(fake, method, path, token, headers=None, **kwargs):
    sent = {"Authorization": f"Bearer {token}", "LinkedIn-Version": fake.version, "X-Restli-Protocol-Version": "2.0.0"}
    return requests.request(method, fake.url + path, headers={**sent, **(headers or {})}, timeout=10, **kwargs)


def post_body(**changes):
    return {
        "author": ADA,
        "commentary": "Hello",
        "visibility": "PUBLIC",
        "distribution": MAIN_FEED,
        "lifecycleState": "PUBLISHED",
        "isReshareDisabledByAuthor": False,
        **changes,
    }


def create(fake, token, **changes):
    return rest(fake, "POST", "/rest/posts", token, json=post_body(**changes))


def test_an_authorization_code_gives_a_token_once_and_only_with_the_right_secret(linkedin):
    params = {
        "response_type": "code",
        "client_id": "test-client",
        "redirect_uri": "http://app/cb",
        "state": "s1",
        "scope": "openid profile email w_member_social",
    }
    answer = requests.get(linkedin.auth_url + "/authorization", params=params, allow_redirects=False, timeout=10)
    assert answer.status_code == 302
    back = parse_qs(urlsplit(answer.headers["Location"]).query)
    assert back["state"] == ["s1"]
    form = {
        "grant_type": "authorization_code",
        "code": back["code"][0],
        "redirect_uri": "http://app/cb",
        "client_id": "test-client",
        "client_secret": "wrong",
    }
    assert requests.post(linkedin.auth_url + "/accessToken", data=form, timeout=10).status_code == 401
    token = requests.post(linkedin.auth_url + "/accessToken", data={**form, "client_secret": "test-secret"}, timeout=10)
    assert token.status_code == 200 and token.json()["refresh_token"]
    again = requests.post(linkedin.auth_url + "/accessToken", data={**form, "client_secret": "test-secret"}, timeout=10)
    assert again.status_code == 400 and "authorization code not found" in again.json()["error_description"]
    bearer = {"Authorization": f"Bearer {token.json()['access_token']}"}
    me = requests.get(linkedin.url + "/v2/userinfo", headers=bearer, timeout=10)
    assert me.json()["sub"] == "abc123" and me.json()["email"] == "ada@example.com"
    assert [r["client_secret"] for r in linkedin.token_requests] == ["wrong", "test-secret", "test-secret"]


def test_a_refused_authorization_goes_back_with_the_error_and_the_state(linkedin):
    linkedin.deny_next_authorization = True
    params = {
        "response_type": "code",
        "client_id": "test-client",
        "redirect_uri": "http://app/cb",
        "state": "s2",
        "scope": "w_member_social",
    }
    answer = requests.get(linkedin.auth_url + "/authorization", params=params, allow_redirects=False, timeout=10)
    assert parse_qs(urlsplit(answer.headers["Location"]).query)["error"] == ["user_cancelled_authorize"]
    assert "code" not in answer.headers["Location"] and "state=s2" in answer.headers["Location"]


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({"LinkedIn-Version": "202001"}, 426, "NONEXISTENT_VERSION"),
        ({"X-Restli-Protocol-Version": "1.0.0"}, 400, "ILLEGAL_ARGUMENT"),
        ({"Authorization": "Bearer made-up"}, 401, "INVALID_ACCESS_TOKEN"),
    ],
)
def test_a_rest_request_needs_the_active_version_restli_2_and_a_valid_token(linkedin, headers, status, code):
    token = linkedin.issue_token()["access_token"]
    answer = rest(linkedin, "POST", "/rest/posts", token, headers=headers, json=post_body())
    assert (answer.status_code, answer.json()["code"]) == (status, code)
    assert linkedin.posts == {}


def test_a_revoked_or_expired_token_is_refused_with_its_own_code(linkedin):
    revoked, expired = linkedin.issue_token()["access_token"], linkedin.issue_token()["access_token"]
    linkedin.revoke(revoked)
    linkedin.expire(expired)
    assert create(linkedin, revoked).json()["serviceErrorCode"] == 65601
    assert create(linkedin, expired).json()["serviceErrorCode"] == 65600


@pytest.mark.parametrize(
    "changes",
    [
        {"commentary": "x" * 3001},
        {"commentary": "Unescaped (parenthesis)"},
        {"commentary": "Not a hashtag: # x"},
        {"visibility": "CONNECTIONS"},
        {"distribution": {"feedDistribution": "NONE"}},
        {"lifecycleState": "DRAFT"},
        {"isReshareDisabledByAuthor": "no"},
        {"title": "not a field"},
    ],
)
def test_a_post_linkedin_would_refuse_is_422_and_not_stored(linkedin, changes):
    answer = create(linkedin, linkedin.issue_token()["access_token"], **changes)
    assert answer.status_code == 422 and answer.json()["message"]
    assert linkedin.posts == {}


def test_posts_are_made_as_the_member_or_their_page_only_then_updated_and_deleted(linkedin):
    token = linkedin.issue_token()["access_token"]
    assert create(linkedin, token, author="urn:li:person:someone-else").status_code == 403
    first = create(linkedin, token, commentary="Escaped \\(fine\\) #Hashtag")
    page = create(linkedin, token, author="urn:li:organization:2414183")
    assert first.status_code == page.status_code == 201
    assert (first.headers["x-restli-id"], page.headers["x-restli-id"]) == (
        "urn:li:share:7000000000000000001",
        "urn:li:share:7000000000000000002",
    )
    path = "/rest/posts/" + quote("urn:li:share:7000000000000000001", safe="")
    patch = {"patch": {"$set": {"commentary": "Changed"}}}
    assert rest(linkedin, "POST", path, token, json=patch).status_code == 400  # no X-RestLi-Method
    assert rest(linkedin, "POST", path, token, json=patch, headers={"X-RestLi-Method": "PARTIAL_UPDATE"}).ok
    assert linkedin.posts["urn:li:share:7000000000000000001"]["commentary"] == "Changed"
    assert rest(linkedin, "DELETE", path, token).status_code == 204
    assert rest(linkedin, "DELETE", path, token).status_code == 404
    assert list(linkedin.posts) == ["urn:li:share:7000000000000000002"]


def test_the_author_finder_lists_the_latest_change_first(linkedin):
    token = linkedin.issue_token()["access_token"]
    urns = [create(linkedin, token, commentary=text).headers["x-restli-id"] for text in ("one", "two", "three")]
    path = "/rest/posts/" + quote(urns[0], safe="")
    rest(
        linkedin,
        "POST",
        path,
        token,
        headers={"X-RestLi-Method": "PARTIAL_UPDATE"},
        json={"patch": {"$set": {"commentary": "one, edited"}}},
    )
    params = {"q": "author", "author": ADA, "count": 2, "sortBy": "LAST_MODIFIED"}
    found = rest(linkedin, "GET", "/rest/posts", token, headers={"X-RestLi-Method": "FINDER"}, params=params).json()
    assert [post["id"] for post in found["elements"]] == [urns[0], urns[2]]


def test_an_injected_failure_answers_the_next_matching_request_once(linkedin):
    token = linkedin.issue_token()["access_token"]
    linkedin.fail_next(429, headers={"Retry-After": "120"})
    throttled = create(linkedin, token)
    assert (throttled.status_code, throttled.headers["Retry-After"], throttled.json()["status"]) == (429, "120", 429)
    assert create(linkedin, token).status_code == 201
    assert len(linkedin.calls("POST", "/rest/posts")) == 2


def test_a_dropped_create_makes_the_post_but_the_client_gets_no_answer(linkedin):
    linkedin.drop_after_create()
    with pytest.raises(requests.ConnectionError):
        create(linkedin, linkedin.issue_token()["access_token"])
    assert [post["commentary"] for post in linkedin.posts.values()] == ["Hello"]


def test_a_hanging_request_times_the_client_out_and_stopping_abandons_it():
    fake = FakeLinkedIn().start()
    try:
        fake.hang(600, method="POST", path="/rest/posts")
        with pytest.raises(requests.ReadTimeout):
            requests.post(fake.url + "/rest/posts", json=post_body(), timeout=0.5)
    finally:
        # stop() must not wait out the 600 seconds; a generous bound keeps a regression from hanging the run.
        stopper = threading.Thread(target=fake.stop)
        stopper.start()
        stopper.join(timeout=10)
    assert not stopper.is_alive()
    assert fake.posts == {}


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 32  # the signature is what the fake looks at


def initialize(fake, token, owner=ADA):
    answer = rest(
        fake, "POST", "/rest/images?action=initializeUpload", token, json={"initializeUploadRequest": {"owner": owner}}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["value"]["uploadUrl"], answer.json()["value"]["image"]


def test_an_image_is_posted_only_once_its_bytes_are_uploaded_and_only_by_its_owner(linkedin):
    token = linkedin.issue_token()["access_token"]
    upload_url, urn = initialize(linkedin, token)
    assert urlsplit(upload_url).netloc == urlsplit(linkedin.url).netloc and urn.startswith("urn:li:image:")

    never_uploaded = create(linkedin, token, content={"media": {"id": urn}})
    bearer = {"Authorization": f"Bearer {token}", "Content-Type": "image/png"}
    not_an_image = requests.put(upload_url, data=b"<svg/>", headers=bearer, timeout=10)
    anonymous = requests.put(upload_url, data=PNG, headers={"Content-Type": "image/png"}, timeout=10)
    uploaded = requests.put(upload_url, data=PNG, headers=bearer, timeout=10)
    as_the_page = create(linkedin, token, author="urn:li:organization:2414183", content={"media": {"id": urn}})
    posted = create(linkedin, token, content={"media": {"id": urn, "altText": "A square"}})

    assert (never_uploaded.status_code, never_uploaded.json()["message"]) == (
        400,
        f"/content :: image {urn} has not been uploaded",
    )
    assert (not_an_image.status_code, anonymous.status_code, uploaded.status_code) == (400, 401, 201)
    assert as_the_page.status_code == 400 and "belongs to urn:li:person:abc123" in as_the_page.json()["message"]
    assert posted.status_code == 201
    assert linkedin.uploads == [(urn, PNG)] and linkedin.images[urn] == {"owner": ADA, "data": PNG, "type": "image/png"}


@pytest.mark.parametrize(
    "content",
    [
        {"media": {"id": "urn:li:digitalmediaAsset:1"}},
        {"media": {"id": "urn:li:image:1", "caption": "x"}},
        {"multiImage": {"images": [{"id": "urn:li:image:1"}]}},
        {"multiImage": {"images": [{"id": f"urn:li:image:{n}"} for n in range(21)]}},
        {"media": {"id": "urn:li:image:1"}, "article": {"source": "https://example.com", "title": "T"}},
    ],
)
def test_post_content_linkedin_would_refuse_is_422(linkedin, content):
    answer = create(linkedin, linkedin.issue_token()["access_token"], content=content)
    assert answer.status_code == 422 and linkedin.posts == {}
