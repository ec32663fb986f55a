"""The pages the links of a newsletter's e-mails open (confirm, unsubscribe), on the service's
host whatever the newsletter's domain. The subscribe form's post is the index's (views.py)."""

from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from apps.blog.site import page_in_look, private
from apps.channels.models import Channel
from apps.publishing.newsletter import services as newsletter
from apps.publishing.newsletter.confirmation import LinkState, confirm_link_of, subscriber_confirm
from apps.publishing.newsletter.message import TEST_TOKEN
from apps.publishing.newsletter.models import Subscriber, SubscriberStatus


def _subscriber_of(token: str) -> Subscriber | None:
    return Subscriber.objects.with_token(token).select_related("channel").first()


def _link_page(request, channel: Channel | None, template: str, context: dict, *, status: int = 200) -> HttpResponse:
    """A page a link of a newsletter's e-mail opens, in the channel's look (a neutral one when the
    token is nobody's). The path holds the person's token: the page sends no Referer anywhere."""
    context = {"noindex": True, "description": context["title"], **context}
    response = page_in_look(
        request, channel or Channel(title="Newsletter"), template, context, status=status, form=True
    )
    response["Referrer-Policy"] = "no-referrer"
    return private(response)


# The token in the address is the secret that only the subscriber's mailbox has, which is what a
# CSRF token would prove; without a cookie, a reader whose browser keeps none can still press the
# button, and a mail client's one-click unsubscribe (RFC 8058) sends no cookie nor token at all.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def newsletter_confirm(request, token: str) -> HttpResponse:
    """The confirmation e-mail's link. GET (what a mail scanner fetches too) shows a "Confirm"
    button and changes nothing; its POST confirms. A link nobody has (mistyped, replaced by a newer
    e-mail's, or ended by an unsubscribe) is 404; one past NEWSLETTER_CONFIRM_TTL, 410."""
    link = subscriber_confirm(token=token) if request.method == "POST" else confirm_link_of(token=token)
    channel = link.subscriber.channel if link.subscriber else None
    titles = {
        LinkState.INVALID: "This link is not valid",
        LinkState.EXPIRED: "This link has expired",
        LinkState.ASK: f"Confirm your subscription to {channel.title}" if channel else "",
        LinkState.ALREADY: "You are subscribed",
        LinkState.DONE: "You are subscribed",
        LinkState.REFUSED: "This address cannot be subscribed",
    }
    status = {LinkState.INVALID: 404, LinkState.EXPIRED: 410}.get(link.state, 200)
    context = {"title": titles[link.state], "state": str(link.state)}
    return _link_page(request, channel, "blog/newsletter_confirm.html", context, status=status)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def newsletter_unsubscribe(request, token: str) -> HttpResponse:
    """Every edition's unsubscribe link (List-Unsubscribe). GET (what a mail scanner fetches too)
    shows an "Unsubscribe" button and changes nothing; a POST unsubscribes at once, the button's
    or a mail client's one-click (body `List-Unsubscribe=One-Click`). A token nobody has (a deleted
    subscriber's) answers 200 too: nothing is mailed to that address any more."""
    subscriber = None
    if token == TEST_TOKEN:  # the Settings area's "Send test" messages: nobody's
        state = "test"
    elif request.method == "POST":
        subscriber = newsletter.subscriber_unsubscribe(token=token)
        state = "gone" if subscriber is None else "done"
    else:
        subscriber = _subscriber_of(token)
        if subscriber is None:
            state = "gone"
        else:
            state = "already" if subscriber.status == SubscriberStatus.UNSUBSCRIBED else "ask"
    titles = {
        "test": "This is a test message's link",
        "gone": "You are not on the list",
        "ask": f"Unsubscribe from {subscriber.channel.title}" if subscriber else "",
        "already": "You are unsubscribed",
        "done": "You are unsubscribed",
    }
    context = {"title": titles[state], "state": state, "subscriber": subscriber}
    return _link_page(request, subscriber and subscriber.channel, "blog/newsletter_unsubscribe.html", context)
