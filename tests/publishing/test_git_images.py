"""A git channel carries the uploaded images a post shows: each file committed at its media path in
the post's own commit, the post's Markdown pointing at the media URL the site serves it at, and the
post's own images listed in its front matter. Read back from a real repository with dulwich."""

import io
from datetime import UTC, datetime

import pytest
from PIL import Image as Picture

from apps.core.destinations import PublishError
from apps.core.errors import InvalidInput
from apps.publishing.git.models import GitDestination
from apps.publishing.git.services import GitSettings, git_settings_check
from tests.conftest import admin_session, json_error
from tests.factories import AdminUserFactory, ChannelFactory, PostFactory
from tests.publishing.conftest import files, front_matter, history
from tests.publishing.git_images import Reads, document_of, png, run_job, uploaded_image
from tests.publishing.test_settings_area import destination_form

pytestmark = pytest.mark.django_db

POST = "content/posts/{slug}.md"


def a_post(channel, slug: str = "with-pictures"):
    return PostFactory(channel=channel, title="With pictures", slug=slug, published_at=datetime(2026, 4, 1, tzinfo=UTC))


def test_the_post_and_the_images_it_shows_are_one_commit_with_the_markdown_pointing_at_the_site(git_channel, bare_repo):
    red, blue = png("red"), png("blue", (20, 20))
    attached = uploaded_image(red, alt_text="A red square")
    inline = uploaded_image(blue, attached=False)
    body = (
        f"Look: ![A red square]({attached.src})\n\n"
        f'Also <img src="{inline.url}" alt="">, twice: ![]({inline.src} "Blue")\n'
        f"Not ours: https://elsewhere.example{attached.src}\n"
    )
    post = a_post(git_channel)

    outcome = run_job(git_channel, document_of(post, attached, inline, body=body))

    [commit] = history(bare_repo)
    assert outcome.reference == commit.id.decode()
    stored = files(bare_repo)
    assert set(stored) == {
        "content/posts/with-pictures.md",
        f"static/images/2026/{attached.name}",
        f"static/images/2026/{inline.name}",
    }
    assert stored[f"static/images/2026/{attached.name}"] == red
    with Picture.open(io.BytesIO(stored[f"static/images/2026/{inline.name}"])) as picture:
        assert (picture.format, picture.size) == ("PNG", (20, 20))
    matter, text = front_matter(stored["content/posts/with-pictures.md"])
    assert matter["images"] == [f"/images/2026/{attached.name}"]
    assert text == (
        f"\nLook: ![A red square](/images/2026/{attached.name})\n\n"
        f'Also <img src="/images/2026/{inline.name}" alt="">, twice: ![](/images/2026/{inline.name} "Blue")\n'
        f"Not ours: https://elsewhere.example{attached.src}\n"
    )


def test_a_post_showing_only_body_images_has_no_images_in_its_front_matter(git_channel, bare_repo):
    inline = uploaded_image(png("green"), attached=False)

    run_job(git_channel, document_of(a_post(git_channel), inline, body=f"![]({inline.src})"))

    matter, _ = front_matter(files(bare_repo)["content/posts/with-pictures.md"])
    assert "images" not in matter


def test_publishing_again_unchanged_makes_no_commit_and_reads_no_image_already_there(git_channel, bare_repo):
    reads = Reads()
    image = uploaded_image(png(), reads=reads)
    document = document_of(a_post(git_channel), image, body=f"![]({image.src})")
    run_job(git_channel, document)

    again = run_job(git_channel, document, action="update", previous_path="content/posts/with-pictures.md")

    assert len(history(bare_repo)) == 1
    assert again.reference == history(bare_repo)[0].id.decode()
    assert reads.count == {image.name: 1}


def test_a_second_post_showing_the_same_image_commits_only_its_own_file(git_channel, bare_repo):
    reads = Reads()
    image = uploaded_image(png(), reads=reads)
    run_job(git_channel, document_of(a_post(git_channel, "first"), image, body=f"![]({image.src})"))

    run_job(git_channel, document_of(a_post(git_channel, "second"), image, body=f"![]({image.src})"))

    assert len(history(bare_repo)) == 2
    assert reads.count == {image.name: 1}
    assert set(files(bare_repo)) == {
        "content/posts/first.md",
        "content/posts/second.md",
        f"static/images/2026/{image.name}",
    }


