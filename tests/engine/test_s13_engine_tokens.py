"""AstFacts tokenizes a run of top-level statements, not the whole file, for a node's code
(``_tokens_at``/``_token_runs``; issue 30): every answer equals the whole file's tokens'."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import shutdown_lint
from shutdown_lint.ast_engine.facts import AstFacts

SNIPPETS = {
    "semicolons": "import os; x = (\n    1); y = f(\n    (2))\nz = g((3)); w = (4)\n",
    "decorated": "# header\n\n@dec(\n    (a))\n# between\n@other\ndef f(x=(1)):\n    return h(\n        (x),\n    )\n    # footer\n\n# after\nclass C(\n    (B)):\n    y = (\n        z)\n",
    "backslash_blank": "x = 1 \\\n\ny = (f(\n    (2)))\n",
    "lone_backslash": "x = 1\n\\\n\ny = k((2))\n",
    "strings": 's = """\n# not a comment\n  x = (1)\n"""\ndef f():\n    t = g("""a\n  b""", (c))\n    u = (\n        "x" \\\n        "y")\n',
    "continuations": "if a and \\\n        b:\n    f(\n        (x)) \\\n        .y((1))\nelse: g((2))\n",
    "withs": "with (open(p)) as f, (q):\n    pass\nwith (r):\n    h(\n        x for x in (y))\n",
    "crlf": "def f():\r\n    return g(\r\n        (1))\r\nx = (\r\n  2)\r\n",
    "cr_only": "def f():\r    return g(\r        (1))\rx = 2\r",
    "form_feed_tabs": "\x0cdef f():\n\tif x:\n\t\treturn (\n\t\t\t1)\n\x0c\nclass K:\n\tz = (\n\t\t3)\n",
    "fstrings": "x = f'{(a)}' + f\"\"\"\n{(b)}\n\"\"\"\ny = (\n  f'{c}')\n",
    "empty_tail": "x = (1)\n\n\n# end",
    "nested_classes": "class A:\n    class B:\n        def m(self):\n            return [\n                (i) for i in (j)]\n    k = (\n        1)\n",
}


def _facts(text: str, whole: bool) -> AstFacts:
    facts = AstFacts.build(ast.parse(text), text)
    if whole:
        facts._tokens()  # the whole file's tokens first: every later answer is theirs
    return facts


def _same(text: str) -> int:
    whole, runs = _facts(text, True), _facts(text, False)
    checked = 0
    for node, twin in zip(ast.walk(whole.module), ast.walk(runs.module)):  # each its own tree
        if hasattr(node, "lineno"):
            assert whole.code_for_node(node) == runs.code_for_node(twin), (node.lineno, ast.dump(node)[:80])
            if isinstance(node, ast.stmt):
                assert whole._on_header_line(node) == runs._on_header_line(twin)
                assert whole.simple_statement_line(node) == runs.simple_statement_line(twin)
            checked += 1
    for line in range(1, len(whole.lines) + 1):
        assert (line in whole._verbatim_lines()) == (line in runs._verbatim_lines()), line
    assert "_token_index" not in runs.__dict__  # every answer above from a run's tokens
    for line in (0, -1, len(whole.lines) + 1):
        assert (line in whole._verbatim_lines()) == (line in runs._verbatim_lines()), line
    return checked


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_snippets_as_with_the_whole_files_tokens(name: str) -> None:
    assert _same(SNIPPETS[name]) > 0


def test_runs_share_no_line() -> None:
    facts = _facts(SNIPPETS["semicolons"], False)
    starts, _ = facts._token_runs()
    assert starts == [1, 4]  # ``x = (`` ... ``); y = f(`` ... ``)``: one run with the import
    facts = _facts(SNIPPETS["decorated"], False)
    assert facts._token_runs()[0] == [1, 3, 14]  # a decorator's line starts its def's run


def test_a_run_is_tokenized_not_the_file() -> None:
    text = "def f():\n    return g(\n        (1))\n" + "".join(f"x{i} = (\n    {i})\n" for i in range(200))
    facts = _facts(text, False)
    call = next(n for n in ast.walk(facts.module) if isinstance(n, ast.Call))
    assert facts.code_for_node(call.args[0]) == "(1)"
    assert "_token_index" not in facts.__dict__
    assert list(facts._token_runs()[1]) == [0]


def test_project_modules() -> None:
    root = Path(shutdown_lint.__file__).parent
    paths = sorted(root.rglob("*.py"))[::7]
    assert len(paths) > 10
    for path in paths:
        _same(path.read_text(encoding="utf-8"))
