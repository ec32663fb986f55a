"""The Settings area of publishing: a git channel's destination (write-only credentials, Test
connection), "Publish now" and deletion on the post page, and the list of publication jobs. Each
test drives the pages as a browser would (the Django test client, signed in), against real bare
repositories."""

import html
import re
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.utils import timezone

from apps.core import crypto
from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.models import Post
from apps.posts.services import post_create
from apps.publishing.git.models import GitDestination
from apps.publishing.models import PublicationJob
from apps.publishing.services import channel_run
from apps.webhooks.models import Event
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ChannelFactory,
    GitDestinationFactory,
    PostFactory,
    PublicationJobFactory,
    UserFactory,
)
from tests.posts.test_post_admin import form_data
from tests.publishing.conftest import files, front_matter, head, history, make_bare_repository

pytestmark = pytest.mark.django_db

DESTINATIONS = "/admin/publishing_git/gitdestination/"
POSTS = "/admin/posts/post/"
JOBS = "/admin/publishing/publicationjob/"
TOKEN = "glpat-Secret-Token-0123456789"


@pytest.fixture
def account():
    return AccountFactory()


@pytest.fixture
def settings_client(account):
    """An admin of the account, in its Settings area."""
    return admin_session(AdminUserFactory(account=account))


def destination_form(channel=None, **changes) -> dict:
    """The destination page's POST data: the defaults a new destination shows, then `changes`."""
    data = {
        "repository_url": "",
        "branch": "main",
        "path_template": "content/posts/{slug}.md",
        "media_path": "static/images/{year}/{name}",
        "media_url": "/images/{year}/{name}",
        "author_name": "Content Publishing",
        "author_email": "publishing@example.com",
        "token_username": "x-access-token",
        "token": "",
        "ssh_key": "",
        "known_hosts": "",
        "post_url_template": "",
        "commit_url_template": "",
    }
    if channel is not None:
        data["channel"] = channel.pk
    data |= changes
    # An unticked checkbox is not sent at all.
    return {name: value for name, value in data.items() if value is not False}


def change_form(destination: GitDestination, **changes) -> dict:
    """The change page's POST data as the browser sends it back: the stored values, the
    write-only fields empty (the channel is read-only there)."""
    stored = {
        name: getattr(destination, name)
        for name in (
            "repository_url",
            "branch",
            "path_template",
            "media_path",
            "media_url",
            "author_name",
            "author_email",
            "token_username",
            "known_hosts",
            "post_url_template",
            "commit_url_template",
        )
    }
    if destination.unpublish_keeps_file:
        stored["unpublish_keeps_file"] = "on"
    return destination_form(**(stored | changes))


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def text_of(response) -> str:
    """A page's text with its markup and entities resolved (what a reader sees)."""
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())).split())
    return re.sub(r" ([,.;:])", r"\1", text)


def publish(post: Post) -> PublicationJob:
    """Publish a git post through the pipeline, here and now; its job as recorded."""
    post_publish_now(post_id=post.pk)
    channel_run(post.channel_id)
    return PublicationJob.objects.filter(post_id=post.pk).latest("id")


# --- Git destinations ---------------------------------------------------------------------------


