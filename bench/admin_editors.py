"""Editors in the admin, as a browser drives it, for the embedded default's benchmark
(bench/embedded.py): signed in, each opens their post's change form and saves it with a new title."""

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from html.parser import HTMLParser

import requests

CSRF_TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
PASSWORD = "embedded-default-editor-5c1b"  # noqa: S105


class FormFields(HTMLParser):
    """The fields a browser would submit from the form with id `form_id` (its submit buttons aside)."""

    def __init__(self, form_id: str) -> None:
        super().__init__()
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self._select: str | None = None
        self._textarea: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.inside = attrs.get("id") == self.form_id
        if not self.inside or ("name" not in attrs and tag != "option"):
            return
        if tag == "input":
            self._input(attrs)
        elif tag == "select":
            self._select = attrs["name"]
        elif tag == "option" and self._select is not None and "selected" in attrs:
            self.fields.append((self._select, attrs.get("value", "")))
        elif tag == "textarea":
            self._textarea, self._text = attrs["name"], []

    def _input(self, attrs: dict) -> None:
        kind = attrs.get("type", "text")
        if kind in {"submit", "button", "file", "image", "reset"}:
            return
        if kind in {"checkbox", "radio"} and "checked" not in attrs:
            return
        self.fields.append((attrs["name"], attrs.get("value") or ("on" if kind == "checkbox" else "")))

    def handle_data(self, data):
        if self._textarea is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "form":
            self.inside = False
        elif tag == "select":
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            # A browser drops the newline that follows the opening tag.
            self.fields.append((self._textarea, "".join(self._text).removeprefix("\r\n").removeprefix("\n")))
            self._textarea = None


def form_fields(html: str, form_id: str) -> list[tuple[str, str]]:
    parser = FormFields(form_id)
    parser.feed(html)
    return parser.fields


@dataclass
class Saves:
    """What the editors did: every answer's status, the titles stored by the saves that succeeded
    (in order, per post) and when each was saved."""

    statuses: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    saved: dict[int, list[str]] = field(default_factory=dict)
    saved_at: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, response: requests.Response, what: str) -> bool:
        with self.lock:
            self.statuses[response.status_code] += 1
            if response.status_code >= 400:
                self.failures.append(f"{what}: HTTP {response.status_code} {response.text[:200]!r}")
                return False
        return True

    @property
    def errors(self) -> int:
        return sum(count for status, count in self.statuses.items() if status >= 400)


class Editor:
    """A browser signed in to the admin as one editor."""

    def __init__(self, base_url: str, email: str, post_id: int) -> None:
        self.base_url = base_url
        self.email = email
        self.post_id = post_id
        self.session = requests.Session()
        self.fields: list[tuple[str, str]] | None = None

    def sign_in(self) -> None:
        url = f"{self.base_url}/admin/login/?next=/admin/"
        page = self.session.get(url, timeout=30)
        page.raise_for_status()
        data = dict(form_fields(page.text, "login-form"))
        data.update(username=self.email, password=PASSWORD)
        signed_in = self.session.post(url, data=data, allow_redirects=False, timeout=30)
        if signed_in.status_code != 302:
            raise RuntimeError(f"{self.email} could not sign in: HTTP {signed_in.status_code}")

    def save(self, title: str, saves: Saves) -> None:
        """Open the post's page and save it with a new title, as an editor does."""
        url = f"{self.base_url}/admin/posts/post/{self.post_id}/change/"
        page = self.session.get(url, timeout=60)
        if not saves.answer(page, f"GET {url}"):
            return
        if self.fields is None:  # the page's fields stay the same from save to save, but for the title and token
            self.fields = [(name, value) for name, value in form_fields(page.text, "post_form") if name != "title"]
        token = CSRF_TOKEN.search(page.text)
        data = [(name, token[1] if name == "csrfmiddlewaretoken" and token else value) for name, value in self.fields]
        data += [("title", title), ("_save", "Save")]
        saved = self.session.post(url, data=data, allow_redirects=False, timeout=60)
        if not saves.answer(saved, f"POST {url} ({title})"):
            return
        if saved.status_code != 302:  # the form came back: it was refused
            with saves.lock:
                saves.failures.append(f"POST {url} ({title}): form refused")
            return
        with saves.lock:
            saves.saved.setdefault(self.post_id, []).append(title)
            saves.saved_at[title] = time.time()
