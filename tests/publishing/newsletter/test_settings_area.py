"""A newsletter in the Settings area: its subscribers (add, import, export, erase), the account's
suppression list (searched by an address typed in, lifted with a reason), each edition as mailed
(its counts, its failed and uncertain addresses, the e-mail as sent, Send test, Send to uncertain),
and a post's e-mail preview before it is sent. Each test drives the pages as a browser would (the
Django test client, signed in); mail goes to Django's test outbox."""

import csv
import io

import pytest
from django.core import mail
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from apps.core.destinations import subject
from apps.publishing.models import PublicationJob
from apps.publishing.newsletter import editions
from apps.publishing.newsletter.models import (
    Delivery,
    DeliveryState,
    Edition,
    Newsletter,
    Subscriber,
    SubscriberStatus,
    Suppression,
    SuppressionReason,
    email_hash,
)
from apps.publishing.newsletter.services import subscriber_create, subscriber_unsubscribe, suppress
from apps.users.models import Role
from apps.webhooks.models import Delivery as WebhookDelivery
from tests.conftest import admin_session
from tests.factories import (
    AccountFactory,
    AdminUserFactory,
    ApiKeyFactory,
    ChannelFactory,
    NewsletterChannelFactory,
    OperatorFactory,
    PostFactory,
    SubscriberFactory,
    UserFactory,
    WebhookEndpointFactory,
)
from tests.publishing.newsletter.test_subscribers_api import record_confirmations
from tests.publishing.test_settings_area import messages_of, text_of
from tests.users.test_sso_step_up import PASSWORD, asks_for_password, sso_browser

pytestmark = pytest.mark.django_db

ADMIN = "/admin/publishing_newsletter"
SUBSCRIBERS = f"{ADMIN}/subscriber/"
SUPPRESSIONS = f"{ADMIN}/suppression/"
EDITIONS = f"{ADMIN}/edition/"
NEWSLETTERS = f"{ADMIN}/newsletter/"


@pytest.fixture
def account():
    return AccountFactory()


@pytest.fixture
def admin(account):
    user = AdminUserFactory(account=account, email="ada@example.com")
    user.set_password(PASSWORD)
    user.save()
    return user


@pytest.fixture
def browser(admin):
    return admin_session(admin)


@pytest.fixture
def letter(account):
    return NewsletterChannelFactory(account=account, title="Weekly Letter")


@pytest.fixture
def confirmations(monkeypatch):
    return record_confirmations(monkeypatch)


@pytest.fixture
def elsewhere():
    """Another account's newsletter, with a reader, a suppression and an edition."""
    channel = NewsletterChannelFactory(title="Their Letter")
    reader = SubscriberFactory(channel=channel, email="theirs@example.com")
    suppression = suppress(account_id=channel.account_id, email="gone@example.com", reason=SuppressionReason.BOUNCE)
    return reader, suppression, edition_of(PostFactory(channel=channel, title="Their issue"))


def edition_of(post, **states: list[int]) -> Edition:
    """The post's edition as its send freezes it (one record per confirmed reader), then the records
    at these positions settled in these states, as a sender would leave them."""
    document = subject().document(post_id=post.pk, action="publish", published_at=None)
    edition = editions.edition_freeze(channel=post.channel, job_id=0, document=document)
    records = list(Delivery.objects.filter(edition=edition).order_by("id").values_list("id", flat=True))
    for state, positions in states.items():
        Delivery.objects.filter(pk__in=[records[i] for i in positions]).update(state=state, error=f"{state} here")
    editions.edition_recount(edition_id=edition.pk)
    edition.refresh_from_db()
    return edition


def upload(content: str | bytes, name: str = "people.csv") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content.encode() if isinstance(content, str) else content, "text/csv")


def export_rows(response) -> list[list[str]]:
    assert response.status_code == 200, response.content
    return list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))


# --- Every page ---------------------------------------------------------------------------------


