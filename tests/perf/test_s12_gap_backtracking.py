"""Tier 1's gap between two tokens (``words.gap()``) may hold comments; a comment the pattern gave
back could end at any of its bytes, so a run of ``#`` (a banner, or comment lines the code view
blanks) after ``import ray`` made ``ModuleAttr("ray.remote")`` backtrack exponentially: 25 ``#``
took 2.2 s, 30 over a minute (helper WORDS, 471a620). A file like that must not hang the linter:
each case runs in a subprocess that must finish (the fixed pattern takes under a millisecond)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from shutdown_lint.prefilter import words as W
from shutdown_lint.prefilter.words import FileText

_CASES = {
    "banner": b"import ray\n" + b"#" * 80 + b"\nray.remote(f)\n",
    "comment lines": b"import ray\n" + b"# c\n" * 40 + b"ray.remote(f)\n",
    "banner, no use": b"import ray\n" + b"#" * 80 + b"\nx = 1\n",
}


@pytest.mark.parametrize("name", sorted(_CASES))
def test_a_run_of_comments_after_the_import_does_not_hang(name):
    code = textwrap.dedent(f"""
        from shutdown_lint.prefilter import words as W
        from shutdown_lint.prefilter.words import FileText
        cond = W.ModuleAttr("ray.remote")
        src = {_CASES[name]!r}
        print(cond.holds_on_text(FileText(src)), cond.holds(FileText(src)))
    """)
    # a liveness bound, not a speed claim: the old pattern needed hours for these inputs
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    expected = "False False" if name == "banner, no use" else "True True"
    assert out.stdout.split() == expected.split()


def test_the_answers_are_the_short_inputs_answers():
    # the same decisions as for the same text without the run of comments
    for name, src in _CASES.items():
        short = src.replace(b"#" * 80, b"#").replace(b"# c\n" * 40, b"# c\n")
        cond = W.ModuleAttr("ray.remote")
        assert cond.holds_on_text(FileText(src)) == cond.holds_on_text(FileText(short)), name
        assert cond.holds(FileText(src)) == cond.holds(FileText(short)), name
