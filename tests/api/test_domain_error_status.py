import pytest

from apps.api.errors import status_of
from apps.core import errors


class WorkflowRule(errors.DomainError):
    pass


class EmailTaken(errors.Conflict):
    pass


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (errors.DomainError("a rule refuses", code="invalid_status"), 422),
        (WorkflowRule("a rule of its own"), 422),
        (errors.InvalidInput("bad"), 400),
        (errors.Forbidden("no"), 403),
        (errors.NotFound("none"), 404),
        (errors.Conflict("taken"), 409),
        (EmailTaken("a kind of conflict"), 409),
        (errors.Gone("used"), 410),
        (errors.Unavailable("mail server down"), 503),
    ],
)
def test_the_http_layer_gives_each_kind_of_domain_error_its_status(error, status):
    assert status_of(error) == status
