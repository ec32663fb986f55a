"""What the git destination writes, read by Jekyll: posts under _posts/ with the date in the file
name (Jekyll's rule), front matter dates, titles, tags, the Markdown body and uploaded images."""

import io
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from dulwich import porcelain

from apps.posts.editor_status import post_publish_now
from apps.posts.services import post_create
from apps.publishing.git.services import GitSettings, git_destination_save
from apps.publishing.services import channel_run
from tests.factories import ChannelFactory, PostFactory, TagFactory
from tests.publishing.git_images import document_of, png, run_job, uploaded_image

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        shutil.which("jekyll") is None, reason="needs Jekyll (Debian's jekyll package; .ci/run installs it)"
    ),
]

CONFIG = """title: Docs
defaults:
  - scope: {path: "", type: posts}
    values: {layout: post}
"""
POST_LAYOUT = """<article><h1>{{ page.title | escape }}</h1><time>{{ page.date | date_to_xmlschema }}</time>
<ul>{% for tag in page.tags %}<li>{{ tag }}</li>{% endfor %}</ul>{{ content }}</article>"""


def build(repository: Path, site: Path) -> Path:
    porcelain.clone(str(repository), str(site), branch=b"main", errstream=io.BytesIO()).close()
    (site / "_config.yml").write_text(CONFIG)
    (site / "_layouts").mkdir()
    (site / "_layouts" / "post.html").write_text(POST_LAYOUT)
    # A site builds minutes after the commit. Built in the same second or two as the post's date,
    # Jekyll 4.3 gave the post midnight of its day in about half the runs (also with future: true).
    time.sleep(2)
    built = subprocess.run(
        ["jekyll", "build", "--quiet", "--source", str(site), "--destination", str(site / "_site")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return site / "_site"


def test_jekyll_builds_a_post_published_under_posts_with_its_date_in_the_file_name(bare_repo, tmp_path):
    channel = ChannelFactory(platform="git")
    git_destination_save(
        channel=channel,
        settings=GitSettings(repository_url=str(bare_repo), path_template="_posts/{year}-{month}-{day}-{slug}.md"),
    )
    post = post_create(
        channel=channel,
        title="Jekyll: it's <here> & now",
        slug="jekyll-here",
        body="A *Markdown* body.",
        tags=[TagFactory(account=channel.account, name="news")],
    )
    post_publish_now(post_id=post.pk)
    channel_run(channel.pk)
    post.refresh_from_db()

    day = post.published_at
    page = build(bare_repo, tmp_path / "site") / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}" / "jekyll-here.html"
    html = page.read_text()
    assert "<h1>Jekyll: it&#39;s &lt;here&gt; &amp; now</h1>" in html
    assert f"<time>{day:%Y-%m-%dT%H:%M:%S}+00:00</time>" in html
    assert "<li>news</li>" in html and "<em>Markdown</em>" in html


def test_jekyll_shows_an_uploaded_image_committed_under_assets(bare_repo, tmp_path):
    channel = ChannelFactory(platform="git")
    git_destination_save(
        channel=channel,
        settings=GitSettings(
            repository_url=str(bare_repo),
            path_template="_posts/{year}-{month}-{day}-{slug}.md",
            media_path="assets/images/{year}/{name}",
            media_url="/assets/images/{year}/{name}",
        ),
    )
    image = uploaded_image(png("navy"), alt_text="A navy square")
    post = PostFactory(channel=channel, title="Pictured", slug="pictured")
    document = document_of(post, image, body=f"Look:\n\n![A navy square]({image.url})\n")
    run_job(channel, document)

    day = document.published_at
    site = build(bare_repo, tmp_path / "site")
    html = (site / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}" / "pictured.html").read_text()
    assert f'<img src="/assets/images/2026/{image.name}" alt="A navy square" />' in html
    assert (site / "assets" / "images" / "2026" / image.name).read_bytes() == png("navy")