def test_an_update_that_shows_a_new_image_commits_it_with_the_changed_post(git_channel, bare_repo):
    post = a_post(git_channel)
    first = uploaded_image(png("red"))
    run_job(git_channel, document_of(post, first, body=f"![]({first.src})"))
    second = uploaded_image(png("yellow"), uploaded_at=datetime(2027, 1, 2, tzinfo=UTC))

    run_job(
        git_channel,
        document_of(post, first, second, body=f"![]({first.src}) ![]({second.src})"),
        action="update",
        previous_path="content/posts/with-pictures.md",
    )

    assert len(history(bare_repo)) == 2
    stored = files(bare_repo)
    assert f"static/images/2027/{second.name}" in stored
    assert (
        f"![](/images/2026/{first.name}) ![](/images/2027/{second.name})"
        in stored["content/posts/with-pictures.md"].decode()
    )


def test_unpublishing_removes_the_post_and_keeps_its_images(git_channel, bare_repo):
    image = uploaded_image(png())
    document = document_of(a_post(git_channel), image, body=f"![]({image.src})")
    run_job(git_channel, document)

    run_job(git_channel, document, action="unpublish", previous_path="content/posts/with-pictures.md")

    assert len(history(bare_repo)) == 2
    assert list(files(bare_repo)) == [f"static/images/2026/{image.name}"]


def test_a_post_kept_as_a_draft_on_unpublish_still_points_at_its_images(git_channel, bare_repo):
    GitDestination.objects.filter(channel=git_channel).update(unpublish_keeps_file=True)
    image = uploaded_image(png())
    document = document_of(a_post(git_channel), image, body=f"![]({image.src})")
    run_job(git_channel, document)

    run_job(git_channel, document, action="unpublish", previous_path="content/posts/with-pictures.md")

    matter, text = front_matter(files(bare_repo)["content/posts/with-pictures.md"])
    assert matter["draft"] is True and matter["images"] == [f"/images/2026/{image.name}"]
    assert text == f"\n![](/images/2026/{image.name})\n"
    assert f"static/images/2026/{image.name}" in files(bare_repo)


def test_the_channels_templates_place_and_address_the_images_with_year_and_month(git_channel, bare_repo):
    GitDestination.objects.filter(channel=git_channel).update(
        media_path="assets/img/{year}/{month}/{name}", media_url="https://cdn.example.com/img/{year}/{month}/{name}"
    )
    image = uploaded_image(png())

    run_job(git_channel, document_of(a_post(git_channel), image, body=f"![x]({image.url})"))

    stored = files(bare_repo)
    assert f"assets/img/2026/03/{image.name}" in stored
    assert (
        f"![x](https://cdn.example.com/img/2026/03/{image.name})" in stored["content/posts/with-pictures.md"].decode()
    )


def test_an_image_the_media_store_cannot_read_fails_the_attempt_for_now_and_commits_nothing(git_channel, bare_repo):
    image = uploaded_image(png())

    def unreadable() -> bytes:
        raise FileNotFoundError("var/media/gone.png")

    broken = type(image)(**{**vars(image), "read": unreadable})

    with pytest.raises(PublishError) as failed:
        run_job(git_channel, document_of(a_post(git_channel), broken, body=f"![]({image.src})"))

    assert not failed.value.permanent
    assert f"The image {image.name} could not be read from the media store" in failed.value.message
    assert history(bare_repo) == []


def test_a_template_stored_broken_fails_the_job_for_good_and_commits_nothing(git_channel, bare_repo):
    GitDestination.objects.filter(channel=git_channel).update(media_path="static/images/{year}/")
    image = uploaded_image(png())

    with pytest.raises(PublishError) as failed:
        run_job(git_channel, document_of(a_post(git_channel), image, body=f"![]({image.src})"))

    assert failed.value.permanent and "The media path template needs {name}" in failed.value.message
    assert history(bare_repo) == []


# --- the templates, checked when the set-up is saved -----------------------------------------------


