"""``traversal.walk`` must call on_visit/on_leave on exactly the nodes, in exactly the
order, that libcst's ``CSTNode.visit`` does (it replaces it in facts and the rule pass)."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint import registry
from shutdown_lint.traversal import walk

ROOT = Path(__file__).resolve().parents[2]

# every statement and expression form, with comments, parens and odd whitespace
EVERYTHING = '''
"""doc"""
from __future__ import annotations
import os, sys as system
from . import (a as b, c)  # comment
from ..pkg.mod import *
@decorator(arg)
@ other . attr
class K(Base, metaclass=M):
    x: int = 1
    async def m(self, a, /, b: int = 2, *args, c, d=3, **kw) -> "R":
        async with open(a) as f, g() as (h, i):
            pass
        async for j in k:
            await j
        return [y async for y in z if y] or {q: w for q, w in e} or {s for s in t}
def f(*, k=lambda x, *y, **z: (x, y, z)):
    global G
    def inner():
        nonlocal k
    try:
        x = yield from g
    except (A, B) as e:
        raise C from e
    else:
        del x[1:2, ::3], y.z
    finally:
        assert x, "m"
    try:
        pass
    except* D:
        pass
    while not a and b or c:
        break
    else:
        continue
    for i, *rest in enumerate(x): print(i, *rest, **kw, sep="")
    if a if b else c: pass
    elif (n := 10) > 5 >= 4 != 3 is not None in [1]: ...
    else: x += -~+1 ** 2 // 3 @ m % 4 << 5 >> 6 & 7 | 8 ^ 9
    with (a as b, c): return f"{x!r:>{w}} {y=}" "s" r"r", b"b" rb"r"
    match p:
        case [1, *r] | {"k": v, **kw} | Point(x=0, y=_) if v: pass
        case str() as s: pass
    t = (1,), [], {}, {1: 2, **d}, ..., a[b](c).d
type Alias[T: int = str] = list[T]
def g[T, *Ts, **P](x: T) -> T: ...
'''


class Recorder(cst.CSTVisitor):
    def __init__(self, prune: type | None = None) -> None:
        self.events: list[tuple[str, int]] = []
        self.prune = prune

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.events.append(("visit", id(node)))
        return not (self.prune is not None and isinstance(node, self.prune))

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.events.append(("leave", id(original_node)))


def _sources():
    yield "everything", EVERYTHING
    for rule in registry.all_rules():
        valid, invalid = rule.examples()
        for i, ex in enumerate([*valid, *invalid]):
            yield f"{rule.code}-{i}", ex.code
    for path in sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "shutdown_lint").glob("*.py")):
        yield str(path.relative_to(ROOT)), path.read_text()


@pytest.fixture(scope="module")
def parse():
    """``cst.parse_module``, each source parsed once for this module's tests (a pass over the
    ~410 sources costs ~1.2 CPU-s; seven tests made nine passes). libcst trees are immutable and
    every test here only walks or reads them."""
    trees: dict[str, cst.Module] = {}

    def parse_once(code: str) -> cst.Module:
        if code not in trees:
            trees[code] = cst.parse_module(code)
        return trees[code]

    return parse_once


@pytest.mark.parametrize("prune", [None, cst.FunctionDef, cst.Call], ids=["full", "prune-def", "prune-call"])
def test_walk_matches_libcst_visit(prune, parse):
    for name, code in _sources():
        try:
            module = parse(code)
        except cst.ParserSyntaxError:
            assert name != "everything", "the all-syntax snippet must parse"
            continue
        expected, got = Recorder(prune), Recorder(prune)
        module.visit(expected)
        walk(module, got)
        assert got.events == expected.events, name


def test_positions_of_matches_libcst_metadata(parse):
    """``analyzer.positions_of`` skips what ``MetadataWrapper.resolve`` adds around the
    position provider (an empty batched visit); the map must be the same."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    from shutdown_lint.analyzer import positions_of

    for name, code in _sources():
        try:
            module = parse(code)
        except cst.ParserSyntaxError:
            continue
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        assert dict(positions_of(module)) == dict(expected), name


