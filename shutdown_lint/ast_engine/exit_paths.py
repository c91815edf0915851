"""Exit paths (``facts.exit_paths``) on Python's ``ast`` (issue 30, session 9 S4).

The decisions are ``facts.exit_paths``' (``_WalkerBase``: how each statement leaves a block;
``ExitPathQueries``: the caching and the entrypoint questions); only the tree's answers are
written here: which kind of statement, its parts, the names libcst holds in ``Name`` nodes,
the source text of a target or an exception (``code_for_node``). Where the trees differ:

- a block is a list of statements (``a; b`` is two: walked one by one, as libcst walks the
  small statements of a line); ``elif`` is an ``else`` holding one ``if`` (the same answers);
- ``ExitPaths.swallowing_finally`` is the ``Try`` whose ``finally`` swallows (``ast`` has no
  ``Finally`` node); ``exit_paths`` takes an ``except`` handler or a ``finalbody`` list;
- a non-empty string literal is one string token with something between its quotes (libcst's
  ``SimpleString``; ``"a" "b"`` is a ``ConcatenatedString`` there, one ``Constant`` here).

``exit_paths_of(facts)`` gives the queries for ``AstFacts`` (which do not inherit them yet).
"""

from __future__ import annotations

import ast
import io
import tokenize
from functools import cached_property
from typing import TYPE_CHECKING, Optional, Sequence

from ..facts.exit_paths import (
    EXIT_FUNCTIONS, PROPAGATING, RETURN, STATUS_NONZERO, STATUS_UNKNOWN, STATUS_ZERO, ExitPathQueries, ExitPaths,
    _WalkerBase, catches_everything, paths_of,
)
from ..facts.model import FunctionInfo
from .walk import iter_children as _children

if TYPE_CHECKING:
    from .facts import AstFacts

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_TRYS = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_BODIES = ("body", "orelse", "finalbody")


def unnamed_arguments(call: ast.Call) -> list[ast.AST]:
    """The values of ``call``'s arguments that libcst gives no keyword (positional, ``*a``'s
    ``a``, ``**k``'s ``k``), in source order: libcst's ``[a.value for a in args if a.keyword is None]``."""
    values = [(a.value if type(a) is ast.Starred else a) for a in call.args]
    starred = [k for k in call.keywords if k.arg is None]
    if not starred:
        return values
    pairs = [((a.lineno, a.col_offset), v) for a, v in zip(call.args, values)]
    pairs += [((k.lineno, k.col_offset), k.value) for k in starred]
    return [v for _, v in sorted(pairs, key=lambda p: p[0])]


def _argument_count(call: ast.Call) -> int:
    return len(call.args) + len(call.keywords)


def _int(expr: ast.AST) -> Optional[int]:
    """The value of an integer literal (libcst's ``Integer``), else None."""
    if type(expr) is ast.Constant and type(expr.value) is int:
        return expr.value
    return None


