"""Password guessing spread over many addresses: each e-mail has a budget of failed sign-ins from any
address (SIGN_IN_FAILURE_LIMIT_PER_EMAIL per clock hour) beside each address's (ADMIN_LOGIN_FAILURE_LIMIT).

The attacks run against a live server from several loopback addresses (127.0.0.2, 127.0.0.3, ...):
the server sees each as its own REMOTE_ADDR, as it would see clients on the internet.
"""

import re
import threading

import pytest
import requests
from django.core.mail import send_mail
from django.test import Client
from requests.adapters import HTTPAdapter

from apps.api import ratelimit
from apps.core import mail as core_mail
from apps.core import threads
from apps.users import sign_in_limits
from tests.factories import AccountFactory, AdminUserFactory, OperatorFactory, UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "right-password"
ADMIN_LOGIN = "/admin/login/"
WEB_SIGN_IN = "/account/login/"
# A clock hour's start: the e-mail's budget is counted per clock hour, on ratelimit's clock.
HOUR_START = 1_900_000_800


class FromAddress(HTTPAdapter):
    """Connects from `address` (urllib3's source_address), so the server sees that REMOTE_ADDR."""

    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args, **kwargs):
        super().init_poolmanager(*args, source_address=(self.address, 0), **kwargs)


class Browser:
    """A person at one loopback address, with cookies of their own (so a CSRF token of their own)."""

    def __init__(self, live_server, address: str) -> None:
        # The live server listens on 127.0.0.1 only; every 127.0.0.0/8 address reaches it over loopback.
        self.base = live_server.url.replace("localhost", "127.0.0.1")
        self.session = requests.Session()
        self.session.mount("http://", FromAddress(address))

    def sign_in(self, path: str, email: str, password: str) -> requests.Response:
        form = self.session.get(f"{self.base}{path}", timeout=10)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        data = {"csrfmiddlewaretoken": token, "username": email, "password": password}
        return self.session.post(f"{self.base}{path}", data=data, allow_redirects=False, timeout=10)


def loopback(n: int) -> str:
    return f"127.0.0.{n + 2}"


def with_password(user):
    user.set_password(PASSWORD)
    user.save()
    return user


def reports_done() -> None:
    """Wait until the threads that send the reports of paused sign-ins have nothing in flight."""
    pool = threads.process_pool(sign_in_limits.REPORT_POOL, sign_in_limits.REPORT_THREADS)
    for _ in range(sign_in_limits.REPORT_THREADS):
        assert pool.free.acquire(timeout=10)
    for _ in range(sign_in_limits.REPORT_THREADS):
        pool.free.release()


@pytest.fixture
def clock(monkeypatch):
    now = [HOUR_START + 100.0]
    monkeypatch.setattr(ratelimit, "clock", lambda: now[0])
    return now


@pytest.fixture
def limits(settings):
    """Three failures per address, six per e-mail: two addresses' worth are not enough to pause an e-mail."""
    settings.ADMIN_LOGIN_FAILURE_LIMIT = 3
    settings.SIGN_IN_FAILURE_LIMIT_PER_EMAIL = 6


@pytest.fixture
def account_users():
    account = AccountFactory(name="Acme")
    return {
        "target": with_password(UserFactory(account=account, email="editor@acme.example")),
        "other": with_password(UserFactory(account=account, email="other@acme.example")),
        "admins": [AdminUserFactory(account=account), AdminUserFactory(account=account)],
        "suspended admin": AdminUserFactory(account=account, status="suspended"),
        "elsewhere": AdminUserFactory(),
    }


@pytest.mark.django_db(transaction=True)  # the live server's thread and the report's see committed rows only
def test_guessing_spread_over_addresses_pauses_the_email_everywhere_and_tells_the_admins_once(
    live_server, limits, clock, account_users, mailoutbox
):
    target, other = account_users["target"].email, account_users["other"].email
    browsers = [Browser(live_server, loopback(n)) for n in range(4)]

    # Two wrong passwords from each of three addresses, through both sign-in pages and in several
    # spellings of the e-mail: no address reaches its limit.
    spellings = [target, target.upper(), target.capitalize()]
    failures = [
        browser.sign_in(path, spelling, "a guess")
        for browser, spelling in zip(browsers[:3], spellings, strict=True)
        for path in (ADMIN_LOGIN, WEB_SIGN_IN)
    ]
    assert [response.status_code for response in failures] == [200] * 6

    # The e-mail's budget is used up: every address is refused, a new one too, even with the right password.
    for browser in browsers:
        for path in (ADMIN_LOGIN, WEB_SIGN_IN):
            refused = browser.sign_in(path, f"  {target.upper()} ", PASSWORD)
            assert refused.status_code == 429, (browser.session.adapters["http://"].address, path)
            assert int(refused.headers["Retry-After"]) == 3600 - 100
            assert "Sign-ins with a password for this e-mail address are paused" in refused.text
            assert "This address has made too many" not in refused.text

    # Another e-mail is not affected; the address's own limit still holds (three failures here).
    assert browsers[0].sign_in(WEB_SIGN_IN, other, "a guess").status_code == 200
    by_address = browsers[0].sign_in(ADMIN_LOGIN, other, PASSWORD)
    assert by_address.status_code == 429
    assert "This address has made too many failed login attempts" in by_address.text
    assert "this e-mail address are paused" not in by_address.text
    assert 0 < int(by_address.headers["Retry-After"]) <= sign_in_limits.ADMIN_LOGIN_WINDOW
    assert browsers[1].sign_in(ADMIN_LOGIN, other, PASSWORD).status_code == 302
    # Refused by both: the page says so, and the wait is the later end (the hour's, after 15 minutes).
    by_both = browsers[0].sign_in(ADMIN_LOGIN, target, PASSWORD)
    assert (by_both.status_code, by_both.headers["Retry-After"]) == (429, "3500")
    assert "this e-mail address are paused" in by_both.text and "This address has made too many" in by_both.text

    reports_done()
    assert len(mailoutbox) == 1
    report = mailoutbox[0]
    assert sorted(report.to) == sorted(admin.email for admin in account_users["admins"])
    assert report.subject == f"Password sign-ins paused for {target}"
    assert f"6 sign-ins with a wrong password were tried for\n{target} (editor of Acme) from 3 addresses" in report.body
    assert report.body.index("127.0.0.4") < report.body.index("127.0.0.3") < report.body.index("127.0.0.2")
    assert f"/admin/users/user/{account_users['target'].pk}/change/" in report.body

    # The next clock hour, the e-mail signs in again from the addresses under their limit; the refused
    # attempts counted nowhere.
    clock[0] = HOUR_START + 3600
    assert browsers[1].sign_in(WEB_SIGN_IN, target, PASSWORD).status_code == 302
    assert browsers[3].sign_in(ADMIN_LOGIN, target, PASSWORD).status_code == 302


