"""`manage.py import_subscribers CHANNEL_ID FILE.csv [--confirmed] [--json]`: a file of any size
read a row at a time, each bad row reported by its line while the rest goes on, and the
suppression list respected. Run as manage.py runs it, so exit codes and stdout/stderr are those a
script sees."""

import json
import os
import threading
from itertools import islice

import pytest

from apps.publishing.newsletter import services
from apps.publishing.newsletter.management.commands.import_subscribers import Command as ImportSubscribersCommand
from apps.publishing.newsletter.models import Subscriber, SuppressionReason
from apps.publishing.newsletter.services import suppress
from tests.conftest import json_error
from tests.factories import ChannelFactory, NewsletterChannelFactory, SubscriberFactory
from tests.publishing.newsletter.test_subscribers_api import record_confirmations

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(manage):
    """Run `manage.py import_subscribers ARGS`; (exit code, stdout, stderr)."""
    return lambda *args: manage("import_subscribers", *args)


@pytest.fixture
def newsletter(db):
    return NewsletterChannelFactory(title="Weekly Letter")


@pytest.fixture
def confirmations(monkeypatch):
    return record_confirmations(monkeypatch)


def csv_file(tmp_path, content: str | bytes):
    path = tmp_path / "people.csv"
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_bytes(content)
    return path


def test_bad_rows_are_reported_by_line_and_every_other_row_is_imported(run, newsletter, tmp_path):
    SubscriberFactory(channel=newsletter, email="already@example.com")
    suppress(account_id=newsletter.account_id, email="bounced@example.com", reason=SuppressionReason.BOUNCE)
    path = csv_file(
        tmp_path,
        b"\xef\xbb\xbfName,E-mail ignored,Email\r\n"  # a spreadsheet's byte-order mark; columns in any order
        b"Ada,x,ada@example.com\r\n"  # line 2
        b"Bad,x,not an address\r\n"  # 3: invalid
        b"Ada again,x,ADA@example.com\r\n"  # 4: repeated in the file
        b"\r\n"  # 5: blank, ignored
        b"Old,x,already@example.com\r\n"  # 6: on the list already
        b"Bounced,x,bounced@example.com\r\n"  # 7: suppressed
        b"Caf\xe9,x,latin1@example.com\r\n"  # 8: not UTF-8
        b"Nul\x00,x,nul@example.com\r\n"  # 9: NUL character
        b"Short\r\n"  # 10: no email column
        b'"Grace, Hopper",x,grace@example.com\r\n',  # 11
    )

    code, out, err = run(newsletter.pk, path, "--json", "--confirmed")

    assert (code, err) == (0, "")
    result = json.loads(out)
    assert set(result) == {"created", "skipped", "invalid"}
    assert (result["created"], result["skipped"]) == (2, 3)
    assert [row["line"] for row in result["invalid"]] == [3, 8, 9, 10]
    assert "not an address" in result["invalid"][0]["error"]
    assert "UTF-8" in result["invalid"][1]["error"]
    added = Subscriber.objects.filter(channel=newsletter).exclude(email="already@example.com")
    assert dict(added.values_list("email", "name")) == {"ada@example.com": "Ada", "grace@example.com": "Grace, Hopper"}


def test_without_confirmed_each_new_person_is_unconfirmed_and_sent_the_confirmation_email(
    run, newsletter, tmp_path, confirmations, django_capture_on_commit_callbacks
):
    path = csv_file(tmp_path, "email\nada@example.com\ngrace@example.com\n")

    with django_capture_on_commit_callbacks(execute=True):
        code, _, _ = run(newsletter.pk, path, "--json")

    assert code == 0
    people = Subscriber.objects.filter(channel=newsletter)
    assert set(people.values_list("status", flat=True)) == {"unconfirmed"}
    assert sorted(id for ids in confirmations for id in ids) == sorted(people.values_list("id", flat=True))


def test_with_confirmed_people_are_confirmed_at_once_and_sent_nothing(
    run, newsletter, tmp_path, confirmations, django_capture_on_commit_callbacks
):
    path = csv_file(tmp_path, "email,name\nada@example.com,Ada\n")

    with django_capture_on_commit_callbacks(execute=True):
        code, _, _ = run(newsletter.pk, path, "--confirmed")

    assert code == 0
    ada = Subscriber.objects.get(channel=newsletter)
    assert (ada.status, ada.confirmed_at is not None) == ("confirmed", True)
    assert confirmations == []


