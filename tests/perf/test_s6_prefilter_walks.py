"""The prefilter's fast walks and scans must give exactly what the plain versions they replace
give (issue 30, session 6): ``ast_tree.walk`` is ``list(ast.walk(...))``; ``walk_within``,
``nested_statements``, ``_parent_map`` and ``Tree``'s summary walk are compared with the
generator-based versions they replaced, on every rule example, the project's own modules and
an all-syntax snippet; ``FileText.positions``/``iter_positions``/``has_word`` with the
previous ``positions`` on generated texts (comments, quotes, ``\\r`` line ends, partial
iteration in any interleaving)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Optional

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shutdown_lint import registry
from shutdown_lint.prefilter import ast_tree, words
from shutdown_lint.prefilter.ast_tree import Function, Tree

ROOT = Path(__file__).resolve().parents[2]

EVERYTHING = '''
"""doc"""
from __future__ import annotations
import os, sys as system
from . import (a as b, c)  # comment
from ..pkg.mod import *
@decorator(arg)
@ other . attr
class K(Base, metaclass=M):
    x: "io.TextIOWrapper" = 1
    async def m(self, a: Optional["httpx.Client"], /, b: int = 2, *args, c, d=3, **kw) -> "R":
        async with open(a) as f, g() as (h, i):
            pass
        async for j in k:
            await j
            await j.close()
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
if __name__ == "__main__":
    self.saver = torch.save
    q: queue.Queue = queue.Queue()
'''
if sys.version_info >= (3, 12):
    EVERYTHING += "type Alias[T: int = str] = list[T]\ndef g[T, *Ts, **P](x: T) -> T: ...\n"


def _modules():
    yield "everything", ast.parse(EVERYTHING)
    for rule in registry.all_rules():
        valid, invalid = rule.examples()
        for i, ex in enumerate([*valid, *invalid]):
            try:
                yield f"{rule.code}-{i}", ast.parse(ex.code)
            except SyntaxError:
                pass
    for pattern in ("shutdown_lint/**/*.py", "rules/*.py", "runtime_guard/**/*.py", "examples/**/*.py"):
        for path in sorted(ROOT.glob(pattern)):
            try:
                yield str(path.relative_to(ROOT)), ast.parse(path.read_bytes())
            except (SyntaxError, ValueError):
                pass


MODULES = list(_modules())


# ----------------------------------------------------------------------------- the replaced versions
def _old_walk_within(nodes, stop=()):
    todo = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, stop):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _old_nested_statements(stmts, enter=lambda st: True):
    todo = list(stmts)
    while todo:
        st = todo.pop()
        yield st
        if not enter(st):
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(st, field, None)
            if type(block) is list:
                todo.extend(block)
        for h in getattr(st, "handlers", ()):
            todo.extend(h.body)
        for case in getattr(st, "cases", ()):
            todo.extend(case.body)


_MARKERS = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop, ast.type_ignore)


def _old_parent_map(root):
    """The markers (``Load``, ``Add``: one shared by many nodes) have no parent there."""
    return {id(child): node for node in ast.walk(root) for child in ast.iter_child_nodes(node)
            if not isinstance(child, _MARKERS)}


class _OldTree(Tree):
    """``Tree`` with the summary walk before session 6 (every field but ``ctx``, generic)."""

    def _collect(self) -> None:
        stack: list = [self.module]
        fn: Optional[Function] = None
        in_lambda = False
        cls: Optional[ast.ClassDef] = None
        awaited: set[int] = set()
        mentioned = self.mentioned
        while stack:
            node = stack.pop()
            t = type(node)
            if t is tuple:
                fn, in_lambda, cls = node
                continue
            if t is ast.Attribute:
                mentioned.add(node.attr)
            elif t is ast.alias:
                mentioned.add(node.name.rsplit(".", 1)[-1])
            elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                info = Function(node, cls)
                self.functions.append(info)
                if cls is not None:
                    self.methods.setdefault(id(cls), []).append(info)
                stack.append((fn, in_lambda, cls))
                fn, in_lambda, cls = info, False, None
            elif t is ast.ClassDef:
                self.classes.append(node)
                stack.append((fn, in_lambda, cls))
                cls = node
            elif t is ast.Lambda:
                stack.append((fn, in_lambda, cls))
                in_lambda = True
            elif t is ast.Call:
                (fn.calls if fn is not None else self.module_calls).append((node, id(node) in awaited, in_lambda))
            elif t is ast.Await:
                if type(node.value) is ast.Call:
                    awaited.add(id(node.value))
            elif t is ast.Raise:
                if fn is not None:
                    fn.raises.append(node)
            elif t in ast_tree.TRYS:
                if fn is not None:
                    fn.trys.append(node)
            elif t is ast.ExceptHandler:
                self.handlers.append(node)
            elif t is ast.Assign:
                for target in node.targets:
                    self._bind(target, node.value if len(node.targets) == 1 else None)
                if len(node.targets) == 1:
                    self.assigns.append((node.targets[0], node.value, fn))
            elif t is ast.AnnAssign or t is ast.NamedExpr:
                self._bind(node.target, node.value)
                if t is ast.AnnAssign and node.value is not None:
                    self.assigns.append((node.target, node.value, fn))
                if t is ast.AnnAssign:
                    _old_mention(node.annotation, mentioned)
            elif t is ast.arg:
                if node.annotation is not None:
                    _old_mention(node.annotation, mentioned)
            elif t is ast.withitem:
                if node.optional_vars is not None:
                    self._bind(node.optional_vars, node.context_expr)
            elif t is ast.Import:
                for alias in node.names:
                    if alias.asname:
                        self._imports.append((alias.asname, alias.name.rsplit(".", 1)[-1]))
            elif t is ast.ImportFrom:
                for alias in node.names:
                    if alias.asname:
                        self._imports.append((alias.asname, alias.name))
            elif t is ast.If and fn is None and cls is None and ast_tree.is_main_guard(node.test):
                self.has_main_guard = True
            for field in reversed([f for f in node._fields if f != "ctx"]):
                value = getattr(node, field, None)
                if type(value) is list:
                    for c in reversed(value):
                        if type(c) is ast.Name:
                            mentioned.add(c.id)
                        elif type(c) is not ast.Constant and isinstance(c, ast.AST):
                            stack.append(c)
                elif value is not None:
                    if type(value) is ast.Name:
                        mentioned.add(value.id)
                    elif type(value) is not ast.Constant and isinstance(value, ast.AST):
                        stack.append(value)


def _old_mention(annotation, mentioned):
    node = annotation
    while type(node) is ast.Attribute:
        node = node.value
    if type(node) is ast.Name:
        return
    for sub in ast.walk(annotation):
        if type(sub) is ast.Constant and type(sub.value) is str:
            mentioned.update(w for w in ast_tree._IDENTIFIER.findall(sub.value) if not w[0].isdigit())


def _summary(tree: Tree):
    def calls(cs):
        return [(id(c), a, lam) for c, a, lam in cs]

    return (
        [(id(fn.node), fn.name, fn.is_async, calls(fn.calls), [id(r) for r in fn.raises], [id(x) for x in fn.trys],
          id(fn.cls) if fn.cls is not None else None) for fn in tree.functions],
        calls(tree.module_calls), [id(c) for c in tree.classes],
        [(n, id(v)) for n, v in tree._bindings], [(n, id(v)) for n, v in tree._attr_bindings], tree._imports,
        [(id(a), id(b), id(f.node) if f is not None else None) for a, b, f in tree.assigns],
        {k: [id(fn.node) for fn in v] for k, v in tree.methods.items()}, tree.has_main_guard,
        [id(h) for h in tree.handlers], tree.mentioned,
    )


def _old_words(expr, names, attrs):
    """``Tree._words`` before session 12 (recursive)."""
    t = type(expr)
    if t is ast.Name:
        return {expr.id} | names.get(expr.id, set())
    if t is ast.Attribute:
        return {expr.attr} | attrs.get(expr.attr, set())
    if t is ast.Await:
        return _old_words(expr.value, names, attrs)
    if t is ast.Call:
        callee = _old_words(expr.func, names, attrs)
        results = ast_tree._factory_results()
        return callee | {w for c in callee for w in results.get(c, ())}
    return set()


def _old_aliases(tree):
    """``Tree._aliases`` before session 12: rounds over every binding until none changes."""
    names: dict = {}
    attrs: dict = {}
    for local, word in tree._imports:
        names.setdefault(local, set()).add(word)
    bindings = [(names, n, v) for n, v in tree._bindings] + [(attrs, n, v) for n, v in tree._attr_bindings]
    changed = True
    while changed:
        changed = False
        for table, name, value in bindings:
            words = _old_words(value, names, attrs)
            if words:
                have = table.setdefault(name, set())
                if not words <= have:
                    have |= words
                    changed = True
    return names, attrs


def _aliases_match(tree):
    """The worklist fixpoint and the iterative ``_words`` against the rounds and the recursion:
    the same tables (the same keys in the same order), the same words for every expression."""
    names, attrs = tree._aliases
    old_names, old_attrs = _old_aliases(tree)
    assert list(names.items()) == list(old_names.items())
    assert list(attrs.items()) == list(old_attrs.items())
    for n in ast.walk(tree.module):
        if isinstance(n, ast.expr):
            assert tree.words(n) == _old_words(n, names, attrs)


def test_aliases_through_chains_of_bindings():
    """Bindings read before the one they depend on grows (a later round in the old fixpoint),
    calls of calls, awaits, factories, attributes."""
    source = '''
import asyncio as aio
a = b
b = c()
c = d.e
d = aio
self.x = a
self.y = self.x
y = self.y()()
z = await aio.get_running_loop()
w = z
loop = aio.get_event_loop
q = loop()
'''
    tree = Tree(ast.parse(source.replace("await", "")))
    _aliases_match(tree)
    assert tree._aliases[0]["a"] == {"b", "c", "e"}  # b grows after a = b was first read
    tree = Tree(ast.parse("async def f():\n" + "".join("    " + line + "\n" for line in source.splitlines() if line)))
    _aliases_match(tree)


def _old_binding_counts(module):
    tree = Tree.__new__(Tree)
    tree.module = module
    counts: dict = {}
    stars = 0
    for n in ast.walk(module):  # the previous body, on ast.walk
        t = type(n)
        names: tuple = ()
        if t is ast.Name:
            names = (n.id,) if type(n.ctx) is not ast.Load else ()
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            names = (n.name,)
        elif t is ast.alias:
            if n.name == "*":
                stars += 1
            else:
                names = (n.asname, n.name, n.name.split(".")[0], n.name.rsplit(".", 1)[-1])
        elif t is ast.ExceptHandler or t is ast.arg:
            names = (n.name if t is ast.ExceptHandler else n.arg,)
        elif t is ast.Global or t is ast.Nonlocal:
            names = tuple(n.names)
        elif t.__name__ in ("MatchAs", "MatchStar", "MatchMapping"):
            names = (getattr(n, "name", None), getattr(n, "rest", None))
        for nm in set(names):
            if nm is not None:
                counts[nm] = counts.get(nm, 0) + 1
    return counts, stars


# ----------------------------------------------------------------------------- ast walks
def test_corpus_is_not_empty():
    assert len(MODULES) > 200


@pytest.mark.parametrize("name,module", MODULES[:1] + MODULES[1::7], ids=lambda v: v if isinstance(v, str) else "")
def test_walks_match_the_generator_versions(name, module):
    assert [id(n) for n in ast_tree.walk(module)] == [id(n) for n in ast.walk(module)]
    for node in ast_tree.walk(module):
        assert [id(n) for n in ast_tree.children(node)] == [id(n) for n in ast.iter_child_nodes(node)]
    for stop in ((), (ast.Lambda, *ast_tree.DEFS), (ast.ClassDef,)):
        assert [id(n) for n in ast_tree.walk_within(module.body, stop)] == \
            [id(n) for n in _old_walk_within(module.body, stop)]
    for enter in (lambda st: True, lambda st: not isinstance(st, (*ast_tree.DEFS, ast.ClassDef))):
        assert [id(n) for n in ast_tree.nested_statements(module.body, enter)] == \
            [id(n) for n in _old_nested_statements(module.body, enter)]
    assert ast_tree._parent_map(module) == _old_parent_map(module)
    _named_nodes_match(module)
    new, old = Tree(module), _OldTree(module)
    assert _summary(new) == _summary(old), name
    assert new._binding_counts == _old_binding_counts(module)
    _aliases_match(new)


def _named_nodes_match(module):
    """``Tree.parents``/``Tree.named_nodes`` (one walk per root) against the plain walk, for the
    module and its first functions, asked in either order."""
    tree = Tree(module)
    roots = [module, *(fn.node for fn in tree.functions[:4])]
    for i, root in enumerate(roots):
        names: dict = {}
        attrs: dict = {}
        for n in ast.walk(root):
            if type(n) is ast.Name:
                names.setdefault(n.id, []).append(id(n))
            elif type(n) is ast.Attribute:
                attrs.setdefault(n.attr, []).append(id(n))
        if i % 2:
            assert tree.parents(root) == _old_parent_map(root)
        got = tree.named_nodes(root)
        assert {k: [id(n) for n in v] for k, v in got[0].items()} == names
        assert {k: [id(n) for n in v] for k, v in got[1].items()} == attrs
        assert tree.named_nodes(root) is got
        assert tree.parents(root) == _old_parent_map(root)


def test_every_module_summary_matches():
    for name, module in MODULES:
        assert _summary(Tree(module)) == _summary(_OldTree(module)), name


def test_field_tables_keep_every_child():
    """``_node_fields`` drops only fields that never hold a node; ``_fields`` drops ``ctx`` and
    the field-less markers besides: checked on every node of the corpus."""
    for _, module in MODULES[:40]:
        for node in ast.walk(module):
            children = {id(c) for c in ast.iter_child_nodes(node)}
            kept = set()
            for f in ast_tree._node_fields(type(node)):
                v = getattr(node, f, None)
                kept |= {id(c) for c in (v if type(v) is list else [v]) if isinstance(c, ast.AST)}
            assert kept == children, type(node).__name__
            for f in set(node._fields) - set(ast_tree._fields(type(node))):
                v = getattr(node, f, None)
                for c in (v if type(v) is list else [v]):
                    assert not isinstance(c, ast.AST) or not c._fields, (type(node).__name__, f)


# ----------------------------------------------------------------------------- text positions
def _old_positions(src: bytes, name: bytes) -> list[int]:
    def ident(b):
        return b == 95 or 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122

    def in_comment(i):
        start = max(src.rfind(b"\n", 0, i), src.rfind(b"\r", 0, i)) + 1
        return src.find(b"#", start, i) >= 0 and src.find(b'"', start, i) < 0 and src.find(b"'", start, i) < 0

    n, out = len(name), []
    i = src.find(name)
    while i >= 0:
        if (i == 0 or not ident(src[i - 1])) and (i + n >= len(src) or not ident(src[i + n])) and not in_comment(i):
            out.append(i)
        i = src.find(name, i + n)
    return out


_PIECES = st.sampled_from([b"get", b"ray", b"ray.get", b"xget", b"get_", b"aa", b"a", b" ", b".", b"#", b"'", b'"',
                           b"\n", b"\r", b"\r\n", b"(", b"1", b"_", b"\xc3\xa9", b"\t"])
_TEXT = st.lists(_PIECES, max_size=40).map(b"".join)


#: the bytes the comment test reads, denser: quotes and line ends around a '#' and a word
_COMMENTS = st.lists(st.sampled_from([b"get", b" get", b"#", b"'", b'"', b"\n", b"\r", b"\r\n", b"x"]),
                     max_size=12).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(st.one_of(_TEXT, _COMMENTS), st.sampled_from([b"get", b"ray", b"a", b"aa"]),
       st.lists(st.integers(0, 5), max_size=4))
@example(b"x = '\r# get\n", b"get", [])  # '\r' ends the line the quote is on: a comment
@example(b"y = '\r\n# get\rget", b"get", [0])
def test_positions_match_the_previous_scan(src, name, stops):
    expected = _old_positions(src, name)
    text = words.FileText(src)
    # callers that stop early, in turn, then one that reads all: every one sees the same offsets
    for k in stops:
        got = []
        for p in text.iter_positions(name):
            got.append(p)
            if len(got) > k:
                break
        assert got == expected[:k + 1]
    assert text.has_word(name) is bool(expected)
    assert text.positions(name, first_only=True)[:1] == expected[:1]  # all of them once known (as before)
    assert list(text.iter_positions(name)) == expected
    assert text.positions(name) == expected
    fresh = words.FileText(src)
    assert fresh.has_word(name) is bool(expected)
    assert fresh.positions(name) == expected


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_interleaved_iterators_agree(src):
    expected = _old_positions(src, b"get")
    text = words.FileText(src)
    a, b = text.iter_positions(b"get"), text.iter_positions(b"get")
    got_a, got_b = [], []
    for x, y in zip(a, b):
        got_a.append(x)
        got_b.append(y)
    got_a += list(a)
    got_b += list(b)
    assert got_a == expected and got_b == expected


# ----------------------------------------------------------------------------- may_call_any
_NAME_SETS = [("asyncio.run", "uvloop.run", "anyio.run"), ("os._exit",), ("sys.exit", "builtins.exit", "exit"),
              ("asyncio.gather", "asyncio.tasks.gather"), ("subprocess.Popen", "subprocess.run", "os.system"),
              ("signal.signal",), ("get",), ("ray.get", "ray.wait"), ("threading.Thread", "Thread"),
              ("asyncio.create_task", "asyncio.ensure_future", "asyncio.AbstractEventLoop.create_task")]


def test_may_call_any_is_may_call_for_each_name():
    for name, module in MODULES[:1] + MODULES[1::3]:
        tree = Tree(module)
        calls = list(tree.all_calls())
        # names the module calls, so that the receiver tests are reached too
        own = tuple(sorted({f"{ast.unparse(c.func.value)}.{c.func.attr}" for c in calls[:60]
                            if type(c.func) is ast.Attribute and type(c.func.value) in (ast.Name, ast.Attribute)}))
        for names in [*_NAME_SETS, own, own[::2], ()]:
            for call in calls:
                expected = any(tree.may_call(call, *ast_tree._last_and_receivers(n)) for n in names)
                assert tree.may_call_any(call, names) is expected, (name, names, ast.unparse(call))
                assert tree.may_call_any(call, list(names)) is expected


# ----------------------------------------------------------------------------- text tier
_TRIGGER_PIECES = st.sampled_from(sorted({t.encode()[i:j] for r in registry.all_rules() for t in r.triggers
                                          for i, j in ((0, None), (0, 3), (1, None), (2, 5))} | {b" ", b"\n", b"x"}))


@settings(max_examples=400, deadline=None)
@given(st.lists(_TRIGGER_PIECES, max_size=12).map(b"".join), st.randoms(use_true_random=False))
def test_prefilter_keeps_exactly_the_rules_with_a_trigger(text, rnd):
    from shutdown_lint.prefilter.text import prefilter

    rules = list(registry.all_rules())
    rnd.shuffle(rules)
    rules = rules[:rnd.randint(0, len(rules))]  # any subset, in any order (per-file ignores)
    naive = [r for r in rules if not r.triggers or any(_written(t.encode(), text) for t in r.triggers)]
    assert prefilter(text, rules) == naive


def _written(trigger: bytes, source: bytes) -> bool:
    """The trigger occurs in ``source``: as a substring, or, for one that spells more than one
    token (``run(``), in any spacing Python reads as those tokens (``prefilter.text._spelled``)."""
    from shutdown_lint.prefilter import text as _text

    if _text._SPELLED.search(trigger) is None:
        return trigger in source
    return _text._spelled(trigger).search(source) is not None
