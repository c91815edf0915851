"""One module's summary for the project index, built with ``ast`` (not libcst).

What other modules need to know about a module, and nothing else: its imports, its
top-level functions, its classes (bases, methods, ``self.x = Cls(...)`` attribute types),
the plain types of module-level variables (``env = SandboxEnv(...)``), and per function
the facts the cross-module rules read: coroutine or not, ``finally`` blocks and
``async with`` items (resource ownership), broad handlers and whether they swallow,
what a ``finally`` raises, exits, task spawns, and every call (as written, with whether it
sits in a ``finally``/``except`` block).

Names are stored as written (``dist.destroy_process_group``, ``.env.SandboxEnv``) together
with the module's imports: ``project.py`` resolves them, so a summary does not depend on
the module's name and can be cached by the file's content hash alone.

Why ``ast``: measured on the reference corpus, ``ast.parse`` plus this walk costs a small
fraction of a libcst parse (see ``bench/bench_index.py``), and the summary needs no
round-trip to source text.
"""

from __future__ import annotations

import ast
import bisect
import functools
import hashlib
import json
import warnings
from typing import Any, Optional

#: Bump when the shape of a summary changes (cached summaries of other versions are ignored).
SUMMARY_VERSION = 4

#: Flag bits of a recorded call.
IN_CLEANUP = 1  # in a ``finally`` or ``except`` block of the same function
AWAITED = 2

_BROAD = ("Exception", "BaseException")
_SPAWN_LAST = ("create_task", "ensure_future", "start_soon")
_EXIT_CALLS = ("sys.exit", "os._exit", "exit", "quit")
_REGISTRARS = ("atexit.register", "signal.signal", "loop.add_signal_handler", "add_signal_handler")


def summarize(source: bytes, path: str = "<string>") -> Optional[dict]:
    """The summary of one module's source, or None when it does not parse. For a
    ``pyproject.toml``: its console scripts (``{"scripts": {name: "pkg.mod:func"}}``), so that
    a result that depends on them is re-linted when they change (``store.stale``)."""
    if path.endswith("pyproject.toml"):
        return _scripts(source)
    from ..prefilter.ast_tree import cached

    # the candidate tier of this process may have parsed these very bytes a moment ago (a
    # rule asking about the file it lints, or the module it just linted): the same tree
    tree = cached(source)
    parsed_here = tree is None
    if parsed_here:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tree = ast.parse(source, path)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    try:
        out = _ModuleSummarizer().run(tree)
        if b"remote" in source:  # two more walks of the tree: only where ray.remote can be spelled
            remote = _remote_targets(tree, source)
            if remote:
                out["remote"] = remote
    except RecursionError:
        return None
    if parsed_here:
        # a file of the run not linted yet: its candidate tiers on this parse, not on another
        from ..prefilter.ahead import judge

        judge(path, source, tree)
    return out


def digest(summary: Optional[dict]) -> str:
    """A short hash of a summary: what a dependent file's findings may depend on."""
    text = json.dumps(summary, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_Name, _Attribute, _Constant, _Call = ast.Name, ast.Attribute, ast.Constant, ast.Call


def dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a Name/Attribute chain; ``Cls`` for ``Cls(...)``'s func; else None."""
    t = type(node)
    if t is _Name:  # the parser's own classes first: most names are one or two words
        return node.id  # type: ignore[attr-defined]
    if t is _Attribute:
        base = node.value  # type: ignore[attr-defined]
        if type(base) is _Name:
            return f"{base.id}.{node.attr}"  # type: ignore[attr-defined]
    elif t is _Constant or t is _Call:
        return None
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class _ModuleSummarizer:
    def run(self, tree: ast.Module) -> dict:
        out: dict[str, Any] = {"v": SUMMARY_VERSION, "imports": {}, "star": [], "vars": {},
                               "functions": {}, "classes": {}, "registered": []}
        for stmt in tree.body:
            self._top(stmt, out)
        # the calls the ``__main__`` block ends the process with (``tails.py``); what
        # ``ray.remote(X)`` makes an actor anywhere in the module is added by ``summarize``
        main_tail: list[str] = []
        for stmt in tree.body:
            if isinstance(stmt, ast.If) and _is_main_guard(stmt.test):
                main_tail += _tail_calls(stmt.body)
        if main_tail:
            out["main_tail"] = main_tail
        return out

    def _top(self, stmt: ast.stmt, out: dict) -> None:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _imports(stmt, out["imports"], out["star"])
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out["functions"][stmt.name] = _function(stmt)
        elif isinstance(stmt, ast.ClassDef):
            out["classes"][stmt.name] = _class(stmt)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            typ = _value_type(value) if value is not None else None
            for t in targets:
                if isinstance(t, ast.Name) and typ:
                    out["vars"][t.id] = typ
        elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
            # `if TYPE_CHECKING:` imports, `try: import x except ImportError:`, `__main__` blocks
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.stmt):
                    self._top(child, out)
            for h in getattr(stmt, "handlers", ()):
                for child in h.body:
                    self._top(child, out)
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            _registration(stmt.value, out["registered"])