def test_an_account_admin_adds_a_git_destination_whose_token_is_stored_encrypted_and_never_shown_again(
    settings_client, account, bare_repo
):
    channel = ChannelFactory(account=account, platform="git")

    response = settings_client.post(
        f"{DESTINATIONS}add/", destination_form(channel, repository_url=str(bare_repo), token=f"  {TOKEN} ")
    )

    assert response.status_code == 302, response.context["adminform"].form.errors
    destination = GitDestination.objects.get(channel=channel)
    assert destination.repository_url == str(bare_repo)
    assert destination.token_encrypted and TOKEN not in destination.token_encrypted
    assert crypto.decrypt(destination.token_encrypted) == TOKEN
    pages = {
        "change page": settings_client.get(f"{DESTINATIONS}{destination.pk}/change/"),
        "list page": settings_client.get(DESTINATIONS),
        "history": settings_client.get(f"{DESTINATIONS}{destination.pk}/history/"),
    }
    for where, page in pages.items():
        assert page.status_code == 200, where
        content = page.content.decode()
        assert TOKEN not in content and destination.token_encrypted not in content, where
    change_page = pages["change page"].content.decode()
    [token_input] = re.findall(r'<input[^>]*name="token"[^>]*>', change_page)
    assert 'type="password"' in token_input and "value=" not in token_input
    assert "stored credentials" in text_of(pages["list page"]).lower()
    assert "a token" in text_of(pages["change page"])
    assert LogEntry.objects.filter(object_id=str(destination.pk)).exists()


def test_a_change_saved_with_the_token_field_empty_keeps_the_stored_token(settings_client, account, bare_repo):
    destination = GitDestinationFactory(channel__account=account, repository_url=str(bare_repo), token=TOKEN)

    response = settings_client.post(f"{DESTINATIONS}{destination.pk}/change/", change_form(destination, branch="pages"))

    assert response.status_code == 302
    destination.refresh_from_db()
    assert destination.branch == "pages"
    assert destination.token() == TOKEN


def test_remove_the_stored_token_clears_it(settings_client, account, bare_repo):
    destination = GitDestinationFactory(channel__account=account, repository_url=str(bare_repo), token=TOKEN)

    response = settings_client.post(
        f"{DESTINATIONS}{destination.pk}/change/", change_form(destination, clear_token="on"), follow=True
    )

    assert response.status_code == 200
    destination.refresh_from_db()
    assert destination.token_encrypted == "" and not destination.has_token
    assert "none" in text_of(settings_client.get(DESTINATIONS))


def test_a_new_token_replaces_the_stored_one(settings_client, account, bare_repo):
    destination = GitDestinationFactory(channel__account=account, repository_url=str(bare_repo), token=TOKEN)

    settings_client.post(f"{DESTINATIONS}{destination.pk}/change/", change_form(destination, token="new-token"))

    destination.refresh_from_db()
    assert destination.token() == "new-token"


@pytest.mark.parametrize(
    ("field", "value", "error"),
    [
        ("repository_url", "ftp://git.example.com/site.git", "is not a repository URL this service can reach"),
        ("repository_url", f"https://x-access-token:{TOKEN}@git.example.com/site.git", "Put the token in the token"),
        ("path_template", "content/../{slug}.md", "empty, '.' and '..' parts are refused"),
        ("path_template", "/etc/{slug}.md", "must be a relative path inside the repository"),
    ],
)
def test_an_invalid_repository_url_or_path_template_is_an_error_on_its_field_and_saves_nothing(
    settings_client, account, bare_repo, field, value, error
):
    channel = ChannelFactory(account=account, platform="git")
    changes = {"repository_url": str(bare_repo), field: value}

    response = settings_client.post(f"{DESTINATIONS}add/", destination_form(channel, token=TOKEN, **changes))

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert error in " ".join(form.errors[field])
    assert set(form.errors) == {field}
    assert not GitDestination.objects.exists()
    assert TOKEN not in re.sub(r'value="https://[^"]*"', "", response.content.decode())  # not echoed


def test_an_invalid_change_leaves_the_stored_destination_as_it_was(settings_client, account, bare_repo):
    destination = GitDestinationFactory(channel__account=account, repository_url=str(bare_repo), token=TOKEN)

    response = settings_client.post(
        f"{DESTINATIONS}{destination.pk}/change/",
        change_form(destination, path_template="../{slug}.md", token="another-Secret-Token", clear_token="on"),
    )

    assert response.status_code == 200
    assert "another-Secret-Token" not in response.content.decode()  # a refused form does not echo it either
    assert "path_template" in response.context["adminform"].form.errors
    stored = GitDestination.objects.get(pk=destination.pk)
    assert (stored.path_template, stored.token()) == ("content/posts/{slug}.md", TOKEN)


