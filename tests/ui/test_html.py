"""The inspector's HTML builder: any text stays text, links stay on the site."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.hostile import MARKUP, characters

from mindpalace.ui.html import Markup, h, join, text, url


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.data: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.data.append(data)


def parse(markup: str) -> _Parsed:
    parser = _Parsed()
    parser.feed(markup)
    parser.close()
    return parser


def shown(value: str) -> str:
    """What the builder promises to display for ``value``."""
    out = []
    for char in value:
        code = ord(char)
        if code < 0x20 and char not in "\t\n\r":
            out.append(chr(0x2400 + code))
        elif code == 0x7F:
            out.append("\u2421")
        elif 0x80 <= code <= 0x9F or 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(char)
    return "".join(out)


@given(st.lists(characters, max_size=60).map("".join))
def test_any_text_is_one_elements_text(value: str) -> None:
    page = parse(h("p", {"title": value, "class": "t"}, value))
    assert [tag for tag, _ in page.starts] == ["p"]
    assert dict(page.starts[0][1]) == {"title": shown(value), "class": "t"}
    assert "".join(page.data).replace("\r\n", "\n") == shown(value).replace("\r\n", "\n")
    text(value).encode("utf-8")  # always encodable, surrogates or not


@pytest.mark.parametrize("value", MARKUP)
def test_the_hostile_corpus_stays_text(value: str) -> None:
    page = parse(join(h("div", None, value), h("textarea", {"name": "c"}, value)))
    assert [tag for tag, _ in page.starts] == ["div", "textarea"]
    assert "".join(page.data) == shown(value) * 2


def test_markup_passes_and_strings_do_not() -> None:
    inner = h("b", None, "bold")
    assert h("p", None, inner, "<i>") == "<p><b>bold</b>&lt;i&gt;</p>"
    assert isinstance(inner, Markup)
    assert h("br") == "<br>"
    assert h("input", {"disabled": True, "value": None, "checked": False}) == "<input disabled>"


@pytest.mark.parametrize(
    "link",
    ["javascript:alert(1)", "JavaScript:x", "//evil.example/", "/\\evil.example", "http://x", ""],
)
def test_links_must_stay_on_the_site(link: str) -> None:
    with pytest.raises(ValueError, match="path of this site"):
        h("a", {"href": link}, "x")
    with pytest.raises(ValueError):
        h("form", {"action": link})


@pytest.mark.parametrize(
    ("tag", "attrs"),
    [("scr ipt", {}), ("p", {"onclick": "x"}), ("p", {"onload_": "x"}), ("p", {'a"b': "x"})],
)
def test_names_come_from_code(tag: str, attrs: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        h(tag, attrs)


def test_url_encodes_segments_and_parameters() -> None:
    assert url("/memories", "a/b?c#d") == "/memories/a%2Fb%3Fc%23d"
    assert url("/x", q="a&b=c", empty="", none=None, flag=True, many=["1", "2"]) == (
        "/x?q=a%26b%3Dc&flag=1&many=1&many=2"
    )
    assert url("/x", q="\ud800") == "/x?q=%3F"
    with pytest.raises(ValueError):
        url("//evil.example")