def _imports(stmt: ast.stmt, table: dict, star: list) -> None:
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                table[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                table[top] = top
        return
    assert isinstance(stmt, ast.ImportFrom)
    base = "." * (stmt.level or 0) + (stmt.module or "")
    for a in stmt.names:
        if a.name == "*":
            star.append(base)
            continue
        local = a.asname or a.name
        table[local] = f"{base}.{a.name}" if base and not base.endswith(".") else f"{base}{a.name}"


def _value_type(value: ast.AST) -> Optional[str]:
    """``Cls(...)`` / ``await Cls.create(...)`` -> the callee as written, when it names a class
    by convention (capitalised last part); ``factory()`` is recorded too, marked ``()``."""
    if isinstance(value, ast.Await):
        value = value.value
    if isinstance(value, ast.Call):
        name = dotted(value.func)
        if name:
            return name if name.rsplit(".", 1)[-1][:1].isupper() else name + "()"
    return None


#: the parser's expression classes ``_value_type`` gives None for whatever they hold (not a
#: ``Call`` or an ``Await``)
_UNTYPED = frozenset({ast.Name, ast.Constant, ast.Attribute, ast.Subscript, ast.Tuple, ast.List, ast.Dict, ast.Set,
                      ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.JoinedStr, ast.IfExp, ast.Lambda,
                      ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Yield, ast.YieldFrom,
                      ast.NamedExpr, ast.Starred})


def _registration(call: ast.Call, registered: list) -> None:
    """``atexit.register(f)`` / ``signal.signal(SIGTERM, f)`` / ``loop.add_signal_handler(s, f)``."""
    name = dotted(call.func) or ""
    if not name.endswith(("atexit.register", "signal.signal", "add_signal_handler", "register")):
        return
    for a in call.args:
        target = dotted(a)
        if target and not target.startswith("signal."):
            registered.append(target)


def _class(node: ast.ClassDef) -> dict:
    methods: dict[str, dict] = {}
    attrs: dict[str, str] = {}
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            fn = _function(stmt)
            methods[stmt.name] = fn
            attrs.update({k: v for k, v in fn.pop("self_attrs", {}).items() if k not in attrs})
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            typ = _value_type(stmt.value)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name) and typ:
                    attrs.setdefault(t.id, typ)
    return {
        "line": node.lineno,
        "bases": [b for b in (dotted(x) for x in node.bases) if b],
        "decorators": [d for d in (dotted(x.func if isinstance(x, ast.Call) else x) for x in node.decorator_list) if d],
        "methods": methods,
        "attrs": attrs,
    }