class AstExitPathQueries(ExitPathQueries):
    """``ExitPathQueries`` on ``ast`` nodes."""

    def _compute_exit_paths(self, block) -> ExitPaths:
        """``block``: an ``except`` handler or a ``try``'s ``finalbody``."""
        if isinstance(block, ast.ExceptHandler):
            bound, body = block.name, block.body
        else:
            bound, body = None, block
        return paths_of(AstWalker(self, bound), body, bound, lambda: _uses_name(body, bound, skip_raise=True),
                        lambda: _reraised_later(self, block, bound), lambda: _yields(body))

    def exit_status(self, node: ast.AST) -> object:
        if isinstance(node, ast.Raise):
            exc = node.exc
            if exc is None:
                return STATUS_UNKNOWN
            target = exc.func if isinstance(exc, ast.Call) else exc
            if self.qualified_name(target, node) != "builtins.SystemExit":
                return STATUS_UNKNOWN
            args = unnamed_arguments(exc) if isinstance(exc, ast.Call) else []
            return _status_of_args(args, default=STATUS_ZERO)
        if isinstance(node, ast.Call):
            name = self.call_name(node)
            if name not in EXIT_FUNCTIONS:
                return STATUS_UNKNOWN
            args = unnamed_arguments(node)
            if name.endswith("hard_exit"):
                return _status_of_args(args, default=STATUS_NONZERO)  # hard_exit() defaults to 1
            if name == "os._exit" and not args:
                return STATUS_UNKNOWN  # a TypeError, not an exit
            return _status_of_args(args, default=STATUS_ZERO)
        return STATUS_UNKNOWN

    def is_exit(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            return self.call_name(node) in EXIT_FUNCTIONS
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc
            target = exc.func if isinstance(exc, ast.Call) else exc
            return self.qualified_name(target, node) == "builtins.SystemExit"
        return False

    @cached_property
    def signal_handlers(self) -> dict[ast.AST, frozenset[str]]:
        found: dict[ast.AST, set[str]] = {}
        for call in self.calls:
            name = self.call_name(call)
            if name not in ("signal.signal", "asyncio.AbstractEventLoop.add_signal_handler"):
                continue
            args = unnamed_arguments(call)
            if len(args) < 2:
                continue
            sig = _signal_name(args[0])
            if sig not in ("SIGINT", "SIGTERM"):
                continue
            handler = args[1]
            if isinstance(handler, ast.Lambda):
                found.setdefault(handler, set()).add(sig)
                continue
            fn = self.resolve_function(handler, call)
            if fn is not None:
                found.setdefault(fn.node, set()).add(sig)
        return {k: frozenset(v) for k, v in found.items()}

    def signal_handler_of(self, node: ast.AST) -> Optional[tuple[ast.AST, frozenset[str]]]:
        handlers = self.signal_handlers
        if not handlers:
            return None
        for anc in self.ancestors(node):
            if isinstance(anc, (*_DEFS, ast.Lambda)):
                sigs = handlers.get(anc)
                return (anc, sigs) if sigs else None
        return None

    # ------------------------------------------------------------------ tree reads of the entrypoint questions
    def _try_of(self, handler: ast.AST) -> Optional[ast.AST]:
        tr = self.parent(handler)
        return tr if isinstance(tr, _TRYS) else None

    @staticmethod
    def _finally_of(tr: ast.AST):
        return tr.finalbody or None

    @staticmethod
    def _handler_body(handler: ast.ExceptHandler):
        return handler.body

    def _loop_between(self, node: ast.AST, fn: Optional[FunctionInfo]) -> bool:
        return loop_between(self, node, fn)

    @staticmethod
    def _returns_only_none(body) -> bool:
        return returns_only_none(body)

    def _later_code_exits(self, stmt: ast.AST, fn: Optional[FunctionInfo]) -> bool:
        return later_code_exits(self, stmt, fn)

    @staticmethod
    def _is_call(node) -> bool:
        return isinstance(node, ast.Call)

    def _ends_entrypoint(self, call: ast.Call) -> bool:
        if not self.in_main_guard(call) or self.enclosing_function(call) is not None:
            return False
        stmt = self.enclosing_statement(call)
        if stmt is None or not self.simple_statement_line(call) or _shares_its_line(self, stmt):
            return False
        value = stmt.value if isinstance(stmt, ast.Expr) else None
        if value is not call:
            # sys.exit(main()): the return value becomes the status (None -> 0)
            if not (isinstance(value, ast.Call) and self.call_name(value) == "sys.exit"
                    and _argument_count(value) == 1 and _first_value(value) is call):
                return False
        return not later_code_exits(self, stmt, None)


def _first_value(call: ast.Call) -> Optional[ast.AST]:
    from .facts import first_argument

    return first_argument(call)


def _shares_its_line(facts: "AstFacts", stmt: ast.stmt) -> bool:
    """``stmt`` is one of the statements of a ``a; b`` line (libcst's line has more than one)."""
    body = _body_of(facts.parent(stmt), stmt)
    if body is None:
        return False
    i = next(k for k, s in enumerate(body) if s is stmt)
    return (i > 0 and _same_line(facts, body[i - 1], stmt)) or (i + 1 < len(body) and _same_line(facts, stmt, body[i + 1]))


def _same_line(facts: "AstFacts", a: ast.stmt, b: ast.stmt) -> bool:
    """``b`` follows ``a`` on its logical line (``a; b``, a backslash between them too)."""
    lines = facts.lines
    if b.lineno > a.end_lineno and not all(lines[n - 1].rstrip("\r\n").endswith("\\")
                                           for n in range(a.end_lineno, b.lineno)):
        return False
    if a.end_lineno == b.lineno:
        between = lines[b.lineno - 1].encode("utf-8")[a.end_col_offset:b.col_offset].decode("utf-8", "replace")
    else:
        between = "".join([lines[a.end_lineno - 1].encode("utf-8")[a.end_col_offset:].decode("utf-8", "replace"),
                           *lines[a.end_lineno:b.lineno - 1],
                           lines[b.lineno - 1].encode("utf-8")[:b.col_offset].decode("utf-8", "replace")])
    return between.replace("\\", "").split() == [";"]


class _ExitPathView(AstExitPathQueries):
    """``AstExitPathQueries`` over facts that do not inherit them: every other attribute is the facts'."""

    def __init__(self, facts: "AstFacts") -> None:
        self.__dict__["_facts"] = facts

    def __getattr__(self, name: str):
        return getattr(self.__dict__["_facts"], name)


def exit_paths_of(facts: "AstFacts") -> AstExitPathQueries:
    """``facts`` when they answer the exit-path queries themselves, else a view that does (made once per facts)."""
    if isinstance(facts, AstExitPathQueries):
        return facts
    view = facts.__dict__.get("_exit_path_view")
    if view is None:
        view = facts.__dict__["_exit_path_view"] = _ExitPathView(facts)
    return view


# ---------------------------------------------------------------------- the walker


class AstWalker(_WalkerBase):
    """``_WalkerBase`` on ``ast``: a block is a list of statements."""

    def block(self, suite, loop_depth: int) -> tuple[set[str], bool]:
        return self.statements(suite, loop_depth)

    def statement(self, st: ast.stmt, loop_depth: int) -> tuple[set[str], bool]:
        t = type(st)
        if t is ast.Raise:
            if self.facts.is_exit(st):
                return self.exit_here(st), False
            exc = st.exc
            return self.raise_here(st, exc is None or type(exc) is ast.Name,
                                   exc.id if type(exc) is ast.Name else None), False
        if t is ast.Return:
            return self.leave_here(st, RETURN, loop_depth), False
        if t is ast.Break:
            return self.leave_here(st, "break", loop_depth), False
        if t is ast.Continue:
            return self.leave_here(st, "continue", loop_depth), False
        if t is ast.Expr:
            value = st.value
            if type(value) is ast.Await:
                value = value.value
            if type(value) is ast.Call and self.facts.is_exit(value):
                return self.exit_here(value), False
            return set(), True
        if t is ast.If:
            return self.if_statement(st.body, st.orelse or None, False, loop_depth)
        if t in _LOOPS:
            return self.loop(st.body, st.orelse or None, t is ast.While and is_true(st.test),
                             t is not ast.While and self._non_empty(st.iter), breaks(st.body),
                             lambda: _jumps(st.body, ast.Continue), loop_depth)
        if t in _TRYS:
            handlers = [(h.body, h.name, lambda h=h: self._catches_everything(h)) for h in st.handlers]
            return self.try_statement(st.body, handlers, st.orelse or None, st.finalbody or None, st, loop_depth)
        if t is ast.With or t is ast.AsyncWith:
            return self.block(st.body, loop_depth)
        if t.__name__ == "Match":
            return self.match([(case.body, _irrefutable(case)) for case in st.cases], loop_depth)
        return set(), True  # def, class, any other simple statement: control goes on

    def _catches_everything(self, handler: ast.ExceptHandler) -> bool:
        exprs = self.facts.caught_types(handler)
        if exprs is None:
            return True
        names = []
        for e in exprs:
            name = self.facts.qualified_name(e, handler) or ""
            last = e.id if type(e) is ast.Name else e.attr if type(e) is ast.Attribute else None
            names.append((name, last))
        return catches_everything(names)

    def _non_empty(self, expr: ast.AST) -> bool:
        """A ``for`` iterable that surely has an element (``facts.exit_paths._non_empty``)."""
        t = type(expr)
        if t in (ast.List, ast.Tuple, ast.Set):
            return any(type(el) is not ast.Starred or self._non_empty(el.value) for el in expr.elts)
        if t is ast.Dict:
            return any(k is not None or self._non_empty(v) for k, v in zip(expr.keys, expr.values))
        if t is ast.Constant and type(expr.value) in (str, bytes):
            return _one_string_with_content(self.facts.segment(expr))
        if t is ast.Call and type(expr.func) is ast.Name and expr.func.id == "range" and _argument_count(expr) == 1:
            n = _int(_first_value(expr))
            return n is not None and n > 0
        return False


def _one_string_with_content(text: str) -> bool:
    """``text`` is one string literal (no implicit concatenation) with something between its quotes."""
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
                if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT,
                                  tokenize.INDENT, tokenize.DEDENT)]
    except (tokenize.TokenError, SyntaxError):
        return False
    if len(toks) != 1 or toks[0].type != tokenize.STRING:
        return False
    tok = toks[0].string
    body = tok.lstrip("rRbBuUfF")
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    return len(body) > 2 * len(quote)