def test_walk_skipping_layout_visits_every_other_node_in_order(parse):
    """The engine's walks skip layout nodes (``traversal.TRIVIA``): every other node must
    be visited and left in the same order as a full walk, and nothing under a layout node
    may be anything but layout (else a hook on it would be missed)."""
    from shutdown_lint.traversal import TRIVIA

    for name, code in _sources():
        try:
            module = parse(code)
        except cst.ParserSyntaxError:
            continue
        full, skipping = Recorder(), Recorder()
        walk(module, full)
        walk(module, skipping, TRIVIA)
        kinds: dict[int, type] = {}

        class Types(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                kinds[id(node)] = type(node)
                if type(node) in TRIVIA:
                    inside: list[type] = []

                    class Under(cst.CSTVisitor):
                        def on_visit(self, n: cst.CSTNode) -> bool:
                            inside.append(type(n))
                            return True

                    walk(node, Under())
                    assert set(inside) <= TRIVIA, (name, type(node).__name__, set(inside) - TRIVIA)
                return True

        walk(module, Types())
        assert skipping.events == [e for e in full.events if kinds[e[1]] not in TRIVIA], name


def test_layout_is_walked_when_a_hook_names_it():
    from shutdown_lint.traversal import TRIVIA, skippable

    assert skippable(["Call", "FunctionDef"]) == TRIVIA
    assert skippable(["Call", "Comment"]) == frozenset()
    assert skippable(["Call_func"]) == TRIVIA
    assert skippable(["Comma_whitespace_after"]) == frozenset()  # an attribute hook names its node first


def test_walk_skips_layout_by_default_only_for_plain_hooks():
    from shutdown_lint.traversal import TRIVIA, _auto_skip

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            pass

    class Comments(cst.CSTVisitor):
        def visit_Comment(self, node: cst.Comment) -> None:
            pass

    assert _auto_skip(Calls) == TRIVIA
    assert _auto_skip(Comments) == frozenset()
    assert _auto_skip(Recorder) == frozenset()  # overrides on_visit: sees every node

    seen: list[str] = []

    class Collect(cst.CSTVisitor):
        def visit_Comment(self, node: cst.Comment) -> None:
            seen.append(node.value)

    walk(cst.parse_module("f(a,  # one\n  b)\n"), Collect())
    assert seen == ["# one"]


def test_positions_per_statement_match_the_whole_render(parse):
    """``positions.Positions`` renders only the top-level statements asked about, starting
    at the line Python's ``ast`` gives; every node's range must equal the whole render's,
    and the whole render must be needed only where the guess cannot be checked."""
    import ast

    from shutdown_lint.facts import ModuleFacts
    from shutdown_lint.positions import Positions, positions_of

    extra = {
        "decorated-with-comments": "import x\n\n# lead\n\n@a\n# between\n@b(\n  1)\nclass C:\n    pass\n",
        "semicolons-and-continuations": "a = 1; b = (2,\n 3)\nc = \\\n  4\nif a:\n    pass\n# tail\n",
        "strings-spanning-lines": 's = """\nx\n"""\ndef f():\n    return f"""{s}\n"""\n',
        "crlf": "x = 1\r\n\r\ndef f():\r\n    return x\r\n",
        "header-and-footer": "#!/usr/bin/env python\n# coding: utf-8\n\nx = 1\n\n# end\n",
        "parenthesized-decorator": "@(\n    deco\n)\ndef f():\n    pass\n",
    }
    fell_back = []
    for name, code in [*_sources(), *extra.items()]:
        try:
            module = parse(code)
            tree = ast.parse(code)
        except (cst.ParserSyntaxError, SyntaxError):
            continue
        facts = ModuleFacts.build(module)
        full = positions_of(module)
        lazy = Positions(module, module.code, tree, facts.parent)
        for node in facts._parents:  # every node the engine can ask about (layout is not asked)
            assert lazy[node] == full[node], (name, type(node).__name__)
        if lazy._full is not None:
            fell_back.append(name)
    assert fell_back == ["parenthesized-decorator"], fell_back  # ast puts the decorator a line later


NESTED = '''
import os


class Outer:
    """doc"""

    x = 1; y = 2

    @staticmethod
    # between
    @deco(
        1)
    def method(a):
        # leading comment
        if a:
            b = 1
        elif a > 2:
            c = [i for i in a]
        elif a > 3:
            pass
        else:
            d = a; e = (a,
                        a)
        for i in a:
            try:
                pass
            except ValueError as err:
                f(err)
            except (TypeError, KeyError):
                pass
            else:
                g()
            finally:
                h()
        else:
            k()
        while a:
            with open(a) as fh, \\
                    open(b):
                fh.read()
            # footer comment of the while
        if a: one_line()
        try:
            pass
        except* TypeError:
            star()
        match a:
            case 1:
                m()
        return lambda: a

    class Inner:
        async def deep(self):
            async with x:
                async for y in z:
                    await y
'''


def test_positions_render_the_innermost_statement(parse):
    """Asked for a node deep in a class, ``Positions`` renders the innermost statement that
    the ``ast`` locates (a line of a method), never the whole module, and every position
    still equals the whole render's. Asked deepest first, each node in a fresh instance."""
    import ast

    from shutdown_lint.facts import ModuleFacts
    from shutdown_lint.positions import Positions, positions_of

    for name, code in [("nested", NESTED), *((n, c) for n, c in _sources() if n.startswith("SHD"))]:
        module = parse(code)
        tree = ast.parse(code)
        facts = ModuleFacts.build(module)
        full = positions_of(module)
        text = module.code  # rendered once per source (a render of the whole module per node was half this test's CPU)
        shared = Positions(module, text, tree, facts.parent)
        for node in reversed(list(facts._parents)):
            assert shared[node] == full[node], (name, type(node).__name__)
            fresh = Positions(module, text, tree, facts.parent)
            assert fresh[node] == full[node], (name, type(node).__name__)
            assert fresh._full is None, (name, type(node).__name__, "fell back to the whole module")
        assert shared._full is None


def test_positions_render_only_a_small_statement_for_a_deep_node():
    import ast

    from shutdown_lint.facts import ModuleFacts
    from shutdown_lint.positions import Positions

    module = cst.parse_module(NESTED)
    facts = ModuleFacts.build(module)
    positions = Positions(module, NESTED, ast.parse(NESTED), facts.parent)
    await_ = next(n for n in facts._parents if isinstance(n, cst.Await))
    assert positions[await_].start.line == NESTED.splitlines().index("                    await y") + 1
    rendered = [n for n in positions._known if isinstance(n, (cst.FunctionDef, cst.ClassDef))]
    assert rendered == [], "the enclosing method and classes were rendered"
    call = next(n for n in facts._parents if isinstance(n, cst.Call) and getattr(n.func, "value", "") == "m")
    assert positions[call].start.line == NESTED.splitlines().index("                m()") + 1


def test_leaves_have_nothing_under_them_but_layout(parse):
    """``traversal.LEAVES`` may be skipped by a walk whose hooks do not name them: nothing
    but layout may sit under one, on every source the tests know."""
    from shutdown_lint.traversal import LEAVES, TRIVIA, children

    for name, code in [*_sources(), ("nested", NESTED)]:
        module = parse(code)

        class Check(cst.CSTVisitor):
            def on_visit(self, node):
                if type(node) in LEAVES:
                    assert children(node, TRIVIA) == [], (name, type(node).__name__)
                return True

        walk(module, Check())


def test_the_rule_pass_sees_every_hooked_node_when_leaves_are_skipped(parse):
    from shutdown_lint.traversal import MultiRuleVisitor

    class Seen:
        def __init__(self):
            self.events = []

        @classmethod
        def visitor_methods(cls):
            return ["visit_Call", "leave_Call", "visit_FunctionDef", "visit_Name"]

        def visit_Call(self, node):
            self.events.append(("call", id(node)))

        def leave_Call(self, node):
            self.events.append(("leave-call", id(node)))

        def visit_FunctionDef(self, node):
            self.events.append(("def", id(node)))

        def visit_Name(self, node):
            self.events.append(("name", id(node)))

    class NoNames(Seen):
        @classmethod
        def visitor_methods(cls):
            return ["visit_Call", "leave_Call", "visit_FunctionDef"]

    for name, code in [*_sources(), ("nested", NESTED)]:
        module = parse(code)
        full, skipping = Seen(), NoNames()
        v_full, v_skip = MultiRuleVisitor([full]), MultiRuleVisitor([skipping])
        assert cst.Name not in v_full.skip and cst.Name in v_skip.skip
        walk(module, v_full, v_full.skip)
        walk(module, v_skip, v_skip.skip)
        assert [e for e in full.events if e[0] != "name"] == skipping.events, name
