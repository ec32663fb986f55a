"""Post bodies, Markdown, as the safe HTML that readers' browsers get: the blog's pages and feed, the
Settings area's previews, and any destination that sends HTML (a post mailed as an e-mail).

markdown-it-py renders CommonMark (with tables, strikethrough, footnotes and heading anchors), with
raw HTML passed through; nh3 then keeps only an allow-list of tags, attributes and URL schemes. So a
body may hold `<details>` or `<sub>`, but nothing that runs: no script, no event handler, no
`javascript:` or `data:` address, no SVG, no form, no style (the pages' Content-Security-Policy
forbids inline styles too, which is why table alignment becomes a class here).
"""

import html
import re
from functools import cache
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.footnote import footnote_plugin

URL_SCHEMES = frozenset({"http", "https", "mailto"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
TAGS = frozenset(nh3.ALLOWED_TAGS | {"section"}) - {"map", "area"}
ATTRIBUTES = {
    **{tag: set(values) for tag, values in nh3.ALLOWED_ATTRIBUTES.items()},
    "a": {"href", "hreflang", "title", "class", "id"},
    "img": {"src", "alt", "title", "width", "height"},
    "code": {"class"},
    "th": {"class", "colspan", "rowspan", "scope"},
    "td": {"class", "colspan", "rowspan"},
    "li": {"id"},
    "section": {"class"},
    "sup": {"class"},
    "ol": {"start", "class"},
    "hr": {"class"},
    **{tag: {"id"} for tag in HEADINGS},
}
# The classes this module's own rendering sets; a body's raw HTML may use them too, nothing else.
CLASSES = re.compile(r"(language-[\w+#.-]{1,40}|header-anchor|ta-(left|center|right)|footnote[\w-]*)")
IDS = re.compile(r"[\w.:-]{1,200}")
ALIGN = re.compile(r"text-align:(left|center|right)")


def _attribute(tag: str, name: str, value: str) -> str | None:
    if name == "class":
        kept = [part for part in value.split() if CLASSES.fullmatch(part)]
        return " ".join(kept) or None
    if name == "id":
        return value if IDS.fullmatch(value) else None
    if name == "cite":
        # nh3 checks the schemes of href and src only; a quotation's source is an address too.
        return value if _scheme(value) in URL_SCHEMES | {""} else None
    return value


def _scheme(address: str) -> str | None:
    """The address's scheme as a browser reads it (case, whitespace and control characters aside), ""
    for a relative one, None for one that is no URL at all."""
    try:
        return urlsplit(address).scheme.lower()
    except ValueError:
        return None


@cache
def _cleaner() -> nh3.Cleaner:
    return nh3.Cleaner(
        tags=set(TAGS),
        clean_content_tags={"script", "style"},
        attributes=ATTRIBUTES,
        attribute_filter=_attribute,
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener",
        set_tag_attribute_values={"img": {"loading": "lazy", "decoding": "async"}},
    )


def _cell_alignment(self, tokens, idx, options, env):
    # markdown-it aligns cells with a style attribute, which the pages' CSP would block: a class instead.
    token = tokens[idx]
    style = token.attrGet("style")
    if style:
        token.attrs.pop("style")
        match = ALIGN.fullmatch(str(style))
        if match:
            token.attrSet("class", f"ta-{match.group(1)}")
    return self.renderToken(tokens, idx, options, env)


@cache
def _parser(*, anchors: bool = True) -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).use(footnote_plugin)
    if anchors:
        parser.use(anchors_plugin, min_level=1, max_level=4, permalink=True, permalinkSymbol="#")
    parser.add_render_rule("th_open", _cell_alignment)
    parser.add_render_rule("td_open", _cell_alignment)
    return parser


def sanitize(fragment: str) -> str:
    """An HTML fragment with only the allowed tags, attributes and addresses."""
    return _cleaner().clean(fragment)


def render_markdown(body: str, *, anchors: bool = True) -> str:
    """The body as safe HTML (an empty body is an empty string). `anchors=False`: no permalink after
    each heading, for a copy read away from the post's page (an e-mail)."""
    if not body:
        return ""
    return sanitize(_parser(anchors=anchors).render(body))


# Where a line or block starts or ends in the rendered HTML (markdown_text(paragraphs=True)): a line
# break before each list item (a nested list's too) and table row and at a <br>, a blank line after
# the other blocks (a list: unless it is nested in an item).
_LINE = re.compile(r"<(li|tr)\b[^>]*>|<br\s*/?>")
_BLOCK_END = re.compile(r"</(p|h[1-6]|blockquote|pre|table)>|</(ul|ol)>(?!\s*</li>)|<hr\s*/?>")
_CODE = re.compile(r"<pre\b.*?</pre>", re.DOTALL)
_LINK = re.compile(r"<a\s[^>]*?\bhref=\"([^\"]*)\"[^>]*>(.*?)</a>", re.DOTALL)
_TAG = re.compile(r"<[^>]*>")


def _link_text(match: re.Match) -> str:
    # A link within the text (a footnote's), one that shows its own address and one the HTML would
    # not keep (a `javascript:` one of the body's raw HTML) keep their text only.
    address, text = match.group(1), match.group(2)
    shown, target = html.unescape(_TAG.sub("", text)).strip(), html.unescape(address)
    if target.startswith("#") or target.removeprefix("mailto:") == shown or _scheme(target) not in URL_SCHEMES | {""}:
        return text
    return f"{text} ({address})"


def _line(match: re.Match) -> str:
    return "\n" + match.group(0) if match.group(1) else match.group(0) + "\n"


def markdown_text(body: str, *, limit: int | None = None, paragraphs: bool = False, links: bool = False) -> str:
    """The body as plain text on one line (for a meta description or a preview), cut at a word
    before `limit` characters with an ellipsis; with `paragraphs`, its blocks stay apart (blank
    lines between paragraphs, a line per list item), for places that show text as it is written
    (a post on a social network); with `links`, each link's address follows its text in brackets (an e-mail's
    text part)."""
    rendered = _parser(anchors=False).render(body or "")
    if links:
        rendered = _LINK.sub(_link_text, rendered)
    if not paragraphs:
        text = " ".join(html.unescape(nh3.clean(rendered, tags=set())).split())
    else:
        # The renderer's own line breaks are a space to a reader (a soft break), but in code, whose
        # lines are its own; the blocks' are ours.
        rendered = _CODE.sub(lambda match: match.group(0).replace("\n", "<br>"), rendered).replace("\n", " ")
        rendered = _BLOCK_END.sub(lambda match: match.group(0) + "\n\n", _LINE.sub(_line, rendered))
        plain = html.unescape(nh3.clean(rendered, tags=set()))
        blocks = (
            "\n".join(" ".join(line.split()) for line in block.splitlines()) for block in re.split(r"\n\s*\n", plain)
        )
        text = "\n\n".join(block.strip("\n") for block in blocks if block.strip())
    if limit is not None and len(text) > limit:
        cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
        text = cut.rstrip(" ,.;:") + "…"
    return text


def summary(teaser: str, body: str, *, limit: int | None = None, paragraphs: bool = False) -> str:
    """What a post says before its body is read (a blog's list, a social network's post, an inbox's
    preview line): its teaser, else its body as plain text, read as `markdown_text` reads it."""
    return (teaser or "").strip() or markdown_text(body, limit=limit, paragraphs=paragraphs)
