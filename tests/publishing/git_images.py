"""Posts with uploaded images, as the media app hands them to a destination (apps/core/destinations.py's
Image): real PNG bytes made with Pillow under their content-addressed name, and a git channel's
job carried out with them."""

import hashlib
import io
import time
from datetime import UTC, datetime

from PIL import Image as Picture

from apps.core.destinations import Document, Image, JobContext, Outcome, kind_for
from apps.posts.models import Post

SITE_URL = "https://blog.example.com"
UPLOADED_AT = datetime(2026, 3, 5, 9, 30, tzinfo=UTC)


def png(colour: str = "red", size: tuple[int, int] = (40, 30)) -> bytes:
    out = io.BytesIO()
    Picture.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


class Reads:
    """How many times each image's bytes were read from the (pretend) media store."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def reader(self, name: str, content: bytes):
        def read() -> bytes:
            self.count[name] = self.count.get(name, 0) + 1
            return content

        return read


def uploaded_image(
    content: bytes, *, alt_text: str = "", attached: bool = True, uploaded_at=UPLOADED_AT, reads: Reads | None = None
) -> Image:
    """An uploaded PNG as the media app describes it, served by this service at /media/<name>."""
    name = f"{hashlib.sha256(content).hexdigest()}.png"
    with Picture.open(io.BytesIO(content)) as picture:
        width, height = picture.size
    return Image(
        medium_id=int(name[:6], 16),
        name=name,
        src=f"/media/{name}",
        url=f"{SITE_URL}/media/{name}",
        mime_type="image/png",
        width=width,
        height=height,
        size=len(content),
        alt_text=alt_text,
        uploaded_at=uploaded_at,
        read=(reads or Reads()).reader(name, content),
        attached=attached,
    )


def document_of(post: Post, *images: Image, body: str | None = None) -> Document:
    """The post as the pipeline hands it to its destination, showing `images`."""
    return Document(
        post_id=post.pk,
        title=post.title,
        slug=post.slug,
        body=post.body if body is None else body,
        published_at=post.published_at or datetime.now(UTC).replace(microsecond=0),
        images=images,
    )


def run_job(channel, document: Document | None, *, action: str = "publish", previous_path: str = "") -> Outcome:
    """One job of the channel's destination, as the pipeline runs it (publish, update or unpublish)."""
    destination = kind_for(channel.platform).load(channel.pk)
    job = JobContext(
        job_id=1,
        post_id=document.post_id,
        action=action,
        title=document.title,
        previous_path=previous_path,
        deadline=time.monotonic() + 30,
    )
    if action == "unpublish":
        return destination.unpublish(job, document)
    return destination.publish(job, document)