def is_true(expr: ast.AST) -> bool:
    """``True`` or a non-zero integer literal (``facts.exit_paths._is_true``)."""
    if type(expr) is not ast.Constant:
        return False
    value = expr.value
    return value is True or (type(value) is int and value != 0)


def breaks(body: Sequence[ast.stmt]) -> bool:
    """A ``break`` that leaves this loop (not one of a nested loop)."""
    return _jumps(body, ast.Break)


def _jumps(body: Sequence[ast.stmt], kind: type) -> bool:
    """A statement of ``kind`` in ``body`` outside nested loops (their ``else`` too) and defs."""
    todo = list(body)
    while todo:
        n = todo.pop()
        if type(n) is kind:
            return True
        if isinstance(n, (*_LOOPS, *_DEFS)):
            continue
        todo.extend(_children(n))
    return False


def _irrefutable(case) -> bool:
    pattern = case.pattern
    while type(pattern) is ast.MatchAs and pattern.pattern is not None:
        pattern = pattern.pattern
    return case.guard is None and type(pattern) is ast.MatchAs and pattern.pattern is None


def _preorder(nodes: Sequence[ast.AST], skip: tuple = ()):
    """The nodes under ``nodes`` (themselves included) in source order (libcst's walk), never
    entering a node of a ``skip`` type."""
    todo = list(reversed(nodes))
    while todo:
        n = todo.pop()
        if isinstance(n, skip):
            continue
        yield n
        todo.extend(reversed(_children(n)))


