"""The calendar's cards (apps/stories/admin_calendar.py) as HTML, written here rather than by a
template: a month holds thousands of cards, and Django's template engine spends about a millisecond
on each (bench/calendar.py measures the page). The page's script (stories/calendar.js) reads the
cards' data-* attributes; the page's template (templates/admin/stories/calendar.html) places them.

A card is focusable; a card its viewer may move is draggable and carries its "Move to" form, the
path that needs no script.
"""

from dataclasses import dataclass, field
from functools import cached_property
from html import escape
from zoneinfo import ZoneInfo

from django.urls import NoReverseMatch, reverse
from django.utils.safestring import SafeString, mark_safe

from apps.stories.calendar import STATES, TIMING_LABELS, CalendarItem

STATE_SYMBOLS = {"draft": "○", "scheduled": "◷", "publishing": "…", "published": "✓", "failed": "✗"}
_ID = "0-id-0"

_CARD = (
    '<li class="cal-card cal-{timing}" tabindex="0" data-item="{key}" data-date="{date}" data-time="{time}"{movable}>'
    '<p class="cal-card-head">{head}</p><p class="cal-title">{title}</p>'
    '<ul class="cal-markers">{markers}</ul>{form}</li>'
)
_HEAD = '<time class="cal-time" datetime="{to}">{time}</time> <span class="cal-timing">{timing}</span>'
_MARKER = (
    '<li class="cal-marker cal-state-{state}" title="{channel} ({platform}): {label}"><span aria-hidden="true">'
    '{symbol}</span> {channel}<span class="cal-sr">: {label}</span></li>'
)
_NO_CHANNEL = '<li class="cal-marker cal-state-draft">No channel</li>'
_FORM = (
    '<details class="cal-move"><summary>Move to…</summary><form method="post" action="{action}">'
    '<input type="hidden" name="csrfmiddlewaretoken" value="{token}"><input type="hidden" name="item" value="{key}">'
    '<input type="hidden" name="next" value="{here}"><label>Time ({zone}) '
    '<input type="datetime-local" name="to" value="{to}" required></label> '
    '<button type="submit" class="button">Move</button>'
    "</form></details>"
)


@dataclass(frozen=True)
class Cards:
    """What the cards of one page share: the viewer's zone and permissions, the move form's
    address, token and way back, and the addresses of the stories' and posts' own pages."""

    zone: ZoneInfo
    permissions: frozenset[str]
    move_url: str
    here: str
    csrf_token: str
    change_urls: dict[str, str]
    # Each marker's HTML once written (a page shows the same few channels and states again and again).
    _markers: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def for_site(cls, admin_site, **shared) -> "Cards":
        return cls(**shared, change_urls=_change_urls(admin_site))

    def data(self, item: CalendarItem) -> dict:
        """The card's words and times, in the viewer's zone ("" for a tray draft's)."""
        local = item.at.astimezone(self.zone) if item.at is not None else None
        return {
            "key": item.key,
            "title": item.title,
            "timing": item.timing,
            "timing_label": TIMING_LABELS[item.timing],
            "time": f"{local:%H:%M}" if local else "",
            "date": local.date().isoformat() if local else "",
            "to": f"{local:%Y-%m-%dT%H:%M}" if local else "",
        }

    def may_move(self, item: CalendarItem) -> bool:
        return bool(item.move_needs) and item.move_needs in self.permissions

    def html_of(self, items) -> SafeString:
        """The cards of `items`, one after the other (their texts escaped by `html`)."""
        return mark_safe("".join(self.html(item) for item in items))  # noqa: S308

    def html(self, item: CalendarItem) -> str:
        card = self.data(item)  # made here, of numbers and fixed words: only the texts need escaping
        title = escape(item.title)
        head = f'<span class="cal-timing">{card["timing_label"]}</span>'
        if card["time"]:
            head = _HEAD.format(to=card["to"], time=card["time"], timing=card["timing_label"])
        url = self.change_urls.get(item.kind)
        linked = f'<a href="{url.replace(_ID, str(item.id))}">{title}</a>' if url else title
        movable = self.may_move(item)
        return _CARD.format(
            timing=card["timing"],
            key=card["key"],
            date=card["date"],
            time=card["time"],
            movable=' draggable="true" data-movable="true"' if movable else "",
            head=head,
            title=linked,
            markers="".join(self._marker(marker) for marker in item.markers) or _NO_CHANNEL,
            form=self._form.format(key=card["key"], to=card["to"]) if movable else "",
        )

    @cached_property
    def _form(self) -> str:
        """The move form with what every card's shares filled in: {key} and {to} remain."""
        shared = {"action": self.move_url, "token": self.csrf_token, "here": self.here, "zone": self.zone.key}
        return _FORM.format(**{name: escape(value) for name, value in shared.items()}, key="{key}", to="{to}")

    def _marker(self, marker) -> str:
        if marker not in self._markers:
            self._markers[marker] = _MARKER.format(
                state=escape(marker.state),
                channel=escape(marker.channel),
                platform=escape(marker.platform),
                label=STATES[marker.state].lower(),
                symbol=STATE_SYMBOLS.get(marker.state, "•"),
            )
        return self._markers[marker]


def _change_urls(admin_site) -> dict[str, str]:
    """The change page of each kind of item, with _ID in place of its id (none where the kind's
    admin is not registered)."""
    urls = {}
    for kind, name in (("story", "stories_story_change"), ("post", "posts_post_change")):
        try:
            urls[kind] = reverse(f"admin:{name}", args=[_ID], current_app=admin_site.name)
        except NoReverseMatch:
            continue
    return urls
