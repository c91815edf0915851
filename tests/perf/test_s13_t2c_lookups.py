"""SHD301's and SHD101's tier-2 conditions made cheaper (issue 30), same answers:

- SHD301 types a method call's receiver only for a method ``RESULT_TYPES`` knows (or a class of a
  multiprocessing context), and an attribute's receiver only for an attribute ``ATTRIBUTE_TYPES``
  knows: elsewhere the receiver's types add nothing, and asking them could make the project
  index summarise the modules their callees live in;
- SHD101 asks the index for another module's function with words that every ``async def``
  spells (only a coroutine function can own a child): a module that spells none is not
  summarised;
- SHD301's loop finder, its reading of string return annotations (only when the identifiers do
  not decide), its statement tables (no generator) and its callers of the blocking sync
  functions (only among the reachable ones) do less, with the same results.
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import multiprocessing
from pathlib import Path

import pytest

import shutdown_lint.rules.shd301_blocking_call_in_coroutine as R
from shutdown_lint.prefilter.ast_tree import Tree
from tests.perf.test_candidates_s4_x301 import _project_index, _tiers_agree, _write_pkg

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted({*Path(asyncio.__file__).parent.glob("*.py"), *Path(concurrent.futures.__file__).parent.glob("*.py"),
                *Path(multiprocessing.__file__).parent.glob("*.py"), *(ROOT / "rules").glob("shd3*.py"),
                *(ROOT / "shutdown_lint" / "index").glob("*.py")})


class _Everything:
    """A table that holds every key: the receiver is typed everywhere, as before."""

    def __contains__(self, key) -> bool:
        return True


def _receivers(tree: Tree) -> list:
    """Every expression SHD301's condition may ask the types of: receivers of methods and
    attributes, and what loops iterate, in coroutines and elsewhere."""
    out = []
    for node in ast.walk(tree.module):
        if type(node) is ast.Attribute:
            out.append(node.value)
        elif type(node) in (ast.For, ast.comprehension):
            out.append(node.iter)
        elif type(node) is ast.Call:
            out.append(node)
    return out


#: values typed through the tables: a child's pipe, a path's ``open()`` and ``parent``, a
#: multiprocessing context's class (each iterated or blocking in a coroutine)
_THROUGH_TABLES = {
    "stdout": "import subprocess\nasync def f(cmd):\n    p = subprocess.Popen(cmd)\n    for line in p.stdout:\n"
              "        print(line)\n",
    "open": "from pathlib import Path\nasync def f(x: Path):\n    for line in x.open():\n        print(line)\n",
    "parent": "from pathlib import Path\nasync def f(x):\n    d = Path(x).parent\n    return d.exists()\n",
    "context": "import multiprocessing as mp\nasync def f():\n    q = mp.get_context('spawn').Queue()\n"
               "    return q.get()\n",
}


@pytest.mark.parametrize("source", [*_THROUGH_TABLES.values(), *FILES[::2]],
                         ids=[*_THROUGH_TABLES, *(p.name for p in FILES[::2])])
def test_receivers_are_typed_only_where_a_table_reads_their_type(source, monkeypatch):
    """``_Values.types`` of every receiver with the pruning equals the types computed with the
    receiver typed everywhere (or that one ran out of budget: "anything"); so does the
    condition's answer (True for each of ``_THROUGH_TABLES``)."""
    source = source.read_bytes() if isinstance(source, Path) else source.encode()
    pruned_tree = Tree(ast.parse(source))
    pruned = R._Values(pruned_tree, None)
    got = [pruned.ask(pruned.types, e) for e in _receivers(pruned_tree)]
    decided = R._may_block_in_coroutine(Tree(ast.parse(source)))
    monkeypatch.setattr(R, "_TYPED_ATTRIBUTES", _Everything())
    monkeypatch.setattr(R, "_RESULT_METHODS", _Everything())
    full_tree = Tree(ast.parse(source))
    full = R._Values(full_tree, None)
    want = [full.ask(full.types, e) for e in _receivers(full_tree)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert w is None or g == w
    assert decided == R._may_block_in_coroutine(Tree(ast.parse(source)))
    assert decided or source.decode() not in _THROUGH_TABLES.values()


_LIB = '''
class Thing:
    def items(self):
        return []

    def open(self):
        return self


def make() -> Thing:
    return Thing()
'''

_USE = '''
from pkg.lib import make


async def plain(path):
    x = make()
    for k in x.items():
        print(k)


async def opened(path):
    y = make()
    for line in y.open():
        print(line)
'''


def test_the_index_is_asked_only_for_a_receiver_a_table_reads(tmp_path, monkeypatch):
    """``x.items()``: no table gives a type for ``items``, so ``make``'s return annotation is not
    looked up for ``x``; ``y.open()``: ``RESULT_TYPES`` may (a path's ``open``), so it is."""
    from shutdown_lint.index import project as P

    pkg = _write_pkg(tmp_path, {"lib.py": _LIB, "use.py": _USE.split("\n\nasync def opened")[0] + "\n",
                                "use2.py": _USE})
    asked: list[str] = []
    real = R._declared_return
    monkeypatch.setattr(R, "_declared_return", lambda view, callee: asked.append(callee) or real(view, callee))
    with _project_index(tmp_path):
        for name, callees in (("use.py", []), ("use2.py", ["pkg.lib.make"])):
            asked.clear()
            tree = Tree(ast.parse((pkg / name).read_bytes()))
            assert R._may_block_in_coroutine(tree, P.view_for(str(pkg / name))) is False
            assert asked == callees, name
    _tiers_agree(tmp_path, "SHD301")


_HELPERS = '''
import asyncio


def run_one(x):
    try:
        return x
    finally:
        pass
'''

_ODD = '''
import asyncio


async  def run_two(x):
    try:
        return x
    finally:
        pass
'''

_GATHER = '''
import asyncio
from pkg.NAME import FN


async def main():
    await asyncio.gather(FN(1), FN(2))
'''


def test_shd101_does_not_summarise_a_module_without_a_coroutine_function(tmp_path):
    """A gathered function of a module whose text holds no ``async def`` is no coroutine
    function: that module is not summarised, and the answer depends on its text; an ``async
    def`` spelled with two spaces is still found (the words cover every spacing)."""
    from shutdown_lint import registry
    from shutdown_lint.index import project as P
    from shutdown_lint.prefilter import ast_tree

    pkg = _write_pkg(tmp_path, {
        "helpers.py": _HELPERS, "odd.py": _ODD,
        "g1.py": _GATHER.replace("NAME", "helpers").replace("FN", "run_one"),
        "g2.py": _GATHER.replace("NAME", "odd").replace("FN", "run_two")})
    rule = registry.rules_by_code()["SHD101"]
    with _project_index(tmp_path):
        view = P.view_for(str(pkg / "g1.py"))
        assert rule.candidate_tree(ast_tree.parse((pkg / "g1.py").read_bytes()), view) is False
        helpers = str(pkg / "helpers.py")
        assert helpers not in view.index._summaries  # decided from the text
        assert any(Path(p).name == "helpers.py" for p in view.deps)  # and the answer depends on it
        view = P.view_for(str(pkg / "g2.py"))
        assert rule.candidate_tree(ast_tree.parse((pkg / "g2.py").read_bytes()), view) is True
    reported = {Path(d["path"]).name for d in _tiers_agree(tmp_path, "SHD101")}
    assert reported == {"g2.py"}


def _old_coroutine_iterables(tree) -> list:
    """The loop finder before: every field of every node, by name."""
    out = []
    todo = [fn.node for fn in tree.functions if fn.is_async]
    seen = set()
    while todo:
        node = todo.pop()
        t = type(node)
        if t is ast.AsyncFunctionDef:
            if id(node) in seen:
                continue
            seen.add(id(node))
        elif t is ast.For or t is ast.comprehension and not node.is_async:
            out.append(node.iter)
        for field in (f for f in t._fields if f not in ("ctx", "op", "type_comment")):
            value = getattr(node, field, None)
            if type(value) is list:
                for v in value:
                    if type(v) is not ast.Name and type(v) is not ast.Constant and isinstance(v, ast.AST):
                        todo.append(v)
            elif value is not None and type(value) is not ast.Name and type(value) is not ast.Constant \
                    and isinstance(value, ast.AST):
                todo.append(value)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_loops_and_string_annotations_as_before(path):
    tree = Tree(ast.parse(path.read_bytes()))
    assert [id(n) for n in R._coroutine_iterables(tree)] == [id(n) for n in _old_coroutine_iterables(tree)]
    extra = {w for fn in tree.functions if fn.node.returns is not None for n in ast.walk(fn.node.returns)
             if type(n) is ast.Constant and type(n.value) is str for w in R._WORDS.findall(n.value)}
    for words in (R._PREFIX_HINTS, R._attr_hints("get"), R._attr_hints("read"), R._attr_hints("send"),
                  frozenset(extra), frozenset({"not_spelled_anywhere_x"})):
        fresh = Tree(tree.module)
        assert R._spells_none(fresh, words) == (tree.mentioned | extra).isdisjoint(words)
    assert R._spelled(tree) == tree.mentioned | extra


def test_string_return_annotations_are_read():
    tree = Tree(ast.parse('async def f() -> "queue.Queue":\n    pass\n'
                          'def g() -> typing.Optional["httpx.Client"]:\n    pass\n'
                          'def h() -> a.b.C:\n    pass\n'))
    assert {"queue", "Queue", "httpx", "Client"} <= R._spelled(tree)
    fresh = Tree(tree.module)
    assert "Client" not in fresh.mentioned and not R._spells_none(fresh, frozenset({"Client"}))
    assert R._spells_none(fresh, frozenset({"Session"}))


def _old_statement_tables(tree) -> tuple:
    """What ``_Values._tables`` read of the statements before (through ``nested_statements``)."""
    from shutdown_lint.prefilter.ast_tree import nested_statements

    attrs: dict = {}
    declared: dict = {}
    attr_declared: dict = {}
    imported: dict = {}
    for st in nested_statements(tree.module.body):
        t = type(st)
        if t is ast.Import:
            for a in st.names:
                key = a.asname or a.name.split(".", 1)[0]
                imported.setdefault(key, set()).add(a.name if a.asname else key)
        elif t is ast.ImportFrom:
            base = "." * (st.level or 0) + (st.module or "")
            for a in st.names:
                if a.name != "*":
                    q = f"{base}.{a.name}" if base and not base.endswith(".") else f"{base}{a.name}"
                    imported.setdefault(a.asname or a.name, set()).add(q)
        elif t is ast.AnnAssign:
            if type(st.target) is ast.Name:
                declared.setdefault(st.target.id, []).append(st.annotation)
                attr_declared.setdefault(st.target.id, []).append(st.annotation)
            elif type(st.target) is ast.Attribute:
                attr_declared.setdefault(st.target.attr, []).append(st.annotation)
        elif t is ast.With or t is ast.AsyncWith:
            for item in st.items:
                if type(item.optional_vars) is ast.Attribute:
                    attrs.setdefault(item.optional_vars.attr, []).append(item.context_expr)
    return attrs, declared, attr_declared, imported


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_value_tables_read_the_statements_in_the_same_order(path):
    tree = Tree(ast.parse(path.read_bytes()))
    names, attrs, imported, declared, attr_declared, *_ = R._Values._tables(tree)
    old_attrs, old_declared, old_attr_declared, old_imported = _old_statement_tables(tree)
    ids = lambda table: {k: [id(v) for v in vs] for k, vs in table.items()}  # noqa: E731
    assert imported == old_imported
    assert ids(attr_declared) == ids(old_attr_declared)
    # parameters' annotations come after the statements' (as before)
    assert {k: vs[:len(old_declared.get(k, ()))] for k, vs in ids(declared).items() if k in old_declared} \
        == ids(old_declared)
    # ``with ... as self.x`` values come after the assignments' (as before)
    assert {k: vs[-len(old_attrs[k]):] for k, vs in ids(attrs).items() if k in old_attrs} == ids(old_attrs)


_CALLERS = '''
class C:
    def a(self):
        return self.b()

    def b(self):
        return open("x")

    def d(self):
        return self.a()


def b():
    return 1


def e():
    return b()


async def main(c):
    c.a()
    b()
    await c.d()
'''


@pytest.mark.parametrize("source", [_CALLERS, *FILES], ids=["callers", *(p.name for p in FILES)])
def test_callers_outside_the_reachable_functions_do_not_change_the_answer(source):
    """``_reaching(..., among=reachable)`` gives a call of ``calling`` the same match as
    ``_reaching`` over every function, for ``direct`` each single reachable function, all of
    them, and the first half."""
    tree = Tree(ast.parse(source.read_bytes() if isinstance(source, Path) else source))
    calls = [c for fn in tree.functions if fn.is_async for c, awaited, lam in fn.calls if not awaited and not lam]
    classes = {c.name for c in tree.classes}
    sync = [fn for fn in tree.functions if not fn.is_async]
    names = {fn.name for fn in sync}
    methods = {fn.name for fn in sync if fn.cls is not None}
    calling = [c for c in calls if R._may_resolve_to(tree, c, names, methods, classes)]
    reachable = R._reachable(sync, calling, classes)
    for direct in [*([fn] for fn in reachable), reachable, reachable[:len(reachable) // 2]]:
        every = R._reaching(tree, direct, depth=2)
        some = R._reaching(tree, direct, depth=2, among=reachable)
        assert any(R._may_resolve_to(tree, c, *every, classes) for c in calling) == \
            any(R._may_resolve_to(tree, c, *some, classes) for c in calling)


_GATHER_ALIASES = {
    "imported": "from asyncio import gather as g\nasync def f():\n    await g(open_session(), open_session())\n",
    "bound": "import asyncio\ng = asyncio.gather\nasync def f():\n    await g(open_session(), open_session())\n",
    "attribute": "import asyncio\nclass C:\n    def __init__(self):\n        self.g = asyncio.gather\n"
                 "    async def f(self):\n        await self.g(open_session(), open_session())\n",
    "plain": "import asyncio\nasync def f():\n    await asyncio.gather(open_session(), open_session())\n",
}


@pytest.mark.parametrize("source", [*_GATHER_ALIASES.values(), *FILES],
                         ids=[*_GATHER_ALIASES, *(p.name for p in FILES)])
def test_shd101_gathers_found_by_spelling_first(source, monkeypatch):
    """SHD101's condition answers as when every call is asked ``may_call_any`` (no spelling test
    first), through aliases of ``gather`` too (each of ``_GATHER_ALIASES`` is a candidate)."""
    import shutdown_lint.rules.shd101_gather_without_taskgroup as G

    source = source.read_bytes() if isinstance(source, Path) else source.encode()
    got = G._may_gather(Tree(ast.parse(source)))
    monkeypatch.setattr(Tree, "may_call_word", lambda self, call, lasts, aliased: True)
    assert got == G._may_gather(Tree(ast.parse(source)))
    assert got or source.decode() not in _GATHER_ALIASES.values()
