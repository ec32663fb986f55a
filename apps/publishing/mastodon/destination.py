"""The Mastodon destination: a post is one status on the channel's account, its text fitted into the
instance's own limit (text.py) with the channel's visibility and language, its uploaded images as
the status's media (media.py); an update edits the status, an unpublish deletes it.

Never posted twice: before a create request is sent, a SentStatus row records its Idempotency-Key
and the text's hash (committed). The instance answers a repeat of the key with the status it made;
and a later attempt that finds the row without a status id (the answer was lost: a timeout, a reset
after sending) first looks the account's recent statuses up for that text and adopts the one it made.
"""

import hashlib
import logging
import uuid
from datetime import datetime, timedelta

from django.utils import timezone

from apps.core import crypto
from apps.core.destinations import EVERY_ACTION, DestinationKind, Document, JobContext, Outcome, PublishError
from apps.core.errors import DomainError
from apps.publishing.mastodon import client, media, services
from apps.publishing.mastodon.models import PLATFORM, MastodonConnection, SentStatus
from apps.publishing.mastodon.text import status_text
from apps.publishing.models import PublicationJob

logger = logging.getLogger(__name__)

# The instance's clock and ours may differ: a status made up to this long before the request was
# recorded as sent still counts as the one it made.
CLOCK_SKEW = timedelta(minutes=10)
# How many of the account's latest statuses are read to find one whose answer was lost.
LOOKUP_COUNT = 20


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _outcome(status: dict) -> Outcome:
    url = status.get("url") if isinstance(status.get("url"), str) else ""
    return Outcome(reference=status["id"], path=status["id"], url=url or "")


def _reconnect(reason: str) -> PublishError:
    """The job's failure when the channel's access is gone: reconnecting runs it again."""
    return PublishError(
        f"{services.RECONNECT} {reason} Reconnect Mastodon on the channel's page in the Settings area; this post is "
        "published then.",
        permanent=True,
    )


def _created(status: dict) -> datetime | None:
    try:
        return datetime.fromisoformat(str(status.get("created_at")).replace("Z", "+00:00"))
    except ValueError:
        return None


