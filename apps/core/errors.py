"""Domain errors raised by services: a code, a message and optional details, nothing of HTTP.

The API's exception handler (apps/api/errors.py) is the one place that gives each kind its HTTP
status; the admin and management commands show the message.
"""


class DomainError(Exception):
    """A rule of the domain refuses the change (the API answers 422)."""

    code = "domain_error"

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details


class NotFound(DomainError):
    code = "not_found"


class Conflict(DomainError):
    code = "conflict"


class InvalidInput(DomainError):
    """Input that passed the API's shape checks but breaks a domain rule (for commands and admin)."""

    code = "VALIDATION_ERROR"


class Forbidden(DomainError):
    code = "permission_denied"


class PreconditionFailed(DomainError):
    """The client's copy is not the current one (If-Match, If-Unmodified-Since): nothing was changed."""

    code = "precondition_failed"


class Gone(DomainError):
    code = "gone"


class Unavailable(DomainError):
    """A service the change depends on (the mail server, for example) did not answer; nothing was changed."""

    code = "service_unavailable"
