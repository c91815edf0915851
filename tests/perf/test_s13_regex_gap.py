"""``words.gap()`` tries each reading of a gap once (session 13). The 471a620 pattern still had
two ways per line to read a comment line ending in a continuation backslash (the comment to its
end, or up to the backslash and then the continuation) and two ways to read a continuation
before CRLF (``\\r\\n``, or ``\\r`` and then the whitespace run): a failing match after N such
lines tried 2**N (``#\\`` + CRLF: 3**N) readings; 18 ``#\\`` CRLF lines after ``except`` took
70 s. The users left (SHD104's bare ``except:``, the driver context's ``def main(``) must match
as before: same span at every offset, against a frozen copy of the previous ``gap()``."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import textwrap

from hypothesis import example, given, settings
from hypothesis import strategies as st

from shutdown_lint.prefilter import words as W

_old = itertools.count()


def _old_gap() -> str:
    """``gap()`` at 471a620."""
    i = next(_old)
    return (rf"(?:(?![\s\\#])|(?=(?P<ow{i}>\s*))(?P=ow{i})"
            rf"(?:(?:\\(?:\r\n|\r|\n)|#[^\r\n]*(?=[\r\n]|\Z|[^\s#]))(?=(?P<ov{i}>\s*))(?P=ov{i}))*)")


# the shapes the product writes with gap(): SHD104's and the driver context's, and a dotted
# name, an import/as tail and a negative lookahead (tokens after a gap never start with "\")
_SHAPES = [
    lambda g: "except" + g() + ":",
    lambda g: r"def(?=[\s\\])" + g() + "main" + g() + r"\(",
    lambda g: "ab" + g() + r"\." + g() + "cd",
    lambda g: r"ab(?=[\s\\#])" + g() + r"(?:import|as)\b",
    lambda g: r"ab(?![A-Za-z0-9_])(?!" + g() + r"\.)",
]
_PAIRS = [(re.compile(shape(_old_gap).encode()), re.compile(shape(W.gap).encode())) for shape in _SHAPES]

_PIECES = [b"#", b"# ", b" ", b"\t", b"\f", b"\n", b"\r", b"\r\n", b"\\\n", b"\\\r\n", b"\\\r", b"\\", b"#:", b"#.",
           b"# main", b"#(", b"#import", b"#as", b"#cd", b":", b"main", b"(", b".", b"except", b"def", b"ab", b"cd",
           b"import", b"as", b"x"]


def _same_matches(text: bytes) -> int:
    matched = 0
    for old, new in _PAIRS:
        for i in range(len(text) + 1):
            a, b = old.match(text, i), new.match(text, i)
            assert (a is None) == (b is None), (new.pattern, text, i)
            if a is not None:
                assert a.span() == b.span(), (new.pattern, text, i)
                matched += 1
    return matched


@example(b"except\n# a\\\n:")
@example(b"except #\\\r\n#\\\r\n :")
@example(b"def \\\r\n main # x\\\n(")
@example(b"ab # .\\\ncd")
@example(b"ab#as\\\nimport")
@given(st.lists(st.sampled_from(_PIECES), max_size=14).map(b"".join))
@settings(max_examples=600, deadline=None)
def test_same_matches_at_every_offset(text):
    _same_matches(text)


def test_a_seeded_sweep_matches_alike():
    import random

    rnd = random.Random(13)
    gaps = [b"#", b"# ", b" ", b"\n", b"\r", b"\r\n", b"\\\n", b"\\\r\n", b"\\\r", b"\\", b"\t", b"#:", b"#.", b"# main",
            b"#(", b"#import", b"#as", b"#cd"]
    matched = 0
    for _ in range(3000):
        def g() -> bytes:
            return b"".join(rnd.choice(gaps) for _ in range(rnd.randint(0, 6)))
        text = (rnd.choice([b"except", b"def", b"ab"]) + g() + rnd.choice([b":", b"main", b".", b"import", b"as", b""])
                + g() + rnd.choice([b"(", b"cd", b":", b""]))
        matched += _same_matches(text)
    assert matched > 1000


def test_continued_comment_lines_do_not_hang():
    # a liveness bound, not a speed claim: the previous pattern needed days for these inputs
    code = textwrap.dedent("""
        from shutdown_lint.prefilter import words as W
        from shutdown_lint.prefilter.words import FileText
        bare = W.WordThen("except", W.gap() + ":")
        driver = W.context("driver")
        for body in (b"# a\\\\\\n", b"#\\\\\\r\\n", b" \\\\\\r\\n"):
            src = body * 60
            print(bare.holds(FileText(b"try:\\n    f()\\nexcept\\n" + src + b"x")),
                  bare.holds(FileText(b"try:\\n    f()\\nexcept\\\\\\n" + src + b":")),
                  driver.holds(FileText(b"def\\n" + src + b"main\\n" + src + b"x")))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "False"] * 3
