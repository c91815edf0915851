"""``AstFacts.resolve_call`` answers each call once (issue 30): asked again, and asked of every call
of a module in any order, it gives what ``resolve_function(call.func, call)`` gives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from shutdown_lint.ast_engine.facts import AstFacts, decode

ROOT = Path(__file__).resolve().parents[2]
SOURCE = '''\
import functools

def f(): pass

class C:
    def m(self):
        self.m(); C.m(self); f(); functools.partial(f, 1)(); g = f; g()
        def inner(): pass
        inner(); self.other()

async def coro():
    await coro(); C().m(); [f() for _ in ()]; (lambda: f())()
'''


@pytest.mark.parametrize("path", [None, "shutdown_lint/ast_engine/facts.py", "rules/shd102_unobserved_task_exception.py"])
def test_resolve_call_is_resolve_function(path) -> None:
    text = SOURCE if path is None else decode((ROOT / path).read_bytes())
    module = ast.parse(text)
    facts = AstFacts.build(module, text)
    calls = [n for n in ast.walk(module) if type(n) is ast.Call]
    expected = [facts.resolve_function(c.func, c) for c in calls]
    assert [facts.resolve_call(c) for c in reversed(calls)] == expected[::-1]
    assert [facts.resolve_call(c) for c in calls] == expected
    assert len(facts._resolved_calls) == len(calls)
    if path is None:
        assert sum(e is not None for e in expected) == 8