def test_only_git_channels_of_the_admins_own_account_are_offered(settings_client, account, bare_repo):
    own_git = ChannelFactory(account=account, platform="git", title="Own docs")
    ChannelFactory(account=account, platform="blog", title="Own blog")
    ChannelFactory(account=account, platform="api", title="Own feed")
    theirs = ChannelFactory(platform="git", title="Their docs")

    page = settings_client.get(f"{DESTINATIONS}add/")

    assert list(page.context["adminform"].form.fields["channel"].queryset) == [own_git]
    response = settings_client.post(f"{DESTINATIONS}add/", destination_form(theirs, repository_url=str(bare_repo)))
    assert response.status_code == 200
    assert "channel" in response.context["adminform"].form.errors
    assert not GitDestination.objects.exists()


def test_another_accounts_destination_does_not_exist_for_an_admin(settings_client):
    theirs = GitDestinationFactory(token=TOKEN)

    assert settings_client.get(f"{DESTINATIONS}{theirs.pk}/change/").status_code == 302  # "doesn't exist"
    assert settings_client.post(f"{DESTINATIONS}{theirs.pk}/test-connection/").status_code == 302
    assert TOKEN not in settings_client.get("/admin/").content.decode()
    assert theirs.pk not in [d.pk for d in settings_client.get(DESTINATIONS).context["cl"].result_list]


def test_an_editor_gets_no_access_to_git_destinations(account, bare_repo):
    editor = admin_session(UserFactory(account=account))
    channel = ChannelFactory(account=account, platform="git")
    destination = GitDestinationFactory(channel=channel, repository_url=str(bare_repo), token=TOKEN)

    assert editor.get(DESTINATIONS).status_code == 403
    assert editor.get(f"{DESTINATIONS}add/").status_code == 403
    assert editor.get(f"{DESTINATIONS}{destination.pk}/change/").status_code == 403
    assert editor.post(f"{DESTINATIONS}{destination.pk}/change/", change_form(destination, token="")).status_code == 403
    assert editor.post(f"{DESTINATIONS}{destination.pk}/test-connection/").status_code == 403
    assert DESTINATIONS not in editor.get("/admin/").content.decode()
    destination.refresh_from_db()
    assert destination.token() == TOKEN


def test_test_connection_shows_the_branch_and_its_head_commit_after_a_publication(git_channel, bare_repo):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    job = publish(post_create(channel=git_channel, title="Hello, repository", body="Hi."))
    destination = git_channel.git_destination

    response = client.post(f"{DESTINATIONS}{destination.pk}/test-connection/", follow=True)

    assert response.redirect_chain == [(f"{DESTINATIONS}{destination.pk}/change/", 302)]
    [message] = messages_of(response)
    assert job.reference == head(bare_repo).decode()
    assert f"branch 'main' is at {job.reference[:12]}" in message
    assert "“Publish “Hello, repository”" in message and "Pat Publisher" in message


def test_test_connection_shows_the_sentence_of_what_went_wrong(account, tmp_path):
    client = admin_session(AdminUserFactory(account=account))
    missing = tmp_path / "nowhere.git"
    destination = GitDestinationFactory(channel__account=account, repository_url=str(missing))

    response = client.post(f"{DESTINATIONS}{destination.pk}/test-connection/", follow=True)

    [message] = messages_of(response)
    assert f"No git repository at {missing}" in message
    assert "check the URL" in message
    assert "Traceback" not in message


def test_test_connection_on_an_empty_repository_says_the_first_publication_creates_the_branch(account, bare_repo):
    client = admin_session(AdminUserFactory(account=account))
    destination = GitDestinationFactory(channel__account=account, repository_url=str(bare_repo))

    response = client.post(f"{DESTINATIONS}{destination.pk}/test-connection/", follow=True)

    assert messages_of(response) == [
        f"Connected to {bare_repo}: the repository is empty; the first publication creates the branch 'main'."
    ]