def test_running_the_same_file_twice_adds_nobody_twice(run, newsletter, tmp_path):
    path = csv_file(tmp_path, "email\nada@example.com\ngrace@example.com\n")

    first, second = (json.loads(run(newsletter.pk, path, "--json", "--confirmed")[1]) for _ in range(2))

    assert first == {"created": 2, "skipped": 0, "invalid": []}
    assert second == {"created": 0, "skipped": 2, "invalid": []}
    assert Subscriber.objects.filter(channel=newsletter).count() == 2


def test_without_json_it_says_what_happened_and_names_the_bad_lines(run, newsletter, tmp_path):
    path = csv_file(tmp_path, "email\nada@example.com\nnope\nada@example.com\n")

    code, out, err = run(newsletter.pk, path, "--confirmed")

    assert (code, err) == (0, "")
    assert out.splitlines()[0] == (
        f"Weekly Letter (channel {newsletter.pk}): 1 added, 1 skipped (on the list already, repeated in the file, "
        "or unsubscribed, bounced or complained), 1 invalid."
    )
    assert out.splitlines()[1].startswith("  line 3: Enter a valid e-mail address.")


@pytest.mark.parametrize(
    "content", ["", "name\nAda\n", "mail,name\nada@example.com,Ada\n"], ids=["empty", "no email column", "misnamed"]
)
def test_a_file_without_an_email_column_is_refused_and_adds_nobody(run, newsletter, tmp_path, content):
    code, out, err = run(newsletter.pk, csv_file(tmp_path, content), "--json")

    assert (code, out) == (1, "")
    failure = json_error(err)
    assert failure["code"] == "invalid_file"
    # Said as a person reads it: no Markdown.
    assert '"email"' in failure["message"] and "`" not in failure["message"]
    assert not Subscriber.objects.exists()


def test_the_commands_help_is_plain_text():
    assert "`" not in ImportSubscribersCommand.help and "`" not in ImportSubscribersCommand.json_help


def test_an_unknown_channel_or_one_that_is_not_a_newsletter_is_not_found(run, tmp_path):
    path = csv_file(tmp_path, "email\nada@example.com\n")
    blog = ChannelFactory(platform="blog")

    for channel_id in (blog.pk, 987654321):
        code, out, err = run(channel_id, path, "--json")
        assert (code, out, json_error(err)["code"]) == (1, "", "not_found")
    assert not Subscriber.objects.exists()


def test_a_file_that_cannot_be_read_is_a_clear_error(run, newsletter, tmp_path):
    code, _, err = run(newsletter.pk, tmp_path / "missing.csv", "--json")

    assert code == 1
    assert json_error(err)["code"] == "unreadable_file"
    assert "missing.csv" in json_error(err)["message"]


def test_ten_thousand_rows_are_read_as_they_arrive_not_whole(run, newsletter, tmp_path, monkeypatch):
    """The file is a pipe whose writer holds back the second half until the first rows are stored:
    an import that read the whole file first would wait for it, and never store a row in time."""
    total, first_half = 10_000, 1_500
    pipe = tmp_path / "people.csv"
    os.mkfifo(pipe)
    stored = threading.Event()
    import_chunk = services._import_chunk

    def storing(*args, **kwargs):
        import_chunk(*args, **kwargs)
        stored.set()

    monkeypatch.setattr(services, "_import_chunk", storing)
    held_back = {}

    def write() -> None:
        rows = (f"reader{number}@example.com,Reader {number}\n" for number in range(total))
        with open(pipe, "w") as file:
            file.write("email,name\n")
            file.writelines(islice(rows, first_half))
            file.flush()
            held_back["stored meanwhile"] = stored.wait(timeout=20)
            file.writelines(rows)

    writer = threading.Thread(target=write)
    writer.start()
    code, out, err = run(newsletter.pk, pipe, "--json", "--confirmed")
    writer.join()

    assert (code, err) == (0, "")
    assert held_back == {"stored meanwhile": True}
    assert json.loads(out) == {"created": total, "skipped": 0, "invalid": []}
    assert Subscriber.objects.filter(channel=newsletter).count() == total