def _function(node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict:
    w = _FunctionWalker()
    for stmt in node.body:
        w.visit(stmt)
    params: dict[str, str] = {}
    args = node.args
    for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        ann = a.annotation
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            ann = _parse_annotation(ann.value)
        name = dotted(ann) if ann is not None else None
        if name:
            params[a.arg] = name
    out: dict[str, Any] = {
        "line": node.lineno,
        "async": isinstance(node, ast.AsyncFunctionDef),
        "finally": w.finally_lines,
        "async_with": w.async_with,
        "broad": w.broad_lines,
        "swallows": _swallows_errors(node.body),
        "finally_raises": w.finally_raises,
        "exits": w.exits,
        "spawns": w.spawns,
        "calls": w.calls,
        "imports": w.imports,
        "params": params,
    }
    if w.self_attrs:
        out["self_attrs"] = w.self_attrs
    returns = _returns(node.returns)
    if returns:
        out["returns"] = returns  # read by the typing fact (``c = open_client()``)
    tail = _tail_calls(node.body, node, sorted(w.bad_lines))
    if tail:
        out["tail"] = tail
    if _is_stub(node):
        out["stub"] = True
    return out


#: a string annotation's text -> its expression, None where it does not parse (``_parse_annotation``)
_ANNOTATIONS: dict[str, Optional[ast.expr]] = {}


def _parse_annotation(text: str) -> Optional[ast.expr]:
    """``ast.parse(text, mode="eval").body``, None on a SyntaxError; parsed once per text (the
    same quoted types recur across a package: ``"Dataset"``, ``"torch.Tensor"``). The trees are
    only read."""
    try:
        return _ANNOTATIONS[text]
    except KeyError:
        pass
    try:
        found: Optional[ast.expr] = ast.parse(text, mode="eval").body
    except SyntaxError:
        found = None
    if len(_ANNOTATIONS) >= 4096:
        _ANNOTATIONS.clear()
    _ANNOTATIONS[text] = found
    return found


def _returns(ann: Optional[ast.AST], depth: int = 0) -> Optional[str]:
    """A return annotation as written, one type: ``T``, ``"T"``, ``Optional[T]``, ``T | None``;
    a generic is its origin (``queue.Queue[int]`` -> ``queue.Queue``)."""
    if ann is None or depth > 4:
        return None
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        parsed = _parse_annotation(ann.value.strip())
        return None if parsed is None else _returns(parsed, depth + 1)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        sides = [x for x in (ann.left, ann.right) if not (isinstance(x, ast.Constant) and x.value is None)]
        return _returns(sides[0], depth + 1) if len(sides) == 1 else None
    if isinstance(ann, ast.Subscript):
        wrapper = (dotted(ann.value) or "").rsplit(".", 1)[-1]
        if wrapper in ("Optional", "Union", "Annotated", "Final"):
            args = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
            if wrapper in ("Annotated", "Final"):
                args = args[:1]
            args = [a for a in args if not (isinstance(a, ast.Constant) and a.value is None)]
            return _returns(args[0], depth + 1) if len(args) == 1 else None
        return dotted(ann.value)
    return dotted(ann)


#: ``ast`` nodes with nothing under them that the walker reacts to
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.Pass, ast.Break, ast.Continue,
                     *(c for base in (ast.operator, ast.unaryop, ast.cmpop, ast.boolop) for c in base.__subclasses__())})
#: node class -> the fields that can hold a node worth entering (``ast_tree.subtree_fields``:
#: not names and other plain values, contexts or operators), filled as classes are met
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(t: type) -> tuple[str, ...]:
    from ..prefilter.ast_tree import subtree_fields

    found = _CHILD_FIELDS[t] = subtree_fields(t)
    return found


#: value class -> what the walker's ``visit`` does with a value of it (filled as classes are
#: met, ``_action``): nothing (False: a leaf, None, a plain value), its ``visit_<Class>``
#: handler, ``generic_visit``, or, for a class without a handler whose one walked field holds
#: one node or None (``Attribute``, ``keyword``, ``Expr``, ``Starred``), that field's name: the
#: walk goes on with its value in the same loop (a chain ``a.b.c`` costs no call per link)
_ACTIONS: dict[type, Any] = {}


def _action(t: type) -> Any:
    from ..prefilter.ast_tree import signature

    if t in _LEAVES or not issubclass(t, ast.AST):
        act: Any = False
    else:
        act = getattr(_FunctionWalker, "visit_" + t.__name__, None)
        if act is None:
            fields = _CHILD_FIELDS[t] if t in _CHILD_FIELDS else _child_fields(t)
            mark = signature(t).get(fields[0], ("", "*"))[1] if len(fields) == 1 else "*"
            act = fields[0] if mark != "*" else _FunctionWalker.generic_visit
    _ACTIONS[t] = act
    return act


#: node class -> its walked children (``_CHILD_FIELDS``) in ``_fields`` order, None included
#: (``ast_tree.compiled_reader``: one compiled reader per class, where its signature declares
#: the fields), filled as classes are met
_READERS: dict[type, Any] = {}


def _reader(t: type) -> Any:
    from ..prefilter.ast_tree import compiled_reader

    found = _READERS[t] = compiled_reader(t) or functools.partial(_read_fields, _CHILD_FIELDS[t] if t in _CHILD_FIELDS
                                                              else _child_fields(t))
    return found


def _read_fields(fields: tuple[str, ...], node: ast.AST) -> list:
    out: list = []
    for field in fields:
        value = getattr(node, field, None)
        if type(value) is list:
            out += value
        else:
            out.append(value)
    return out


