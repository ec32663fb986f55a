"""The media library in the Settings area (apps/media/admin.py): the account's grid, searched by
name and alt text, uploads through the media service (its refusals shown as its messages), the alt
text edited, deletion refused while a live post shows the medium, and nothing of another account."""

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.core.http import body_limit
from apps.media.models import Medium
from apps.media.storage import media_storage, public_src
from apps.users.models import Role
from tests.conftest import admin_session
from tests.factories import AdminUserFactory, MediaFactory, MediumFactory, PostFactory, UserFactory
from tests.media import images

pytestmark = pytest.mark.django_db

LIBRARY = "/admin/media/medium/"
UPLOAD = "/admin/media/medium/upload/"


@pytest.fixture
def admin_user():
    return AdminUserFactory()


@pytest.fixture
def session(admin_user):
    return admin_session(admin_user)


def image_file(name: str = "harbour.png", data: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, images.png(320, 200) if data is None else data, content_type="image/png")


def test_the_library_shows_the_accounts_media_as_a_grid_of_thumbnails(session, admin_user):
    plain = MediumFactory(account=admin_user.account, original_name="harbour.png", alt_text="Boats at dusk")
    sized = MediumFactory(
        account=admin_user.account,
        variants=[{"width": 480, "height": 320, "mime_type": "image/webp", "name": "small.webp"}],
    )

    page = session.get(LIBRARY)

    assert page.status_code == 200
    cards = {card["id"]: card for card in page.context["cards"]}
    assert cards[plain.pk]["src"] == public_src(plain.name)  # no copies yet: the file itself
    assert cards[sized.pk]["src"] == public_src("small.webp")  # the smallest copy
    html = page.content.decode()
    assert 'class="media-grid"' in html
    assert "harbour.png" in html and "Boats at dusk" in html and "120.6\xa0KB" in html
    assert f'data-markdown="![Boats at dusk]({public_src(plain.name)})"' in html


def test_the_search_box_finds_media_by_file_name_and_by_alt_text(session, admin_user):
    boat = MediumFactory(account=admin_user.account, original_name="boat.jpg", alt_text="A red sail")
    chart = MediumFactory(account=admin_user.account, original_name="chart.png", alt_text="Sales in 2025")

    assert [card["id"] for card in session.get(LIBRARY, {"q": "boat"}).context["cards"]] == [boat.pk]
    assert [card["id"] for card in session.get(LIBRARY, {"q": "sales"}).context["cards"]] == [chart.pk]
    assert session.get(LIBRARY, {"q": "nothing-like-it"}).context["cards"] == []


def test_another_accounts_media_are_not_in_the_library_nor_reachable(session, admin_user):
    theirs = MediumFactory(original_name="their-secret-plan.png", alt_text="Their secret")
    MediumFactory(account=admin_user.account)

    page = session.get(LIBRARY)
    assert theirs.pk not in [card["id"] for card in page.context["cards"]]
    assert b"their-secret-plan" not in page.content
    assert session.get(f"{LIBRARY}{theirs.pk}/change/").status_code == 302  # as an id that does not exist
    assert session.post(f"{LIBRARY}{theirs.pk}/delete/", {"post": "yes"}).status_code == 302
    assert Medium.objects.filter(pk=theirs.pk).exists()


def test_a_plain_form_upload_stores_the_image_and_comes_back_to_the_library(session, admin_user):
    response = session.post(UPLOAD, {"file": image_file(), "alt_text": "The harbour"}, follow=True)

    medium = Medium.objects.get(account=admin_user.account)
    assert (medium.original_name, medium.alt_text, medium.width, medium.uploaded_by_id) == (
        "harbour.png",
        "The harbour",
        320,
        admin_user.pk,
    )
    assert media_storage().exists(medium.name)
    assert response.redirect_chain[-1][0] == LIBRARY
    assert "Uploaded “harbour.png”." in [str(message) for message in response.context["messages"]]


def test_a_scripts_upload_answers_the_medium_and_its_markdown(session, admin_user):
    response = session.post(UPLOAD, {"file": image_file("dock.png")}, HTTP_ACCEPT="application/json")

    assert response.status_code == 201
    medium = Medium.objects.get(account=admin_user.account)
    assert response.json()["markdown"] == f"![dock]({public_src(medium.name)})"
    assert response.json()["id"] == medium.pk


