"""Is a statement's body on its header's line? The ast engine's two shared answers
(``AstFacts.simple_statement_line``, ``AstFacts.body_on_header_line``) against libcst's, shape by
shape (issue 30's review, session 10).

The rules asked it four ways until they were folded: SHD402's ``_simple_line`` and SHD502's
``_in_indented_block`` asked of a call's statement (libcst: ``enclosing_statement`` is a
``SimpleStatementLine``; SHD502 also asks that its parent be an ``IndentedBlock`` or the module,
which holds for every ``SimpleStatementLine``); SHD404's and SHD503's ``_on_header_line`` asked of a
def's, a class's or a ``with``'s block (libcst: the body is not an ``IndentedBlock``). The two
questions are one read of the source (``AstFacts._on_header_line`` of the block's first statement);
they differ in what they are asked of. Run on the shapes below before the fold, the four and the
shared one agreed everywhere but on two shapes: ``if x:  # note:\\`` before the block (SHD402 said
the block was on the header's line: a comment ending in ``:`` and a backslash) and ``if x: a(); \\``
+ newline + ``f()`` (the shared one said ``f()`` stood on its own line: its ``a; b`` run did not
cross a backslash). Both are fixed in the shared answer, which every rule now calls.
"""

from __future__ import annotations

import ast
import importlib.util
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint.ast_engine import AstFacts
from shutdown_lint.facts import ModuleFacts
from shutdown_lint.positions import positions_of
from shutdown_lint.settings import Settings

_HARNESS = Path(__file__).resolve().parents[1] / "rules" / "ast_both_ways.py"
_spec = importlib.util.spec_from_file_location("ast_both_ways_for_header_line", _HARNESS)
ast_both_ways = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ast_both_ways)

LINE, SUITE = True, False  # the call's statement is a SimpleStatementLine / is not (libcst)