class MastodonPublisher:
    def __init__(self, connection: MastodonConnection) -> None:
        self.connection = connection

    @property
    def owner(self) -> str:
        return f"{self.connection.base_url} {self.connection.account_id}"

    def _client(self, job: JobContext) -> client.Client:
        if self.connection.needs_reconnect:
            raise _reconnect(self.connection.reconnect_reason)
        try:
            mastodon = client.Client(self.connection.base_url, self.connection.access_token(), deadline=job.deadline)
        except crypto.CredentialUnreadable as exc:  # FERNET_KEYS lost the key it was stored with
            raise PublishError(str(exc), permanent=True) from None
        self.connection = self._call(
            "the instance's limits", lambda: services.limits_fresh(connection=self.connection, mastodon=mastodon)
        )
        return mastodon

    def _failure(self, exc: client.ApiError, what: str) -> PublishError:
        """What the instance's answer means for the job (the one place each status is handled)."""
        status = exc.status
        if exc.blocked:
            return PublishError(exc.message, permanent=True)
        if status == 401:
            reason = f"{self.connection.base_url} refused this channel's access ({exc.message})."
            services.connection_lost(connection=self.connection, reason=reason)
            return _reconnect(reason)
        if status is None:
            return PublishError(exc.message)
        if status == 429:
            return PublishError(
                f"The instance is limiting requests (429): {exc.message}; tried again once its limit resets.",
                retry_after=exc.retry_after,
            )
        if status >= 500:
            return PublishError(f"The instance failed {what} ({status}): {exc.message}", retry_after=exc.retry_after)
        return PublishError(f"The instance refused {what} ({status}): {exc.message}", permanent=True)

    def _call(self, what: str, call):
        try:
            return call()
        except client.ApiError as exc:
            raise self._failure(exc, what) from None

    def _text(self, document: Document) -> str:
        connection = self.connection
        return status_text(
            document, limit=connection.max_characters, reserved_per_url=connection.characters_reserved_per_url
        )

    def _fields(self, text: str, media_ids: list[str], *, new: bool) -> dict:
        fields: dict = {"status": text, "media_ids": media_ids}
        if new:  # Mastodon keeps a status's visibility when it is edited
            fields["visibility"] = self.connection.visibility
        if self.connection.language:
            fields["language"] = self.connection.language
        return fields

    def _media(self, mastodon: client.Client, document: Document, status_id: str) -> list[str]:
        return media.media_ids(
            mastodon=mastodon,
            channel_id=self.connection.channel_id,
            owner=self.owner,
            document=document,
            limit=self.connection.max_media_attachments,
            status_id=status_id,
            failure=self._failure,
        )

    def publish(self, job: JobContext, document: Document) -> Outcome:
        mastodon = self._client(job)
        text = self._text(document)
        if job.previous_path:
            # On Mastodon already (its last job succeeded): bring the status up to date.
            return self._edit(mastodon, job.previous_path, text, document)
        return self._create(mastodon, job, text, document)

    def _create(self, mastodon: client.Client, job: JobContext, text: str, document: Document) -> Outcome:
        sent = SentStatus.objects.filter(job_id=job.job_id).first()
        if sent is not None and sent.owner == self.owner:
            status_id = sent.status_id or self._made_before(
                mastodon, sent, advice="if the status is not there, press “Retry now” on this job to post it."
            )
            if status_id:
                logger.info("mastodon job=%s adopted status %s made by an earlier attempt", job.job_id, status_id)
                # The adopted status gets the current text (edited since that attempt, or not).
                return self._edit(mastodon, status_id, text, document, sent=sent)
        media_ids = self._media(mastodon, document, "")
        sent = self._record(job, sent, text)
        try:
            status = mastodon.create_status(
                fields=self._fields(text, media_ids, new=True), idempotency_key=sent.idempotency_key
            )
        except client.ApiError as exc:
            if exc.status is not None and exc.status < 500:
                # A refusal: the instance made no status, so the next attempt need not look for one.
                SentStatus.objects.filter(pk=sent.pk).delete()
            raise self._failure(exc, "the new status") from None
        SentStatus.objects.filter(pk=sent.pk).update(status_id=status["id"])
        media.attached(channel_id=self.connection.channel_id, media_ids=media_ids, status_id=status["id"])
        return _outcome(status)

    def _record(self, job: JobContext, sent: SentStatus | None, text: str) -> SentStatus:
        """The create request about to be sent, committed before it is: the same text keeps its
        Idempotency-Key (a repeat the instance made already is answered with that status)."""
        digest = _digest(text)
        if sent is not None and sent.owner == self.owner and sent.text_sha256 == digest:
            return sent
        fields = {
            "channel_id": self.connection.channel_id,
            "owner": self.owner,
            "idempotency_key": uuid.uuid4().hex,
            "text_sha256": digest,
            "sent_at": timezone.now(),
            "status_id": "",
        }
        sent, _created = SentStatus.objects.update_or_create(job_id=job.job_id, defaults=fields)
        return sent

    def _made_before(self, mastodon: client.Client, sent: SentStatus, *, advice: str) -> str:
        """The id of the status an earlier attempt made (its answer lost), or "" when it made none."""
        account_id = self.connection.account_id
        try:
            statuses = mastodon.recent_statuses(account_id=account_id, limit=LOOKUP_COUNT)
        except client.ApiError as exc:
            if exc.status != 403:
                raise self._failure(exc, "the look-up of recent statuses") from None
            # The access may not read the account's statuses (granted before read:statuses was asked):
            # rather than guess, a person looks (and "Retry now" then posts).
            SentStatus.objects.filter(pk=sent.pk).delete()
            raise PublishError(
                "The instance's answer to this status was lost, and this channel's access may not read the "
                f"account's statuses to see whether it was made ({exc.message}). Look at @{self.connection.acct}: "
                f"{advice}",
                permanent=True,
            ) from None
        taken = set(
            SentStatus.objects.filter(channel_id=sent.channel_id)
            .exclude(status_id="")
            .values_list("status_id", flat=True)
        )
        since = sent.sent_at - CLOCK_SKEW
        for status in statuses:
            created = _created(status)
            if status.get("id") in taken or not isinstance(status.get("id"), str) or created is None or created < since:
                continue
            text = self._call(
                "a status's text", lambda status_id=status["id"]: mastodon.status_text(status_id=status_id)
            )
            if text is not None and _digest(text) == sent.text_sha256:
                return status["id"]
        return ""

    def _edit(
        self, mastodon: client.Client, status_id: str, text: str, document: Document, sent: SentStatus | None = None
    ) -> Outcome:
        media_ids = self._media(mastodon, document, status_id)
        try:
            status = mastodon.edit_status(status_id=status_id, fields=self._fields(text, media_ids, new=False))
        except client.ApiError as exc:
            if exc.status == 404:
                raise PublishError(
                    "The status is no longer on Mastodon (it was deleted there). Unpublish the post here and publish "
                    "it again to post it anew.",
                    permanent=True,
                ) from None
            raise self._failure(exc, "the status's edit") from None
        if sent is not None:
            SentStatus.objects.filter(pk=sent.pk).update(status_id=status_id, text_sha256=_digest(text))
        media.attached(channel_id=self.connection.channel_id, media_ids=media_ids, status_id=status_id)
        return _outcome(status)

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        sent = None
        status_id = job.previous_path
        if not status_id:
            # Not published here, but a publication taken back may have made the status with its
            # answer lost: its record says so.
            jobs = PublicationJob.objects.filter(post_id=job.post_id).values("id")
            sent = SentStatus.objects.filter(job_id__in=jobs, owner=self.owner).order_by("-id").first()
            if sent is None:
                return Outcome()  # never reached Mastodon: nothing to take down
        mastodon = self._client(job)
        if sent is not None:
            status_id = sent.status_id or self._made_before(
                mastodon, sent, advice="if the status is there, delete it on Mastodon."
            )
        if status_id:
            self._call("the status's removal", lambda: mastodon.delete_status(status_id=status_id))  # gone: done too
        if sent is not None:
            SentStatus.objects.filter(pk=sent.pk).delete()
        return Outcome(reference=status_id)

    def check(self) -> str:
        try:
            return services.connection_check(connection=self.connection)
        except DomainError as exc:
            raise PublishError(exc.message) from None


