"""A post's page and the media library: the media inline offers the account's uploaded media (the
item then takes its address and size from the medium), and the body is wired to the library's
upload for pasted and dropped images."""

import pytest

from apps.media.selectors import medium_url
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, ChannelFactory, MediumFactory, PostFactory, UserFactory
from tests.posts.test_post_admin import change_url, form_data

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_user():
    return AdminUserFactory()


def test_the_media_inline_offers_only_the_posts_accounts_media(admin_user):
    post = PostFactory(channel=ChannelFactory(account=admin_user.account))
    ours = MediumFactory(account=admin_user.account, original_name="ours.png")
    theirs = MediumFactory(original_name="theirs.png")

    page = admin_session(admin_user).get(change_url(post))

    formset = next(f for f in page.context["inline_admin_formsets"] if f.formset.prefix == "media").formset
    assert list(formset.empty_form.fields["medium"].queryset) == [ours]
    assert theirs.original_name not in page.content.decode()


def test_an_item_that_names_a_medium_takes_its_address_and_size_from_it(admin_user):
    post = PostFactory(channel=ChannelFactory(account=admin_user.account))
    medium = MediumFactory(account=admin_user.account, width=1600, height=900, alt_text="The bay")
    row = {"position": 0, "medium": medium.pk, "kind": "image", "url": "", "alt_text": "", "width": "", "height": ""}

    response = admin_session(admin_user).post(change_url(post), form_data(post, media=[row]))

    assert response.status_code == 302, response.context and response.context["errors"]
    item = post.media.get()
    assert (item.medium_id, item.url, item.width, item.height, item.alt_text) == (
        medium.pk,
        medium_url(medium),
        1600,
        900,
        "The bay",
    )


def test_an_item_needs_an_address_or_a_medium(admin_user):
    post = PostFactory(channel=ChannelFactory(account=admin_user.account))
    row = {"position": 0, "medium": "", "kind": "image", "url": "", "alt_text": "x", "width": "", "height": ""}

    response = admin_session(admin_user).post(change_url(post), form_data(post, media=[row]))

    assert response.status_code == 200
    assert "Give the file&#x27;s address, or choose a medium of the library." in response.content.decode()
    assert not post.media.exists()


def test_another_accounts_medium_is_refused_on_a_posts_item(admin_user):
    post = PostFactory(channel=ChannelFactory(account=admin_user.account))
    theirs = MediumFactory()
    row = {"position": 0, "medium": theirs.pk, "kind": "image", "url": "", "alt_text": "", "width": "", "height": ""}

    response = admin_session(admin_user).post(change_url(post), form_data(post, media=[row]))

    assert response.status_code == 200  # not a valid choice
    assert not post.media.exists()


def test_the_body_is_wired_to_the_librarys_upload_for_those_who_may_upload(admin_user):
    post = PostFactory(channel=ChannelFactory(account=admin_user.account))
    reader = UserFactory(account=admin_user.account, role="editor", permissions=["articles.read"])

    writer_page = admin_session(admin_user).get(change_url(post)).content.decode()
    reader_page = admin_session(reader).get(change_url(post)).content.decode()

    assert 'data-media-upload="/admin/media/medium/upload/"' in writer_page
    assert 'data-media-library="/admin/media/medium/"' in writer_page
    assert "posts/body_images.js" in writer_page
    assert "data-media-upload" not in reader_page
