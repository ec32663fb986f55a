"""The calendar in the Settings area: a month or a week of the account's stories and lone posts,
the tray of undated drafts, filters by channel, team and state, and moves.

Every time is shown in the viewer's zone (`user.timezone`), named on the page. A card moves by a
POST to the move endpoint, which answers JSON to the page's script (drag and drop, arrow keys) and
comes back to the page with a message for the card's own "Move to" form, the path without script.
The page's script and style are static files (the admin's CSP runs no inline script).

Registered on the admin site by `calendar_urls` (apps/settings_area/site.py): each view goes through
`admin_site.admin_view` (signed in, CSRF, never cached) and reads the user's own account only.
"""

import calendar as month_days
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect, JsonResponse, QueryDict
from django.middleware.csrf import get_token
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from apps.channels.models import Channel, Team
from apps.core.admin import first_message
from apps.core.admin_scoping import own_account_id
from apps.core.errors import DomainError, Forbidden, NotFound
from apps.core.local_paths import is_local_path
from apps.core.validation import field_error
from apps.stories.calendar import (
    STATES,
    TIMING_LABELS,
    CalendarItem,
    Filters,
    calendar_item,
    calendar_items,
    calendar_move,
    check_filters,
    local_time_on,
    moved_to,
    range_of,
    undated_drafts,
)
from apps.stories.calendar_cards import Cards
from apps.users.models import Permission

MONTH, WEEK = "month", "week"
NO_ACCOUNT = "The calendar shows one account's schedule; an operator belongs to no account."


@dataclass(frozen=True)
class Viewer:
    account_id: int
    zone: ZoneInfo
    permissions: frozenset[str]


