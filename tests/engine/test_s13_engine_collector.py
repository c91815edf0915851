"""The facts' walk reads a call's children without sorting where one kind of argument is
absent (walk._call) and meets ``x.y``'s name where it meets the attribute (issue 30): the
same children, events, parents and name indexes as before."""

from __future__ import annotations

import ast
from pathlib import Path

import shutdown_lint
from shutdown_lint.ast_engine.facts import AstFacts
from shutdown_lint.ast_engine.walk import _call, children

SNIPPET = """
f(); f(a); f(k=1); f(a, k=1); f(*a, k=1, *b, **c); f(k=1, *a); f(**c, k=2)
x.y.z(a.b, k=c.d)[e.f] = g.h
del p.q
async def m(self):
    await self.s.t(u.v)
"""


def _reference_call(node: ast.Call) -> list:
    return [node.func, *sorted([*node.args, *node.keywords], key=lambda n: (n.lineno, n.col_offset))]


def _modules() -> list[ast.Module]:
    root = Path(shutdown_lint.__file__).parent
    return [ast.parse(SNIPPET)] + [ast.parse(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.py"))[::5]]


def test_call_children_in_source_order() -> None:
    calls = 0
    for module in _modules():
        for node in ast.walk(module):
            if type(node) is ast.Call:
                assert _call(node) == _reference_call(node)
                calls += 1
    assert calls > 1000


def _reference_walk(module: ast.Module, types: frozenset) -> tuple[list, list, dict, dict]:
    events: list = []
    parents: list = []
    names: dict = {}
    attrs: dict = {}

    def walk(node: ast.AST) -> None:
        if type(node) in types:
            events.append(node)
        if type(node) is ast.Name:
            names.setdefault(node.id, []).append(node)
        elif type(node) is ast.Attribute:
            attrs.setdefault(node.attr, []).append(node)
        for child in children(node):
            parents.append((child, node))
            walk(child)
        if type(node) in types:
            events.append((node,))

    walk(module)
    return events, parents, names, attrs


def test_facts_walk_meets_attribute_names_in_order() -> None:
    types = frozenset(t for t in vars(ast).values() if isinstance(t, type) and issubclass(t, ast.AST))
    for module in _modules()[:6]:
        facts = AstFacts.build(module, None, "<m>", types, types)
        events, parents, names, attrs = _reference_walk(module, types)
        assert facts._events == events
        assert sorted(facts._parents.items(), key=lambda kv: id(kv[0])) == sorted(parents, key=lambda kv: id(kv[0]))
        assert facts._names_by_value == names
        assert facts._attributes_by_name == attrs
