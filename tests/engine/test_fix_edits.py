"""The JSON/SARIF edits of a fix are computed in place (``edits.fix_text_edits``): only the
innermost compound statement holding the fix is transformed and rendered, and imports are
added to the import block alone. The fixed text must be what the whole-module transform
gives, and the edits must turn the source into it (each changed region is diffed alone, so
where an inserted block starts with a blank line the diff may place that line differently)."""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer, edits, registry
from shutdown_lint.settings import Settings

RULES = registry.all_rules()


def _whole_module(a, fix):
    return edits.apply_fixes(a.module, [fix], a.facts).code


def _applied(text: str, found: list[dict]) -> str:
    """``text`` with line edits (1-based rows, end exclusive) applied, last first."""
    lines = text.splitlines(keepends=True)
    for e in sorted(found, key=lambda e: e["location"]["row"], reverse=True):
        lines[e["location"]["row"] - 1:e["end_location"]["row"] - 1] = [e["content"]]
    return "".join(lines)


def _in_place(a, fix) -> str:
    """The fixed text from the in-place patches (the whole module's when there are none)."""
    patches = edits._patches(a.module, a.text, [fix], a.facts, a.positions, {})
    if patches is None:
        return _whole_module(a, fix)
    out, at = [], 0
    for start, end, new in patches:
        out += [a.text[at:start], new]
        at = end
    return "".join(out) + a.text[at:]


def _same(a, fix) -> bool:
    fixed = _whole_module(a, fix)
    assert _in_place(a, fix) == fixed
    found = edits.fix_text_edits(a.module, a.text, [fix], a.facts, a.positions)
    assert _applied(a.text, found) == fixed
    assert _applied(a.text, edits.text_edits(a.text, fixed)) == fixed
    return True


def _check(source: str, codes=None, *, in_place: bool = True) -> int:
    """Every fix in ``source``: the same fixed text and edits both ways; returns the number
    of fixes checked."""
    settings = Settings(tuple(codes or (r.code for r in RULES)), target_version="py312")
    a = analyzer.analyze(source.encode(), "t.py", settings)
    assert a is not None
    n = 0
    for finding in a.findings:
        if finding.fix is None:
            continue
        n += 1
        patches = edits._patches(a.module, a.text, [finding.fix], a.facts, a.positions, {})
        assert (patches is not None) is in_place, finding
        assert _same(a, finding.fix)
    return n


def _invalid_examples():
    for rule in RULES:
        for i, ex in enumerate(rule.examples()[1]):
            if ex.fixed is not None and not ex.options:
                yield pytest.param(rule.code, ex.code, id=f"{rule.code}-invalid-{i}")


@pytest.mark.parametrize("code, source", list(_invalid_examples()))
def test_every_example_fix_renders_the_same_in_place(code, source):
    # top-level fixes (a statement of the module itself) take the whole-module path
    settings = Settings((code,), target_version="py312")
    a = analyzer.analyze(source.encode(), "t.py", settings)
    for finding in a.findings:
        if finding.fix is None:
            continue
        assert _same(a, finding.fix)


_BIG_CLASS = "\n".join(f"    def m{i}(self):\n        return {i}\n" for i in range(50))


@pytest.mark.parametrize("source", [
    # an import added above a large class whose method gets the fix
    "import asyncio\n\n\nclass Worker:\n" + _BIG_CLASS + textwrap.indent(textwrap.dedent("""
        async def start(self):
            asyncio.create_task(self.run())

        async def run(self):
            await asyncio.sleep(1)
            raise RuntimeError("x")
    """), "    "),
    # no import block at all, comments above the first statement, no newline at the end
    "# a comment\n\n# another\nclass Worker:\n    async def start(self):\n        import asyncio\n"
    "        asyncio.create_task(self.run())\n\n    async def run(self):\n        raise RuntimeError('x')",
    # a docstring and a from-import block, the fix deep in nested blocks
    '"""Doc."""\nfrom __future__ import annotations\nimport asyncio, sys\n\n\nasync def main(flag):\n'
    "    if flag:\n        for i in range(3):\n            try:\n                await asyncio.sleep(1)\n"
    "            except asyncio.CancelledError:\n                pass\n    sys.exit(0)\n",
    # tabs for indentation, CRLF newlines
    "import asyncio\r\n\r\nclass W:\r\n\tasync def start(self):\r\n\t\tasyncio.create_task(self.run())\r\n\r\n"
    "\tasync def run(self):\r\n\t\traise RuntimeError('x')\r\n",
])
def test_fixes_inside_blocks_render_the_same_in_place(source):
    assert _check(source) >= 1


def test_a_fix_of_a_top_level_statement_renders_the_whole_module():
    source = "import asyncio\n\nasync def run():\n    raise RuntimeError('x')\n\nasyncio.ensure_future(run())\n"
    assert _check(source, in_place=False) >= 1