def _viewer(request) -> Viewer | None:
    """The signed-in member and their zone; None for an operator. Refuses a member without articles.read."""
    account_id = own_account_id(request)
    if account_id is None:
        return None
    if Permission.ARTICLES_READ not in request.user.permissions:
        raise PermissionDenied("The calendar needs the permission articles.read.")
    try:
        zone = ZoneInfo(request.user.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    return Viewer(account_id, zone, frozenset(request.user.permissions))


def _no_account(admin_site, request):
    context = {**admin_site.each_context(request), "title": "Calendar", "reason": NO_ACCOUNT}
    return TemplateResponse(request, "admin/stories/calendar_no_account.html", context, status=403)


# --- the page ----------------------------------------------------------------------------------


def _day(text: str, name: str = "date") -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise field_error(name, "invalid", f"{text[:40]!r} is not a date: write it as YYYY-MM-DD.") from None


def _days(view: str, around: date) -> list[date]:
    """The days the view shows: the week (Monday first) of `around`, or the weeks of its month."""
    if view == WEEK:
        monday = around - timedelta(days=around.weekday())
        return [monday + timedelta(days=n) for n in range(7)]
    weeks = month_days.Calendar().monthdatescalendar(around.year, around.month)
    return [day for week in weeks for day in week]


def _shift(view: str, around: date, step: int) -> date:
    if view == WEEK:
        return around + timedelta(days=7 * step)
    month = around.year * 12 + around.month - 1 + step
    return date(month // 12, month % 12 + 1, 1)


def _zone_text(zone: ZoneInfo) -> str:
    now = timezone.now().astimezone(zone)
    offset = now.strftime("%z")
    return f"{zone.key} ({now.tzname()}, UTC{offset[:3]}:{offset[3:]} now)"


def _query(request, **changes) -> str:
    query = QueryDict(mutable=True)
    for name in ("view", "date", "channel", "team", "state"):
        value = changes.get(name, request.GET.get(name, ""))
        if value:
            query[name] = value
    return f"?{query.urlencode()}"


def _filter_choices(account_id: int) -> dict:
    return {
        "channels": list(Channel.objects.filter(account_id=account_id).order_by("title").values_list("pk", "title")),
        "teams": list(Team.objects.filter(account_id=account_id).order_by("name").values_list("pk", "name")),
        "states": list(STATES.items()),
    }


def _grid(cards: Cards, viewer: Viewer, view: str, days: list[date], filters: Filters) -> dict:
    """The days shown, each with its cards' HTML (a week's in its hours), and the tray's."""
    start, end = range_of(days, viewer.zone)
    items = calendar_items(account_id=viewer.account_id, start=start, end=end, filters=filters)
    by_day: dict[date, list[CalendarItem]] = {day: [] for day in days}
    for item in items:
        by_day[item.at.astimezone(viewer.zone).date()].append(item)
    today = timezone.now().astimezone(viewer.zone).date()
    shown = [
        {
            "date": day,
            "cards": cards.html_of(by_day[day]),
            "today": day == today,
            "slots": _slots(cards, by_day[day], viewer.zone) if view == WEEK else [],
        }
        for day in days
    ]
    tray = undated_drafts(account_id=viewer.account_id, filters=filters)
    return {"days": shown, "tray": cards.html_of(tray), "count": len(items)}


def _slots(cards: Cards, items: list[CalendarItem], zone: ZoneInfo) -> list[dict]:
    """A week's day in hours, each with its cards' HTML."""
    hours: list[list[CalendarItem]] = [[] for _ in range(24)]
    for item in items:
        hours[item.at.astimezone(zone).hour].append(item)
    return [{"hour": hour, "label": f"{hour:02d}:00", "cards": cards.html_of(each)} for hour, each in enumerate(hours)]


def calendar_view(admin_site, request):
    viewer = _viewer(request)
    if viewer is None:
        return _no_account(admin_site, request)
    view = request.GET.get("view") or MONTH
    errors = []
    if view not in (MONTH, WEEK):
        errors.append(f"{view[:40]!r} is not a view of the calendar: choose month or week.")
        view = MONTH
    around, filters = timezone.now().astimezone(viewer.zone).date(), Filters()
    try:
        around = _day(request.GET["date"]) if request.GET.get("date") else around
        filters = check_filters(
            account_id=viewer.account_id, **{name: request.GET.get(name, "") for name in ("channel", "team", "state")}
        )
    except DomainError as exc:
        errors.append(first_message(exc))
    days = _days(view, around)
    context = {
        **admin_site.each_context(request),
        "title": "Calendar",
        "view": view,
        "around": around,
        "days_shown": days,
        "zone": _zone_text(viewer.zone),
        "zone_name": viewer.zone.key,
        "errors": errors,
        "chosen": {name: request.GET.get(name, "") for name in ("channel", "team", "state")},
        "previous": _query(request, view=view, date=_shift(view, around, -1).isoformat()),
        "next": _query(request, view=view, date=_shift(view, around, 1).isoformat()),
        "today": _query(request, view=view, date=""),
        "as_month": _query(request, view=MONTH),
        "as_week": _query(request, view=WEEK),
        "here": request.get_full_path(),
        "move_url": reverse("admin:calendar_move", current_app=admin_site.name),
        "day_url": reverse("admin:calendar_day", current_app=admin_site.name),
        **_filter_choices(viewer.account_id),
    }
    if not errors:
        cards = Cards.for_site(
            admin_site,
            zone=viewer.zone,
            permissions=viewer.permissions,
            move_url=context["move_url"],
            here=context["here"],
            csrf_token=get_token(request),
        )
        context |= _grid(cards, viewer, view, days, filters)
    return TemplateResponse(request, "admin/stories/calendar.html", context, status=400 if errors else 200)


# --- what a day already has (the move form's date picker) ---------------------------------------


def day_view(admin_site, request):
    viewer = _viewer(request)
    if viewer is None:
        return JsonResponse({"error": NO_ACCOUNT}, status=403)
    try:
        day = _day(request.GET.get("date", ""))
    except DomainError as exc:
        return JsonResponse({"error": first_message(exc)}, status=400)
    start, end = range_of([day], viewer.zone)
    items = calendar_items(account_id=viewer.account_id, start=start, end=end)
    cards = Cards.for_site(
        admin_site, zone=viewer.zone, permissions=viewer.permissions, move_url="", here="", csrf_token=""
    )
    found = [cards.data(item) for item in items]
    return JsonResponse(
        {
            "date": day.isoformat(),
            "zone": viewer.zone.key,
            "items": [{key: card[key] for key in ("key", "title", "time", "timing_label")} for card in found],
        }
    )


# --- a move ------------------------------------------------------------------------------------


def _target(request, item: CalendarItem, zone: ZoneInfo) -> datetime:
    """Where the request moves the item: `to` (a local date and time, the form's), or `date` (the
    time of day kept) with an `hour` in the week view."""
    to = request.POST.get("to", "")
    if to:
        try:
            local = datetime.strptime(to, "%Y-%m-%dT%H:%M")
        except ValueError:
            raise field_error("to", "invalid", f"{to[:40]!r} is not a date and time (YYYY-MM-DDTHH:MM).") from None
        return local_time_on(local.date(), local.time(), zone)
    day = _day(request.POST.get("date", ""))
    hour = request.POST.get("hour", "")
    if hour and not (hour.isascii() and hour.isdigit() and int(hour) < 24):
        raise field_error("hour", "invalid", f"{hour[:40]!r} is not an hour of the day (0 to 23).")
    return moved_to(item, day, zone, int(hour) if hour else None)


def _moved_answer(item: CalendarItem, zone: ZoneInfo) -> dict:
    local = item.at.astimezone(zone)
    return {
        "item": item.key,
        "date": local.date().isoformat(),
        "time": f"{local:%H:%M}",
        "to": f"{local:%Y-%m-%dT%H:%M}",
        "timing": item.timing,
        "timing_label": TIMING_LABELS[item.timing],
        "state": item.state,
        "message": f"“{item.title}” moved to {local:%a %d %b %Y %H:%M} ({zone.key}).",
    }


def move_view(admin_site, request):
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    viewer = _viewer(request)
    wants_json = "application/json" in request.headers.get("Accept", "")
    back = request.POST.get("next", "")
    back = back if is_local_path(back) else reverse("admin:calendar", current_app=admin_site.name)
    try:
        if viewer is None:
            raise Forbidden(NO_ACCOUNT)
        key = request.POST.get("item", "")
        item = calendar_item(account_id=viewer.account_id, key=key)
        moved = calendar_move(
            account_id=viewer.account_id,
            key=key,
            to=_target(request, item, viewer.zone),
            permissions=viewer.permissions,
        )
    except DomainError as exc:
        status = 404 if isinstance(exc, NotFound) else 403 if isinstance(exc, Forbidden) else 400
        if wants_json:
            return JsonResponse({"error": first_message(exc)}, status=status)
        messages.error(request, f"Nothing was moved: {first_message(exc)}")
        return HttpResponseRedirect(back)
    answer = _moved_answer(moved, viewer.zone)
    if wants_json:
        return JsonResponse(answer)
    messages.success(request, answer["message"])
    return HttpResponseRedirect(back)


def calendar_urls(admin_site) -> list:
    """The calendar's pages, for the admin site's get_urls."""

    def on_site(view):
        def page(request):
            return view(admin_site, request)

        page.__name__ = view.__name__
        return admin_site.admin_view(page)

    return [
        path("calendar/", on_site(calendar_view), name="calendar"),
        path("calendar/move/", on_site(move_view), name="calendar_move"),
        path("calendar/day/", on_site(day_view), name="calendar_day"),
    ]
