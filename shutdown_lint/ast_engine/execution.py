"""Where code runs, on ``ast``: ``facts/execution.py``'s answers for ``AstFacts`` (session 9, issue 30).

What does not depend on the tree is not repeated here: ``AstExecutionQueries`` is
``facts.execution.ExecutionQueries`` (contexts, callers, references, runs_in_*, process_tail,
only_main_task ...) and ``_AstExecution`` is ``facts.execution._Execution`` (``_place``: where
each function runs from the calls that spawn, submit or decorate it, the closures, the
main-task coroutines, and the loops of ``_compute`` and ``_inherit_remote``). Only the reads of
the tree are written again for ``ast``: the calls' scope and arguments, coroutine-making
expressions, the classes' bases (``_AstExecution``'s overrides of ``_Execution``'s reads),
``ray.remote(Cls)`` and thread-pool actors, a parser's ``set_defaults(func=...)`` and
``asyncio.run(coro())``.

libcst's ``Call.args`` is one list in source order: positional arguments, ``*a`` and ``**k``
(``keyword`` None, ``value`` the expression after the stars) and keyword arguments. ``ast``
splits it (``args`` with ``Starred``, ``keywords`` with ``arg=None`` for ``**k``): ``arguments``
gives it back as libcst has it.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, NamedTuple, Optional

from ..facts.execution import ExecutionQueries, _Execution
from ..facts.model import ClassInfo, FunctionInfo
from ..facts.vocabulary import MAIN_RUNNERS, RAY_WORKER

if TYPE_CHECKING:
    from .facts import AstFacts

_REMOTE = ("ray.remote", "ray.actor.remote")


class Arg(NamedTuple):
    """One argument of a call as libcst's ``Arg`` reads: ``keyword`` (None for positional,
    ``*a`` and ``**k``) and ``value`` (the expression, without its stars)."""

    keyword: Optional[str]
    value: ast.expr


def arguments(call: ast.Call) -> list[Arg]:
    """The arguments of ``call`` in source order, as libcst's ``Call.args``."""
    out = [Arg(None, a.value if type(a) is ast.Starred else a) for a in call.args]
    if not call.keywords:
        return out
    kws = [Arg(k.arg, k.value) for k in call.keywords]
    if not out or not any(type(a) is ast.Starred for a in call.args):
        return out + kws  # keywords come after the positional arguments unless a ``*a`` follows one
    # ``f(k=1, *a)``: order by position (``keyword`` nodes have one since Python 3.9)
    nodes = [*call.args, *call.keywords]
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i].lineno, nodes[i].col_offset))
    both = out + kws
    return [both[i] for i in order]


def positional(call: ast.Call) -> list[ast.expr]:
    """``[a.value for a in call.args if a.keyword is None]`` of libcst: positional, ``*a`` and ``**k``."""
    return [a.value for a in arguments(call) if a.keyword is None]


class AstExecutionQueries(ExecutionQueries):
    """Mixin of ``AstFacts``: ``ExecutionQueries`` over the ``ast`` reading of the calls."""

    @cached_property
    def _execution(self) -> "_AstExecution":
        return _AstExecution(self)

    @cached_property
    def _cli_closure(self) -> set[FunctionInfo]:
        roots = set()
        for fn in self.functions:
            if any(d in ("click.command", "click.group") or d.endswith((".command", ".group"))
                   for d in fn.decorators):
                roots.add(fn)
        for call in self.calls:  # parser.set_defaults(func=handler)
            if type(call.func) is ast.Attribute and call.func.attr == "set_defaults":
                for a in arguments(call):
                    if a.keyword == "func":
                        target = self.resolve_function(a.value, call)
                        if target is not None:
                            roots.add(target)
        return self._execution._closure(roots, stop=lambda g: RAY_WORKER in self.contexts(g))

    def main_runner_calls(self, fn: FunctionInfo) -> list[tuple[ast.Call, Optional[FunctionInfo]]]:
        out = []
        for call in fn.calls:
            if self.call_name(call) in MAIN_RUNNERS:
                args = positional(call)
                out.append((call, _coroutine_target(self, args[0], call) if args else None))
        return out


class _AstExecution(_Execution):
    """``_Execution`` reading ``ast`` calls and classes: its tree's reads, for ``ast`` (the loops
    over them, ``_compute`` and ``_inherit_remote``, are ``_Execution``'s)."""

    def _scope(self, call: ast.Call) -> Optional[FunctionInfo]:  # type: ignore[override]
        return self.facts.scope_of(call)

    def _positional(self, call: ast.Call) -> list[ast.expr]:  # type: ignore[override]
        return positional(call)

    def _arguments(self, call: ast.Call) -> list[Arg]:  # type: ignore[override]
        return arguments(call)

    def _coroutine_exprs(self, expr: ast.AST) -> Iterator[ast.AST]:  # type: ignore[override]
        return _coroutine_exprs(expr)

    def _coroutine_target(self, expr: ast.AST, at: ast.AST) -> Optional[FunctionInfo]:  # type: ignore[override]
        return _coroutine_target(self.facts, expr, at)

    def _remote_call_classes(self) -> set[ClassInfo]:
        return _ray_remote_call_classes(self.facts)

    def _threaded_classes(self) -> set[ClassInfo]:
        return _threaded_actor_classes(self.facts)

    def _bases(self, cls: ClassInfo) -> list[ClassInfo]:
        return same_module_bases(self.facts, cls)


