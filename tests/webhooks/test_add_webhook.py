"""`manage.py add_webhook`: an endpoint added from a script, in either signature format. Run as
manage.py runs it (execute_from_command_line with the process's argv), so exit codes and what
reaches stdout and stderr are those a script sees."""

import base64
import json

import pytest

from apps.webhooks.models import WebhookEndpoint
from apps.webhooks.services import delivery_attempt
from tests.conftest import json_error
from tests.webhooks.verifying import standard_verifier, start

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(manage):
    """Run `manage.py add_webhook ARGS`; (exit code, stdout, stderr)."""
    return lambda *args: manage("add_webhook", *args)


def test_format_standard_adds_an_endpoint_whose_deliveries_the_library_verifies_with_the_printed_secret(
    run, account, private_targets, emit
):
    receiver = start(lambda headers, body: False)
    try:
        code, out, _ = run("--account", account.pk, "--url", receiver.url, "--format", "standard", "--json")
        assert code == 0
        printed = json.loads(out)
        assert printed["signature_format"] == "standard"
        assert len(base64.b64decode(printed["secret"].removeprefix("whsec_"), validate=True)) == 32
        assert WebhookEndpoint.objects.get(pk=printed["id"]).signature_format == "standard"
        receiver.verify = standard_verifier(printed["secret"])

        assert delivery_attempt(delivery_id=str(emit().deliveries.get().pk)).succeeded
        assert receiver.verdicts == [True]
    finally:
        receiver.stop()


def test_without_a_format_the_endpoint_uses_the_specification_s_headers_and_says_so(run, account, private_targets):
    code, out, _ = run("--account", account.pk, "--url", "http://127.0.0.1:9/hook")

    endpoint = WebhookEndpoint.objects.get()
    assert code == 0 and endpoint.signature_format == "service"
    assert out.strip() == (
        f"Endpoint {endpoint.pk} -> http://127.0.0.1:9/hook, signed with X-Service-* headers (the specification's)\n"
        f"Signing secret: {endpoint.secret}"
    )


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--account", "999999", "--url", "http://127.0.0.1:9/hook"], "not_found", "No account with id 999999."),
        (
            ["--account", "{account}", "--url", "http://127.0.0.1:9/hook", "--events", "post.nope"],
            "VALIDATION_ERROR",
            "Unknown events: post.nope",
        ),
        (
            ["--account", "{account}", "--url", "ftp://example.com/hook"],
            "VALIDATION_ERROR",
            "The URL must be an absolute http:// or https:// URL.",
        ),
    ],
)
def test_errors_are_json_on_stderr_with_exit_1_when_json_is_asked_for(
    run, account, private_targets, args, code, message
):
    args = [arg.replace("{account}", str(account.pk)) for arg in args]

    exit_code, out, err = run(*args, "--json")

    assert exit_code == 1 and out == ""
    error = json_error(err)
    assert error["code"] == code and message in error["message"]
    assert not WebhookEndpoint.objects.exists()


def test_an_unknown_format_is_a_json_usage_error_when_json_is_asked_for(run, account):
    exit_code, out, err = run("--account", account.pk, "--url", "http://127.0.0.1:9/hook", "--format", "svix", "--json")

    assert exit_code == 2 and out == ""
    error = json_error(err)
    assert error["code"] == "usage" and "--format" in error["message"] and "standard" in error["message"]
    assert not WebhookEndpoint.objects.exists()
