"""Receivers that verify signatures as the people who write them would: one from the
specification's Signature section, one with the `standardwebhooks` library. A request that does
not verify is answered 401 and not processed; one that does gets the status the test scripts."""

from collections.abc import Callable

from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from tests.receiver import Received, Receiver
from tests.webhooks.test_delivery import verify as spec_verify

Verify = Callable[[dict, bytes], bool]


def service_verifier(secret: str) -> Verify:
    """A receiver written to the specification: one hex HMAC-SHA256 of `<timestamp>.<body>` keyed
    with the secret, compared in constant time with X-Service-Signature; a 5-minute window."""

    def verify(headers: dict, body: bytes) -> bool:
        return {"X-Service-Timestamp", "X-Service-Signature"} <= headers.keys() and spec_verify(secret, headers, body)

    return verify


def standard_verifier(secret: str) -> Verify:
    """A receiver using the Standard Webhooks reference library with the secret as shown."""
    webhook = Webhook(secret)

    def verify(headers: dict, body: bytes) -> bool:
        try:
            webhook.verify(body, headers)
        except WebhookVerificationError:
            return False
        return True

    return verify


class VerifyingReceiver(Receiver):
    """A Receiver whose `verify` (replaceable) decides first: 401 when it refuses, else the
    scripted status. `verdicts[i]` says whether `requests[i]` verified."""

    def __init__(self, verify: Verify) -> None:
        super().__init__()
        self.verify = verify
        self.verdicts: list[bool] = []
        receiver = self

        class Handler(self.server.RequestHandlerClass):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = dict(self.headers)
                verified = receiver.verify(headers, body)
                with receiver._lock:
                    scripted = receiver.script.pop(0) if verified and receiver.script else receiver.default
                # Recorded before the answer, so a sender that has its answer finds the request here.
                with receiver._arrived:
                    receiver.requests.append(Received(self.path, headers, body))
                    receiver.verdicts.append(verified)
                    receiver._arrived.notify_all()
                self.send_response(scripted[0] if verified else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server.RequestHandlerClass = Handler

    def verified_ids(self, header: str) -> list[str]:
        """The delivery ids (from `header`) of the requests that verified, in order of arrival."""
        return [r.headers[header] for r, ok in zip(self.requests, self.verdicts, strict=True) if ok]


def start(verify: Verify) -> VerifyingReceiver:
    return VerifyingReceiver(verify).start()
