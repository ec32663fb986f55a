"""The newsletter's public pages (its `DestinationKind.site`, asked by the blog, apps/blog/site.py):
its index is the archive of its sent editions under the subscribe form, which posts to the index;
and the pages the links of its e-mails open (confirm, unsubscribe: PAGES, routed by the blog as
`blog:newsletter_confirm` and `blog:newsletter_unsubscribe`), on the service's host whatever the
newsletter's domain. All in the channel's look, which the blog hands each page (`look`)."""

from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from apps.api import ratelimit
from apps.channels.models import Channel
from apps.core.destinations import IndexPart, Look
from apps.core.errors import InvalidInput
from apps.publishing.newsletter import services as newsletter
from apps.publishing.newsletter.confirmation import LinkState, confirm_link_of, subscriber_confirm
from apps.publishing.newsletter.forms import SubscribeForm
from apps.publishing.newsletter.message import TEST_TOKEN
from apps.publishing.newsletter.models import Subscriber, SubscriberStatus

# What the blog's index says of a newsletter's posts (apps/blog/site.py reads these names).
POSTS = "editions"
NOTHING_YET = "No edition has been sent yet."
# The pages of the e-mails' links (PAGES) hold a person's token: not for crawlers.
ROBOTS_DISALLOW = ("/newsletter/",)


def index_part(channel: Channel, form: SubscribeForm | None = None) -> IndexPart:
    """The subscribe form, above the archive of the sent editions."""
    return IndexPart("blog/newsletter_index.html", {"form": form or SubscribeForm()}, form=True)


# --- The subscribe form's post on the index ---


def _cross_site(request) -> bool:
    """A browser's post made by another site's page (its Fetch metadata or its Origin say so)."""
    if request.headers.get("Sec-Fetch-Site") == "cross-site":
        return True
    origin = request.headers.get("Origin")
    return origin is not None and urlsplit(origin).netloc != request.get_host()


def _subscribe_budget(request) -> ratelimit.Budget:
    """Count one subscription of the client's address against NEWSLETTER_SUBSCRIBE_RATE."""
    limit, period = settings.NEWSLETTER_SUBSCRIBE_RATE
    now = ratelimit.clock()
    reset = ratelimit.window_end(now, period)
    used = ratelimit.store.hit(f"newsletter-subscribe:{ratelimit.client_address(request)}", reset, now)
    return ratelimit.Budget(limit=limit, used=used, reset=reset)


def _notice(request, look: Look, channel: Channel, title: str, message: str, *, status: int) -> HttpResponse:
    context = {"title": title, "description": message, "message": message, "noindex": True}
    return look.private(look.page(request, channel, "blog/notice.html", context, status=status))


# No CSRF token on the subscribe form (the blog's index, which takes the post, is csrf-exempt): the
# index is one cached page for every reader (apps/blog/pages.py), and a token is per visitor. The
# form changes nobody's account (no session, nothing signed in): what a forged post could do is what
# a bot can do directly, which the honeypot, the per-address budget and the service's one
# confirmation e-mail per interval hold back. Browsers' posts from another site's page are refused
# all the same (_cross_site), so no site can make its visitors subscribe people.
def index_post(request, channel: Channel, look: Look) -> HttpResponse:
    """The subscribe form's post. Whatever the address's state (new, waiting for its confirmation,
    subscribed, unsubscribed, bounced, complained), and for a bot that filled in the honeypot, the
    answer is the same page: it tells nobody who subscribes. What is mailed is the service's choice."""
    if _cross_site(request):
        message = f"Subscribe on the page of {channel.title} itself: this form cannot be sent from another site."
        return _notice(request, look, channel, "Subscribe on the newsletter page", message, status=403)
    budget = _subscribe_budget(request)
    if budget.exceeded:
        message = "Too many subscriptions were sent from your network. Please try again later."
        response = _notice(request, look, channel, "Please try again later", message, status=429)
        response["Retry-After"] = str(budget.retry_after())
        return response
    form = SubscribeForm(request.POST)
    if not form.is_bot():
        if form.is_valid():
            try:
                newsletter.subscribe(channel=channel, email=form.cleaned_data["email"], name=form.cleaned_data["name"])
            except InvalidInput as error:
                form.add_error("email", error.message)
        if form.errors:
            return look.private(look.index(request, channel, part=index_part(channel, form), status=400))
    context = {"title": "Check your inbox", "description": f"Subscribing to {channel.title}.", "noindex": True}
    return look.private(look.page(request, channel, "blog/subscribed.html", context))


# --- The pages the e-mails' links open ---


def _subscriber_of(token: str) -> Subscriber | None:
    return Subscriber.objects.with_token(token).select_related("channel").first()


def _link_page(
    request, look: Look, channel: Channel | None, template: str, context: dict, *, status: int = 200
) -> HttpResponse:
    """A page a link of a newsletter's e-mail opens, in the channel's look (a neutral one when the
    token is nobody's). The path holds the person's token: the page sends no Referer anywhere."""
    context = {"noindex": True, "description": context["title"], **context}
    response = look.page(request, channel or Channel(title="Newsletter"), template, context, status=status, form=True)
    response["Referrer-Policy"] = "no-referrer"
    return look.private(response)


# The token in the address is the secret that only the subscriber's mailbox has, which is what a
# CSRF token would prove; without a cookie, a reader whose browser keeps none can still press the
# button, and a mail client's one-click unsubscribe (RFC 8058) sends no cookie nor token at all.
@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def confirm(request, token: str, look: Look) -> HttpResponse:
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
    return _link_page(request, look, channel, "blog/newsletter_confirm.html", context, status=status)


@csrf_exempt
@require_http_methods(["GET", "HEAD", "POST"])
def unsubscribe(request, token: str, look: Look) -> HttpResponse:
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
    return _link_page(request, look, subscriber and subscriber.channel, "blog/newsletter_unsubscribe.html", context)


# The pages its e-mails link to, routed by the blog (apps/blog/urls.py) as blog:newsletter_<name>.
PAGES = (
    ("newsletter/confirm/<slug:token>/", confirm, "confirm"),
    ("newsletter/unsubscribe/<slug:token>/", unsubscribe, "unsubscribe"),
)