class _FunctionWalker(ast.NodeVisitor):
    """Walks one function body, not nested defs or classes.

    ``visit``/``generic_visit`` do what ``ast.NodeVisitor``'s do, with what to do with a node
    looked up once per node class (``_ACTIONS``): leaves (names, constants, contexts, operators)
    and None not visited, fields of plain values not read (``_CHILD_FIELDS``), the one field of
    a node class without a handler followed in the same loop (``Attribute``, ``keyword``,
    ``Expr``), and the handler of a child called from its parent's loop: the same summaries at
    less than half ``NodeVisitor``'s cost (summaries are most of the project index's cold cost;
    tests/engine/test_project_index.py compares)."""

    def visit(self, node: ast.AST) -> Any:
        actions = _ACTIONS
        while True:
            try:
                act = actions[type(node)]
            except KeyError:
                act = _action(type(node))
            if type(act) is str:
                node = getattr(node, act)
                continue
            return act(self, node) if act else None

    def generic_visit(self, node: ast.AST) -> None:
        actions = _ACTIONS
        try:
            read = _READERS[type(node)]
        except KeyError:
            read = _reader(type(node))
        for child in read(node):
            while True:
                try:
                    act = actions[type(child)]
                except KeyError:
                    act = _action(type(child))
                if type(act) is str:
                    child = getattr(child, act)
                    continue
                if act:
                    act(self, child)
                break

    def __init__(self) -> None:
        self.finally_lines: list[int] = []
        self.async_with: list[list] = []
        self.broad_lines: list[int] = []
        self.finally_raises: Optional[int] = None
        self.exits = False
        self.spawns = False
        self.calls: list[list] = []
        self.imports: dict[str, str] = {}
        self.self_attrs: dict[str, str] = {}
        self._cleanup_depth = 0
        self._finally_depth = 0
        self._awaited: set[int] = set()
        #: lines of a ``raise``, an exit call or a ``return <value>`` (``_tail_calls``)
        self.bad_lines: list[int] = []

    def visit_FunctionDef(self, node: ast.AST) -> None:
        return None

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        _imports(node, self.imports, [])

    visit_ImportFrom = visit_Import  # type: ignore[assignment]

    def _try(self, node: ast.Try) -> None:
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)
        self._cleanup_depth += 1
        for h in node.handlers:
            if h.type is None or (dotted(h.type) or "").rsplit(".", 1)[-1] in _BROAD or (
                    isinstance(h.type, ast.Tuple)
                    and any((dotted(e) or "").rsplit(".", 1)[-1] in _BROAD for e in h.type.elts)):
                self.broad_lines.append(h.lineno)
            for stmt in h.body:
                self.visit(stmt)
        if node.finalbody:
            self.finally_lines.append(node.finalbody[0].lineno)
            self._finally_depth += 1
            for stmt in node.finalbody:
                self.visit(stmt)
            self._finally_depth -= 1
        self._cleanup_depth -= 1

    visit_Try = _try
    visit_TryStar = _try

    def visit_Raise(self, node: ast.Raise) -> None:
        if self._finally_depth and self.finally_raises is None:
            self.finally_raises = node.lineno
        self.bad_lines.append(node.lineno)
        self.generic_visit(node)

    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is not None:
            if not (isinstance(value, ast.Constant) and value.value is None):
                self.bad_lines.append(node.lineno)
            if type(value) not in _LEAVES:  # ``generic_visit``: its one field
                self.visit(value)

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        for item in node.items:
            expr = item.context_expr
            text = dotted(expr.func if isinstance(expr, ast.Call) else expr) or ""
            # a bare name (``async with ctx``) says nothing about what it holds: marked ``?``
            self.async_with.append([text if isinstance(expr, ast.Call) else text + "?", node.lineno])
        self.generic_visit(node)

    def visit_Await(self, node: ast.Await) -> None:
        if isinstance(node.value, ast.Call):
            self._awaited.add(id(node.value))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        typ = None if type(node.value) in _UNTYPED else _value_type(node.value)
        if typ:
            for t in node.targets:
                if (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"):
                    self.self_attrs.setdefault(t.attr, typ)
        for t in node.targets:  # ``generic_visit``: the targets, then the value
            if type(t) not in _LEAVES:
                self.visit(t)
        if type(node.value) not in _LEAVES:
            self.visit(node.value)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if type(func) is _Name:  # ``dotted``'s commonest cases, without the call
            name: Optional[str] = func.id
        elif type(func) is _Attribute and type(func.value) is _Name:
            name = f"{func.value.id}.{func.attr}"
        else:
            name = dotted(func)
        if name:
            flags = IN_CLEANUP if self._cleanup_depth else 0
            if self._awaited and id(node) in self._awaited:
                flags |= AWAITED
            entry = [name, node.lineno, flags]
            # what the call hands over: `shutdown_executor(self.pool)`, `atexit.register(f)`
            args = []
            for a in node.args:
                if type(a) is _Name:
                    args.append(a.id)
                elif type(a) is not _Constant:
                    d = dotted(a)
                    if d:
                        args.append(d)
            if args:
                entry.append(args)
            self.calls.append(entry)
            if name.endswith(_SPAWN_LAST) and name.rsplit(".", 1)[-1] in _SPAWN_LAST:
                self.spawns = True
            if name in _EXITS_BY_NAME:
                self.bad_lines.append(node.lineno)
                if name in _EXIT_CALLS:
                    self.exits = True
        else:  # a callee that is no Name/Attribute chain holds nodes to walk: ``f()()``, ``a[0].b()``
            self.visit(func)
        # ``generic_visit`` of the rest, without its reader: the arguments, then the keywords' values
        for a in node.args:
            if type(a) not in _LEAVES:
                self.visit(a)
        for k in node.keywords:
            if type(k.value) not in _LEAVES:
                self.visit(k.value)


def _swallows_errors(body: list[ast.stmt]) -> bool:
    """The body catches every ``Exception`` (directly or in each loop iteration) and nothing
    escapes: no ``raise`` in a broad handler, none in a ``finally`` (SHD102's notion, on ``ast``)."""
    guarded = False
    for st in body:
        if isinstance(st, ast.Try):
            broad = [h for h in st.handlers
                     if h.type is None or (dotted(h.type) or "").rsplit(".", 1)[-1] in _BROAD]
            if not broad or any(_raises(h.body) for h in broad) or st.orelse:
                return False
            if st.finalbody and _raises(st.finalbody):
                return False
            guarded = True
        elif isinstance(st, (ast.While, ast.For, ast.AsyncFor)) and not st.orelse:
            if not _swallows_errors(st.body):
                return False
            guarded = True
        elif not _bookkeeping(st):
            return False
    return guarded


def _bookkeeping(st: ast.stmt) -> bool:
    if isinstance(st, ast.If):
        return all(_bookkeeping(s) for s in [*st.body, *st.orelse])
    if isinstance(st, (ast.Pass, ast.Assert, ast.Continue, ast.Break, ast.Assign, ast.AnnAssign,
                       ast.AugAssign, ast.Nonlocal, ast.Global)):
        return True
    if isinstance(st, ast.Expr):
        v = st.value
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return True
        if isinstance(v, ast.Await) and isinstance(v.value, ast.Call) and (dotted(v.value.func) or "").endswith("sleep"):
            return True
    return False


def _raises(body: list[ast.stmt]) -> bool:
    for st in body:
        for node in ast.walk(st):
            if isinstance(node, ast.Raise):
                return True
    return False


# ---------------------------------------------------------------------- tails and stubs
_EXITS_BY_NAME = frozenset({"sys.exit", "os._exit", "exit", "quit", "os.abort"})


def _is_main_guard(test: ast.AST) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides) and any(
        isinstance(x, ast.Constant) and x.value == "__main__" for x in sides)