# --- The post page -------------------------------------------------------------------------------


def test_publish_now_on_a_draft_git_post_queues_a_job_and_the_post_is_published_when_it_ran(git_channel, bare_repo):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    post = post_create(channel=git_channel, title="Release notes", body="All new.")

    response = client.post(f"{POSTS}{post.pk}/publish-now/", follow=True)

    assert response.status_code == 200
    assert any(message.startswith("A commit to the repository:") for message in messages_of(response))
    job = PublicationJob.objects.get(post_id=post.pk)
    assert (job.action, job.state, job.attempts) == ("publish", "queued", 0)
    post.refresh_from_db()
    assert post.publication_status == "draft" and post.published_at is None
    assert head(bare_repo) is None

    assert channel_run(git_channel.pk) == 1

    post.refresh_from_db()
    job.refresh_from_db()
    assert post.publication_status == "published" and post.published_at == job.published_at
    assert job.state == "succeeded" and job.reference == head(bare_repo).decode()
    assert front_matter(files(bare_repo)["content/posts/release-notes.md"])[0]["title"] == "Release notes"
    page = text_of(client.get(f"{POSTS}{post.pk}/change/"))
    assert f"Publish: Succeeded, 1 attempt(s) · commit {job.reference[:12]}" in page


def test_publish_now_on_a_scheduled_git_post_keeps_it_scheduled_until_its_destination_confirms(git_channel, bare_repo):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    post = post_create(channel=git_channel, title="Planned", body="x")
    post_set_status(post_id=post.pk, status="scheduled", scheduled_at=timezone.now() + timedelta(days=2))

    client.post(f"{POSTS}{post.pk}/publish-now/")

    post.refresh_from_db()
    assert post.publication_status == "scheduled"
    assert PublicationJob.objects.get(post_id=post.pk).state == "queued"
    channel_run(git_channel.pk)
    post.refresh_from_db()
    assert post.publication_status == "published"
    assert "content/posts/planned.md" in files(bare_repo)


def test_the_post_page_links_the_commit_where_the_channel_has_a_commit_url(git_channel):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    GitDestination.objects.filter(channel=git_channel).update(
        commit_url_template="https://git.example.com/site/commit/{commit}"
    )
    post = post_create(channel=git_channel, title="Linked", body="x")
    job = publish(post)

    page = client.get(f"{POSTS}{post.pk}/change/").content.decode()

    assert f'<a href="https://git.example.com/site/commit/{job.reference}">{job.reference[:12]}</a>' in page
    assert f'href="{JOBS}{job.pk}/change/"' in page


def test_a_failed_job_shows_its_error_and_attempts_on_the_post_page(account, tmp_path):
    client = admin_session(AdminUserFactory(account=account))
    destination = GitDestinationFactory(channel__account=account, repository_url=str(tmp_path / "gone.git"))
    post = post_create(channel=destination.channel, title="Lost", body="x")

    job = publish(post)

    assert job.state == "failed"
    page = text_of(client.get(f"{POSTS}{post.pk}/change/"))
    assert "Publish: Failed, 1 attempt(s)" in page and "No git repository at" in page
    post.refresh_from_db()
    assert post.publication_status == "draft"


def test_publish_now_on_a_blog_post_publishes_it_at_once(account):
    client = admin_session(AdminUserFactory(account=account))
    post = PostFactory(channel=ChannelFactory(account=account, platform="blog"))

    response = client.post(f"{POSTS}{post.pk}/publish-now/", follow=True)

    assert response.status_code == 200
    post.refresh_from_db()
    assert post.publication_status == "published" and post.published_at is not None
    assert not PublicationJob.objects.exists()
    assert Event.objects.filter(kind="post.published", post_id=post.pk).count() == 1


