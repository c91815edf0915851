"""Where code runs, on ``ast``: ``facts/execution.py``'s answers for ``AstFacts`` (session 9, issue 30).

What does not depend on the tree is not repeated here: ``AstExecutionQueries`` is
``facts.execution.ExecutionQueries`` (contexts, callers, references, runs_in_*, process_tail,
only_main_task ...) and ``_AstExecution`` is ``facts.execution._Execution`` (``_place``: where
each function runs from the calls that spawn, submit or decorate it, the closures, the
main-task coroutines). Only the reads of the tree are written again for ``ast``: the calls'
arguments (``_compute``), the classes' bases (``_inherit_remote``), ``ray.remote(Cls)`` and
thread-pool actors, a parser's ``set_defaults(func=...)`` and ``asyncio.run(coro())``.

libcst's ``Call.args`` is one list in source order: positional arguments, ``*a`` and ``**k``
(``keyword`` None, ``value`` the expression after the stars) and keyword arguments. ``ast``
splits it (``args`` with ``Starred``, ``keywords`` with ``arg=None`` for ``**k``): ``arguments``
gives it back as libcst has it.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import TYPE_CHECKING, Iterator, NamedTuple, Optional

from ..facts.execution import _WHERE_IT_RUNS_MATTERS, ExecutionQueries, _Execution
from ..facts.model import ClassInfo, FunctionInfo
from ..facts.vocabulary import (
    CALLBACK, CALLBACK_REGISTRARS, EXECUTOR, EXECUTOR_SUBMITTERS, MAIN_RUNNERS, RAY_REMOTE, RAY_WORKER, TASK,
    TASK_SPAWNERS, THREAD,
)

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
    """``_Execution`` reading ``ast`` calls and classes."""

    def _compute(self) -> None:
        f = self.facts
        for c in f.classes:
            if any(d in _REMOTE for d in c.decorators):
                self.ray_classes.add(c)
        self.ray_classes |= _ray_remote_call_classes(f)
        self.threaded_classes = {c for c in _threaded_actor_classes(f) if c in self.ray_classes
                                 and not c.has_async_methods}

        spawned: list[tuple[FunctionInfo, str]] = []

        def add(fn: Optional[FunctionInfo], ctx: str) -> None:
            if fn is not None:
                spawned.append((fn, ctx))

        entry_calls: list[tuple[ast.Call, FunctionInfo]] = []
        torch_roots: set[FunctionInfo] = set()
        driver_roots: set[FunctionInfo] = set()
        consumed: set[int] = set()  # ids of coroutine calls handed to a spawner or runner
        for call in f.calls:
            name = f.call_name(call)
            scope = f.scope_of(call)
            target = f.resolve_call(call)
            if target is not None and scope is not None:
                self.callers.setdefault(target, set()).add(scope)
            if name is None:
                continue
            if name in TASK_SPAWNERS:
                for value in positional(call):
                    for expr in _coroutine_exprs(value):
                        t = _coroutine_target(f, expr, call)
                        add(t, TASK)
                        self.ref(t, call, "task")
                        if t is not None:
                            consumed.add(id(expr))
            elif name in MAIN_RUNNERS and positional(call):
                first = positional(call)[0]
                t = _coroutine_target(f, first, call)
                if t is not None:
                    entry_calls.append((call, t))
                    self.ref(t, call, "main")
                    consumed.add(id(first))
            elif name in EXECUTOR_SUBMITTERS:
                idx = EXECUTOR_SUBMITTERS[name]
                args = positional(call)
                if len(args) > idx:
                    t = f.resolve_function(args[idx], call)
                    add(t, EXECUTOR)
                    self.ref(t, call, "executor")
            elif name in ("threading.Thread", "threading.Timer"):
                every = arguments(call)
                for a in every:
                    if a.keyword in ("target", "function") or (
                        name == "threading.Timer" and a.keyword is None and a is every[min(1, len(every) - 1)]
                    ):
                        t = f.resolve_function(a.value, call)
                        add(t, THREAD)
                        self.ref(t, call, "thread")
            elif name in CALLBACK_REGISTRARS or name.endswith(".add_done_callback"):
                idx = CALLBACK_REGISTRARS.get(name, 0)
                args = positional(call)
                if len(args) > idx:
                    t = f.resolve_function(args[idx], call)
                    add(t, CALLBACK)
                    self.ref(t, call, "callback")
            elif name == "ray.remote" and positional(call):
                add(f.resolve_function(positional(call)[0], call), RAY_REMOTE)
            elif name in ("ray.init",):
                if scope is None:
                    self.module_calls_ray_init = True
                else:
                    driver_roots.add(scope)
            elif name in ("torch.distributed.init_process_group", "torch.distributed.device_mesh.init_device_mesh"):
                if scope is not None:
                    torch_roots.add(scope)

        for call in f.calls:
            if id(call) in consumed:
                continue
            target = f.resolve_call(call)
            if target is not None:
                self.ref(target, call, "await" if f.is_awaited(call) else "call")
        self._spawned = spawned
        self._roots = (entry_calls, torch_roots, driver_roots)

    def _inherit_remote(self) -> None:
        f = self.facts
        self.remote_bases: dict[ClassInfo, tuple[str, bool]] = {}
        # source order: a base shared by several actors is named after the first, the same in every run
        # (a set of ClassInfo iterates in id order)
        for actor in [c for c in f.classes if c in self.ray_classes]:
            chain = [actor]
            todo = [actor]
            while todo:
                c = todo.pop()
                for b in same_module_bases(f, c):
                    if b not in chain:
                        chain.append(b)
                        todo.append(b)
            is_async = any(c.has_async_methods for c in chain)
            for b in chain[1:]:
                if b not in self.ray_classes and b not in self.remote_bases:
                    self.remote_bases[b] = (f"`{actor.name}` is a Ray actor", is_async)
        view = getattr(f, "project", None)
        if view is None:
            return
        candidates = [c for c in f.classes if c.scope is None and c.outer_class is None
                      and c not in self.ray_classes and c not in self.remote_bases
                      and any(f.call_name(call) in _WHERE_IT_RUNS_MATTERS for m in c.methods.values() for call in m.calls)]
        if not candidates or not view.index.text_has(view.path, ("ray",)):
            return
        from ..index.classes import made_remote

        for c in candidates:
            found = made_remote(view, f.path, c.name)
            if found is not None:
                self.remote_bases[c] = found


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