def _local_types(node: ast.AST) -> dict[str, str]:
    """``x = Cls(...)`` in a function body (not nested defs): ``x -> Cls`` when every plain
    assignment of ``x`` there names the same class (by convention: a capitalised callee)."""
    seen: dict[str, Optional[str]] = {}
    todo = list(getattr(node, "body", []))
    while todo:
        st = todo.pop()
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            typ = _value_type(st.value)
            for t in targets:
                if isinstance(t, ast.Name):
                    ok = typ is not None and not typ.endswith("()")
                    seen[t.id] = typ if ok and seen.get(t.id, typ) == typ else None
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                if isinstance(item.optional_vars, ast.Name):
                    seen[item.optional_vars.id] = None
        t = type(st)
        fields = _STMT_FIELDS[t] if t in _STMT_FIELDS else _stmt_fields(t)
        if fields is None:
            todo.extend(c for c in ast.iter_child_nodes(st) if isinstance(c, ast.stmt))
        else:
            for field in fields:
                todo += getattr(st, field)
    return {k: v for k, v in seen.items() if v}


#: statement class -> the fields that hold statements (``For``: ``body``, ``orelse``), read from
#: its signature; None for a class without one (its children are found the slow way)
_STMT_FIELDS: dict[type, Optional[tuple[str, ...]]] = {}