def test_the_publish_now_action_queues_git_posts_and_publishes_blog_posts(account, bare_repo):
    client = admin_session(AdminUserFactory(account=account))
    git = ChannelFactory(account=account, platform="git")
    GitDestinationFactory(channel=git, repository_url=str(bare_repo))
    git_posts = [post_create(channel=git, title=f"Git post {n}", body="x") for n in range(2)]
    blog_post = PostFactory(channel=ChannelFactory(account=account, platform="blog"))
    selected = [*git_posts, blog_post]

    response = client.post(
        POSTS, {"action": "publish_now", "_selected_action": [post.pk for post in selected]}, follow=True
    )

    assert "3 post(s) handed over for publishing." in messages_of(response)
    assert Post.objects.get(pk=blog_post.pk).publication_status == "published"
    assert [Post.objects.get(pk=post.pk).publication_status for post in git_posts] == ["draft", "draft"]
    assert sorted(PublicationJob.objects.values_list("post_id", "state")) == [(p.pk, "queued") for p in git_posts]
    assert channel_run(git.pk) == 2
    assert {Post.objects.get(pk=post.pk).publication_status for post in git_posts} == {"published"}
    assert set(files(bare_repo)) == {"content/posts/git-post-0.md", "content/posts/git-post-1.md"}


def test_the_publish_now_action_reports_an_already_published_post_and_goes_on(git_channel):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    published = post_create(channel=git_channel, title="Out already", body="x")
    publish(published)
    draft = post_create(channel=git_channel, title="Still a draft", body="x")

    response = client.post(POSTS, {"action": "publish_now", "_selected_action": [published.pk, draft.pk]}, follow=True)

    assert messages_of(response) == [
        "“Out already”: This post is already published.",
        "1 post(s) handed over for publishing.",
    ]
    assert PublicationJob.objects.filter(post_id=draft.pk, state="queued").count() == 1


