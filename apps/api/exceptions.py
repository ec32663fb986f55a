"""Domain errors raised by services. The API's exception handler renders them in the envelope;
the admin and management commands show their message."""


class DomainError(Exception):
    status_code = 422
    code = "domain_error"

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details


class NotFound(DomainError):
    status_code = 404
    code = "not_found"


class Conflict(DomainError):
    status_code = 409
    code = "conflict"


class InvalidInput(DomainError):
    """Input that passed the API's shape checks but breaks a domain rule (for commands and admin)."""

    status_code = 400
    code = "VALIDATION_ERROR"


class Forbidden(DomainError):
    status_code = 403
    code = "permission_denied"


class Gone(DomainError):
    status_code = 410
    code = "gone"


class Unavailable(DomainError):
    """A service the change depends on (the mail server, for example) did not answer; nothing was changed."""

    status_code = 503
    code = "service_unavailable"