def test_every_page_of_a_newsletter_opens_for_an_account_admin(browser, letter):
    reader = SubscriberFactory(channel=letter)
    post = PostFactory(channel=letter, title="Issue one")
    edition = edition_of(post, uncertain=[0])
    subscriber_unsubscribe(token=SubscriberFactory(channel=letter).token)
    suppression = Suppression.objects.get(account=letter.account)
    newsletter = Newsletter.objects.create(channel=letter, sender_name="The Editors")

    for url in (
        SUBSCRIBERS,
        f"{SUBSCRIBERS}add/",
        f"{SUBSCRIBERS}import/",
        f"{SUBSCRIBERS}{reader.pk}/change/",
        SUPPRESSIONS,
        f"{SUPPRESSIONS}{suppression.pk}/change/",
        f"{SUPPRESSIONS}{suppression.pk}/delete/",
        EDITIONS,
        f"{EDITIONS}{edition.pk}/change/",
        f"{EDITIONS}{edition.pk}/send-uncertain/",
        f"{EDITIONS}post/{post.pk}/preview/",
        NEWSLETTERS,
        f"{NEWSLETTERS}{newsletter.pk}/change/",
        f"/admin/posts/post/{post.pk}/change/",
        f"/admin/channels/channel/{letter.pk}/change/",
    ):
        assert browser.get(url).status_code == 200, url
    assert browser.get(f"{SUBSCRIBERS}export/").status_code == 200


def test_the_channel_page_shows_the_newsletters_public_page_and_links_to_its_sender_settings(browser, letter):
    SubscriberFactory.create_batch(2, channel=letter)
    SubscriberFactory(channel=letter, status=SubscriberStatus.UNCONFIRMED)

    page = browser.get(f"/admin/channels/channel/{letter.pk}/change/")

    assert "Mailed to its 2 confirmed subscriber(s), from the channel's title" in text_of(page)
    assert f"{NEWSLETTERS}add/?channel={letter.pk}" in page.content.decode()
    assert letter.public_url() in page.content.decode()


def test_the_sender_name_and_reply_to_are_set_from_the_channels_page_link(browser, letter, settings):
    settings.DEFAULT_FROM_EMAIL = "Publishing <news@example.com>"

    saved = browser.post(
        f"{NEWSLETTERS}add/", {"channel": letter.pk, "sender_name": "The  Editors", "reply_to": "Desk@Example.com"}
    )

    assert saved.status_code == 302, saved.content
    newsletter = Newsletter.objects.get(channel=letter)
    assert (newsletter.sender_name, newsletter.reply_to) == ("The Editors", "desk@example.com")
    page = browser.get(f"/admin/channels/channel/{letter.pk}/change/")
    assert f"{NEWSLETTERS}{newsletter.pk}/change/" in page.content.decode()
    assert "The Editors <news@example.com>" in text_of(browser.get(NEWSLETTERS))


# --- Another account's, and who may see them ---------------------------------------------------


def test_another_accounts_subscribers_suppressions_and_editions_are_not_found(browser, letter, elsewhere):
    reader, suppression, edition = elsewhere
    SubscriberFactory(channel=letter, email="ours@example.com")

    for method, url in (
        ("get", f"{SUBSCRIBERS}{reader.pk}/change/"),
        ("post", f"{SUBSCRIBERS}{reader.pk}/delete/"),
        ("get", f"{SUPPRESSIONS}{suppression.pk}/change/"),
        ("post", f"{SUPPRESSIONS}{suppression.pk}/delete/"),
        ("get", f"{EDITIONS}{edition.pk}/change/"),
    ):
        answer = getattr(browser, method)(url, {"reason": "lift it", "post": "yes"} if method == "post" else None)
        said = messages_of(browser.get(answer["Location"]))[0] if answer.status_code == 302 else ""
        assert "Perhaps it was deleted?" in said, (method, url)
    for method, url in (
        ("post", f"{EDITIONS}{edition.pk}/send-test/"),
        ("get", f"{EDITIONS}{edition.pk}/send-uncertain/"),
        ("post", f"{EDITIONS}{edition.pk}/send-uncertain/"),
        ("get", f"{EDITIONS}post/{edition.post_id}/preview/"),
        ("post", f"{EDITIONS}post/{edition.post_id}/send-test/"),
    ):
        assert getattr(browser, method)(url).status_code == 404, (method, url)
    listed = text_of(browser.get(SUBSCRIBERS))
    assert "ours@example.com" in listed and "theirs@example.com" not in listed
    assert "Their issue" not in text_of(browser.get(EDITIONS))
    assert [row[0] for row in export_rows(browser.get(f"{SUBSCRIBERS}export/"))] == ["email", "ours@example.com"]
    assert Suppression.objects.filter(pk=suppression.pk).exists() and Subscriber.objects.filter(pk=reader.pk).exists()
    assert mail.outbox == []