@pytest.mark.django_db(transaction=True)
def test_an_email_of_nobody_is_paused_alike_and_nobody_is_told(
    live_server, limits, clock, account_users, mailoutbox, monkeypatch
):
    # The mail server holds every mail until the test lets it go: the answers must not wait for it.
    mail_server_answers = threading.Event()

    def held_send_mail(*args, **kwargs):
        assert mail_server_answers.wait(timeout=10)
        return send_mail(*args, **kwargs)

    monkeypatch.setattr(core_mail, "send_mail", held_send_mail)
    known, unknown = account_users["target"].email, "nobody@acme.example"
    answers = {}
    for first, email in ((0, known), (3, unknown)):
        browsers = [Browser(live_server, loopback(first + n)) for n in range(3)]
        responses = [browser.sign_in(ADMIN_LOGIN, email, f"guess-{n}") for browser in browsers for n in range(2)]
        responses.append(browsers[0].sign_in(ADMIN_LOGIN, email, PASSWORD))
        answers[email] = [(r.status_code, r.headers.get("Retry-After"), r.text.replace(email, "E")) for r in responses]
    # Same statuses and the same refusal, though the known e-mail's report is still waiting to be sent.
    assert [(status, retry) for status, retry, _ in answers[known]] == [(200, None)] * 6 + [(429, "3500")]
    assert [(status, retry) for status, retry, _ in answers[unknown]] == [(200, None)] * 6 + [(429, "3500")]
    assert answers[known][-1][2] == answers[unknown][-1][2]
    assert mailoutbox == []

    mail_server_answers.set()
    reports_done()
    assert [report.subject for report in mailoutbox] == [f"Password sign-ins paused for {known}"]


# --- Without a live server: the Django test client, with REMOTE_ADDR set ---


def fail(email: str, address: str, times: int = 1, **extra) -> list[int]:
    client = Client(REMOTE_ADDR=address, **extra)
    return [client.post(ADMIN_LOGIN, {"username": email, "password": "wrong"}).status_code for _ in range(times)]


@pytest.mark.django_db(transaction=True)
def test_an_operators_email_is_reported_to_the_operators_showing_nothing_but_addresses(
    limits, clock, settings, mailoutbox
):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}  # the address is X-Forwarded-For's
    operator = with_password(OperatorFactory(email="root@service.example"))
    colleague = OperatorFactory()
    OperatorFactory(status="suspended")
    AdminUserFactory()  # an account's admin is no one to tell about an operator
    forged = "evil\r\nBcc: thief@example.com\r\n\r\n<b>Click</b>"
    for forwarded_for in ["192.0.2.1", "192.0.2.2", "192.0.2.2", "192.0.2.3", "192.0.2.3", forged]:
        assert fail(operator.email, "10.0.0.1", HTTP_X_FORWARDED_FOR=forwarded_for) == [200]
    reports_done()
    (report,) = mailoutbox
    assert sorted(report.to) == sorted([operator.email, colleague.email]) and report.bcc == []
    assert f"{operator.email} (an operator) from 4 addresses" in report.body
    latest = report.body.split("The latest addresses:\n")[1].split("\n\n")[0].split()
    assert latest == ["(not", "an", "IP", "address)", "192.0.2.3", "192.0.2.2", "192.0.2.1"]
    assert "evil" not in report.body and "thief" not in report.body and "Click" not in report.body


def test_an_empty_limit_per_email_never_pauses(limits, clock, settings):
    settings.SIGN_IN_FAILURE_LIMIT_PER_EMAIL = None
    user = with_password(UserFactory())
    for n in range(8):
        assert fail(user.email, f"198.51.100.{n}", times=2) == [200, 200]
    assert (
        Client(REMOTE_ADDR="198.51.100.99")
        .post(ADMIN_LOGIN, {"username": user.email, "password": PASSWORD})
        .status_code
        == 302
    )
