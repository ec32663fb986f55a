"""The Bluesky destination: a post is one `app.bsky.feed.post` record in the account's repository
(record.py: the text, its facets, the blog card or the images); an unpublish deletes it. Bluesky
has no edit: an update whose text changed makes a new record and deletes the old one; an update
whose text did not change sends nothing (docs/bluesky.md, "Editing").

Never posted twice: the record key (a TID) is chosen and written (SentRecord, committed) before
the create call, so a later attempt whose answer was lost reads that key (getRecord) and adopts
the record it finds there instead of making another.
"""

import logging

from apps.core import crypto
from apps.core.destinations import EVERY_ACTION, DestinationKind, Document, JobContext, Outcome, PublishError
from apps.core.errors import DomainError
from apps.publishing.bluesky import client, images, record, services
from apps.publishing.bluesky.models import PLATFORM, POST_COLLECTION, BlueskyConnection, SentRecord
from apps.publishing.bluesky.session import AccessLost, Account
from apps.publishing.models import PublicationJob

logger = logging.getLogger(__name__)


def _reconnect(reason: str) -> PublishError:
    """The job's failure when the channel's access is gone: reconnecting runs it again."""
    return PublishError(
        f"{services.RECONNECT} {reason} Reconnect Bluesky on the channel's page in the Settings area with a new app "
        "password; this post is published then.",
        permanent=True,
    )


def _rkey(uri: str) -> str:
    return uri.rsplit("/", 1)[-1]


class BlueskyPublisher:
    def __init__(self, connection: BlueskyConnection, *, langs: list[str]) -> None:
        self.connection, self.langs = connection, langs

    def _account(self, job: JobContext) -> Account:
        if self.connection.needs_reconnect:
            raise _reconnect(self.connection.reconnect_reason)
        return Account(self.connection, deadline=job.deadline)

    def _failure(self, exc: client.XrpcError, what: str) -> PublishError:
        """What Bluesky's answer means for the job (the one place each status is handled)."""
        status = exc.status
        if exc.error == client.BLOCKED:
            return PublishError(f"{exc.message} Reconnect Bluesky with a server at a public address.", permanent=True)
        if status is None:
            return PublishError(exc.message)
        if status == 429:
            return PublishError(f"Bluesky is limiting requests (429): {exc.message}", retry_after=exc.retry_after)
        if status >= 500:
            return PublishError(f"Bluesky failed {what} ({status}): {exc.message}")
        return PublishError(f"Bluesky refused {what} ({status}): {exc.message}", permanent=True)

    def _call(self, what: str, call):
        try:
            return call()
        except AccessLost as exc:
            services.connection_lost(connection=self.connection, reason=exc.reason)
            raise _reconnect(exc.reason) from None
        except crypto.CredentialUnreadable as exc:  # FERNET_KEYS lost the key it was stored with
            raise PublishError(str(exc), permanent=True) from None
        except client.XrpcError as exc:
            raise self._failure(exc, what) from None

    def _outcome(self, rkey: str) -> Outcome:
        uri = f"at://{self.connection.did}/{POST_COLLECTION}/{rkey}"
        return Outcome(reference=uri, path=uri, url=client.post_url(self.connection.handle, rkey))

    def publish(self, job: JobContext, document: Document) -> Outcome:
        text = record.text_of(document)
        account = self._account(job)
        if not job.previous_path:
            return self._call("the new post", lambda: self._create(account, job, document, text))
        # Bluesky has no edit: only a changed text makes a new record, which replaces the old one.
        old = _rkey(job.previous_path)
        posted = SentRecord.objects.filter(channel_id=self.connection.channel_id, rkey=old).order_by("-id").first()
        if posted is not None and posted.text_sha256 == record.digest(text):
            return self._outcome(old)
        outcome = self._call("the post's new record", lambda: self._create(account, job, document, text))
        new = _rkey(outcome.path)
        self._remove(account, {old} | self._made_for(job.post_id, but=new), "the old post's removal")
        return outcome

    def _made_for(self, post_id: int, *, but: str = "") -> set[str]:
        """The keys of the records the post's jobs made or may have made (an answer lost, a
        replacement whose old record was not removed), but `but`: a record removed is forgotten."""
        jobs = PublicationJob.objects.filter(post_id=post_id).values("id")
        made = SentRecord.objects.filter(channel_id=self.connection.channel_id, job_id__in=jobs).exclude(rkey=but)
        return set(made.values_list("rkey", flat=True))

    def _remove(self, account: Account, rkeys: set[str], what: str) -> None:
        for rkey in sorted(rkeys):
            self._call(what, lambda rkey=rkey: account.delete_record(rkey=rkey))
            SentRecord.objects.filter(channel_id=self.connection.channel_id, rkey=rkey).delete()

    def _create(self, account: Account, job: JobContext, document: Document, text: str) -> Outcome:
        sent = SentRecord.objects.filter(job_id=job.job_id).first()
        found = account.get_record(rkey=sent.rkey) if sent is not None and sent.did == account.did else None
        if found is not None:
            if found.get("text") == text:
                SentRecord.objects.filter(pk=sent.pk).update(confirmed=True)
                logger.info("bluesky job=%s adopted %s made by an earlier attempt", job.job_id, sent.uri)
                return self._outcome(sent.rkey)
            # Edited since that attempt: its record is replaced by the current text's.
            account.delete_record(rkey=sent.rkey)
            sent.rkey = record.tid()
        # The blobs first: an image Bluesky refuses leaves no post to look for.
        embed = self._embed(account, document)
        if sent is None:
            sent = SentRecord(job_id=job.job_id, channel_id=self.connection.channel_id, rkey=record.tid())
        sent.did, sent.text_sha256, sent.confirmed = account.did, record.digest(text), False
        sent.save()
        post = record.post(text, embed=embed, langs=self.langs)
        try:
            account.create_record(rkey=sent.rkey, record=post)
        except client.XrpcError as exc:
            if exc.status == 400 and "blob" in exc.message.lower():
                # A blob the server no longer keeps: the next attempt uploads the images again.
                images.forget(channel_id=self.connection.channel_id, did=account.did)
            raise
        SentRecord.objects.filter(pk=sent.pk).update(confirmed=True)
        return self._outcome(sent.rkey)

    def _embed(self, account: Account, document: Document) -> dict | None:
        if document.link:
            chosen = images.chosen(document)
            thumb = images.blob(account, channel_id=self.connection.channel_id, image=chosen[0]) if chosen else None
            return record.external(document, thumb)
        return images.images_embed(account, channel_id=self.connection.channel_id, document=document)

    def unpublish(self, job: JobContext, document: Document | None) -> Outcome:
        # The published record, and any other a job of the post made: one whose answer was lost
        # (a publication taken back meanwhile), one a replacement did not get to remove.
        rkeys = {_rkey(job.previous_path)} if job.previous_path else set()
        rkeys |= self._made_for(job.post_id)
        if not rkeys:
            return Outcome()  # never reached Bluesky: nothing to take down
        self._remove(self._account(job), rkeys, "the post's removal")
        return Outcome(reference=job.previous_path)

    def check(self) -> str:
        try:
            return services.connection_check(connection=self.connection)
        except DomainError as exc:
            raise PublishError(exc.message) from None