def test_the_channel_filter_offers_only_the_accounts_newsletters(browser, account, letter, elsewhere):
    NewsletterChannelFactory(account=account, title="Monthly Letter")
    ChannelFactory(account=account, platform="blog", title="Our Blog")

    for page in (SUBSCRIBERS, SUPPRESSIONS, EDITIONS):
        listed = text_of(browser.get(page))
        assert "By channel" in listed and "Weekly Letter" in listed and "Monthly Letter" in listed, page
        assert "Our Blog" not in listed and "Their Letter" not in listed, page


@pytest.fixture(params=["editor", "viewer"])
def member(request, account):
    return UserFactory(account=account, role=Role.EDITOR if request.param == "editor" else Role.VIEWER)


def test_readers_addresses_are_for_the_accounts_admins_only(member, letter):
    """Editors write editions but see no reader: subscribers, suppressions and editions (which list
    failed and uncertain addresses) are personal data; viewers have no admin at all."""
    reader = SubscriberFactory(channel=letter)
    edition = edition_of(PostFactory(channel=letter))
    someone = admin_session(member)

    for url in (
        SUBSCRIBERS,
        f"{SUBSCRIBERS}{reader.pk}/change/",
        f"{SUBSCRIBERS}export/",
        f"{SUBSCRIBERS}import/",
        SUPPRESSIONS,
        EDITIONS,
        f"{EDITIONS}{edition.pk}/change/",
        NEWSLETTERS,
    ):
        assert someone.get(url).status_code == 403, url
    assert someone.post(f"{EDITIONS}{edition.pk}/send-uncertain/").status_code == 403


def test_an_editor_previews_a_newsletter_post_and_sends_a_test_to_their_own_address(account, letter):
    SubscriberFactory(channel=letter, email="reader@example.com")
    editor = UserFactory(account=account, role=Role.EDITOR, email="eve@example.com")
    post = PostFactory(channel=letter, title="Spring issue", body="Hello **readers**.")
    browser = admin_session(editor)

    page = browser.get(f"/admin/posts/post/{post.pk}/change/")
    assert f"{EDITIONS}post/{post.pk}/preview/" in page.content.decode()
    assert 'sandbox=""' in page.content.decode()
    preview = browser.get(f"{EDITIONS}post/{post.pk}/preview/")
    assert preview.status_code == 200
    assert "Spring issue" in text_of(preview) and "&lt;strong&gt;readers&lt;/strong&gt;" in preview.content.decode()

    sent = browser.post(f"{EDITIONS}post/{post.pk}/send-test/")

    assert sent.status_code == 302
    assert [(m.to, m.subject) for m in mail.outbox] == [(["eve@example.com"], "[Test] Spring issue")]
    assert not Edition.objects.filter(post_id=post.pk).exists()
    assert "A test was sent to eve@example.com (only)." in messages_of(browser.get(sent["Location"]))


def test_the_operator_lifts_an_accounts_suppression_on_its_behalf_with_a_reason_that_names_them(letter, caplog):
    suppression = suppress(account_id=letter.account_id, email="x@example.com", reason=SuppressionReason.BOUNCE)
    operator = admin_session(OperatorFactory(email="root@service.example"))

    with caplog.at_level("INFO", logger="apps.publishing.newsletter.services"):
        lifted = operator.post(f"{SUPPRESSIONS}{suppression.pk}/delete/", {"reason": "Support ticket 42"})

    assert lifted.status_code == 302
    assert not Suppression.objects.filter(pk=suppression.pk).exists()
    assert "by=root@service.example" in caplog.text and "Support ticket 42" in caplog.text


# --- Subscribers ---------------------------------------------------------------------------------


