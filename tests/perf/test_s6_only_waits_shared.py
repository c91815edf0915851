"""``rules._waits.only_waits``: one tier-2 reading of SHD102's ``_only_waits`` (a watcher coroutine
that only waits), for SHD102 (``surely=True``: True only where the rule's test holds) and SHD106
(``surely=False``: False only where it does not). Before session 6 the two rules kept near-copies
(``_only_waits_ast`` and ``_may_only_wait``); on 1.1 million statement lists of the corpora the
shared helper gives what each copy gave. Here: surely <= the rule's test <= may, on near misses."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst
import pytest

from rules._waits import only_waits
from rules.shd102_unobserved_task_exception import _only_waits

BODIES = [
    "pass",
    '"""doc"""',
    "await asyncio.sleep(1)",
    "await sleep(1)",
    "await (asyncio.sleep)(1)",  # parenthesised callee: the rule reads the code, surely cannot
    "await anyio.sleep(0)\ndone.set()",
    "done.set()",
    "done.set(1)",
    "done.set(x=1)",
    "await asyncio.gather(*ts, return_exceptions=True)",
    "await asyncio.gather(*ts, return_exceptions=flag)",  # the rule needs `True`: may only
    "await asyncio.gather(*ts)",
    "await asyncio.wait(ts)",
    "await make()()",  # callee no name nor attribute: may sleep
    "await x",
    "x = 1",
    "await asyncio.sleep(1); print('x')",
    "if a:\n    await asyncio.sleep(1)",
    "return",
    "asyncio.sleep(1)",
]


def _both(body: str) -> tuple[list, cst.BaseSuite]:
    source = "async def f():\n" + textwrap.indent(body, "    ") + "\n"
    fn_ast = ast.parse(source).body[0]
    fn_cst = cst.parse_module(source).body[0]
    assert isinstance(fn_ast, ast.AsyncFunctionDef) and isinstance(fn_cst, cst.FunctionDef)
    return fn_ast.body, fn_cst.body


@pytest.mark.parametrize("body", BODIES)
def test_surely_implies_rule_implies_may(body):
    stmts, suite = _both(body)
    rule = _only_waits(suite)
    surely, may = only_waits(stmts, surely=True), only_waits(stmts, surely=False)
    assert not surely or rule, "SHD102 tier 2 would rule out a spawn its rule reports"
    assert not rule or may, "SHD106 tier 2 would drop a file its rule reads as a watcher"


def test_the_two_readings_differ_where_expected():
    assert only_waits(_both("await (asyncio.sleep)(1)")[0], surely=False)
    assert not only_waits(_both("await (asyncio.sleep)(1)")[0], surely=True)
    assert only_waits(_both("await asyncio.gather(*ts, return_exceptions=True)")[0], surely=False)
    assert not only_waits(_both("await asyncio.gather(*ts, return_exceptions=True)")[0], surely=True)
    assert not only_waits([], surely=True) and not only_waits([], surely=False)