#: name -> (source, where libcst files ``target()``'s statement); ``target()`` is called once
SHAPES = {
    "alone": ("target()\n", LINE),
    "a; b": ("a(); target()\n", LINE),
    "a; b; c": ("a(); b(); target()\n", LINE),
    "a; \\ b at module level": ("a(); \\\ntarget()\n", LINE),
    "a; \\ b in a block": ("def f():\n    a(); \\\n        target()\n", LINE),
    "block": ("if x:\n    target()\n", LINE),
    "second in a block": ("def f():\n    a()\n    target()\n", LINE),
    "if x: f()": ("if x: target()\n", SUITE),
    "if x: a; b": ("if x: a(); target()\n", SUITE),
    "if x: a; \\ b": ("if x: a(); \\\n  target()\n", SUITE),
    "if x: a; \\ b; \\ c": ("if x: a(); \\\n  b(); \\\n  target()\n", SUITE),
    "if x: a; \\ b, CRLF": ("if x: a(); \\\r\n  target()\r\n", SUITE),
    "if x: \\ f()": ("if x: \\\n    target()\n", SUITE),
    "if x:\\ f()": ("if x:\\\n    target()\n", SUITE),
    "if x:\\ a; b": ("if x:\\\n  a(); target()\n", SUITE),
    "else: \\ f()": ("if x:\n    pass\nelse: \\\n    target()\n", SUITE),
    "nested if x: \\ f()": ("def f():\n    if x: \\\n            target()\n", SUITE),
    "if x: f();": ("if x: target();\n", SUITE),
    "def f(): f()": ("def f(): target()\n", SUITE),
    "def f(): 'doc'; f()": ("def f(): 'doc'; target()\n", SUITE),
    "decorated def f(): f()": ("@d\ndef f(): target()\n", SUITE),
    "async def on one line": ("async def f(): await target()\n", SUITE),
    "class C: pass": ("class C: target()\n", SUITE),
    "decorated class C: pass": ("@d\nclass C: target()\n", SUITE),
    "method on one line": ("class C:\n    def f(self): target()\n", SUITE),
    "class body": ("class C:\n    x = target()\n", LINE),
    "with on one line": ("with a: target()\n", SUITE),
    "with two items on one line": ("with a, b: target()\n", SUITE),
    "async with on one line": ("async def f():\n    async with a: target()\n", SUITE),
    "with block": ("with a:\n    target()\n", LINE),
    "with header": ("with target():\n    pass\n", SUITE),
    "if header": ("if target():\n    pass\n", SUITE),
    "decorator": ("@target()\ndef f():\n    pass\n", SUITE),
    "else: f()": ("if x:\n    pass\nelse: target()\n", SUITE),
    "elif y: f()": ("if x:\n    pass\nelif y: target()\n", SUITE),
    "try: f()": ("try: target()\nexcept E: pass\n", SUITE),
    "except E: f()": ("try:\n    pass\nexcept E: target()\n", SUITE),
    "try ... else: f()": ("try:\n    pass\nexcept E:\n    pass\nelse: target()\n", SUITE),
    "finally: f()": ("try:\n    pass\nfinally: target()\n", SUITE),
    "for on one line": ("for i in x: target()\n", SUITE),
    "for ... else: f()": ("for i in x:\n    pass\nelse: target()\n", SUITE),
    "while on one line": ("while x: target()\n", SUITE),
    "while block, a; b": ("while x:\n    a(); target()\n", LINE),
    "case on one line": ("match x:\n    case 1: target()\n", SUITE),
    "case block": ("match x:\n    case 1:\n        target()\n", LINE),
    "nested one-line if": ("def f():\n    if x: target()\n", SUITE),
    "nested block": ("def f():\n    if x:\n        a()\n        target()\n", LINE),
    "comment ending in a backslash": ("if x:\n    # note \\\n    target()\n", LINE),
    "header comment ending in :\\": ("if x:  # note:\\\n    target()\n", LINE),
    "'#' in the header, then a backslash": ("if x == '#': \\\n    target()\n", SUITE),
    "':' in the header, then a backslash": ("if x == ':': \\\n    target()\n", SUITE),
    "comment after a one-line body": ("if x: a()  # c \\\ntarget()\n", LINE),
    "comments on header and body": ("if x:  # c\n    target()  # d\n", LINE),
    "blank line before the block": ("if x:\n\n    target()\n", LINE),
    "header in brackets": ("if (x and\n        y):\n    target()\n", LINE),
    "header after a backslash": ("if x and \\\n        y:\n    target()\n", LINE),
    "header after a backslash, one line": ("if x and \\\n        y: target()\n", SUITE),
    "a backslash in the statement before": ("x = 1 + \\\n    2\ntarget()\n", LINE),
    "a string's backslash, then ; b": ("if x:\n    s = 'a\\\nb'; target()\n", LINE),
    "a string's lines, then ; b": ("if x:\n    s = '''a\nb'''; target()\n", LINE),
    "a ':' in brackets, then ; b": ("d = {1:\n 2}; target()\n", LINE),
    "a slice after a backslash, then ; b": ("x = a[1:\\\n]; target()\n", LINE),
    "':' in a string, then ; b, one line": ("if x: s = 'a:'; target()\n", SUITE),
    "lambda": ("f = lambda: target()\n", LINE),
    "lambda in a one-line body": ("if x: f = lambda: target()\n", SUITE),
    "annotated": ("x: int = target()\n", LINE),
    "annotated in a one-line body": ("if x: y: int = target()\n", SUITE),
    "a call over lines in a one-line body": ("if x: target(\n    1)\n", SUITE),
    "a dict over lines in a one-line body": ("if x: d = {1:\n  target()}\n", SUITE),
    "CRLF block": ("if x:\r\n    target()\r\n", LINE),
    "CRLF one line": ("if x: target()\r\n", SUITE),
    "CRLF backslash": ("if x: \\\r\n    target()\r\n", SUITE),
    "CR line ends": ("if x:\r    target()\r", LINE),
    "form feed indent": ("if x:\n\x0c    target()\n", LINE),
    "tab indent": ("if x:\n\ttarget()\n", LINE),
    "non-ASCII header, one line": ("if 'é': target()\n", SUITE),
    "non-ASCII block, a; b": ("if 'é':\n    s = 'é'; target()\n", LINE),
}


def _target_calls(module: cst.Module, tree: ast.Module) -> tuple[cst.Call, ast.Call]:
    found: list[cst.Call] = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Name) and node.func.value == "target":
                found.append(node)

    module.visit(_Find())
    ours = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "target"]
    assert len(found) == len(ours) == 1
    return found[0], ours[0]


def _both(source: str) -> tuple[cst.Module, ModuleFacts, ast.Module, AstFacts]:
    module = cst.parse_module(source)
    facts = ModuleFacts.build(module)
    facts.source_text = source
    tree = ast.parse(source)
    return module, facts, tree, AstFacts.build(tree, source)


@pytest.mark.parametrize("name", list(SHAPES))
def test_simple_statement_line(name):
    """SHD402's and SHD502's question: libcst's statement of the call is a ``SimpleStatementLine``
    (the libcst rules' ``isinstance``, SHD502's parent test too), and the ast engine says the same."""
    source, expected = SHAPES[name]
    module, facts, tree, ours = _both(source)
    theirs, call = _target_calls(module, tree)
    stmt = facts.enclosing_statement(theirs)
    assert isinstance(stmt, cst.SimpleStatementLine) is expected  # the table is libcst's answer
    assert (isinstance(stmt, cst.SimpleStatementLine)
            and isinstance(facts.parent(stmt), (cst.IndentedBlock, cst.Module))) is expected  # SHD502's
    assert ours.simple_statement_line(call) is expected


