"""``ast_engine.facts._physical_lines``: the source's physical lines as libcst and the tokenizer
count them (ends ``\\r\\n``, ``\\r``, ``\\n``; not ``str.splitlines``' ``\\f``, ``\\v``, ``\\u2028``...)."""
from __future__ import annotations

from hypothesis import given, strategies as st

from shutdown_lint.ast_engine.facts import _physical_lines

TEXT = st.text(alphabet=st.sampled_from(["a", " ", "\n", "\r", "\x0b", "\x0c", "\u2028", "\x85", "é"]), max_size=40)


@given(TEXT)
def test_lines_rebuild_the_text_and_end_only_at_line_ends(text: str) -> None:
    lines = _physical_lines(text)
    assert "".join(lines) == text
    assert all(lines)
    for k, line in enumerate(lines):
        body = line[:-2] if line.endswith("\r\n") else line[:-1] if line[-1] in "\r\n" else line
        assert "\r" not in body and "\n" not in body
        if k < len(lines) - 1:
            assert line[-1] in "\r\n"
            assert not (line.endswith("\r") and lines[k + 1].startswith("\n"))  # \r\n is one end


def test_examples() -> None:
    assert _physical_lines("") == []
    assert _physical_lines("a") == ["a"]
    assert _physical_lines("a\r\nb\rc\n\x0cd\u2028e") == ["a\r\n", "b\r", "c\n", "\x0cd\u2028e"]
    assert _physical_lines("\r\r\n\n") == ["\r", "\r\n", "\n"]
