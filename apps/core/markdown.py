"""Post bodies, Markdown, as the safe HTML that readers' browsers get: the blog's pages and feed, the
Settings area's previews, and any destination that sends HTML (a post mailed as an e-mail).

markdown-it-py renders CommonMark (with tables, strikethrough, footnotes and heading anchors), with
raw HTML passed through; nh3 then keeps only an allow-list of tags, attributes and URL schemes. So a
body may hold `<details>` or `<sub>`, but nothing that runs: no script, no event handler, no
`javascript:` or `data:` address, no SVG, no form, no style (the pages' Content-Security-Policy
forbids inline styles too, which is why table alignment becomes a class here).

An uploaded image the body shows (`images`, by address) renders as apps/core/images.py writes it:
responsive on a page, sized to fit in an e-mail; the allow-list keeps what that writes (srcset and
sizes whose every address passes the scheme check, a <picture> of WebP <source>s) and nothing more.
"""

import html
import re
from collections.abc import Mapping
from functools import cache
from typing import NamedTuple
from urllib.parse import urlsplit

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from mdit_py_plugins.anchors import anchors_plugin
from mdit_py_plugins.footnote import footnote_plugin

from apps.core.destinations import Image
from apps.core.images import CONTENT_SIZES, mail_image, page_image

URL_SCHEMES = frozenset({"http", "https", "mailto"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
TAGS = frozenset(nh3.ALLOWED_TAGS | {"section", "picture", "source"}) - {"map", "area"}
ATTRIBUTES = {
    **{tag: set(values) for tag, values in nh3.ALLOWED_ATTRIBUTES.items()},
    "a": {"href", "hreflang", "title", "class", "id"},
    "img": {"src", "alt", "title", "width", "height", "srcset", "sizes", "fetchpriority"},
    "source": {"srcset", "sizes", "type"},
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
# A srcset's candidate: an address, then a width or density descriptor.
CANDIDATE = re.compile(r"(\S+)(?:\s+(?:\d{1,5}w|\d{1,2}(?:\.\d{1,3})?x))?")
# A sizes list: media conditions and lengths, no quotes, no url().
SIZES = re.compile(r"[\w\s().,:%+*/-]{1,300}")
SOURCE_TYPES = re.compile(r"image/[\w.+-]{1,40}")
PRIORITIES = frozenset({"high", "low", "auto"})


def _srcset(value: str) -> bool:
    """Whether each of a srcset's candidates is an address of an allowed scheme (nh3 checks src's only)."""
    candidates = [candidate.strip() for candidate in value.split(",")]
    return all(
        (match := CANDIDATE.fullmatch(candidate)) and _scheme(match.group(1)) in URL_SCHEMES | {""}
        for candidate in candidates
    )


# Whether an attribute's value is kept (the others are kept as nh3 leaves them).
_KEEPS = {
    "id": lambda value: bool(IDS.fullmatch(value)),
    # nh3 checks the schemes of href and src only; a quotation's source is an address too.
    "cite": lambda value: _scheme(value) in URL_SCHEMES | {""},
    "srcset": _srcset,
    "sizes": lambda value: bool(SIZES.fullmatch(value)) and "url" not in value.lower(),
    "type": lambda value: bool(SOURCE_TYPES.fullmatch(value)),
    "fetchpriority": lambda value: value in PRIORITIES,
}


def _attribute(tag: str, name: str, value: str) -> str | None:
    if name == "class":
        kept = [part for part in value.split() if CLASSES.fullmatch(part)]
        return " ".join(kept) or None
    keeps = _KEEPS.get(name)
    return value if keeps is None or keeps(value) else None


def _scheme(address: str) -> str | None:
    """The address's scheme as a browser reads it (case, whitespace and control characters aside), ""
    for a relative one, None for one that is no URL at all."""
    try:
        return urlsplit(address).scheme.lower()
    except ValueError:
        return None


@cache
def _cleaner(*, lazy: bool = True) -> nh3.Cleaner:
    # `lazy`: on a page, images load as they are scrolled to; a mail client fetches them all anyway.
    return nh3.Cleaner(
        tags=set(TAGS),
        clean_content_tags={"script", "style"},
        attributes=ATTRIBUTES,
        attribute_filter=_attribute,
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener",
        set_tag_attribute_values={"img": {"loading": "lazy", "decoding": "async"}} if lazy else None,
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


def _image(self, tokens, idx, options, env):
    # An uploaded image shows as apps/core/images.py writes it; any other as markdown-it writes it.
    token = tokens[idx]
    image = env.get("images", {}).get(str(token.attrGet("src") or ""))
    if image is None:
        return RendererHTML.image(self, tokens, idx, options, env)
    alt = self.renderInlineAsText(token.children or [], options, env)
    title = str(token.attrGet("title") or "")
    if env.get("mail_width"):
        return mail_image(image, alt=alt, title=title, max_width=env["mail_width"])
    env.setdefault("shown", []).append(image)
    priority = env.pop("priority", False)
    return page_image(image, alt=alt, title=title, sizes=env.get("sizes", CONTENT_SIZES), priority=priority)


@cache
def _parser(*, anchors: bool = True) -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"]).use(footnote_plugin)
    if anchors:
        parser.use(anchors_plugin, min_level=1, max_level=4, permalink=True, permalinkSymbol="#")
    parser.add_render_rule("th_open", _cell_alignment)
    parser.add_render_rule("td_open", _cell_alignment)
    parser.add_render_rule("image", _image)
    return parser


def sanitize(fragment: str) -> str:
    """An HTML fragment with only the allowed tags, attributes and addresses."""
    return _cleaner().clean(fragment)


# An image the page fetches first is not lazy (nh3 sets loading="lazy" on every image). The sanitized
# HTML quotes every attribute value and escapes the quotes in it, so an attribute is found as written.
_PRIORITY_IMAGE = re.compile(r'<img(?:\s[\w-]+="[^"]*")*\sfetchpriority="high"(?:\s[\w-]+="[^"]*")*\s*/?>')


def _eager(match: re.Match) -> str:
    return match.group(0).replace(' loading="lazy"', "")


class Body(NamedTuple):
    html: str
    # The uploaded images the HTML shows as a page does, in order (each as often as shown).
    images: tuple[Image, ...]


def render_body(
    body: str,
    *,
    anchors: bool = True,
    images: Mapping[str, Image] | None = None,
    sizes: str = CONTENT_SIZES,
    priority: bool = False,
    mail_width: int | None = None,
) -> Body:
    """The body as safe HTML, as render_markdown() describes, with the uploaded images it shows."""
    if not body:
        return Body("", ())
    env = {"images": images or {}, "sizes": sizes, "priority": priority, "mail_width": mail_width}
    rendered = _cleaner(lazy=mail_width is None).clean(_parser(anchors=anchors).render(body, env))
    if 'fetchpriority="high"' in rendered:
        rendered = _PRIORITY_IMAGE.sub(_eager, rendered)
    return Body(rendered, tuple(env.get("shown", ())))


def render_markdown(body: str, **options) -> str:
    """The body as safe HTML (an empty body is an empty string), with render_body's options.
    `anchors=False`: no permalink after
    each heading, for a copy read away from the post's page (an e-mail). `images`: the uploaded images
    it may show, by address (apps.core.images.by_address): each with its size and responsive copies,
    for a column of `sizes`; `priority`: the first of them is the page's first image, fetched at once.
    `mail_width`: for an e-mail whose column is that many pixels wide: each uploaded image from its
    absolute address, sized to fit, and no image lazy."""
    return render_body(body, **options).html


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
