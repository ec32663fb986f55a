"""The blog's pages are valid HTML, as the Nu HTML Checker (vnu.jar, the W3C validator) reads them.

vnu.jar comes from the npm package vnu-jar (.ci/run installs it globally); VNU_JAR names another
copy. Its warnings are not failures: they are advice (such as the trailing slash of a void element
or a redundant role), not errors a browser has to recover from."""

import json
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.blog.test_browser import seed_blog
from tests.factories import ChannelFactory

JAVA = shutil.which("java")


def vnu_jar() -> Path | None:
    if os.environ.get("VNU_JAR"):
        return Path(os.environ["VNU_JAR"])
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, timeout=60).stdout.strip()
    return Path(root, "vnu-jar", "build", "dist", "vnu.jar")


VNU_JAR = vnu_jar()

pytestmark = [
    pytest.mark.skipif(JAVA is None, reason="needs Java to run the Nu HTML Checker (.ci/run installs it)"),
    pytest.mark.skipif(
        VNU_JAR is None or not VNU_JAR.is_file(),
        reason=f"needs vnu.jar (npm install -g vnu-jar, as .ci/run does, or VNU_JAR); not at {VNU_JAR}",
    ),
]


def local(url: str) -> str:
    """The path of an absolute address, for the test client."""
    return urlsplit(url).path


def validation_errors(pages: dict[str, bytes], folder: Path) -> list[str]:
    """The checker's errors in the pages, as `page:line: message` (one JVM for all of them)."""
    for name, content in pages.items():
        (folder / f"{name}.html").write_bytes(content)
    result = subprocess.run(
        [JAVA, "-jar", str(VNU_JAR), "--format", "json", "--stdout", *sorted(str(p) for p in folder.glob("*.html"))],
        capture_output=True,
        text=True,
        timeout=300,
    )
    messages = json.loads(result.stdout)["messages"]
    return [
        f"{Path(message.get('url', '')).stem}:{message.get('lastLine', '?')}: {message['message']}"
        for message in messages
        if message["type"] in ("error", "non-document-error")
    ]


@pytest.mark.django_db
def test_the_index_a_post_a_tag_page_an_empty_blog_and_the_404_page_are_valid_html(client, tmp_path):
    channel, rich = seed_blog("https://cdn.example.com/media/icon.svg")
    empty = ChannelFactory(title="Nothing Yet", logo_url="https://cdn.example.com/logo.png", language="de")
    addresses = {
        "index": channel.public_url(),
        "post": channel.post_url(rich.slug),
        "tag": channel.public_url("blog:tag", tag="web"),
        "empty": empty.public_url(),
        "not-found": channel.post_url("draft"),
    }
    pages = {}
    for name, url in addresses.items():
        response = client.get(local(url))
        assert response.status_code == (404 if name == "not-found" else 200), name
        pages[name] = response.content

    errors = validation_errors(pages, tmp_path)
    assert errors == [], "\n".join(errors)
