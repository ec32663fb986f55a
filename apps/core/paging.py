"""One page of a list ordered by id, read at a cost that does not grow with its depth: by page
number (an offset) or after a cursor's id. What the page's address asks for is the HTTP layer's
(apps/api/pagination.py); reading it is here, so a selector can read its own pages, with what it
alone knows (a channel's page anchors) at hand."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Window:
    """Which rows a page holds: the `size` rows from the `offset`-th (page numbers), or the `size`
    rows with an id above `after` (a cursor)."""

    size: int
    offset: int = 0
    after: int | None = None


def skipped(window: Window, count: int) -> int:
    """How many index entries reading the window without a starting row skips (rows_at counts a
    page nearer the end than the start from the end)."""
    return min(window.offset, max(count - window.offset - window.size, 0))


def rows(queryset, window: Window, count: int, start: tuple[int, int] | None = None) -> list:
    """The window's rows of the queryset (ordered by id, ascending; `count` rows in all): after a
    cursor, one more than `size`, which tells whether more follow. `start` (see rows_at) may name
    a row the page starts shortly after."""
    if window.after is not None:
        return list(queryset.filter(pk__gt=window.after)[: window.size + 1])
    if window.offset >= count:
        # Also keeps absurd page numbers away from SQL's 64-bit OFFSET.
        return []
    return rows_at(queryset, window.offset, window.size, count, start)


def rows_at(queryset, offset: int, size: int, count: int, start: tuple[int, int] | None = None) -> list:
    """The rows `offset` to `offset + size` of the queryset (of `count` rows), in its order.

    Their keys are picked first by a subquery that reads only keys (for a list ordered by id with
    an index on its filter and id, an index-only scan); only the page's rows are then read whole.
    With OFFSET on the whole rows, a deep page read every row before it from the table. Skipping
    index entries still costs per entry, so a page nearer the end than the start is counted from
    the end, in the index's reverse order: the last pages (a list ordered oldest first ends with
    the newest items) cost what the first do, and the middle is the deepest a page gets. `count` is
    read before this query, so a row created or deleted in the instant between the two shifts such
    a page by one, as a deletion shifts the later pages of any page-numbered list.

    `start`, for a list ordered by id (apps.posts.page_anchors), names a row that the page starts
    fewer rows after than `skipped()` entries: (pk, skip), the row at `offset` being the `skip`-th
    (from 0) of those from `pk` on.
    """
    from_end = count - offset - size
    if start is not None:
        pk, skip = start
        keys = queryset.filter(pk__gte=pk).values("pk")[skip : skip + size]
    elif from_end < offset:
        keys = queryset.reverse().values("pk")[max(from_end, 0) : count - offset]
    else:
        keys = queryset.values("pk")[offset : offset + size]
    return list(queryset.filter(pk__in=keys))
