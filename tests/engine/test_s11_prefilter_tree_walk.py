"""``Tree._collect``'s one walk (session 11: ``Attribute`` and ``Call`` children pushed where they are
met, the other nodes' children read with one ``attrgetter`` call, no ``isinstance`` per child) must
give every summary the walk before it gave: the same functions, calls (awaited, in a lambda),
raises, ``try``s, classes, methods, bindings, imports, assignments, handlers, main guard and
mentioned names, in the same order. The walk before it is kept here as the oracle (``_Before``)."""

from __future__ import annotations

import ast
import pathlib
import sys
import warnings
from typing import Optional

import pytest

from shutdown_lint.prefilter import ast_tree as A


class _Before(A.Tree):
    """The ``Tree`` with the walk of b3d6c6f."""

    def _collect(self) -> None:
        # iterative: deeply nested files must not hit the recursion limit here. The stack holds
        # bare nodes, in the state (function, in a lambda, class) of the node popped last; a
        # def, a class or a lambda changes the state for its children and pushes the state to
        # restore first (a tuple), which is popped once they are all done (a tuple per node
        # cost ~4% of this walk)
        stack: list = [self.module]
        fn: Optional[A.Function] = None
        in_lambda = False
        cls: Optional[ast.ClassDef] = None
        awaited: set[int] = set()
        FunctionDef, AsyncFunctionDef, ClassDef, Lambda = ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda
        Call, Await, Raise, Name, Constant, Attribute = ast.Call, ast.Await, ast.Raise, ast.Name, ast.Constant, ast.Attribute
        trys = A.TRYS
        AST, mentioned = ast.AST, self.mentioned
        reacts = A._REACTS
        fields_of = A._FIELDS_BACKWARDS
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            t = type(node)  # never a Name or a Constant: those are not pushed (below)
            if t is tuple:  # a def's, class's or lambda's children are done: the state outside it
                fn, in_lambda, cls = node
                continue
            if t is Attribute:  # the commonest nodes the walk reacts to first
                mentioned.add(node.attr)
            elif t is Call:
                entry = (node, id(node) in awaited, in_lambda)
                (fn.calls if fn is not None else self.module_calls).append(entry)
            elif t in reacts:  # most nodes (expressions, arguments, keywords) are none of these
                if t is ast.alias:
                    mentioned.add(node.name.rsplit(".", 1)[-1])
                elif t is FunctionDef or t is AsyncFunctionDef:
                    info = A.Function(node, cls)
                    self.functions.append(info)
                    if cls is not None:
                        self.methods.setdefault(id(cls), []).append(info)
                    push((fn, in_lambda, cls))
                    fn, in_lambda, cls = info, False, None
                elif t is ClassDef:
                    self.classes.append(node)
                    push((fn, in_lambda, cls))
                    cls = node
                elif t is Lambda:
                    push((fn, in_lambda, cls))
                    in_lambda = True
                elif t is Await:
                    if type(node.value) is Call:
                        awaited.add(id(node.value))
                elif t is Raise:
                    if fn is not None:
                        fn.raises.append(node)
                elif t in trys:
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
                        A._mention_string_annotation(node.annotation, mentioned)
                elif t is ast.arg:
                    if node.annotation is not None:
                        A._mention_string_annotation(node.annotation, mentioned)
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
                elif t is ast.If and fn is None and cls is None and A.is_main_guard(node.test):
                    self.has_main_guard = True
            # ``cls`` reaches everything under a class body (an ``if`` in it too) until a
            # def resets it, as in the facts' collector. Children are pushed last field
            # first, each list from its end, so that they are popped in source order,
            # without ``ast.iter_child_nodes``' generators: this loop is most of the tier's
            # cost after the parse.
            # Only the fields that can hold a node count (``_fields``: not names, numbers, strings,
            # nor the ``Load``/``Add``/``Eq`` markers that have no fields).
            fields = fields_of.get(t)
            if fields is None:
                fields = fields_of[t] = tuple(reversed(A._fields(t)))
            for field in fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    for c in reversed(value):
                        tc = type(c)
                        if tc is Name:
                            mentioned.add(c.id)
                        elif tc is not Constant and isinstance(c, AST):
                            push(c)
                elif value is not None:
                    tv = type(value)
                    if tv is Name:
                        mentioned.add(value.id)
                    elif tv is not Constant and isinstance(value, AST):
                        push(value)


def _snapshot(tree: A.Tree) -> dict:
    index = {id(f): i for i, f in enumerate(tree.functions)}

    def calls(cs):
        return [(id(c), awaited, lam) for c, awaited, lam in cs]

    return dict(
        functions=[(id(f.node), f.name, f.is_async, calls(f.calls), [id(r) for r in f.raises],
                    [id(t) for t in f.trys], None if f.cls is None else id(f.cls), f.in_class) for f in tree.functions],
        module_calls=calls(tree.module_calls), classes=[id(c) for c in tree.classes],
        bindings=[(n, id(v)) for n, v in tree._bindings], attr_bindings=[(n, id(v)) for n, v in tree._attr_bindings],
        imports=list(tree._imports),
        assigns=[(id(t), id(v), None if f is None else index[id(f)]) for t, v, f in tree.assigns],
        methods={k: [index[id(f)] for f in v] for k, v in tree.methods.items()}, main=tree.has_main_guard,
        handlers=[id(h) for h in tree.handlers], mentioned=tree.mentioned, attributes=sorted(vars(tree)))


