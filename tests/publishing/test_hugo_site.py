"""What the git destination writes, read by what its readers run: Hugo builds the published files
into pages (front matter dates, slugs, tags, drafts, the body's Markdown, uploaded images)."""

import io
import shutil
import subprocess
from pathlib import Path

import pytest
from dulwich import porcelain

from apps.posts.editor_status import post_publish_now, post_set_status
from apps.posts.services import post_create
from apps.publishing.services import channel_run
from tests.factories import PostFactory, TagFactory
from tests.publishing.git_images import document_of, png, run_job, uploaded_image

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(shutil.which("hugo") is None, reason="needs Hugo (Debian's hugo package; .ci/run installs it)"),
]

SINGLE = """{{ template "_internal/opengraph.html" . }}
<article><h1>{{ .Title }}</h1><time>{{ .Date.Format "2006-01-02T15:04:05Z07:00" }}</time>
<p class="description">{{ .Description }}</p><ul>{{ range .Params.tags }}<li>{{ . }}</li>{{ end }}</ul>
{{ .Content }}</article>"""
LIST = """{{ range .Site.RegularPages }}<a href="{{ .RelPermalink }}">{{ .Title }}</a>{{ end }}"""


def build(repository: Path, site: Path) -> Path:
    """Clone the branch the channel publishes to, add a minimal theme, build it with Hugo."""
    porcelain.clone(str(repository), str(site), branch=b"main", errstream=io.BytesIO()).close()
    (site / "hugo.toml").write_text('baseURL = "https://docs.example.com/"\ntitle = "Docs"\n')
    layouts = site / "layouts" / "_default"
    layouts.mkdir(parents=True)
    (layouts / "single.html").write_text(SINGLE)
    (layouts / "list.html").write_text(LIST)
    (site / "layouts" / "index.html").write_text(LIST)
    built = subprocess.run(
        ["hugo", "--quiet", "--source", str(site), "--destination", str(site / "public")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return site / "public"


def test_hugo_builds_each_published_post_at_its_slug_with_its_title_date_tags_and_body(
    git_channel, bare_repo, tmp_path
):
    title = 'Release 2.0: "faster" & <safer> 🚀'
    post = post_create(
        channel=git_channel,
        title=title,
        slug="release-2",
        body="Now **twice** as fast.\r\n\r\n- one\r\n- two\r\n",
        meta_description="What changed in 2.0",
        tags=[TagFactory(account=git_channel.account, name="release")],
    )
    post_publish_now(post_id=post.pk)
    channel_run(git_channel.pk)
    post.refresh_from_db()

    page = (build(bare_repo, tmp_path / "site") / "posts" / "release-2" / "index.html").read_text()
    assert "<h1>Release 2.0: &#34;faster&#34; &amp; &lt;safer&gt; 🚀</h1>" in page
    assert f"<time>{post.published_at:%Y-%m-%dT%H:%M:%S}Z</time>" in page
    assert '<p class="description">What changed in 2.0</p>' in page
    assert "<li>release</li>" in page
    assert "<strong>twice</strong>" in page and "<li>one</li>" in page


def test_hugo_leaves_out_a_post_unpublished_as_a_draft(git_channel, bare_repo, tmp_path):
    git_channel.git_destination.unpublish_keeps_file = True
    git_channel.git_destination.save()
    kept = post_create(channel=git_channel, title="Kept", slug="kept", body="Stays.")
    withdrawn = post_create(channel=git_channel, title="Withdrawn", slug="withdrawn", body="Goes.")
    for post in (kept, withdrawn):
        post_publish_now(post_id=post.pk)
    channel_run(git_channel.pk)
    post_set_status(post_id=withdrawn.pk, status="draft")
    channel_run(git_channel.pk)

    public = build(bare_repo, tmp_path / "site")
    assert (public / "posts" / "kept" / "index.html").exists()
    assert (public.parent / "content" / "posts" / "withdrawn.md").exists()  # the file stays...
    assert not (public / "posts" / "withdrawn").exists()  # ...as a draft, which Hugo does not build


def test_hugo_shows_an_uploaded_image_from_the_repositorys_static_folder_and_as_the_opengraph_image(
    git_channel, bare_repo, tmp_path
):
    image = uploaded_image(png(), alt_text="A red square")
    post = PostFactory(channel=git_channel, title="Pictured", slug="pictured")
    run_job(git_channel, document_of(post, image, body=f"Look:\n\n![A red square]({image.src})\n"))

    public = build(bare_repo, tmp_path / "site")
    page = (public / "posts" / "pictured" / "index.html").read_text()
    assert f'<img src="/images/2026/{image.name}" alt="A red square">' in page
    assert (public / "images" / "2026" / image.name).read_bytes() == png()
    assert f'<meta property="og:image" content="https://docs.example.com/images/2026/{image.name}"' in page
