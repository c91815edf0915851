"""A trigger of the text tier (``Rule.triggers``) that spells more than one token (``async def``,
``except:``, ``run(``) must also be found where the author separates those tokens otherwise:
more spaces or tabs, a backslash continuation, and inside brackets a line end or a comment
(``prefilter.text._spelled``). Before, ``async  def f(): time.sleep(1)`` had no SHD301 finding
with the pre-filter on and one with it off.

Every rule's invalid examples are re-rendered token by token with extra legal whitespace
(``_respaced``: one more space in every gap between two tokens on a line; ``_continued``: a
backslash continuation in every such gap); each variant must still parse and give the same
findings (rule, message) with the pre-filter and the candidate tiers on as with them off."""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize

import pytest

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.prefilter import select
from shutdown_lint.prefilter import text as text_tier
from shutdown_lint.settings import Settings

RULES = registry.all_rules()


#: Compared: each finding's rule and message, in order. Not where it is: on a statement continued
#: by a backslash or with extra spaces the engines that run with the tiers on and off place
#: some findings apart (SHD104 example 4 continued: ``continue`` on line 31 with the tiers on,
#: line 30, the ``:`` of its ``if``, off; ends of SHD104 and SHD202 ranges a line or column apart).
_FIELDS = ("code", "message")


def _key(result):
    return (result.error, [tuple((d.to_dict() if hasattr(d, "to_dict") else vars(d))[f] for f in _FIELDS)
                           for d in result.diagnostics])


def _on_and_off(source: str, settings: Settings):
    """(pre-filter and tiers on, both off)."""
    on = lint_source(source.encode(), "example.py", settings, fix_edits=False)
    off_settings = Settings(settings.selected, target_version=settings.target_version,
                            rule_options=settings.rule_options, prefilter=False)
    with select.disabled():
        off = lint_source(source.encode(), "example.py", off_settings, fix_edits=False)
    return _key(on), _key(off)


# ----------------------------------------------------------------------------- the reproductions
@pytest.mark.parametrize("code, source", [
    ("SHD301", "import time\nasync  def f():\n    time.sleep(1)\n"),
    ("SHD301", "import time\nasync\tdef f():\n    time.sleep(1)\n"),
    ("SHD301", "import time\nasync \\\ndef f():\n    time.sleep(1)\n"),
    ("SHD104", "import asyncio\nasync def f():\n    try:\n        await asyncio.sleep(1)\n    except :\n        pass\n"),
    ("SHD402", "import asyncio\n\n\nasync def main():\n    pass\n\nasyncio.run (main())\n"),
    ("SHD402", "import asyncio\n\n\nasync def main():\n    pass\n\nasyncio.run\\\n(main())\n"),
    ("SHD402", "import asyncio\n\n\nasync def main():\n    pass\n\n(asyncio.run  # go\n (main()))\n"),
], ids=["301-spaces", "301-tab", "301-backslash", "104-space", "402-space", "402-backslash", "402-comment"])
def test_a_trigger_spelled_otherwise_keeps_its_finding(code, source):
    on, off = _on_and_off(source, Settings((code,)))
    assert off[1], f"{code} reports nothing here even with the pre-filter off"
    assert on == off


def test_the_spelled_regex_reads_only_legal_gaps():
    found = lambda trigger, src: text_tier._spelled(trigger).search(src) is not None  # noqa: E731
    assert found(b"run(", b"x = (asyncio.run\n  # c\n (m()))") and found(b"run(", b"run \\\r\n(")
    assert not found(b"run(", b"run # (\n") and not found(b"run(", b"runner(")
    assert not found(b"async def", b"asyncdef") and not found(b"async def", b"async\ndef")
    assert not found(b"except:", b"except\n:") and found(b"except:", b"except \\\n :")
    assert not found(b"run(", b"run" + b"#" * 3000 + b"\n")  # possessive gaps: no backtracking


# ----------------------------------------------------------------------------- every rule's examples
def _gaps(source: str):
    """The tokens of ``source`` as (start offset, end offset), and the gaps between two tokens
    of one physical line where whitespace may be added (not before a comment: a backslash
    there would join the comment to the next line)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    offset = lambda rc: starts[rc[0] - 1] + rc[1]  # noqa: E731
    toks = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
            if t.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)]
    for a, b in zip(toks, toks[1:]):
        if a.end[0] == b.start[0] and a.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT) \
                and b.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
            yield offset(a.end), offset(b.start)


def _render(source: str, gap: str) -> str:
    out, at = [], 0
    for end, start in _gaps(source):
        out.append(source[at:end] + gap + source[end:start])
        at = start
    out.append(source[at:])
    return "".join(out)


def _respaced(source: str) -> str:
    return _render(source, " ")


def _continued(source: str) -> str:
    return _render(source, " \\\n")


def _cases():
    for rule in RULES:
        for i, ex in enumerate(rule.examples()[1]):
            for how in (_respaced, _continued):
                case = (rule.code, i, how.__name__[1:])
                yield pytest.param(rule, ex, how, id="-".join(map(str, case)))


@pytest.mark.parametrize("rule, example, how", list(_cases()))
def test_extra_whitespace_loses_no_finding(rule, example, how):
    source = textwrap.dedent(example.code)
    try:
        ast.parse(source)
    except SyntaxError:
        pytest.skip("needs a newer Python's grammar")
    variant = how(source)
    ast.parse(variant)  # the re-rendering is legal Python
    settings = Settings((rule.code,), target_version=example.target_version or "py312",
                        rule_options={rule.code: dict(example.options)} if example.options else {})
    on, off = _on_and_off(variant, settings)
    assert on == off, variant