def _coroutine_target(f: "AstFacts", expr: ast.AST, at: ast.AST) -> Optional[FunctionInfo]:
    """``Names.coroutine_target``: the function whose call makes the coroutine ``expr``."""
    if type(expr) is ast.Call:
        return f.resolve_function(expr.func, at)
    return None


def same_module_bases(f: "AstFacts", cls: ClassInfo) -> list[ClassInfo]:
    """This module's classes that ``cls`` names as bases: ``facts.execution._same_module_bases`` on ast.

    ``*bases`` included: libcst keeps a starred base among the bases, its value a name."""
    out = []
    for base in cls.node.bases:
        if type(base) is ast.Starred:
            base = base.value
        if type(base) is ast.Name:
            b = f.lookup(base.id, cls.scope)
            if b is not None and b.kind == "class":
                out.append(b.target)  # type: ignore[arg-type]
    return out


def _coroutine_exprs(expr: ast.AST) -> Iterator[ast.AST]:
    """Coroutine-making expressions inside a spawner argument: ``f(x)``, ``[f(i) for i in ..]``,
    ``*[f(i) for ...]``, ``(f(a), g(b))``."""
    t = type(expr)
    if t is ast.Call:
        yield expr
    elif t in (ast.ListComp, ast.GeneratorExp, ast.SetComp):
        yield from _coroutine_exprs(expr.elt)  # type: ignore[attr-defined]
    elif t in (ast.List, ast.Tuple, ast.Set):
        for el in expr.elts:  # type: ignore[attr-defined]
            yield from _coroutine_exprs(el.value if type(el) is ast.Starred else el)
    elif t is ast.Starred:
        yield from _coroutine_exprs(expr.value)  # type: ignore[attr-defined]


def _ray_remote_call_classes(f: "AstFacts") -> set[ClassInfo]:
    """``Actor = ray.remote(Cls)`` or ``ray.remote(num_cpus=1)(Cls)``."""
    found: set[ClassInfo] = set()
    for call in f.calls:
        func = call.func
        if type(func) is ast.Call:
            if f.call_name(func) not in _REMOTE:
                continue
        elif f.call_name(call) not in _REMOTE:
            continue
        args = positional(call)
        if len(args) != 1 or type(args[0]) is not ast.Name:
            continue
        b = f.lookup(args[0].id, f.scope_of(call))
        if b is not None and b.kind == "class":
            found.add(b.target)  # type: ignore[arg-type]
    return found


def _concurrent(call: ast.Call) -> bool:
    """``max_concurrency=N`` with N > 1 (or not a literal), or ``concurrency_groups=...``."""
    for k in call.keywords:
        if k.arg == "concurrency_groups":
            return True
        if k.arg == "max_concurrency":
            v = k.value
            # libcst's ``Integer``: an int literal (``True`` is a name there)
            return not (type(v) is ast.Constant and type(v.value) is int and v.value <= 1)
    return False


def _threaded_actor_classes(f: "AstFacts") -> set[ClassInfo]:
    """``@ray.remote(max_concurrency=8)``, ``ray.remote(max_concurrency=8)(Cls)``,
    ``Cls.options(max_concurrency=8)`` (also through a name bound to ``ray.remote(Cls)``)."""
    found: set[ClassInfo] = set()
    for c in f.classes:
        if any(type(e) is ast.Call and f.call_name(e) in _REMOTE and _concurrent(e) for e in c.node.decorator_list):
            found.add(c)

    def class_named(expr: ast.AST, at: ast.AST) -> Optional[ClassInfo]:
        if type(expr) is not ast.Name:
            return None
        b = f.lookup(expr.id, f.scope_of(at))
        if b is None:
            return None
        if b.kind == "class":
            return b.target  # type: ignore[return-value]
        if b.kind == "value" and type(b.target) is ast.Call:  # Actor = ray.remote(Cls)
            inner = b.target
            if f.call_name(inner) in _REMOTE or (type(inner.func) is ast.Call and f.call_name(inner.func) in _REMOTE):
                args = positional(inner)
                if len(args) == 1:
                    return class_named(args[0], inner)
        return None

    for call in f.calls:
        func = call.func
        if type(func) is ast.Call and f.call_name(func) in _REMOTE and _concurrent(func):
            args = positional(call)
            c = class_named(args[0], call) if len(args) == 1 else None
        elif type(func) is ast.Attribute and func.attr == "options" and _concurrent(call):
            c = class_named(func.value, call)
        else:
            continue
        if c is not None:
            found.add(c)
    return found


class _ExecutionView(AstExecutionQueries):
    """``AstExecutionQueries`` over facts that do not inherit them: every other attribute is the facts'."""

    def __init__(self, facts: "AstFacts") -> None:
        self.__dict__["_facts"] = facts

    def __getattr__(self, name: str):
        return getattr(self.__dict__["_facts"], name)


def execution_of(facts: "AstFacts") -> AstExecutionQueries:
    """``facts`` when they answer the execution queries themselves, else a view that does (made once per facts)."""
    if isinstance(facts, AstExecutionQueries):
        return facts
    view = facts.__dict__.get("_execution_view")
    if view is None:
        view = facts.__dict__["_execution_view"] = _ExecutionView(facts)
    return view
