"""The ``ast`` engine's cheaper walks (issue 30) give what the walks they replaced gave.

- ``walk.iter_children_of``: each node type's reader compiled from its signature gives the nodes
  ``walk.children_of`` gives, in order, on every node of the sources below.
- ``AstFacts.build``'s collection walk (leaves visited in place, not pushed): its events equal
  the list readers' (``walk.children_of``) walk for every node type, its ``_parents`` meet the nodes in the same order, and its
  ``Name``/attribute indexes list the nodes ``ast.walk`` finds, in source order.
- ``types._identifiers`` (read from the facts' walk) equals the ``ast.walk`` version it replaced.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from shutdown_lint.ast_engine import types as ast_types
from shutdown_lint.ast_engine import walk
from shutdown_lint.ast_engine.facts import AstFacts, decode

ROOT = Path(__file__).resolve().parents[2]

SYNTAX = '''\
"""Every statement and expression form."""
from __future__ import annotations
import os.path as osp, sys
from . import x as y
from ..pkg.mod import *
global_var: "int" = 1

@decorator(arg, *rest, key=1, **more)
async def coro(a, /, b: int = 1, *args, c, d=2, **kw) -> "T":
    global g
    async with ctx() as (p, *q), other:
        pass
    async for i in aiter():
        await thing(i)
    x = [j async for j in gen() if j]
    return lambda s, *, t=1: (s, t)

class C(Base, *bases, metaclass=M, **extra):
    attr: int
    def m(self):
        nonlocal_free = 1
        def inner():
            nonlocal nonlocal_free
            nonlocal_free += 1
        self.vär = {1: 2, **d, "k": [v for v in range(3)], "s": {s for s in ()}}
        return f"{self.vär!r:>{width}} {x=}" if (y := self.vär) else ...

try:
    raise ValueError("x") from None
except (ValueError, *ERRS) as e:
    del e
except Exception:
    pass
else:
    assert True, "msg"
finally:
    sys.exit(0)
try:
    pass
except* OSError as eg:
    pass
while not done:
    break
for k, (v, *w) in items:
    continue
with open(p) as f, lock:
    f.read()[1:2:3, ...]
match command:
    case {"a": 1, **rest}:
        pass
    case Point(x=0, y=yy) | [1, 2, *others] as whole if whole:
        pass
    case str() | None | -1 | 1 + 2j:
        pass
    case _:
        pass
z = a if b else c
w = not -a + b * c ** d @ e // f % g << h >> i & j | k ^ ~l and m or n < o <= p != q is r is not s in t not in u
'''


def _sources() -> list[tuple[str, str]]:
    paths = sorted([*(ROOT / "shutdown_lint").rglob("*.py"), *(ROOT / "rules").glob("*.py")])
    return [("syntax", SYNTAX), *((str(p.relative_to(ROOT)), decode(p.read_bytes())) for p in paths)]


SOURCES = _sources()
ALL_TYPES = frozenset(t for t in vars(ast).values() if isinstance(t, type) and issubclass(t, ast.AST))


@pytest.mark.parametrize("name,text", SOURCES[:1] + SOURCES[1::7], ids=lambda v: v if "\n" not in v else "")
def test_readers_and_walk_agree(name: str, text: str) -> None:
    module = ast.parse(text)
    for node in ast.walk(module):
        t = type(node)
        assert list(walk.iter_children_of(t)(node)) == walk.children_of(t)(node), (name, t.__name__)
        if walk.leaf_type(t):
            assert walk.children_of(t)(node) == []
    facts = AstFacts.build(module, text, name, ALL_TYPES, ALL_TYPES)
    events = _record(module)
    assert facts._events == events
    assert list(facts._parents) == [e for e in events if type(e) is not tuple][1:]
    names = [n for n in ast.walk(module) if type(n) is ast.Name]
    attrs = [n for n in ast.walk(module) if type(n) is ast.Attribute]
    assert sorted(id(n) for ns in facts._names_by_value.values() for n in ns) == sorted(id(n) for n in names)
    assert sorted(id(n) for ns in facts._attributes_by_name.values() for n in ns) == sorted(id(n) for n in attrs)
    key = lambda n: (n.lineno, n.col_offset)  # noqa: E731
    for ns in [*facts._names_by_value.values(), *facts._attributes_by_name.values()]:
        assert [key(n) for n in ns] == sorted(key(n) for n in ns)
    assert ast_types._identifiers(facts) == _identifiers_by_ast_walk(facts)


def test_leaf_types() -> None:
    leaves = {t.__name__ for t in ALL_TYPES if walk.leaf_type(t)}
    assert {"Name", "Constant", "alias", "Pass", "Break", "Continue", "Global", "Nonlocal"} <= leaves
    assert not leaves & {"Attribute", "Call", "arg", "keyword", "FunctionDef", "arguments", "Dict", "MatchMapping"}


# ---------------------------------------------------------------------------- the replaced versions


def _record(root) -> list:
    """``walk.record(root, every type, every type)`` on ``children_of``'s lists: each node, its
    children, then ``(node,)``."""
    events: list = []

    def visit(node):
        events.append(node)
        for child in walk.children_of(type(node))(node):
            visit(child)
        events.append((node,))

    visit(root)
    return events


def _identifiers_by_ast_walk(facts) -> dict:
    """``types._identifiers`` as it was before (its own ``ast.walk`` of the module)."""
    out: dict = {}
    lines = facts.lines

    def add(name, line, col, sub=0):
        out.setdefault(name, []).append((line, col, sub))

    for n in ast.walk(facts.module):
        t = type(n)
        if t is ast.Name:
            add(n.id, n.lineno, n.col_offset)
        elif t is ast.Attribute:
            add(n.attr, n.end_lineno, n.end_col_offset - len(n.attr.encode("utf-8")))
        elif t is ast.keyword:
            if n.arg is not None:
                add(n.arg, n.lineno, n.col_offset)
        elif t is ast.arg:
            add(n.arg, n.lineno, n.col_offset)
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
            line = lines[n.lineno - 1].encode("utf-8")
            m = (re.compile(rb"\bclass\s+([^\s(:\[]+)") if t is ast.ClassDef
                 else re.compile(rb"\bdef\s+([^\s(:\[]+)")).search(line, n.col_offset)
            add(n.name, n.lineno, m.start(1) if m else n.col_offset)
        elif t is ast.Import or t is ast.ImportFrom:
            sub = 1
            if t is ast.ImportFrom and n.module:
                for part in n.module.split("."):
                    add(part, n.lineno, n.col_offset, sub)
                    sub += 1
            for a in n.names:
                if a.name != "*":
                    for part in a.name.split("."):
                        add(part, a.lineno, a.col_offset, sub)
                        sub += 1
                if a.asname:
                    add(a.asname, a.end_lineno, a.end_col_offset, sub)
                    sub += 1
        elif t is ast.ExceptHandler:
            if n.name and n.type is not None:
                add(n.name, n.type.end_lineno, n.type.end_col_offset, 1)
        elif t is ast.Global or t is ast.Nonlocal:
            for i, name in enumerate(n.names):
                add(name, n.lineno, n.col_offset, 1 + i)
        elif t in ast_types._CAPTURES:
            for attr in ast_types._CAPTURES[t]:
                value = getattr(n, attr, None)
                for i, name in enumerate([value] if isinstance(value, str) else value or ()):
                    add(name, n.lineno, n.col_offset, 1 + i)
    for positions in out.values():
        positions.sort()
    return out