def _yields(body: Sequence[ast.stmt]) -> list[ast.AST]:
    """``yield`` / ``yield from`` in ``body``, not in nested defs, lambdas or classes, in source order."""
    return [n for n in _preorder(body, (*_DEFS, ast.Lambda, ast.ClassDef)) if type(n) in (ast.Yield, ast.YieldFrom)]


_IDENTIFIER_FIELDS = {
    ast.Name: ("id",), ast.Attribute: ("attr",), ast.FunctionDef: ("name",), ast.AsyncFunctionDef: ("name",),
    ast.ClassDef: ("name",), ast.arg: ("arg",), ast.keyword: ("arg",), ast.alias: ("name", "asname"),
    ast.ImportFrom: ("module",), ast.ExceptHandler: ("name",),
    **({ast.MatchAs: ("name",), ast.MatchStar: ("name",), ast.MatchMapping: ("rest",)}
       if hasattr(ast, "MatchAs") else {}),
    **({ast.TypeVar: ("name",), ast.ParamSpec: ("name",), ast.TypeVarTuple: ("name",), ast.TypeAlias: ()}
       if hasattr(ast, "TypeVar") else {}),
}
_IDENTIFIER_LISTS = {ast.Global: "names", ast.Nonlocal: "names",
                     **({ast.MatchClass: "kwd_attrs"} if hasattr(ast, "MatchClass") else {})}


def _names_of(n: ast.AST) -> list[str]:
    """The identifiers ``n`` itself holds that libcst holds in ``Name`` nodes (a dotted import
    name is one ``Name`` per part)."""
    t = type(n)
    out: list[str] = []
    for field in _IDENTIFIER_FIELDS.get(t, ()):
        ident = getattr(n, field)
        if ident:
            out += ident.split(".") if t in (ast.alias, ast.ImportFrom) else [ident]
    listed = _IDENTIFIER_LISTS.get(t)
    if listed is not None:
        out += getattr(n, listed)
    return out


def _uses_name(node, name: str, skip_raise: bool = False) -> bool:
    """``name`` is one of libcst's ``Name`` nodes under ``node`` (a node or a list of them);
    with ``skip_raise``, not counting ``raise`` statements."""
    nodes = node if isinstance(node, list) else [node]
    return any(name in _names_of(n) for n in _preorder(nodes, (ast.Raise,) if skip_raise else ()))


def _stores(facts: "AstFacts", handler: ast.ExceptHandler, bound: str) -> set[str]:
    """Where the handler keeps the bound exception (``facts.exit_paths._stores``)."""
    code = facts.code_for_node
    out: set[str] = set()
    for n in _preorder([handler]):
        t = type(n)
        if t is ast.Assign:
            if _uses_name(n.value, bound):
                for target in n.targets:
                    if type(target) in (ast.Name, ast.Attribute):
                        out.add(code(target))
                    elif type(target) is ast.Subscript:
                        out.add(code(target.value))
        elif t is ast.Call:
            if type(n.func) is ast.Attribute and n.func.attr in ("append", "add", "extend", "put_nowait") \
                    and any(_uses_name(a, bound) for a in _argument_values(n)):
                out.add(code(n.func.value))
    return out


def _argument_values(call: ast.Call) -> list[ast.AST]:
    """libcst's ``[a.value for a in call.args]`` (order aside): positional (``*a``: ``a``) and keyword values."""
    return [a.value if type(a) is ast.Starred else a for a in call.args] + [k.value for k in call.keywords]