_SNIPPETS = [
    "x = f(a, *b, k=v, j=g(h), **kw)\nx.y.z = obj.attr(1)[i:j]\n",
    "async def f():\n    await g(a)\n    await x.h\n    t = create_task(c())\n    lambda: m(await_ := 1)\n",
    "class C(B, metaclass=M):\n    x: 'io.TextIOWrapper' = open(p)\n    def m(self, a: 'httpx.Client' = d()):\n"
    "        raise E from e\n    if __name__ == '__main__':\n        pass\n",
    "if __name__ == '__main__':\n    main()\nelif '__main__' == __name__:\n    other()\n",
    "import a.b as c, d\nfrom e import f as g, h\nfrom . import i as j\nfrom k import *\n",
    "try:\n    x()\nexcept (A, B) as e:\n    raise\nelse:\n    y()\nfinally:\n    z()\n",
    "def f():\n    try:\n        pass\n    except* E:\n        pass\n",
    "with a() as b, c as (d, e), f() as g.h:\n    (i := j(k))\n",
    "d = {**a, 'k': v, None: w}\nl = [x for x in y if p(x)]\ns = {k: v for k, v in z}\ng = (q for q in r)\n",
    "match p:\n    case C(x=1, y=[a, *rest]) if g(a):\n        h()\n    case {'k': v, **kw}:\n        pass\n",
    "a = b = c()\nx, y = f()\nz: int\nw: 'T' = u\nself.s = s.t\n",
    "@dec(a)\n@other\ndef f(x, /, y=1, *a, k=f(), **kw) -> 'R':\n    def g():\n        return lambda q: q.r()\n"
    "    return g\n",
    "f'{a!r:>{w}} {b.c()}'\nx = -y + z * ~w\nv = not (a and b or c)\nassert q, msg\ndel a[b], c.d\n",
    "global g\nfor i in range(3):\n    while not done(i):\n        break\nelse:\n    continue_()\n",
    "async def f():\n    async for a in b():\n        async with c() as d:\n            await asyncio.gather(*t)\n",
    "x = (yield)\ny = yield from z()\nl = lambda: (lambda: k())()\n",
]


def _sources() -> list[tuple[str, str]]:
    out = [(f"snippet {i}", s) for i, s in enumerate(_SNIPPETS)]
    root = pathlib.Path(__file__).resolve().parents[2]
    lib = pathlib.Path(ast.__file__).parent
    for path in sorted([*(root / "shutdown_lint").rglob("*.py"), *(root / "rules").glob("*.py"),
                        *(lib / "asyncio").glob("*.py"), *(lib / "concurrent").rglob("*.py"),
                        lib / "subprocess.py", lib / "threading.py", lib / "typing.py", lib / "ast.py"]):
        out.append((str(path), path.read_text(encoding="utf-8")))
    return out


def test_the_walk_gives_what_the_walk_before_it_gave():
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, source in _sources():
            module = ast.parse(source)
            assert _snapshot(A.Tree(module)) == _snapshot(_Before(module)), name
            checked += 1
    assert checked > 100


def test_snippets_parse_and_exercise_the_reactions():
    trees = [A.Tree(ast.parse(s)) for s in _SNIPPETS]
    assert any(t.has_main_guard for t in trees)
    assert any(t.handlers for t in trees) and any(t._imports for t in trees) and any(t.methods for t in trees)
    assert any(awaited for t in trees for f in t.functions for _, awaited, _ in f.calls)
    assert any(lam for t in trees for f in t.functions for _, _, lam in f.calls)
    assert {"io", "TextIOWrapper", "httpx", "Client"} <= set().union(*(t.mentioned for t in trees))


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="the parser's node types as of 3.8-3.13")
def test_the_fields_read_are_declared_as_nodes():
    # ``_collect``, ``walk`` and ``children`` test a child only for None (and Name, Constant): the
    # fields they read must be declared (ASDL) as nodes, which the parser fills with nodes or None only
    deprecated = {"Num", "Str", "Bytes", "NameConstant", "Ellipsis", "Index", "ExtSlice", "Suite", "Param",
                  "AugLoad", "AugStore"}
    for t in (c for c in vars(ast).values() if isinstance(c, type) and issubclass(c, ast.AST)):
        if t.__name__ in deprecated:
            continue
        declared = A._declared(t)
        for field in (*A._fields(t), *A._node_fields(t)):  # ``Tree._collect``'s; ``walk``'s and ``children``'s
            assert declared.get(field) not in (None, *A._VALUES), (t.__name__, field)