def _connection(channel_id: int) -> MastodonConnection | None:
    return MastodonConnection.objects.select_related("app").filter(channel_id=channel_id).first()


def load(channel_id: int) -> MastodonPublisher | None:
    connection = _connection(channel_id)
    return MastodonPublisher(connection) if connection is not None else None


def unready(channel_id: int) -> str:
    connection = _connection(channel_id)
    if connection is None:
        return (
            f"{services.NOT_CONNECTED} this Mastodon channel is not connected to an account. Connect it on the "
            "channel's page in the Settings area."
        )
    if connection.needs_reconnect:
        reason = connection.reconnect_reason
        return f"{services.RECONNECT} {reason} Reconnect it on the channel's page in the Settings area."
    return ""


KIND = DestinationKind(
    platform=PLATFORM,
    label="Mastodon",
    load=load,
    missing=(
        f"{services.NOT_CONNECTED} this Mastodon channel is not connected to an account. Connect it on the channel's "
        "page in the Settings area; this post is published then."
    ),
    publishes=(
        "A status on Mastodon: its job posts the text shown under “as it will be posted”, and the post is published "
        "once the instance has accepted it."
    ),
    reference="Mastodon status",
    unready=unready,
    admin="apps.publishing.mastodon.admin",
    # Where a channel publishes, with its credentials: the account's settings.
    access={
        "system.settings": {
            "publishing_mastodon.mastodonconnection": EVERY_ACTION,
        }
    },
    # The status carries the teaser instead of the body (text.py).
    field_labels={"teaser": "Status text (posted instead of the body)"},
)