def _reraised_later(facts: "AstFacts", handler, bound: str) -> bool:
    if not isinstance(handler, ast.ExceptHandler):
        return False
    stored = _stores(facts, handler, bound)
    if not stored:
        return False
    fn = facts.enclosing_function(handler)
    region = fn.node if fn is not None else facts.module
    todo = [region]
    while todo:
        n = todo.pop()
        if isinstance(n, _DEFS) and n is not region:
            continue
        if type(n) is ast.Raise and n.exc is not None and not facts.is_ancestor(handler, n):
            text = facts.code_for_node(n.exc)
            if any(text == s or text.startswith((s + ".", s + "[", s + "(")) or f"({s}" in text or f" {s}" in text
                   for s in stored):
                return True
        todo.extend(_children(n))
    return False


def returns_only_none(body: Sequence[ast.stmt]) -> bool:
    """Every ``return`` in ``body`` (not in nested defs or lambdas) returns None."""
    for n in _preorder(list(body), (*_DEFS, ast.Lambda)):
        if type(n) is ast.Return:
            v = n.value
            if v is not None and not (type(v) is ast.Constant and v.value is None):
                return False
    return True


def loop_between(facts: "AstFacts", node: ast.AST, fn: Optional[FunctionInfo]) -> bool:
    stop = fn.node if fn is not None else None
    for anc in facts.ancestors(node):
        if anc is stop or isinstance(anc, (*_DEFS, ast.ClassDef)):
            return False
        if isinstance(anc, _LOOPS):
            return True
    return False


def _body_of(owner: Optional[ast.AST], stmt: ast.AST) -> Optional[list]:
    """The statement list of ``owner`` that holds ``stmt`` (None: ``stmt`` is no statement of a block)."""
    if owner is None:
        return None
    for field in _BODIES:
        body = getattr(owner, field, None)
        if type(body) is list and any(s is stmt for s in body):
            return body
    return None


def later_code_exits(facts: "AstFacts", stmt: ast.AST, fn: Optional[FunctionInfo]) -> bool:
    """``facts.exit_paths._later_code_exits`` on ``ast``: the statements after ``stmt`` in its
    block, then after each enclosing statement, up to the function (or the module). ``stmt``
    is a compound statement or a simple statement alone on its line (the callers'), so its
    block's later statements are libcst's later lines."""
    stop = fn.node if fn is not None else None
    walker = AstWalker(facts, None)
    cur: ast.AST = stmt
    while True:
        owner = facts.parent(cur)
        if owner is None:
            return False
        body = _body_of(owner, cur)
        if body is not None:
            idx = next(i for i, s in enumerate(body) if s is cur)
            ways, falls = walker.statements(body[idx + 1:], loop_depth=0)
            if ways & PROPAGATING or ways & {RETURN}:
                return True
            if not falls:
                return True
        if owner is stop or isinstance(owner, (*_DEFS, ast.ClassDef)):
            return False
        cur = owner


def _status_of_args(args: list, default: object) -> object:
    if not args:
        return default
    if len(args) > 1:
        return STATUS_UNKNOWN
    return literal_status(args[0])


def literal_status(expr: ast.AST) -> object:
    """The exit status an argument gives (``facts.exit_paths.literal_status``)."""
    t = type(expr)
    if t is ast.Constant:
        value = expr.value
        if type(value) is int:
            return STATUS_ZERO if value == 0 else STATUS_NONZERO
        if value is None or value is False:
            return STATUS_ZERO
        if value is True:
            return STATUS_NONZERO
        if type(value) in (str, bytes):
            return STATUS_NONZERO  # sys.exit("message") prints it and exits 1
        return STATUS_UNKNOWN
    if t is ast.Name:
        if expr.id == "EXIT_SUCCESS":
            return STATUS_ZERO
        if expr.id == "EXIT_FAILURE":
            return STATUS_NONZERO
        return STATUS_UNKNOWN
    if t is ast.Attribute:
        if expr.attr in ("EX_OK", "EXIT_SUCCESS"):
            return STATUS_ZERO
        if expr.attr == "EXIT_FAILURE":
            return STATUS_NONZERO
        return STATUS_UNKNOWN
    if t is ast.JoinedStr:
        return STATUS_NONZERO
    if t is ast.BinOp and type(expr.op) is ast.Add:
        left = _int(expr.left)
        if left is not None and left > 0:
            return STATUS_NONZERO
    return STATUS_UNKNOWN


def _signal_name(expr: ast.AST) -> Optional[str]:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Name):
        return expr.id
    return None