def _blocks(module: cst.Module, tree: ast.Module, ours: AstFacts) -> list[tuple[cst.BaseSuite, list]]:
    """Every block of both trees, paired by the position of its first statement."""
    pos = positions_of(module)
    suites = {}
    for node in pos:
        body = getattr(node, "body", None)
        if isinstance(body, cst.BaseSuite) and body.body:
            start = pos[body.body[0]].start
            suites.setdefault((start.line, start.column), body)
    pairs = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(node, ast.Module) or type(block) is not list or not block or \
                    not isinstance(block[0], ast.stmt):
                continue
            first = block[0]
            if getattr(first, "decorator_list", None):
                d = first.decorator_list[0]
                key = (d.lineno, ours.column(d.lineno, d.col_offset) - 1)  # libcst's def starts at ``@``
            else:
                key = (first.lineno, ours.column(first.lineno, first.col_offset))
            if key in suites:
                pairs.append((suites[key], block))
    return pairs


@pytest.mark.parametrize("name", list(SHAPES))
def test_body_on_header_line(name):
    """SHD404's and SHD503's question, asked of every block of every shape: libcst's body is not an
    ``IndentedBlock`` (the libcst rules' test before their fix) exactly when the ast engine says it
    is written on its header's line."""
    source, _ = SHAPES[name]
    module, _facts, tree, ours = _both(source)
    pairs = _blocks(module, tree, ours)
    assert pairs or name in {"alone", "a; b", "a; b; c", "a; \\ b at module level", "lambda", "annotated",
                             "a backslash in the statement before", "a ':' in brackets, then ; b",
                             "a slice after a backslash, then ; b"}
    for suite, block in pairs:
        assert ours.body_on_header_line(block) is (not isinstance(suite, cst.IndentedBlock)), block[0].lineno


def test_the_table_holds_both_answers():
    answers = [expected for _, expected in SHAPES.values()]
    assert answers.count(LINE) >= 25 and answers.count(SUITE) >= 40


# ------------------------------------------------------------------ through the rules, both engines
NOFIX, FIX = "nofix", "fix"

RULE_CASES = {
    # the two shapes the four answers did not agree on, and their neighbours
    "SHD402 header comment ending in :\\": ("SHD402", FIX, """
        import asyncio
        if __name__ == "__main__":  # note:\\
            asyncio.run(main())
        """),
    "SHD402 if x: a; \\ run": ("SHD402", NOFIX, """
        import asyncio
        if __name__ == "__main__": print(1); \\
            asyncio.run(main())
        """),
    "SHD402 a; \\ run in a block": ("SHD402", FIX, """
        import asyncio
        if __name__ == "__main__":
            print(1); \\
                asyncio.run(main())
        """),
    "SHD502 header comment ending in :\\": ("SHD502", FIX, """
        import torch.distributed as dist
        def main():
            if True:  # note:\\
                dist.init_process_group("gloo")
        """),
    "SHD502 if x: a; \\ init": ("SHD502", NOFIX, """
        import torch.distributed as dist
        def main():
            if True: print(1); \\
                dist.init_process_group("gloo")
        """),
    # ``a;`` + newline + ``b``: two lines in libcst (SHD502's own ``_same_line`` took them for one,
    # and so read the import line's words as module-level code's); ``same_logical_line`` now
    "SHD502 a trailing ';' after an import": ("SHD502", FIX, """
        import torch.distributed as dist
        from torch.distributed import destroy_process_group;
        x = 1
        def main():
            dist.init_process_group("gloo")
        """),
    "SHD404 __init__ on its header line after a backslash": ("SHD404", NOFIX, """
        import ray
        @ray.remote
        class Gen:
            def __init__(self): \\
                self.n = 0
            async def run(self):
                try:
                    await work()
                finally:
                    await cleanup()
        """),
    "SHD404 __init__ after a header comment ending in :\\": ("SHD404", FIX, """
        import ray
        @ray.remote
        class Gen:
            def __init__(self):  # note:\\
                self.n = 0
            async def run(self):
                try:
                    await work()
                finally:
                    await cleanup()
        """),
    "SHD503 close() on its header line after a backslash": ("SHD503", NOFIX, """
        from concurrent.futures import ThreadPoolExecutor
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self): \\
                self.log()
        """),
    "SHD503 close() after a header comment ending in :\\": ("SHD503", FIX, """
        from concurrent.futures import ThreadPoolExecutor
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):  # note:\\
                self.log()
        """),
}

_OPTIONS = {
    "SHD402": {"sigterm_aware_calls": ["uvicorn.Server.serve"]},
    "SHD502": {"init_calls": ["torch.distributed.init_process_group"]},
}


@pytest.mark.parametrize("name", list(RULE_CASES))
def test_the_rules_agree_on_both_engines(name, monkeypatch):
    code, expected, body = RULE_CASES[name]
    settings = Settings(selected=(code,), rule_options={k: v for k, v in _OPTIONS.items() if k == code},
                        target_version="py312")
    ast_both_ways.every_file_a_candidate(monkeypatch)
    result = ast_both_ways.both_ways(textwrap.dedent(body).encode(), monkeypatch, settings)
    findings = [d for d in result.diagnostics if d.code == code]
    assert findings, [d.to_dict() for d in result.diagnostics]
    assert all((d.fix is not None) is (expected == FIX) for d in findings), [d.to_dict() for d in findings]
