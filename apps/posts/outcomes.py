"""Who hears that posts' publications may have moved on: a post's state written (lifecycle.py), or a
job of its destination failed for good (pipeline_subject.py). The apps above the posts app listen
here (stories: a story's state is its posts'), in the transaction of the change, so what they write
of it commits or rolls back with it; the posts app imports none of them."""

from collections.abc import Callable, Iterable

Listener = Callable[..., None]
_listeners: list[Listener] = []


def listen(listener: Listener) -> None:
    """Call `listener(post_ids=[...])` whenever those posts' publications may have moved on."""
    if listener not in _listeners:
        _listeners.append(listener)


def moved(post_ids: Iterable[int]) -> None:
    post_ids = list(post_ids)
    if not post_ids:
        return
    for listener in _listeners:
        listener(post_ids=post_ids)