def test_a_refused_upload_is_shown_with_the_services_message_and_nothing_is_stored(session, admin_user):
    html = SimpleUploadedFile("page.png", b"<html><script>alert(1)</script></html>", content_type="image/png")

    answered = session.post(UPLOAD, {"file": html}, HTTP_ACCEPT="application/json")
    shown = session.post(UPLOAD, {"file": image_file("page.png", b"<svg onload='x'/>")}, follow=True)

    assert answered.status_code == 400
    assert answered.json() == {
        "error": "The file carries HTML, SVG or script besides its picture; upload a plain image."
    }
    notes = [str(note) for note in shown.context["messages"]]
    assert len(notes) == 1 and notes[0].startswith("page.png was not uploaded: ")
    assert not Medium.objects.filter(account=admin_user.account).exists()


def test_an_upload_larger_than_the_limit_is_refused_with_its_message(session, admin_user, settings):
    settings.MEDIA_MAX_BYTES = 1000

    response = session.post(UPLOAD, {"file": image_file()}, HTTP_ACCEPT="application/json")

    assert response.status_code == 400
    assert response.json() == {"error": "The file is larger than the limit of 1000 bytes."}
    assert not Medium.objects.exists()


def test_the_upload_address_takes_a_body_as_large_as_the_apis_upload():
    path = reverse("admin:media_medium_upload")
    assert body_limit(path, "POST") == body_limit("/v1/media", "POST") > settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert body_limit(path, "GET") == settings.DATA_UPLOAD_MAX_MEMORY_SIZE


def test_a_viewer_of_the_library_cannot_upload(admin_user):
    reader = UserFactory(account=admin_user.account, role=Role.EDITOR, permissions=["articles.read"])
    session = admin_session(reader)

    assert session.get(LIBRARY).status_code == 200
    assert b"data-media-dropzone" not in session.get(LIBRARY).content
    assert session.get(f"{LIBRARY}add/").status_code == 403
    assert session.post(UPLOAD, {"file": image_file()}).status_code == 403
    assert not Medium.objects.exists()


def test_an_operator_belongs_to_no_account_and_uploads_into_none():
    from tests.factories import OperatorFactory

    response = admin_session(OperatorFactory()).post(UPLOAD, {"file": image_file()}, HTTP_ACCEPT="application/json")

    assert response.status_code == 400 and "account" in response.json()["error"]
    assert not Medium.objects.exists()


def test_the_alt_text_is_changed_through_the_service(session, admin_user):
    medium = MediumFactory(account=admin_user.account, alt_text="Old")

    response = session.post(f"{LIBRARY}{medium.pk}/change/", {"alt_text": "  Boats at dusk  "})

    assert response.status_code == 302
    medium.refresh_from_db()
    assert medium.alt_text == "Boats at dusk"  # the service's strip


def test_a_medium_a_published_post_shows_is_not_deleted_and_the_message_names_the_post(session, admin_user):
    medium = MediumFactory(account=admin_user.account)
    post = PostFactory(channel__account=admin_user.account, title="Harbour days", publication_status="published")
    MediaFactory(post=post, medium=medium)

    response = session.post(f"{LIBRARY}{medium.pk}/delete/", {"post": "yes"}, follow=True)

    assert Medium.objects.filter(pk=medium.pk).exists()
    notes = [str(note) for note in response.context["messages"]]
    assert len(notes) == 1 and "Nothing was changed" in notes[0]
    assert f"'Harbour days' ({post.pk})" in notes[0]


def test_a_medium_no_live_post_shows_is_deleted_and_a_drafts_attachment_with_it(session, admin_user):
    session.post(UPLOAD, {"file": image_file()})
    medium = Medium.objects.get(account=admin_user.account)
    draft = PostFactory(channel__account=admin_user.account)
    MediaFactory(post=draft, medium=medium)

    response = session.post(f"{LIBRARY}{medium.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Medium.objects.filter(pk=medium.pk).exists()
    assert not draft.media.exists()  # the draft's attachment went with it


def test_the_change_page_offers_the_markdown_to_insert(session, admin_user):
    medium = MediumFactory(account=admin_user.account, original_name="a [b].png", alt_text="")

    html = session.get(f"{LIBRARY}{medium.pk}/change/").content.decode()

    assert f"![a \\[b\\]]({public_src(medium.name)})" in html
    assert "Insert into post" in html
    assert "<script>" not in html  # no inline script: the admin's CSP would refuse it
