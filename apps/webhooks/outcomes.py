"""What an attempt's outcome is, and what comes of it: every outcome is classified here, once
(`Outcome.verdict`), and what each verdict does is one row of CONSEQUENCES, which the transport
(re-signing), the sender (the batch, the delivery) and the breaker (the endpoint) read."""

from dataclasses import dataclass, field
from enum import StrEnum


class Verdict(StrEnum):
    DELIVERED = "delivered"  # 2xx
    GONE = "gone"  # 410 Gone: the receiver says the URL is gone for good
    REFUSED = "refused"  # any other status: 3xx (not followed), other 4xx, 5xx
    NO_ANSWER = "no_answer"  # timed out, could not connect, or the address guard refused the address


@dataclass(frozen=True)
class Consequence:
    delivered: bool = False  # the delivery is done; the endpoint's failures in a row end
    # The delivery fails for good, whatever its schedule, and the endpoint is disabled.
    gone: bool = False
    # The receiver answered, so the batch's next attempt is started; after no answer (a receiver
    # that hangs or refuses connections) the rest would only wait behind it.
    answered: bool = True
    # A receiver that still holds a rotation's previous secret refuses a request signed with the
    # new one: in the specification's format, the request is sent again signed with the previous.
    re_sign: bool = False


CONSEQUENCES = {
    Verdict.DELIVERED: Consequence(delivered=True),
    Verdict.GONE: Consequence(gone=True),
    Verdict.REFUSED: Consequence(re_sign=True),
    Verdict.NO_ANSWER: Consequence(answered=False),
}


@dataclass
class Outcome:
    request_headers: dict
    status: int | None = None
    headers: dict = field(default_factory=dict)
    body: str = ""
    error: str = ""
    duration_ms: int = 0

    @property
    def verdict(self) -> Verdict:
        if self.status is None:
            return Verdict.NO_ANSWER
        if 200 <= self.status < 300:
            return Verdict.DELIVERED
        return Verdict.GONE if self.status == 410 else Verdict.REFUSED

    @property
    def consequence(self) -> Consequence:
        return CONSEQUENCES[self.verdict]

    @property
    def ok(self) -> bool:
        return self.consequence.delivered
