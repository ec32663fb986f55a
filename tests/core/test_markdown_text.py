"""A post's body as plain text that keeps its shape (markdown_text(paragraphs=True), the text of a
LinkedIn post): a reader sees the paragraphs, lists and code as written, without any markup."""

from apps.core.markdown import markdown_text, summary


def test_paragraphs_are_separated_by_one_blank_line():
    assert markdown_text("One.\n\n\n\nTwo.\n\nThree.", paragraphs=True) == "One.\n\nTwo.\n\nThree."


def test_a_soft_line_break_is_a_space_and_a_hard_one_a_new_line():
    body = "A sentence written\nover two lines.\n\nA poem,  \nline by line."

    assert markdown_text(body, paragraphs=True) == "A sentence written over two lines.\n\nA poem,\nline by line."


def test_list_items_are_one_per_line_and_the_list_its_own_paragraph():
    body = "Shopping:\n\n- eggs\n- *fresh* milk\n- bread\n\n1. first\n2. second\n\nDone."

    assert markdown_text(body, paragraphs=True) == "Shopping:\n\neggs\nfresh milk\nbread\n\nfirst\nsecond\n\nDone."


def test_a_nested_list_keeps_every_item_on_its_own_line():
    body = "Plan:\n\n- build\n  - parser\n  - renderer\n- ship\n\nThen rest."

    assert markdown_text(body, paragraphs=True) == "Plan:\n\nbuild\nparser\nrenderer\nship\n\nThen rest."


def test_headings_and_block_quotes_are_paragraphs_of_their_own():
    body = "# Title\nIntro.\n## Part two\n> Quoted\n> words.\n\nAfter the quote."

    assert markdown_text(body, paragraphs=True) == "Title\n\nIntro.\n\nPart two\n\nQuoted words.\n\nAfter the quote."


def test_a_code_block_keeps_its_lines():
    body = "Run:\n\n```\npip install cps\ncps serve\n```\n\nThat is all."

    assert markdown_text(body, paragraphs=True) == "Run:\n\npip install cps\ncps serve\n\nThat is all."


def test_html_is_stripped_scripts_with_their_content_and_entities_unescaped():
    body = (
        'Fish &amp; chips &lt;3 &copy; <b>bold</b> <span onclick="x()">here</span>.\n\n'
        "<script>alert('hi')</script>\n\n<style>p{}</style>The end &mdash; really."
    )

    assert markdown_text(body, paragraphs=True) == "Fish & chips <3 © bold here.\n\nThe end — really."


def test_links_and_emphasis_leave_their_words():
    body = "Read **the** [_docs_](https://example.com/docs) and `code`."

    assert markdown_text(body, paragraphs=True) == "Read the docs and code."


def test_an_empty_body_is_empty_text():
    assert markdown_text("", paragraphs=True) == ""
    assert markdown_text("  \n\n ", paragraphs=True) == ""


def test_without_paragraphs_the_text_is_still_one_line():
    body = "# Title\n\nPara one\nsoft.\n\n- a\n- b\n\n> quote\n\n```\nx\ny\n```"

    assert markdown_text(body) == "Title Para one soft. a b quote x y"
    assert "\n" not in markdown_text(body, limit=20)


# --- summary: one rule for the blog's lists, LinkedIn's commentary and an edition's preview line


def test_a_summary_is_the_teaser_when_there_is_one_whatever_the_limit():
    assert summary("  A short teaser. ", "# Body\n\nLong text " * 50, limit=10) == "A short teaser."


def test_a_summary_without_a_teaser_is_the_bodys_text_cut_at_the_limit():
    assert summary("", "# Heading\n\nSome **bold** words here.", limit=16) == "Heading Some…"


def test_a_teaser_of_only_spaces_is_no_teaser():
    assert summary(" \n ", "First paragraph.\n\nSecond.", paragraphs=True) == "First paragraph.\n\nSecond."