def _stmt_fields(t: type) -> Optional[tuple[str, ...]]:
    from ..prefilter.ast_tree import signature

    declared = signature(t)
    found = _STMT_FIELDS[t] = tuple(f for f in t._fields if declared[f][0] == "stmt") \
        if declared and all(f in declared for f in t._fields) else None if t._fields else ()
    return found


def _callee_written(call: ast.Call, local: dict[str, str]) -> Optional[str]:
    """The callee as written, with a local instance's name replaced by its class
    (``trainer.fit`` -> ``Trainer.fit``; ``Trainer(cfg).fit`` -> ``Trainer.fit``)."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        inner = _value_type(func.value)
        if inner and not inner.endswith("()"):
            return f"{inner}.{func.attr}"
        return None
    name = dotted(func)
    if name is None:
        return None
    first, _, rest = name.partition(".")
    if rest and first in local:
        return f"{local[first]}.{rest}"
    return name


def _tail_call(st: ast.stmt) -> Optional[ast.Call]:
    """What the statement calls when it is a call whose return leaves nothing to do: ``f()``,
    ``await f()``, ``asyncio.run(f())``, ``sys.exit(f())`` (``sys.exit(asyncio.run(f()))``)."""
    if not isinstance(st, ast.Expr):
        return None
    value = st.value
    if isinstance(value, ast.Await):
        value = value.value
    if not isinstance(value, ast.Call):
        return None
    for _ in range(2):
        name = dotted(value.func) or ""
        if name in ("sys.exit", "asyncio.run", "anyio.run", "trio.run", "uvloop.run") and len(value.args) == 1 \
                and not value.keywords and isinstance(value.args[0], ast.Call):
            value = value.args[0]
            continue
        break
    if (dotted(value.func) or "") in _EXITS_BY_NAME:
        return None
    return value


def _ends_badly(stmts: list[ast.stmt]) -> bool:
    """Some statement raises, exits or returns a value (the status under ``sys.exit(f())``)."""
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.Raise):
                return True
            if isinstance(node, ast.Return) and node.value is not None and not (
                    isinstance(node.value, ast.Constant) and node.value.value is None):
                return True
            if isinstance(node, ast.Call) and (dotted(node.func) or "") in _EXITS_BY_NAME:
                return True
    return False


def _tail_calls(body: list[ast.stmt], node: Optional[ast.AST] = None, bad_lines: Optional[list[int]] = None
                ) -> list[str]:
    """The calls of ``body`` after whose normal return the body ends with nothing that raises,
    exits or returns a value: a call statement, not in a loop, followed (in its block and the
    blocks around it: an ``else``/``finally`` of its ``try`` included) by such code only.
    Walked from the end: once later code is known to raise or exit, nothing earlier is read.
    ``bad_lines`` (sorted; from the function's walk): where it raises, exits or returns a value;
    without them (the ``__main__`` block) each statement is walked."""
    out: list[ast.Call] = []
    _tail_block(body, False, bad_lines, out)
    if not out:
        return []
    local = _local_types(node) if node is not None and any(
        isinstance(c.func, ast.Attribute) for c in out) else {}
    names: list[str] = []
    for call in reversed(out):
        name = _callee_written(call, local)
        if name and name not in names:
            names.append(name)
    return names


def _ends_badly_at(stmts: list[ast.stmt], bad_lines: Optional[list[int]]) -> bool:
    """``_ends_badly(stmts)``, told by the function's ``bad_lines`` where there are some."""
    if bad_lines is None:
        return _ends_badly(stmts)
    for st in stmts:
        i = bisect.bisect_left(bad_lines, st.lineno)
        if i < len(bad_lines) and bad_lines[i] <= (st.end_lineno or st.lineno):
            return True
    return False


def _tail_block(stmts: list[ast.stmt], bad: bool, bad_lines: Optional[list[int]], out: list[ast.Call]) -> None:
    """``_tail_calls``' walk of one block, from its end: ``bad`` when what follows the block
    raises or exits; the tail calls found are added to ``out``."""
    for st in reversed(stmts):
        if bad:
            return
        if isinstance(st, ast.If):
            _tail_block(st.body, bad, bad_lines, out)
            _tail_block(st.orelse, bad, bad_lines, out)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            _tail_block(st.body, bad, bad_lines, out)
        elif isinstance(st, TRYS):
            tail_bad = _ends_badly_at(st.finalbody, bad_lines)
            if not tail_bad:
                _tail_block(st.orelse, False, bad_lines, out)
                for h in st.handlers:
                    _tail_block(h.body, False, bad_lines, out)
                _tail_block(st.body, _ends_badly_at(st.orelse, bad_lines), bad_lines, out)
            _tail_block(st.finalbody, False, bad_lines, out)
        elif isinstance(st, ast.Expr):  # (``_tail_call`` is None for any other statement)
            call = _tail_call(st)
            if call is not None:
                out.append(call)
        if bad_lines is None:
            bad = _ends_badly([st])
        elif bad_lines:  # (none: nothing ends badly)
            i = bisect.bisect_left(bad_lines, st.lineno)
            bad = i < len(bad_lines) and bad_lines[i] <= (st.end_lineno or st.lineno)


TRYS = (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ())


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """An abstract method or a stub: ``@abstractmethod``, or a body of only a docstring,
    ``pass``, ``...`` and ``raise NotImplementedError``."""
    for d in node.decorator_list:
        if (dotted(d) or "").rsplit(".", 1)[-1] in ("abstractmethod", "abstractproperty"):
            return True
    for st in node.body:
        if isinstance(st, ast.Pass):
            continue
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and (
                isinstance(st.value.value, str) or st.value.value is Ellipsis):
            continue
        if isinstance(st, ast.Raise) and st.exc is not None and (
                dotted(st.exc.func if isinstance(st.exc, ast.Call) else st.exc) or "") == "NotImplementedError":
            continue
        return False
    return True


def _remote_targets(tree: ast.Module, source: Optional[bytes] = None) -> list[str]:
    """``callee:name`` for each name handed to ``ray.remote(X)`` / ``ray.remote(**options)(X)``
    anywhere in the module (as written; the reader checks through the imports that the callee is
    Ray's). A class defined inside a function (a factory: ``class Sub(Base): ...; return
    ray.remote(Sub)``, or decorated there) is recorded by its bases: what it makes remote that
    another module can name.

    With the module's ``source`` (when its lines can be told: ``_lines_near``), only the
    nodes whose lines spell ``remote`` are walked (a call of ``...remote`` and a class decorated
    with it spell it), and for the classes in functions only those whose lines spell ``class``:
    the same nodes in the same order as the whole walk's, less those that cannot count."""
    remote_lines = _lines_near(source, b"remote") if source is not None else None
    nodes = _walk(tree) if remote_lines is None else _walk_near(tree, remote_lines)
    local: dict[str, list[str]] = {}
    top = {id(st) for st in tree.body}
    handed: list[tuple[str, str]] = []
    for node in nodes:
        if type(node) is ast.ClassDef and id(node) not in top:
            if remote_lines is None:
                local.setdefault(node.name, []).extend(b for b in (dotted(x) for x in node.bases) if b)
            for d in node.decorator_list:
                callee = dotted(d.func if isinstance(d, ast.Call) else d) or ""
                if callee.rsplit(".", 1)[-1] == "remote":
                    handed.append((callee, node.name))
        elif type(node) is ast.Call and len(node.args) == 1 and not node.keywords:
            func = node.func
            callee = dotted(func.func) if isinstance(func, ast.Call) else dotted(func)
            if callee and callee.rsplit(".", 1)[-1] == "remote":
                target = dotted(node.args[0])
                if target:
                    handed.append((callee, target))
    if remote_lines is not None and any("." not in target for _, target in handed):
        for node in _walk_near(tree, _lines_near(source, b"class") or []):  # type: ignore[arg-type]
            if type(node) is ast.ClassDef and id(node) not in top:
                local.setdefault(node.name, []).extend(b for b in (dotted(x) for x in node.bases) if b)
    out: list[str] = []
    for callee, target in handed:
        for t in local.get(target, [target]) if "." not in target else [target]:
            if f"{callee}:{t}" not in out:
                out.append(f"{callee}:{t}")
    return out


def _walk(tree: ast.AST) -> list[ast.AST]:
    """``ast.walk(tree)``'s nodes in its order (breadth first), less the leaves (names,
    constants, contexts, operators: nothing under them) and without its generators: the
    walk ``_remote_targets`` makes of every module that spells ``remote`` cost as much as
    the rest of its summary."""
    out: list[ast.AST] = [tree]
    leaves, AST, child = _LEAVES, ast.AST, _CHILD_FIELDS
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        t = type(node)
        for field in child.get(t) or _child_fields(t):
            value = getattr(node, field, None)
            if type(value) is list:
                out += [c for c in value if type(c) not in leaves and isinstance(c, AST)]
            elif type(value) not in leaves and isinstance(value, AST):
                out.append(value)
    return out


def _lines_near(source: bytes, word: bytes) -> Optional[list[int]]:
    """The lines a node that spells ``word`` in the ``ast`` must touch (sorted): those where the
    bytes spell it, and, in a module with non-ASCII bytes, every line with one (an identifier
    Python normalises to ``word`` has a non-ASCII character on its line: ``ｒemote``); None
    where lines cannot be told from the bytes (a lone ``\\r`` ends a line too)."""
    if b"\r" in source and source.count(b"\r") != source.count(b"\r\n"):
        return None
    out = _word_lines(source, word)
    if not source.isascii():
        wide: list[int] = []
        marked = source.translate(_MARK_HIGH)  # each non-ASCII byte is 0x80: one find, no regex
        line, at = 1, 0
        i = marked.find(b"\x80")
        while i >= 0:
            line += marked.count(b"\n", at, i)
            at = i
            wide.append(line)
            i = marked.find(b"\n", i)  # the next line
            if i < 0:
                break
            i = marked.find(b"\x80", i)
        out = sorted({*out, *wide})
    return out


#: ``bytes.translate`` table: ASCII bytes stay, the others become 0x80
_MARK_HIGH = bytes(range(128)) + b"\x80" * 128


def _word_lines(source: bytes, word: bytes) -> list[int]:
    """The numbers of the lines (ended by ``\\n``) where ``word`` occurs, sorted."""
    out: list[int] = []
    line, at = 1, 0
    i = source.find(word)
    while i >= 0:
        line += source.count(b"\n", at, i)
        at = i
        if not out or out[-1] != line:
            out.append(line)
        i = source.find(word, i + len(word))
    return out


def _walk_near(tree: ast.AST, lines: list[int]) -> list[ast.AST]:
    """``_walk(tree)`` less the nodes whose lines hold none of ``lines`` (sorted), and all under
    them: a pruned breadth-first walk keeps the order of the others. A decorated def or class
    starts at its first decorator; a node without lines (``arguments``, ``withitem``) stays."""
    out: list[ast.AST] = [tree]
    push = out.append
    leaves, AST, child = _LEAVES, ast.AST, _CHILD_FIELDS
    on, left, n = set(lines), bisect.bisect_left, len(lines)
    decorated = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    i = 0
    while i < len(out):
        node = out[i]
        i += 1
        t = type(node)
        for field in child.get(t) or _child_fields(t):
            value = getattr(node, field, None)
            for c in value if type(value) is list else (value,):
                tc = type(c)
                if tc in leaves or not isinstance(c, AST):
                    continue
                first = getattr(c, "lineno", None)
                if first is None:
                    push(c)
                    continue
                last = c.end_lineno or first  # type: ignore[attr-defined]
                if tc in decorated and c.decorator_list:  # type: ignore[attr-defined]
                    first = c.decorator_list[0].lineno  # type: ignore[attr-defined]
                if first == last:
                    if first in on:
                        push(c)
                else:
                    k = left(lines, first)
                    if k < n and lines[k] <= last:
                        push(c)
    return out


def _scripts(source: bytes) -> Optional[dict]:
    """``[project.scripts]``, ``[project.gui-scripts]`` and ``[tool.poetry.scripts]`` targets."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ImportError:
            return None
    try:
        data = tomllib.loads(source.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    found: dict[str, str] = {}
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    tool = data.get("tool") if isinstance(data.get("tool"), dict) else {}
    poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
    for table in (project.get("scripts"), project.get("gui-scripts"), poetry.get("scripts")):
        if isinstance(table, dict):
            for name, target in table.items():
                if isinstance(target, str) and ":" in target:
                    found[str(name)] = target.split("[", 1)[0].strip()
    return {"scripts": found}
