"""``summary._lines_near``: the lines ``_remote_targets``' pruned walk keeps, now also for modules
with non-ASCII bytes (before, those took the whole walk): the lines that spell the word, plus
every line with a non-ASCII byte (an identifier Python normalises to ``remote``, ``ｒemote``, has
one on its line). The pruned walk must give the whole walk's targets in the same order."""

from __future__ import annotations

import ast
import itertools
import pathlib

from shutdown_lint.index import summary

ROOT = pathlib.Path(summary.__file__).resolve().parents[2]


def _reference(source: bytes, word: bytes) -> list[int]:
    """By lines: those that hold ``word`` or a non-ASCII byte."""
    return [n for n, line in enumerate(source.split(b"\n"), 1) if word in line or not line.isascii()]


_WIDE_PIECES = [
    "import ray\n",
    "# Schöne Grüße: ein Kommentar\n",
    "def make(base):\n    class Sub(base, Mixin):\n        pass\n    return ray.\uff52emote(Sub)\n",
    "def deco():\n    @ray.\uff52emote\n    class Inner(B):\n        pass\n    return Inner\n",
    "def later():\n    class Sub(Late):  # ünter\n        pass\n",
    "h = ray.remote(num_gpus=1)(Top)  # → a handle\n",
    "x = '日本語'\n",
    "class Top(Base):\n    pass\n",
    "\u00e9t\u00e9 = ray.remote(Sub)\n",
]


def test_lines_near_are_the_word_lines_and_the_non_ascii_lines():
    sources = [p.read_bytes() for p in sorted((ROOT / "shutdown_lint").rglob("*.py"))]
    sources += ["".join(c).encode() for c in itertools.permutations(_WIDE_PIECES, 3)]
    sources += [b"", b"\xc3\xa9", b"remote\n\xc3\xa9\n", b"a\r\nremote\r\n\xc3\xa9 remote\r\n", b"\n\n\xff"]
    for source in sources:
        for word in (b"remote", b"class"):
            assert summary._lines_near(source, word) == _reference(source, word), source[:80]


def test_a_lone_carriage_return_cannot_be_told():
    assert summary._lines_near(b"import ray\rray.remote(A)\n", b"remote") is None
    assert summary._lines_near(b"import ray\r\nray.remote(A)\r\n", b"remote") == [2]


def test_pruned_walk_of_non_ascii_modules_gives_the_whole_walks_targets():
    n = 0
    for k in (1, 2, 3):
        for combo in itertools.permutations(_WIDE_PIECES, k):
            source = "".join(combo).encode()
            tree = ast.parse(source)
            whole = summary._remote_targets(tree)
            assert summary._remote_targets(tree, source) == whole, source
            n += bool(whole)
    assert n > 200
