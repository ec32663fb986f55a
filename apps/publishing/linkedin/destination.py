"""The LinkedIn destination: a post is one LinkedIn post (Posts API), its text built from the post
(commentary.py) and its uploaded images carried as the post's media (images.py); an update changes
that text, an unpublish deletes it.

Never posted twice: before a create request is sent, a SentPost row says so (committed). A later
attempt of the job that finds it without a URN (the answer was lost: a timeout, a reset after
sending) looks the author's recent posts up for that text and adopts the post it already made.
"""

import hashlib
import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone

from apps.core import crypto
from apps.core.destinations import EVERY_ACTION, DestinationKind, Document, JobContext, Outcome, PublishError
from apps.core.errors import DomainError
from apps.publishing.linkedin import client, images, services
from apps.publishing.linkedin.commentary import commentary
from apps.publishing.linkedin.models import PLATFORM, LinkedInConnection, SentPost
from apps.publishing.models import PublicationJob

logger = logging.getLogger(__name__)

# LinkedIn's clock and ours may differ: a post made up to this long before the request was
# recorded as sent still counts as the one it made.
CLOCK_SKEW = timedelta(minutes=10)
# How many of the author's latest posts are read to find one whose answer was lost.
LOOKUP_COUNT = 20
# An access token this close to its end is renewed before a job uses it.
RENEW_BEFORE = timedelta(minutes=5)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _outcome(urn: str) -> Outcome:
    return Outcome(reference=urn, path=urn, url=client.post_url(urn))


def _reconnect(reason: str) -> PublishError:
    """The job's failure when the channel's access is gone: reconnecting runs it again."""
    return PublishError(
        f"{services.RECONNECT} {reason} Reconnect LinkedIn on the channel's page in the Settings area; this post is "
        "published then.",
        permanent=True,
    )