def load(channel_id: int) -> BlueskyPublisher | None:
    connection = BlueskyConnection.objects.select_related("channel").filter(channel_id=channel_id).first()
    if connection is None:
        return None
    language = connection.channel.language
    return BlueskyPublisher(connection, langs=[language] if language else [])


def unready(channel_id: int) -> str:
    connection = BlueskyConnection.objects.filter(channel_id=channel_id).first()
    if connection is None:
        return (
            f"{services.NOT_CONNECTED} this Bluesky channel is not connected to a Bluesky account. Connect it on the "
            "channel's page in the Settings area."
        )
    if connection.needs_reconnect:
        return (
            f"{services.RECONNECT} {connection.reconnect_reason} Reconnect it on the channel's page in the Settings "
            "area."
        )
    return ""


def short_reference(reference: str) -> str:
    """A record's address as pages show it: its key (the DID and the collection are the channel's)."""
    return _rkey(reference)


def reference_url(job) -> str:
    """The post's page in Bluesky's app, which the job recorded with its outcome."""
    return job.url


KIND = DestinationKind(
    platform=PLATFORM,
    label="Bluesky",
    load=load,
    missing=(
        f"{services.NOT_CONNECTED} this Bluesky channel is not connected to a Bluesky account. Connect it on the "
        "channel's page in the Settings area; this post is published then."
    ),
    publishes=(
        "A post on Bluesky: its job posts the text shown under “as it will be posted”, with the blog link as a card, "
        "and the post is published once Bluesky has accepted it."
    ),
    reference="Bluesky post",
    unready=unready,
    short_reference=short_reference,
    reference_url=reference_url,
    admin="apps.publishing.bluesky.admin",
    # Where a channel publishes, with its credentials: the account's settings.
    access={"system.settings": {"publishing_bluesky.blueskyconnection": EVERY_ACTION}},
    field_labels={"teaser": "Post text (posted instead of the body)"},
)
