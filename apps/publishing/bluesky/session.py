"""The channel's signed-in account on its server: every call carries the session's access token,
and a token Bluesky no longer takes is renewed once, in the order that asks nothing of a person:
refreshSession with the refresh token (ExpiredToken), else a new session from the stored app
password. Only Bluesky refusing the app password itself loses the connection (AccessLost)."""

import logging

from apps.core import crypto
from apps.publishing.bluesky import client
from apps.publishing.bluesky.models import POST_COLLECTION, BlueskyConnection

logger = logging.getLogger(__name__)

# What an expired or revoked access token is answered with (the PDS's words).
TOKEN_ERRORS = frozenset({"ExpiredToken", "InvalidToken", "AuthenticationRequired"})
# createSession's refusals that a new attempt cannot mend: a person must give another app password.
LOST_ERRORS = frozenset({"AuthenticationRequired", "AccountTakedown", "AccountDeactivated", "InvalidToken"})


class AccessLost(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def sign_in(*, connection: BlueskyConnection, deadline: float | None, http=None) -> dict:
    """A new session from the stored app password; AccessLost when Bluesky refuses the password."""
    try:
        return client.create_session(
            pds=connection.pds_url,
            identifier=connection.did,
            password=connection.app_password(),
            deadline=deadline,
            http=http,
        )
    except client.XrpcError as exc:
        if exc.status == 401 or exc.error in LOST_ERRORS:
            raise AccessLost(f"Bluesky refused the app password of @{connection.handle} ({exc.message}).") from None
        raise


def store(connection: BlueskyConnection, session: dict) -> None:
    connection.access_jwt_encrypted = crypto.encrypt(session["accessJwt"])
    connection.refresh_jwt_encrypted = crypto.encrypt(session["refreshJwt"])
    BlueskyConnection.objects.filter(pk=connection.pk).update(
        access_jwt_encrypted=connection.access_jwt_encrypted, refresh_jwt_encrypted=connection.refresh_jwt_encrypted
    )


class Account:
    def __init__(self, connection: BlueskyConnection, *, deadline: float | None = None) -> None:
        self.connection, self.deadline = connection, deadline
        self.http = client.guarded_session()

    @property
    def did(self) -> str:
        return self.connection.did

    def _renew(self, exc: client.XrpcError) -> None:
        connection = self.connection
        session = None
        if exc.error == "ExpiredToken" and connection.refresh_jwt_encrypted:
            try:
                session = client.refresh_session(
                    pds=connection.pds_url, refresh_jwt=connection.refresh_jwt(), deadline=self.deadline, http=self.http
                )
            except client.XrpcError as refused:
                if refused.status is None or refused.status >= 500 or refused.status == 429:
                    raise
                # The refresh token ended too (about two months) or was revoked: sign in anew.
        if session is None:
            session = sign_in(connection=connection, deadline=self.deadline, http=self.http)
        store(connection, session)
        logger.info("bluesky channel=%s session renewed (%s)", connection.channel_id, exc.error or exc.status)

    def call(self, method: str, nsid: str, what: str, **kwargs) -> dict:
        if not self.connection.access_jwt_encrypted:
            store(self.connection, sign_in(connection=self.connection, deadline=self.deadline, http=self.http))
        try:
            return self._xrpc().call(method, nsid, what, **kwargs)
        except client.XrpcError as exc:
            if exc.error not in TOKEN_ERRORS and exc.status != 401:
                raise
            self._renew(exc)
        return self._xrpc().call(method, nsid, what, **kwargs)

    def _xrpc(self) -> client.Xrpc:
        return client.Xrpc(
            self.connection.pds_url, token=self.connection.access_jwt(), deadline=self.deadline, http=self.http
        )

    # --- The repository ---

    def create_record(self, *, rkey: str, record: dict) -> dict:
        body = {"repo": self.did, "collection": POST_COLLECTION, "rkey": rkey, "record": record}
        return self.call("POST", "com.atproto.repo.createRecord", "the new post", json=body)

    def get_record(self, *, rkey: str) -> dict | None:
        """The post record at the key, or None when there is none."""
        params = {"repo": self.did, "collection": POST_COLLECTION, "rkey": rkey}
        try:
            body = self.call("GET", "com.atproto.repo.getRecord", "the look-up of the post", params=params)
        except client.XrpcError as exc:
            if exc.error == "RecordNotFound" or (exc.status == 400 and "not found" in exc.message.lower()):
                return None
            raise
        value = body.get("value")
        return value if isinstance(value, dict) else None

    def delete_record(self, *, rkey: str) -> None:
        """Take the post down (a key with no record is no error: deleting is idempotent there)."""
        body = {"repo": self.did, "collection": POST_COLLECTION, "rkey": rkey}
        self.call("POST", "com.atproto.repo.deleteRecord", "the post's removal", json=body)

    def upload_blob(self, *, data: bytes, mime_type: str, what: str) -> dict:
        body = self.call("POST", "com.atproto.repo.uploadBlob", what, data=data, headers={"Content-Type": mime_type})
        blob = body.get("blob")
        if not isinstance(blob, dict) or blob.get("$type") != "blob":
            raise client.XrpcError(502, f"Bluesky's answer to {what} held no blob.")
        return blob

    def profile(self) -> dict:
        return self.call("GET", "com.atproto.repo.describeRepo", "the account's description", params={"repo": self.did})