class LinkedInPublisher:
    def __init__(self, connection: LinkedInConnection) -> None:
        self.connection = connection

    def _client(self, job: JobContext) -> client.Client:
        connection = self.connection
        if connection.needs_reconnect:
            raise _reconnect(connection.reconnect_reason)
        now = timezone.now()
        if connection.expires_at is not None and connection.expires_at - now < RENEW_BEFORE:
            if connection.can_refresh():
                try:
                    connection = self.connection = services.token_refresh(connection=connection)
                except DomainError as exc:
                    raise _reconnect(exc.message) from None
            elif connection.expires_at <= now:
                reason = "The access LinkedIn granted has expired."
                services.connection_lost(connection=connection, reason=reason)
                raise _reconnect(reason)
        try:
            return client.Client(connection.access_token(), deadline=job.deadline)
        except crypto.CredentialUnreadable as exc:  # FERNET_KEYS lost the key it was stored with
            raise PublishError(str(exc), permanent=True) from None

    def _failure(self, exc: client.ApiError, what: str) -> PublishError:
        """What LinkedIn's answer means for the job (the one place each status is handled)."""
        status = exc.status
        if status == 401:
            reason = f"LinkedIn refused this channel's access ({exc.message})."
            services.connection_lost(connection=self.connection, reason=reason)
            return _reconnect(reason)
        if status == 426:
            return PublishError(
                f"LinkedIn no longer serves API version {settings.LINKEDIN_API_VERSION} ({exc.message}). Set "
                "LINKEDIN_API_VERSION to a current version (YYYYMM, see LinkedIn's API versioning page), restart the "
                "worker, then retry this job.",
                permanent=True,
            )
        if status is None:
            return PublishError(exc.message)
        if status == 429:
            return PublishError(f"LinkedIn is limiting requests (429): {exc.message}", retry_after=exc.retry_after)
        if status >= 500:
            return PublishError(f"LinkedIn failed {what} ({status}): {exc.message}", retry_after=exc.retry_after)
        return PublishError(f"LinkedIn refused {what} ({status}): {exc.message}", permanent=True)

    def _call(self, what: str, call):
        try:
            return call()
        except client.ApiError as exc:
            raise self._failure(exc, what) from None

    def publish(self, job: JobContext, document: Document) -> Outcome:
        text = commentary(document)  # too long: fails here, before anything is sent
        linkedin = self._client(job)
        if job.previous_path:
            # On LinkedIn already (its last job succeeded): bring the text up to date.
            return self._update(linkedin, job.previous_path, text)
        return self._create(linkedin, job, text, document)

    def _create(self, linkedin: client.Client, job: JobContext, text: str, document: Document) -> Outcome:
        sent = SentPost.objects.filter(job_id=job.job_id).first()
        if sent is not None:
            urn = sent.urn or self._made_before(
                linkedin, sent, advice="if the post is not there, press “Retry now” on this job to post it."
            )
            if urn:
                if sent.commentary_sha256 != _digest(text):
                    # Edited since that attempt: the adopted post gets the current text.
                    self._call("the post's new text", lambda: linkedin.update_commentary(urn=urn, commentary=text))
                SentPost.objects.filter(pk=sent.pk).update(urn=urn, commentary_sha256=_digest(text))
                logger.info("linkedin job=%s adopted %s made by an earlier attempt", job.job_id, urn)
                return _outcome(urn)
        # Before the post is recorded as sent: an image LinkedIn refuses leaves no post to look for.
        content = images.content(
            linkedin=linkedin,
            channel_id=self.connection.channel_id,
            owner=self.connection.author,
            document=document,
            failure=self._failure,
        )
        if sent is not None:
            SentPost.objects.filter(pk=sent.pk).update(
                author=self.connection.author, commentary_sha256=_digest(text), sent_at=timezone.now()
            )
        else:
            sent = SentPost.objects.create(
                job_id=job.job_id,
                channel_id=self.connection.channel_id,
                author=self.connection.author,
                commentary_sha256=_digest(text),
            )
        try:
            urn = linkedin.create_post(author=self.connection.author, commentary=text, content=content)
        except client.ApiError as exc:
            if exc.status is not None and exc.status < 500:
                # A refusal: LinkedIn made no post, so the next attempt need not look for one.
                SentPost.objects.filter(pk=sent.pk).delete()
                if exc.status in images.IMAGE_REFUSALS:
                    # Perhaps an image LinkedIn no longer has: the next attempt uploads it anew.
                    images.forget(channel_id=self.connection.channel_id, content=content)
            raise self._failure(exc, "the new post") from None
        SentPost.objects.filter(pk=sent.pk).update(urn=urn)
        return _outcome(urn)

    def _made_before(self, linkedin: client.Client, sent: SentPost, *, advice: str) -> str:
        """The URN of the post an earlier attempt made (its answer lost), or "" when it made none."""
        try:
            posts = linkedin.recent_posts(author=sent.author, count=LOOKUP_COUNT)
        except client.ApiError as exc:
            if exc.status != 403:
                raise self._failure(exc, "the look-up of recent posts") from None
            # The app may not read the author's posts (r_member_social is granted to few apps):
            # rather than guess, a person looks (and "Retry now" of a publication then posts).
            SentPost.objects.filter(pk=sent.pk).delete()
            raise PublishError(
                "LinkedIn's answer to this post was lost, and this LinkedIn app may not read the author's posts to "
                f"see whether it was made ({exc.message}). Look at the profile or page on LinkedIn: {advice}",
                permanent=True,
            ) from None
        taken = set(SentPost.objects.filter(channel_id=sent.channel_id).exclude(urn="").values_list("urn", flat=True))
        since = sent.sent_at - CLOCK_SKEW
        for post in posts:
            urn, text, created = post.get("id"), post.get("commentary"), post.get("createdAt")
            if not isinstance(urn, str) or urn in taken or not isinstance(text, str):
                continue
            if isinstance(created, int) and datetime.fromtimestamp(created / 1000, tz=UTC) < since:
                continue
            if _digest(text) == sent.commentary_sha256:
                return urn
        return ""

    def _update(self, linkedin: client.Client, urn: str, text: str) -> Outcome:
        try:
            linkedin.update_commentary(urn=urn, commentary=text)
        except client.ApiError as exc:
            if exc.status == 404:
                raise PublishError(
                    "The post is no longer on LinkedIn (it was deleted there). Unpublish it here and publish it "
                    "again to post it anew.",
                    permanent=True,
                ) from None
            raise self._failure(exc, "the post's new text") from None
        return _outcome(urn)

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        sent = None
        urn = job.previous_path
        if not urn:
            # Not published here, but a publication taken back may have made the post with its
            # answer lost: its record says so.
            sent = (
                SentPost.objects.filter(job_id__in=PublicationJob.objects.filter(post_id=job.post_id).values("id"))
                .order_by("-id")
                .first()
            )
            if sent is None:
                return Outcome()  # never reached LinkedIn: nothing to take down
        linkedin = self._client(job)
        if sent is not None:
            urn = sent.urn or self._made_before(linkedin, sent, advice="if the post is there, delete it on LinkedIn.")
        if urn:
            self._call("the post's removal", lambda: linkedin.delete_post(urn=urn))  # gone already: done too
        if sent is not None:
            SentPost.objects.filter(pk=sent.pk).delete()
        return Outcome(reference=urn)

    def check(self) -> str:
        try:
            return services.connection_check(connection=self.connection)
        except DomainError as exc:
            raise PublishError(exc.message) from None


def load(channel_id: int) -> LinkedInPublisher | None:
    connection = LinkedInConnection.objects.filter(channel_id=channel_id).first()
    if connection is None:
        return None
    return LinkedInPublisher(connection)


def unready(channel_id: int) -> str:
    connection = LinkedInConnection.objects.filter(channel_id=channel_id).first()
    if connection is None:
        return (
            f"{services.NOT_CONNECTED} this LinkedIn channel is not connected to a LinkedIn account. Connect it on "
            "the channel's page in the Settings area."
        )
    if connection.needs_reconnect:
        return (
            f"{services.RECONNECT} {connection.reconnect_reason} Reconnect it on the channel's page in the Settings "
            "area."
        )
    return ""


KIND = DestinationKind(
    platform=PLATFORM,
    label="LinkedIn",
    load=load,
    missing=(
        f"{services.NOT_CONNECTED} this LinkedIn channel is not connected to a LinkedIn account. Connect it on the "
        "channel's page in the Settings area (or with the connect_linkedin command); this post is published then."
    ),
    publishes=(
        "A post on LinkedIn: its job posts the text shown under “as it will be posted”, and the post is published "
        "once LinkedIn has accepted it."
    ),
    reference="LinkedIn post",
    unready=unready,
    admin="apps.publishing.linkedin.admin",
    # Where a channel publishes, with its credentials: the account's settings.
    access={"system.settings": {"publishing_linkedin.linkedinconnection": EVERY_ACTION}},
    # The commentary carries the teaser instead of the body (commentary.py).
    field_labels={"teaser": "Commentary (posted instead of the body)"},
)