@pytest.mark.parametrize(
    ("field", "template", "says"),
    [
        ("media_path", "static/images/{year}/photo.png", "The media path template needs {name}"),
        ("media_path", "../images/{name}", "The media path template's part '..' is refused"),
        ("media_path", "static/../../{name}", "The media path template's part '..' is refused"),
        ("media_path", "/var/www/images/{name}", "must be a relative path inside the repository"),
        ("media_path", "~/images/{name}", "must be a relative path inside the repository"),
        ("media_path", "C:/images/{name}", "must be a relative path inside the repository"),
        ("media_path", ".git/hooks/{name}", "git refuses .git in any spelling"),
        ("media_path", "static/{slug}/{name}", "unknown placeholders {slug}; known: {year}, {month}, {name}"),
        ("media_path", "static/{name", "is malformed"),
        ("media_path", " ", "Enter a media path template"),
        ("media_url", "/images/{year}/", "The media URL template needs {name}"),
        ("media_url", "images/{name}", "must start with / (an address on the site) or https://"),
        ("media_url", "//cdn.example.com/{name}", "must start with /"),
        ("media_url", "/my images/{name}", "cannot hold ' '"),
        ("media_url", "/images/({name})", "cannot hold '(' ')'"),
        ("media_url", "/images/{name!r}", "uses formats"),
    ],
)
def test_media_templates_that_miss_the_name_or_escape_the_repository_are_refused(bare_repo, field, template, says):
    with pytest.raises(InvalidInput) as refused:
        git_settings_check(GitSettings(repository_url=str(bare_repo), **{field: template}))

    assert refused.value.details["field"] == field
    assert says in refused.value.details["errors"][0]["message"]


@pytest.mark.parametrize(
    ("media_path", "media_url"),
    [
        ("static/images/{year}/{name}", "/images/{year}/{name}"),
        ("assets/images/{year}/{name}", "/assets/images/{year}/{name}"),
        ("{name}", "https://cdn.example.com/{year}/{month}/{name}"),
    ],
)
def test_media_templates_inside_the_repository_are_accepted(bare_repo, media_path, media_url):
    git_settings_check(GitSettings(repository_url=str(bare_repo), media_path=media_path, media_url=media_url))


def test_the_settings_area_form_shows_the_media_templates_and_refuses_one_without_name(bare_repo):
    channel = ChannelFactory(platform="git")
    client = admin_session(AdminUserFactory(account=channel.account))
    page = client.get(f"/admin/publishing_git/gitdestination/add/?channel={channel.pk}").content.decode()
    data = destination_form(channel, repository_url=str(bare_repo), media_url="/images/{year}/")

    response = client.post("/admin/publishing_git/gitdestination/add/", data)

    assert 'name="media_path" value="static/images/{year}/{name}"' in page
    assert 'name="media_url" value="/images/{year}/{name}"' in page
    assert response.status_code == 200
    [error] = response.context["adminform"].form.errors["media_url"]
    assert error.startswith("The media URL template needs {name}")
    assert not GitDestination.objects.exists()


def test_connect_git_sets_the_media_templates_and_prints_them(manage, bare_repo):
    channel = ChannelFactory(platform="git")
    args = ("--media-path", "assets/images/{year}/{name}", "--media-url", "/assets/images/{year}/{name}", "--json")

    code, out, err = manage("connect_git", channel.pk, "--url", str(bare_repo), *args)

    assert (code, err) == (0, "")
    assert '"media_path": "assets/images/{year}/{name}"' in out and '"media_url": "/assets/images/{year}/{name}"' in out
    assert '"media_folder": "assets/images"' in out and '"public_folder": "/assets/images"' in out
    stored = GitDestination.objects.get(channel=channel)
    assert (stored.media_path, stored.media_url) == ("assets/images/{year}/{name}", "/assets/images/{year}/{name}")

    code, out, err = manage("connect_git", channel.pk, "--url", str(bare_repo), "--media-path", "../{name}", "--json")

    assert code == 1 and json_error(err)["details"]["field"] == "media_path"
    assert GitDestination.objects.get(channel=channel).media_path == "assets/images/{year}/{name}"


@pytest.mark.parametrize(
    ("media_path", "media_url", "media_folder", "public_folder"),
    [
        ("static/images/{year}/{name}", "/images/{year}/{name}", "static/images", "/images"),
        ("assets/images/{name}", "/assets/images/{name}", "assets/images", "/assets/images"),
        ("{year}-{name}", "/{name}", "", "/"),
        (
            "static/img/{year}/{month}/{name}",
            "https://cdn.example.com/img/{year}/{month}/{name}",
            "static/img",
            "https://cdn.example.com/img",
        ),
    ],
)
def test_the_set_up_names_its_folders_as_a_decap_cms_config_would(media_path, media_url, media_folder, public_folder):
    destination = GitDestination(media_path=media_path, media_url=media_url)

    assert (destination.media_folder, destination.public_folder) == (media_folder, public_folder)


def test_the_settings_area_page_of_a_set_up_shows_its_decap_cms_folders(git_channel):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    destination = GitDestination.objects.get(channel=git_channel)

    page = client.get(f"/admin/publishing_git/gitdestination/{destination.pk}/change/").content.decode()

    assert "media_folder" in page and "static/images" in page
    assert "public_folder" in page and '<div class="readonly">/images</div>' in page