def test_deleting_a_published_git_post_queues_an_unpublish_job_that_removes_its_file(git_channel, bare_repo):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    post = post_create(channel=git_channel, title="Short-lived", body="x")
    publish(post)
    assert "content/posts/short-lived.md" in files(bare_repo)

    response = client.post(f"{POSTS}{post.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Post.objects.filter(pk=post.pk).exists()
    job = PublicationJob.objects.get(post_id=post.pk, action="unpublish")
    assert (job.state, job.title) == ("queued", "Short-lived")
    assert "content/posts/short-lived.md" in files(bare_repo)
    channel_run(git_channel.pk)
    job.refresh_from_db()
    assert job.state == "succeeded"
    assert "content/posts/short-lived.md" not in files(bare_repo)
    assert history(bare_repo)[0].message.decode().startswith("Unpublish “Short-lived”")


def test_an_admin_save_of_an_unchanged_post_changes_nothing(git_channel, bare_repo):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    post = post_create(
        channel=git_channel,
        title="Steady",
        body="# Steady\n\nFirst paragraph.\nSecond line.\n",
        teaser="A teaser\nover two lines.",
        meta_description="Described\nin two lines.",
    )
    publish(post)
    post.refresh_from_db()
    commits, events, jobs = len(history(bare_repo)), Event.objects.count(), PublicationJob.objects.count()
    data = form_data(post)
    # A browser sends every textarea's line ends as CRLF.
    for name in ("body", "teaser", "meta_description"):
        data[name] = data[name].replace("\n", "\r\n")

    response = client.post(f"{POSTS}{post.pk}/change/", data)

    assert response.status_code == 302, response.context["adminform"].form.errors
    stored = Post.objects.get(pk=post.pk)
    assert stored.updated_at == post.updated_at
    assert (stored.body, stored.teaser, stored.meta_description) == (post.body, post.teaser, post.meta_description)
    assert Event.objects.count() == events
    assert PublicationJob.objects.count() == jobs
    channel_run(git_channel.pk)
    assert len(history(bare_repo)) == commits


def test_an_admin_save_of_a_real_change_of_a_published_git_post_commits_an_update(git_channel, bare_repo):
    client = admin_session(AdminUserFactory(account=git_channel.account))
    post = post_create(channel=git_channel, title="Evolving", body="Version one.\n")
    publish(post)
    post.refresh_from_db()
    data = form_data(post, body="Version two.\r\n")

    client.post(f"{POSTS}{post.pk}/change/", data)

    assert Event.objects.filter(kind="post.updated", post_id=post.pk).count() == 1
    job = PublicationJob.objects.get(post_id=post.pk, action="update")
    channel_run(git_channel.pk)
    job.refresh_from_db()
    assert job.state == "succeeded"
    matter, body = front_matter(files(bare_repo)["content/posts/evolving.md"])
    assert body == "\nVersion two.\n" and "lastmod" in matter  # a blank line after the front matter


# --- The jobs list -------------------------------------------------------------------------------


def listed(response) -> set[int]:
    return {job.pk for job in response.context["cl"].result_list}


@pytest.fixture
def jobs(account):
    """Jobs of two channels of the account, in several states and actions, and one of another account."""
    docs = ChannelFactory(account=account, platform="git", title="Docs")
    site = ChannelFactory(account=account, platform="git", title="Site")
    return {
        "queued": PublicationJobFactory(channel=docs, title="Queued one"),
        "failed": PublicationJobFactory(
            channel=docs, title="Failed one", state="failed", attempts=5, last_error="The repository refused."
        ),
        "unpublish": PublicationJobFactory(channel=site, title="Taken down", action="unpublish", state="succeeded"),
        "theirs": PublicationJobFactory(title="Not yours", state="failed", channel__title="Their channel"),
    }


def test_the_jobs_list_shows_the_accounts_jobs_only(settings_client, jobs):
    response = settings_client.get(JOBS)

    assert response.status_code == 200
    assert listed(response) == {jobs[name].pk for name in ("queued", "failed", "unpublish")}
    page = text_of(response)
    assert "The repository refused." in page and "Not yours" not in page
    assert settings_client.get(f"{JOBS}{jobs['theirs'].pk}/change/").status_code == 302  # "doesn't exist"


def test_the_jobs_list_filters_by_state_action_and_channel(settings_client, jobs):
    docs = jobs["queued"].channel

    assert listed(settings_client.get(JOBS, {"state__exact": "failed"})) == {jobs["failed"].pk}
    assert listed(settings_client.get(JOBS, {"action__exact": "unpublish"})) == {jobs["unpublish"].pk}
    assert listed(settings_client.get(JOBS, {"channel__id__exact": docs.pk})) == {
        jobs["queued"].pk,
        jobs["failed"].pk,
    }
    # The channel filter offers the account's own channels only.
    filters = text_of(settings_client.get(JOBS))
    assert "Docs" in filters and "Site" in filters and "Their channel" not in filters


def test_retry_now_on_a_failed_job_queues_it(settings_client, jobs):
    failed = jobs["failed"]

    response = settings_client.post(f"{JOBS}{failed.pk}/retry/", follow=True)

    assert response.redirect_chain == [(f"{JOBS}{failed.pk}/change/", 302)]
    assert "The job is queued to run now." in messages_of(response)
    failed.refresh_from_db()
    assert (failed.state, failed.finished_at) == ("queued", None)


def test_retry_now_on_a_job_of_another_account_finds_no_job(settings_client, jobs):
    theirs = jobs["theirs"]

    response = settings_client.post(f"{JOBS}{theirs.pk}/retry/")

    assert response.status_code == 302 and response["Location"] == "/admin/"
    theirs.refresh_from_db()
    assert theirs.state == "failed"


def test_bulk_retry_queues_the_selected_failed_jobs_and_names_those_it_cannot_retry(settings_client, jobs, account):
    other_failed = PublicationJobFactory(channel=jobs["queued"].channel, title="Failed two", state="failed")
    selected = [jobs["failed"].pk, other_failed.pk, jobs["unpublish"].pk]

    response = settings_client.post(JOBS, {"action": "retry_selected", "_selected_action": selected}, follow=True)

    assert "2 job(s) queued to run now." in messages_of(response)
    assert "Unpublish “Taken down”: This job has succeeded; there is nothing to retry." in messages_of(response)
    assert set(PublicationJob.objects.filter(pk__in=selected).values_list("title", "state")) == {
        ("Failed one", "queued"),
        ("Failed two", "queued"),
        ("Taken down", "succeeded"),
    }


def test_jobs_are_neither_added_nor_deleted_in_the_settings_area(settings_client, jobs):
    job = jobs["failed"]

    assert settings_client.get(f"{JOBS}add/").status_code == 403
    assert settings_client.get(f"{JOBS}{job.pk}/delete/").status_code == 403
    assert settings_client.post(f"{JOBS}{job.pk}/delete/", {"post": "yes"}).status_code == 403
    response = settings_client.post(JOBS, {"action": "delete_selected", "_selected_action": [job.pk]}, follow=True)
    assert "No action selected." in messages_of(response)
    assert PublicationJob.objects.filter(pk=job.pk).exists()
    assert f"{JOBS}add/" not in settings_client.get(JOBS).content.decode()


def test_an_editor_sees_the_accounts_jobs_and_may_retry_them(account, jobs):
    editor = admin_session(UserFactory(account=account))

    assert listed(editor.get(JOBS)) == {jobs[name].pk for name in ("queued", "failed", "unpublish")}
    editor.post(f"{JOBS}{jobs['failed'].pk}/retry/")
    jobs["failed"].refresh_from_db()
    assert jobs["failed"].state == "queued"


def test_a_second_repository_of_the_account_is_set_up_alongside(settings_client, account, tmp_path):
    """Two git channels of one account, each with its own repository."""
    first, second = (ChannelFactory(account=account, platform="git") for _ in range(2))
    for channel, name in ((first, "one.git"), (second, "two.git")):
        repo = make_bare_repository(tmp_path / name)
        response = settings_client.post(f"{DESTINATIONS}add/", destination_form(channel, repository_url=str(repo)))
        assert response.status_code == 302
    assert dict(GitDestination.objects.values_list("channel_id", "repository_url")) == {
        first.pk: str(tmp_path / "one.git"),
        second.pk: str(tmp_path / "two.git"),
    }
    # A channel with a destination is changed on its page, not offered for a second one.
    page = settings_client.get(f"{DESTINATIONS}add/")
    assert list(page.context["adminform"].form.fields["channel"].queryset) == []
    response = settings_client.post(f"{DESTINATIONS}add/", destination_form(first, repository_url=str(tmp_path)))
    assert "channel" in response.context["adminform"].form.errors
    assert GitDestination.objects.get(channel=first).repository_url == str(tmp_path / "one.git")


def test_a_git_channels_page_links_to_setting_its_repository_up_then_to_the_repository(
    settings_client, account, bare_repo
):
    channel = ChannelFactory(account=account, platform="git")
    page = text_of(settings_client.get(f"/admin/channels/channel/{channel.pk}/change/"))
    assert "Nowhere yet: set up its repository" in page
    form = settings_client.get(f"/admin/publishing_git/gitdestination/add/?channel={channel.pk}")
    assert f'<option value="{channel.pk}" selected>' in form.content.decode()
    saved = settings_client.post(
        "/admin/publishing_git/gitdestination/add/", destination_form(channel, repository_url=str(bare_repo))
    )
    assert saved.status_code == 302
    page = text_of(settings_client.get(f"/admin/channels/channel/{channel.pk}/change/"))
    assert f"{bare_repo} (main)" in page