def test_a_person_added_unconfirmed_is_sent_the_confirmation_and_one_added_confirmed_is_not(
    browser, letter, confirmations, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(f"{SUBSCRIBERS}add/", {"channel": letter.pk, "email": " Grace@Example.COM ", "name": "Grace"})
        browser.post(f"{SUBSCRIBERS}add/", {"channel": letter.pk, "email": "ada@example.org", "confirmed": "on"})

    grace = Subscriber.objects.get(email="grace@example.com")
    assert (grace.channel, grace.name, grace.status) == (letter, "Grace", SubscriberStatus.UNCONFIRMED)
    assert Subscriber.objects.get(email="ada@example.org").status == SubscriberStatus.CONFIRMED
    assert confirmations == [[grace.pk]]


def test_a_suppressed_address_is_not_added_and_the_page_says_why(
    browser, letter, confirmations, django_capture_on_commit_callbacks
):
    suppress(account_id=letter.account_id, email="spam@example.com", reason=SuppressionReason.COMPLAINT)

    with django_capture_on_commit_callbacks(execute=True):
        answer = browser.post(f"{SUBSCRIBERS}add/", {"channel": letter.pk, "email": "spam@example.com"})

    assert answer.status_code == 302
    assert "reported a newsletter as spam" in messages_of(browser.get(answer["Location"]))[0]
    assert not Subscriber.objects.filter(email="spam@example.com").exists()
    assert confirmations == []


def test_a_subscribers_page_is_read_only_and_says_why_they_are_not_mailed(browser, letter):
    reader = SubscriberFactory(channel=letter, email="left@example.com")
    subscriber_unsubscribe(token=reader.token)

    page = browser.get(f"{SUBSCRIBERS}{reader.pk}/change/")

    assert "Unsubscribed" in text_of(page)
    assert reader.token not in page.content.decode()  # the token unsubscribes: never shown
    assert browser.post(f"{SUBSCRIBERS}{reader.pk}/change/", {"status": "confirmed"}).status_code == 403
    assert Subscriber.objects.get(pk=reader.pk).status == SubscriberStatus.UNSUBSCRIBED


def test_deleting_a_subscriber_erases_them_and_keeps_their_suppression(browser, letter):
    reader = SubscriberFactory(channel=letter, email="left@example.com")
    others = SubscriberFactory.create_batch(2, channel=letter)
    subscriber_unsubscribe(token=reader.token)
    edition = edition_of(PostFactory(channel=letter))

    assert browser.post(f"{SUBSCRIBERS}{reader.pk}/delete/", {"post": "yes"}).status_code == 302
    browser.post(SUBSCRIBERS, {"action": "delete_selected", "_selected_action": [s.pk for s in others], "post": "yes"})

    assert not Subscriber.objects.filter(channel=letter).exists()
    assert Suppression.objects.filter(account=letter.account, email_hash=email_hash("left@example.com")).exists()
    assert Delivery.objects.filter(edition=edition, subscriber=None).count() == 2  # the counts keep them
    page = text_of(browser.get(SUPPRESSIONS, {"q": "left@example.com"}))
    assert "Unsubscribed" in page and "Weekly Letter" in page


# --- Import --------------------------------------------------------------------------------------


def test_an_import_adds_the_good_rows_skips_those_on_the_list_or_suppressed_and_reports_bad_lines(
    browser, letter, confirmations, django_capture_on_commit_callbacks
):
    SubscriberFactory(channel=letter, email="already@example.com")
    suppress(account_id=letter.account_id, email="bounced@example.com", reason=SuppressionReason.BOUNCE)
    content = (
        "Name,E-mail ignored,EMAIL\n"
        "Ada,x,ada@example.com\n"
        "Again,x,already@example.com\n"
        "Bounced,x,BOUNCED@example.com\n"
        "Nobody,x,not an address\n"
        "\n"
        '"Grace, Admiral",x,grace@example.com\n'
        "Ada twice,x,ada@example.com\n"
        "Short\n"
    )

    with django_capture_on_commit_callbacks(execute=True):
        page = browser.post(f"{SUBSCRIBERS}import/", {"channel": letter.pk, "file": upload(content)})

    assert page.status_code == 200
    assert sorted(Subscriber.objects.filter(channel=letter).values_list("email", "name")) == [
        ("ada@example.com", "Ada"),
        ("already@example.com", Subscriber.objects.get(email="already@example.com").name),
        ("grace@example.com", "Grace, Admiral"),
    ]
    result = page.context["result"]
    assert (result.created, result.skipped) == (2, 3)
    assert [row["line"] for row in result.invalid] == [5, 9]
    text = text_of(page)
    assert "2 added (each is sent the confirmation e-mail)" in text and "2 invalid line(s)" in text
    assert "not an address" in text
    assert sorted(pk for handed in confirmations for pk in handed) == sorted(
        Subscriber.objects.filter(email__in=["ada@example.com", "grace@example.com"]).values_list("pk", flat=True)
    )


def test_an_import_of_people_who_opted_in_elsewhere_confirms_them_and_mails_nobody(
    browser, letter, confirmations, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(
            f"{SUBSCRIBERS}import/",
            {"channel": letter.pk, "confirmed": "on", "file": upload("email\na@example.com\n")},
        )

    assert Subscriber.objects.get(email="a@example.com").status == SubscriberStatus.CONFIRMED
    assert confirmations == []


def test_a_file_without_an_email_column_is_refused_and_a_line_not_in_utf8_is_reported_with_the_rest_imported(
    browser, letter
):
    no_header = browser.post(f"{SUBSCRIBERS}import/", {"channel": letter.pk, "file": upload("a@example.com\n")})
    assert 'must name an "email" column' in no_header.context["form"].errors["file"][0]
    assert no_header.context["result"] is None and not Subscriber.objects.exists()

    broken = browser.post(
        f"{SUBSCRIBERS}import/",
        {"channel": letter.pk, "file": upload(b"email\nbefore@example.com\n\xff\xfe@x\nafter@example.com\n")},
    )

    assert [row["line"] for row in broken.context["result"].invalid] == [3]
    assert "Not UTF-8 text" in text_of(broken)
    assert sorted(Subscriber.objects.values_list("email", flat=True)) == ["after@example.com", "before@example.com"]


def test_a_large_file_is_imported_from_its_temporary_file(browser, letter, settings):
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1000  # kept on disk, as a large upload is
    rows = "".join(f"reader{n}@example.com,Reader {n}\n" for n in range(2500))

    page = browser.post(
        f"{SUBSCRIBERS}import/", {"channel": letter.pk, "confirmed": "on", "file": upload(f"email,name\n{rows}")}
    )

    assert page.context["result"].created == 2500
    assert Subscriber.objects.filter(channel=letter, status=SubscriberStatus.CONFIRMED).count() == 2500


def test_an_import_into_another_accounts_or_a_non_newsletter_channel_is_refused(browser, account, elsewhere):
    blog = ChannelFactory(account=account, platform="blog")
    theirs = elsewhere[0].channel

    for channel in (blog, theirs):
        page = browser.post(f"{SUBSCRIBERS}import/", {"channel": channel.pk, "file": upload("email\nx@example.com\n")})
        assert page.status_code == 200 and page.context["form"].errors["channel"]
    assert not Subscriber.objects.filter(email="x@example.com").exists()


# --- Export --------------------------------------------------------------------------------------


def test_the_export_is_the_filtered_list_with_no_cell_a_spreadsheet_would_run(browser, letter):
    SubscriberFactory(channel=letter, email="=cmd@example.com", name='=HYPERLINK("http://x")')
    SubscriberFactory(channel=letter, email="plain@example.com", name="+1 @home -x")
    SubscriberFactory(channel=letter, email="waiting@example.com", status=SubscriberStatus.UNCONFIRMED)

    response = browser.get(f"{SUBSCRIBERS}export/", {"status__exact": "confirmed", "p": "7"})

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="subscribers-')
    rows = export_rows(response)
    assert rows[0] == ["email", "name", "status", "created_at", "confirmed_at", "channel"]
    assert sorted(row[:3] for row in rows[1:]) == [
        ["'=cmd@example.com", '\'=HYPERLINK("http://x")', "confirmed"],
        ["plain@example.com", "'+1 @home -x", "confirmed"],
    ]
    assert all(row[3].endswith("Z") and row[4].endswith("Z") and row[5] == "Weekly Letter" for row in rows[1:])
    searched = export_rows(browser.get(f"{SUBSCRIBERS}export/", {"q": "waiting"}))
    assert [row[:3] for row in searched[1:]] == [["waiting@example.com", searched[1][1], "unconfirmed"]]
    assert searched[1][4] == ""


def test_the_lists_export_link_carries_its_filters(browser, letter):
    page = browser.get(SUBSCRIBERS, {"status__exact": "unconfirmed", "q": "ada"})

    assert f"{SUBSCRIBERS}export/?status__exact=unconfirmed&amp;q=ada" in page.content.decode()


READERS = (
    "reader@example.com",
    "failed@example.com",
    "gone@example.com",
    "unsent-reader@example.com",
    "hooked@example.com",
)


@pytest.fixture
def readers_pages(letter):
    """Every Settings page that names a reader, each with the address it would show: (url, address)."""
    reader = SubscriberFactory(channel=letter, email="reader@example.com", name="Rea Der")
    SubscriberFactory(channel=letter, email="failed@example.com")
    edition = edition_of(PostFactory(channel=letter, title="May"), failed=[1], uncertain=[0])
    suppression = suppress(
        account_id=letter.account_id,
        email="gone@example.com",
        reason=SuppressionReason.BOUNCE,
        detail="550 5.1.1 <gone@example.com>: no such user",
    )
    unsent = SubscriberFactory(channel__account=letter.account, email="unsent-reader@example.com").channel
    WebhookEndpointFactory(account=letter.account, events=["subscriber.confirmed"])
    subscriber_create(channel=letter, email="hooked@example.com", confirmed=True)
    delivery = WebhookDelivery.objects.get(event__kind="subscriber.confirmed")
    return [
        (SUBSCRIBERS, "reader@example.com"),
        (f"{SUBSCRIBERS}?q=reader", "reader@example.com"),
        (f"{SUBSCRIBERS}{reader.pk}/change/", "reader@example.com"),
        (f"{SUBSCRIBERS}{reader.pk}/delete/", "reader@example.com"),
        (f"{SUBSCRIBERS}export/", "reader@example.com"),
        (f"{SUBSCRIBERS}import/", None),
        (f"{SUBSCRIBERS}add/", None),
        (SUPPRESSIONS, "gone@example.com"),
        (f"{SUPPRESSIONS}?q=gone@example.com", "gone@example.com"),
        (f"{SUPPRESSIONS}{suppression.pk}/change/", "gone@example.com"),
        (f"{SUPPRESSIONS}{suppression.pk}/delete/", None),
        (f"{EDITIONS}{edition.pk}/change/", "failed@example.com"),
        (f"{EDITIONS}{edition.pk}/send-uncertain/", None),
        # Django's page that confirms a deletion names every row that goes with it: a channel's readers
        # (a channel with no edition: one with editions cannot be deleted, and its page lists nothing).
        (f"/admin/channels/channel/{unsent.pk}/delete/", "unsent-reader@example.com"),
        # A webhook delivery's page shows its event's body: subscriber.confirmed names the reader.
        (f"/admin/webhooks/delivery/{delivery.pk}/change/", "hooked@example.com"),
    ]


def body_of(response) -> str:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    return content.decode()


def test_an_sso_session_confirms_its_password_before_any_page_that_names_a_reader(client_for, admin, readers_pages):
    sso = sso_browser(client_for, ApiKeyFactory(user=admin, scopes=["write:sso"]), admin)

    for url, _address in readers_pages:
        refused = sso.get(url)
        assert asks_for_password(refused, url), (url, refused.status_code)
        assert not any(reader in body_of(refused) for reader in READERS), url
    # A POST is refused before it does anything: the reader is still on the list.
    everyone = list(Subscriber.objects.values_list("pk", flat=True))
    erase = sso.post(SUBSCRIBERS, {"action": "delete_selected", "_selected_action": everyone, "post": "yes"})
    assert asks_for_password(erase, SUBSCRIBERS) and Subscriber.objects.count() == len(everyone) == 4
    channels = "/admin/channels/channel/"
    unsent = Subscriber.objects.get(email="unsent-reader@example.com").channel_id
    delete_unsent = sso.post(channels, {"action": "delete_selected", "_selected_action": [unsent]})
    assert asks_for_password(delete_unsent, channels)
    # What names no reader stays open: the editions' list (counts only) and a post's e-mail preview.
    editions_list = sso.get(EDITIONS)
    assert editions_list.status_code == 200 and not any(reader in text_of(editions_list) for reader in READERS)
    post = Edition.objects.get().post_id
    assert sso.get(f"{EDITIONS}post/{post}/preview/").status_code == 200

    sso.post("/admin/confirm-password/", {"password": PASSWORD, "next": "/admin/"})

    for url, address in readers_pages:
        allowed = sso.get(url)
        assert allowed.status_code == 200, (url, allowed.status_code)
        assert address is None or address in body_of(allowed), url


def test_the_recent_actions_name_no_reader_before_the_password(client_for, admin, letter):
    browser = Client()
    browser.post("/admin/login/", {"username": admin.email, "password": PASSWORD})
    browser.post(f"{SUBSCRIBERS}add/", {"channel": letter.pk, "email": "added@example.com", "name": ""})
    assert "added@example.com" in browser.get("/admin/").content.decode()  # Django's "Recent actions"
    sso = sso_browser(client_for, ApiKeyFactory(user=admin, scopes=["write:sso"]), admin)

    assert "added@example.com" not in sso.get("/admin/").content.decode()
    sso.post("/admin/confirm-password/", {"password": PASSWORD, "next": "/admin/"})
    assert "added@example.com" in sso.get("/admin/").content.decode()


def test_a_session_signed_in_with_the_password_is_not_asked_for_it_again(admin, readers_pages):
    browser = Client()
    signed_in = browser.post("/admin/login/?next=/admin/", {"username": admin.email, "password": PASSWORD})
    assert signed_in.status_code == 302

    for url, address in readers_pages:
        page = browser.get(url)
        assert page.status_code == 200, (url, page.status_code)
        assert address is None or address in body_of(page), url


def test_an_sso_session_of_an_editor_previews_and_tests_a_post_without_the_password(client_for, account, letter):
    editor = UserFactory(account=account, role=Role.EDITOR, email="eve@example.com")
    post = PostFactory(channel=letter, title="Spring issue")
    sso = sso_browser(client_for, ApiKeyFactory(user=editor, scopes=["write:sso"]), editor)

    assert sso.get(f"{EDITIONS}post/{post.pk}/preview/").status_code == 200
    assert sso.post(f"{EDITIONS}post/{post.pk}/send-test/").status_code == 302
    assert [m.to for m in mail.outbox] == [["eve@example.com"]]


# --- Suppressions --------------------------------------------------------------------------------


def test_the_suppression_list_is_searched_by_an_address_typed_in(browser, letter):
    suppress(
        account_id=letter.account_id,
        email="bounced@example.com",
        reason=SuppressionReason.BOUNCE,
        detail="550 5.1.1 no such user",
    )
    suppress(account_id=letter.account_id, email="other@example.com", reason=SuppressionReason.COMPLAINT)

    found = browser.get(SUPPRESSIONS, {"q": "  Bounced@Example.com "})
    part = browser.get(SUPPRESSIONS, {"q": "bounced"})

    assert [row.reason for row in found.context["cl"].result_list] == [SuppressionReason.BOUNCE]
    assert "550 5.1.1 no such user" in text_of(found) and "All newsletters of the account" in text_of(found)
    assert list(part.context["cl"].result_list) == []


def test_a_suppression_is_lifted_only_with_a_reason(browser, letter, caplog):
    suppression = suppress(account_id=letter.account_id, email="x@example.com", reason=SuppressionReason.COMPLAINT)
    lift = f"{SUPPRESSIONS}{suppression.pk}/delete/"

    refused = browser.post(lift, {"reason": "   "})
    assert refused.status_code == 200 and refused.context["form"].errors["reason"]
    assert Suppression.objects.filter(pk=suppression.pk).exists()
    assert "This person reported a newsletter as spam." in text_of(browser.get(lift))
    assert lift in browser.get(f"{SUPPRESSIONS}{suppression.pk}/change/").content.decode()  # "Lift…"
    listed = browser.get(SUPPRESSIONS)
    assert "delete_selected" not in listed.content.decode()
    refused_in_bulk = browser.post(
        SUPPRESSIONS, {"action": "delete_selected", "_selected_action": [suppression.pk], "post": "yes"}
    )
    assert refused_in_bulk.status_code in (200, 302)
    assert Suppression.objects.filter(pk=suppression.pk).exists()

    with caplog.at_level("INFO", logger="apps.publishing.newsletter.services"):
        lifted = browser.post(lift, {"reason": "They wrote: the report was a mistake."})

    assert lifted.status_code == 302
    assert not Suppression.objects.filter(pk=suppression.pk).exists()
    assert "by=ada@example.com" in caplog.text and "the report was a mistake" in caplog.text


# --- Editions ------------------------------------------------------------------------------------


def test_an_editions_page_shows_its_counts_and_its_failed_and_uncertain_addresses(browser, letter):
    readers = [SubscriberFactory(channel=letter, email=f"r{n}@example.com") for n in range(5)]
    edition = edition_of(PostFactory(channel=letter, title="May"), sent=[0, 1], failed=[2], uncertain=[3, 4])
    readers[4].delete()  # erased since: the record stays, without the address

    page = browser.get(f"{EDITIONS}{edition.pk}/change/")

    text = text_of(page)
    assert "total pending sent failed suppressed uncertain 5 0 2 1 0 2" in text
    assert "r2@example.com — failed here" in text and "r3@example.com" in text and "erased" in text
    assert "r0@example.com" not in text
    assert f"{EDITIONS}{edition.pk}/send-uncertain/" in page.content.decode()
    assert 'sandbox=""' in page.content.decode() and "srcdoc=" in page.content.decode()
    assert "2 of 5" in text_of(browser.get(EDITIONS))


def test_an_edition_lists_a_bounded_number_of_addresses_with_the_count_of_the_rest(browser, letter, monkeypatch):
    from apps.publishing.newsletter import admin as newsletter_admin

    monkeypatch.setattr(newsletter_admin, "ADDRESSES_SHOWN", 3)
    SubscriberFactory.create_batch(5, channel=letter)
    edition = edition_of(PostFactory(channel=letter), failed=[0, 1, 2, 3, 4])

    assert "… and 2 more." in text_of(browser.get(f"{EDITIONS}{edition.pk}/change/"))


def test_send_test_reaches_only_the_members_own_address_and_records_nothing(browser, letter):
    SubscriberFactory.create_batch(3, channel=letter)
    edition = edition_of(PostFactory(channel=letter, title="June"), sent=[0])
    before = list(Delivery.objects.filter(edition=edition).values_list("id", "state"))

    answer = browser.post(f"{EDITIONS}{edition.pk}/send-test/", {"to": "someone-else@example.com"})

    assert answer.status_code == 302
    assert [(m.to, m.subject) for m in mail.outbox] == [(["ada@example.com"], "[Test] June")]
    assert list(Delivery.objects.filter(edition=edition).values_list("id", "state")) == before
    edition_now = Edition.objects.get(pk=edition.pk)
    assert edition_now.recipients() == edition.recipients()
    assert browser.get(f"{EDITIONS}{edition.pk}/send-test/").status_code == 405


def test_send_to_uncertain_asks_first_then_sends_to_those_recipients_again(browser, letter):
    SubscriberFactory.create_batch(3, channel=letter)
    edition = edition_of(PostFactory(channel=letter), sent=[0], uncertain=[1, 2])
    url = f"{EDITIONS}{edition.pk}/send-uncertain/"

    asked = browser.get(url)
    assert "may get the edition twice" in text_of(asked)
    assert Delivery.objects.filter(edition=edition, state=DeliveryState.UNCERTAIN).count() == 2

    answer = browser.post(url)

    assert answer.status_code == 302
    assert "2 uncertain recipient(s) are being sent the edition again." in messages_of(browser.get(answer["Location"]))
    assert Delivery.objects.filter(edition=edition, state=DeliveryState.PENDING).count() == 2
    assert PublicationJob.objects.filter(post_id=edition.post_id, action="publish").exists()
    page = browser.get(f"{EDITIONS}{edition.pk}/change/")
    assert url not in page.content.decode()  # none uncertain any more: no button


def test_an_edition_without_uncertain_recipients_offers_no_send_to_uncertain(browser, letter):
    SubscriberFactory(channel=letter)
    edition = edition_of(PostFactory(channel=letter), sent=[0])

    assert (
        f"{EDITIONS}{edition.pk}/send-uncertain/" not in browser.get(f"{EDITIONS}{edition.pk}/change/").content.decode()
    )
    assert "nothing to decide" in text_of(browser.get(f"{EDITIONS}{edition.pk}/send-uncertain/"))


def test_an_edition_is_read_only(browser, letter):
    SubscriberFactory(channel=letter)
    edition = edition_of(PostFactory(channel=letter, title="Frozen"))

    assert browser.post(f"{EDITIONS}{edition.pk}/change/", {"subject": "Changed", "sent": 99}).status_code == 403
    assert browser.post(f"{EDITIONS}{edition.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Edition.objects.get(pk=edition.pk).subject == "Frozen"
