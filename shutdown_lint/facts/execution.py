"""Where code runs: as a task, the main coroutine, in a loop thread, an executor, a thread,
a callback, a Ray worker or async actor, the driver, a torch.distributed worker."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Iterator, Optional

from ..lazy_libcst import libcst as cst

from .model import ClassInfo, FunctionInfo
from .vocabulary import (
    CALLBACK, CALLBACK_REGISTRARS, DRIVER, EXECUTOR, EXECUTOR_SUBMITTERS, LOOP_THREAD, MAIN_COROUTINE,
    MAIN_RUNNERS, RAY_ASYNC_ACTOR, RAY_REMOTE, RAY_THREADED_ACTOR, RAY_WORKER, TASK, TASK_SPAWNERS, THREAD,
    TORCH_WORKER,
)

if TYPE_CHECKING:
    from .module import ModuleFacts


class ExecutionQueries:
    """Mixin of ``ModuleFacts``: where a function runs (computed once, on first use)."""

    @cached_property
    def _execution(self) -> "_Execution":
        return _Execution(self)

    def contexts(self, fn: Optional[FunctionInfo]) -> frozenset[str]:
        """Where ``fn`` runs: a set of the context names defined at the top of this module."""
        if fn is None:
            return frozenset()
        return frozenset(self._execution.contexts.get(fn, ()))

    def callers(self, fn: FunctionInfo) -> set[FunctionInfo]:
        return self._execution.callers.get(fn, set())

    def references(self, fn: FunctionInfo) -> list[tuple[cst.CSTNode, str]]:
        """How the module refers to ``fn``: (node, kind) with kind among ``await``,
        ``call``, ``task``, ``main``, ``executor``, ``thread``, ``callback``, ``other``."""
        return self._execution.references.get(fn, [])

    def runs_in_ray_worker(self, fn: Optional[FunctionInfo]) -> bool:
        return RAY_WORKER in self.contexts(fn)

    def runs_in_driver(self, node: cst.CSTNode) -> bool:
        fn = node if isinstance(node, FunctionInfo) else self.enclosing_function(node)
        if fn is None:
            # module level code of a script is driver code when the module calls ray.init
            # or it sits in the __main__ block
            return self.in_main_guard(node) or self._execution.module_calls_ray_init
        return DRIVER in self.contexts(fn)

    def runs_in_torch_worker(self, fn: Optional[FunctionInfo]) -> bool:
        return TORCH_WORKER in self.contexts(fn)

    def is_process_entrypoint(self, node: cst.CSTNode) -> bool:
        """True when ``node`` runs on the main thread of a process entrypoint: module-level
        script code, the ``__main__`` block, ``main()`` and what it calls, a click/typer
        command or an argparse ``set_defaults(func=...)`` handler. Never in Ray workers,
        threads or executors (their process's entrypoint is elsewhere)."""
        fn = node if isinstance(node, FunctionInfo) else self.enclosing_function(node)
        if fn is None:
            return self.enclosing_class(node) is None
        ctx = self.contexts(fn)
        if ctx & {RAY_WORKER, RAY_REMOTE, THREAD, EXECUTOR, TASK, CALLBACK}:
            return False
        return DRIVER in ctx or fn in self._cli_closure

    @cached_property
    def _cli_closure(self) -> set[FunctionInfo]:
        roots = set()
        for fn in self.functions:
            if any(d in ("click.command", "click.group") or d.endswith((".command", ".group"))
                   for d in fn.decorators):
                roots.add(fn)
        for call in self.calls:  # parser.set_defaults(func=handler)
            if isinstance(call.func, cst.Attribute) and call.func.attr.value == "set_defaults":
                for a in call.args:
                    if a.keyword is not None and a.keyword.value == "func":
                        target = self.resolve_function(a.value, call)
                        if target is not None:
                            roots.add(target)
        return self._execution._closure(roots, stop=lambda g: RAY_WORKER in self.contexts(g))

    def is_ray_remote_class(self, cls: Optional[ClassInfo]) -> bool:
        return cls is not None and cls in self._execution.ray_classes

    def remote_through_subclass(self, cls: Optional[ClassInfo]) -> Optional[str]:
        """Where ``cls``, not an actor itself, becomes part of one: a subclass made a Ray actor
        in this module or elsewhere in the project (its methods then run in the actor)."""
        found = self._execution.remote_bases.get(cls) if cls is not None else None
        return found[0] if found else None

    def is_threaded_ray_actor(self, cls: Optional[ClassInfo]) -> bool:
        """A sync Ray actor whose methods run on a thread pool: declared (decorator,
        ``ray.remote(...)(Cls)`` or ``Cls.options(...)``) with ``max_concurrency`` > 1 (or not a
        literal) or ``concurrency_groups``. An event loop it starts with ``asyncio.run`` runs off
        the main thread: ``signal.signal`` raises there and SIGTERM never unwinds it."""
        return cls is not None and cls in self._execution.threaded_classes

    def main_runner_calls(self, fn: FunctionInfo) -> list[tuple[cst.Call, Optional[FunctionInfo]]]:
        """``asyncio.run(coro())``-style calls in ``fn``'s body and the same-module coroutine
        function each one runs (None when it is defined elsewhere)."""
        out = []
        for call in fn.calls:
            if self.call_name(call) in MAIN_RUNNERS:
                args = [a for a in call.args if a.keyword is None]
                out.append((call, self.coroutine_target(args[0].value, call) if args else None))
        return out

    def process_tail(self, fn: Optional[FunctionInfo]) -> Optional[list[str]]:
        """When ``fn`` (a top-level function or a method of a top-level class) can be the last
        thing the process does - its normal return ends the process with status 0 - the chain
        that makes it so, callee first (``["`Trainer.fit()`", "`main()`", "the `__main__` block
        of train.py"]``): reached from the ``__main__`` block or a console script through calls
        after which nothing exits, raises or returns a value, at any depth, across modules
        (``index/tails.py``). None without a project index (a snippet, stdin)."""
        view = getattr(self, "project", None)
        if view is None or fn is None or fn.scope is not None:
            return None
        if fn.cls is not None and (fn.cls.scope is not None or fn.cls.outer_class is not None):
            return None
        from ..index.tails import process_tail

        return process_tail(view, self.path, fn.qualname)  # type: ignore[attr-defined]

    def only_main_task(self, fn: FunctionInfo) -> bool:
        """True when the module only ever runs coroutine ``fn`` as the main coroutine of
        ``asyncio.run`` on the main thread (directly, or awaited from such a coroutine)."""
        return fn in self._execution.main_task_only



class _Execution:
    """Where functions run, derived from calls that spawn, submit or decorate them."""

    #: what ``_place`` computes, on first use: where each function runs reads the project index
    #: (``_inherit_remote``), which the other answers (actor classes, callers, references) do not
    _PLACED = frozenset({"contexts", "remote_bases", "main_task_only"})

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.callers: dict[FunctionInfo, set[FunctionInfo]] = {}
        self.references: dict[FunctionInfo, list[tuple[cst.CSTNode, str]]] = {}
        self.ray_classes: set[ClassInfo] = set()
        self.threaded_classes: set[ClassInfo] = set()
        self.module_calls_ray_init = False
        self._compute()

    def __getattr__(self, name: str):
        # ``contexts``, ``remote_bases``, ``main_task_only``: computed on first use (then plain attributes)
        if name in _Execution._PLACED and "facts" in self.__dict__:
            try:
                self._place()
            except BaseException:  # nothing half-placed stays (asked again, it is computed again)
                for placed in _Execution._PLACED:
                    self.__dict__.pop(placed, None)
                raise
            return self.__dict__[name]
        raise AttributeError(name)

    def add(self, fn: Optional[FunctionInfo], ctx: str) -> None:
        if fn is not None:
            self.contexts.setdefault(fn, set()).add(ctx)

    def ref(self, fn: Optional[FunctionInfo], node: cst.CSTNode, kind: str) -> None:
        if fn is not None:
            self.references.setdefault(fn, []).append((node, kind))

    def _compute(self) -> None:
        """What needs no other module: the actor classes, who calls what, how functions are
        referred to; and what ``_place`` starts from (``_spawned``: the contexts the calls give,
        in the order they are met). The tree is read through the methods below ``# the tree's
        reads``, which ``ast_engine.execution._AstExecution`` overrides for ``ast``."""
        f = self.facts
        # decorators: @ray.remote
        for c in f.classes:
            if any(d in ("ray.remote", "ray.actor.remote") for d in c.decorators):
                self.ray_classes.add(c)
        self.ray_classes |= self._remote_call_classes()  # ``ray.remote(Cls)`` / ``ray.remote(**kw)(Cls)``
        self.threaded_classes = {c for c in self._threaded_classes() if c in self.ray_classes
                                 and not c.has_async_methods}

        spawned: list[tuple[FunctionInfo, str]] = []  # (function, context) from the calls below

        def add(fn: Optional[FunctionInfo], ctx: str) -> None:
            if fn is not None:
                spawned.append((fn, ctx))

        entry_calls: list[tuple[cst.Call, FunctionInfo]] = []  # (asyncio.run call, coroutine fn)
        torch_roots: set[FunctionInfo] = set()
        driver_roots: set[FunctionInfo] = set()
        consumed: set[int] = set()  # ids of coroutine calls handed to a spawner or runner
        for call in f.calls:
            name = f.call_name(call)
            scope = self._scope(call)
            target = f.resolve_call(call)
            if target is not None and scope is not None:
                self.callers.setdefault(target, set()).add(scope)
            if name is None:
                continue
            if name in TASK_SPAWNERS:
                for value in self._positional(call):
                    for expr in self._coroutine_exprs(value):
                        t = self._coroutine_target(expr, call)
                        add(t, TASK)
                        self.ref(t, call, "task")
                        if t is not None:
                            consumed.add(id(expr))
            elif name in MAIN_RUNNERS and (args := self._positional(call)):
                t = self._coroutine_target(args[0], call)
                if t is not None:
                    entry_calls.append((call, t))
                    self.ref(t, call, "main")
                    consumed.add(id(args[0]))
            elif name in EXECUTOR_SUBMITTERS:
                idx = EXECUTOR_SUBMITTERS[name]
                args = self._positional(call)
                if len(args) > idx:
                    t = f.resolve_function(args[idx], call)
                    add(t, EXECUTOR)
                    self.ref(t, call, "executor")
            elif name in ("threading.Thread", "threading.Timer"):
                every = self._arguments(call)
                for i, (keyword, value) in enumerate(every):
                    if keyword in ("target", "function") or (
                        name == "threading.Timer" and keyword is None and i == min(1, len(every) - 1)
                    ):
                        t = f.resolve_function(value, call)
                        add(t, THREAD)
                        self.ref(t, call, "thread")
            elif name in CALLBACK_REGISTRARS or name.endswith(".add_done_callback"):
                idx = CALLBACK_REGISTRARS.get(name, 0)
                args = self._positional(call)
                if len(args) > idx:
                    t = f.resolve_function(args[idx], call)
                    add(t, CALLBACK)
                    self.ref(t, call, "callback")
            elif name == "ray.remote" and (args := self._positional(call)):
                t = f.resolve_function(args[0], call)
                add(t, RAY_REMOTE)
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

    # ------------------------------------------------------------------ the tree's reads
    # (libcst's here; ``ast_engine.execution._AstExecution`` reads the same from ``ast``)
    def _scope(self, call: cst.Call) -> Optional[FunctionInfo]:
        """The function ``call`` is in (None at module level)."""
        return self.facts._call_scope.get(call)

    def _positional(self, call: cst.Call) -> list[cst.BaseExpression]:
        """The values of the arguments without a keyword (``*a`` and ``**k`` among them), in order."""
        return [a.value for a in call.args if a.keyword is None]

    def _arguments(self, call: cst.Call) -> list[tuple[Optional[str], cst.BaseExpression]]:
        """Every argument in source order: (its keyword or None, its value)."""
        return [(a.keyword.value if a.keyword is not None else None, a.value) for a in call.args]

    def _coroutine_exprs(self, expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
        return _coroutine_exprs(expr)

    def _coroutine_target(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[FunctionInfo]:
        return self.facts.coroutine_target(expr, at)

    def _remote_call_classes(self) -> set[ClassInfo]:
        return _ray_remote_call_classes(self.facts)

    def _threaded_classes(self) -> set[ClassInfo]:
        return _threaded_actor_classes(self.facts)

    def _bases(self, cls: ClassInfo) -> list[ClassInfo]:
        """This module's classes that ``cls`` names as bases."""
        return _same_module_bases(self.facts, cls)

    def _place(self) -> None:
        """Where each function runs (``contexts``), the classes that run in an actor through a
        subclass (``remote_bases``) and the coroutines only ever run as the main task
        (``main_task_only``)."""
        f = self.facts
        self.contexts = {}
        self.main_task_only = set()
        entry_calls, torch_roots, driver_roots = self._roots
        for fn in f.functions:
            if fn.is_async:
                self.contexts.setdefault(fn, set())
        self._inherit_remote()
        for fn in f.functions:
            if any(d in ("ray.remote", "ray.actor.remote") for d in fn.decorators):
                self.add(fn, RAY_REMOTE)
            if fn.cls is not None and fn.cls in self.ray_classes:
                self.add(fn, RAY_REMOTE)
                if fn.cls.has_async_methods:
                    self.add(fn, RAY_ASYNC_ACTOR)
                elif fn.cls in self.threaded_classes:
                    self.add(fn, RAY_THREADED_ACTOR)
            elif fn.cls is not None and fn.cls in self.remote_bases:
                # a base of an actor class: its methods run in the actor's worker too
                self.add(fn, RAY_REMOTE)
                if self.remote_bases[fn.cls][1]:
                    self.add(fn, RAY_ASYNC_ACTOR)
        for fn, ctx in self._spawned:
            self.add(fn, ctx)

        # ray workers: remote functions/methods and what they call
        ray_roots = {fn for fn, ctx in self.contexts.items() if RAY_REMOTE in ctx}
        for fn in self._closure(ray_roots):
            self.add(fn, RAY_WORKER)
        for fn in self._closure(torch_roots):
            self.add(fn, TORCH_WORKER)
        # drivers: main(), functions calling ray.init, functions called from __main__
        for fn in f.functions:
            if fn.scope is None and fn.cls is None and fn.name == "main":
                driver_roots.add(fn)
        for call in f.module_calls:
            if f.in_main_guard(call):
                t = f.resolve_call(call)
                if t is not None:
                    driver_roots.add(t)
        for fn in self._closure(driver_roots, stop=lambda g: RAY_WORKER in self.contexts.get(g, ())):
            self.add(fn, DRIVER)

        # threads: functions reached from thread targets / executor submissions run off
        # the main thread; a loop run there is a loop thread
        off_main = {fn for fn, ctx in self.contexts.items() if ctx & {THREAD, EXECUTOR, RAY_THREADED_ACTOR}}
        off_main_closure = self._closure(off_main)
        for call, coro in entry_calls:
            scope = f._call_scope.get(call)
            if scope is not None and (scope in off_main_closure or RAY_WORKER in self.contexts.get(scope, ())
                                      and RAY_ASYNC_ACTOR in self.contexts.get(scope, ())):
                self.add(coro, LOOP_THREAD)
            else:
                self.add(coro, MAIN_COROUTINE)

        # coroutines that only ever run inside the main task of asyncio.run
        changed = True
        candidates = [fn for fn in f.functions if fn.is_async]
        while changed:
            changed = False
            for fn in candidates:
                if fn in self.main_task_only:
                    continue
                ctx = self.contexts.get(fn, set())
                if ctx & {TASK, LOOP_THREAD, RAY_REMOTE, RAY_WORKER, EXECUTOR, THREAD, CALLBACK}:
                    continue
                refs = self.references.get(fn, [])
                if not refs:
                    continue
                ok = True
                for node, kind in refs:
                    if kind == "main" and MAIN_COROUTINE in ctx:
                        continue
                    if kind == "await":
                        caller = f._call_scope.get(node)  # type: ignore[arg-type]
                        if caller is not None and caller in self.main_task_only:
                            continue
                    ok = False
                    break
                if ok:
                    self.main_task_only.add(fn)
                    changed = True

    def _inherit_remote(self) -> None:
        """Classes that are not actors themselves but a base of one: ``remote_bases[cls] =
        (where, the actor has async methods)``. Same module: the bases (named directly) of an
        actor class. Across modules (the project index, ``index/classes.py``): a subclass made
        an actor anywhere in this module or the modules importing it, also one built in a
        factory function (``class Sub(Base): ...; ray.remote(Sub)``); only for classes whose
        methods make a Ray call or an exit (what the rules judge by where it runs), in a module
        whose text names ``ray``."""
        f = self.facts
        self.remote_bases: dict[ClassInfo, tuple[str, bool]] = {}
        # source order: a base shared by several actors is named after the first, the same in every run
        # (a set of ClassInfo iterates in id order)
        for actor in [c for c in f.classes if c in self.ray_classes]:
            chain = [actor]
            todo = [actor]
            while todo:
                c = todo.pop()
                for b in self._bases(c):
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
        # only classes whose methods make a call the rules judge by where it runs (a Ray call, an
        # exit): the search reads the modules that import this one
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

    def _closure(self, roots: Iterable[FunctionInfo], stop=None) -> set[FunctionInfo]:
        return reachable(
            roots,
            lambda fn: (c for _, c in self.facts.callees(fn) if stop is None or not stop(c)),
        )


def reachable(roots: Iterable[FunctionInfo], step) -> set[FunctionInfo]:
    """Every function reachable from ``roots`` (included) following ``step(fn) -> functions``,
    e.g. same-module callees: where a function runs, its callees run too."""
    seen: set[FunctionInfo] = set()
    todo = list(roots)
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        todo.extend(x for x in step(fn) if x not in seen)
    return seen


#: calls whose judgement depends on running in a Ray worker (SHD403, SHD501, SHD201)
_WHERE_IT_RUNS_MATTERS = frozenset({"ray.get", "ray.wait", "ray.cancel", "sys.exit", "builtins.exit", "builtins.quit",
                                    "os._exit", "ray.init"})


def _same_module_bases(f: ModuleFacts, cls: ClassInfo) -> list[ClassInfo]:
    """The classes of this module that ``cls`` names as its bases."""
    out = []
    for base in cls.node.bases:
        if isinstance(base.value, cst.Name):
            b = f.lookup(base.value.value, cls.scope)
            if b is not None and b.kind == "class":
                out.append(b.target)  # type: ignore[arg-type]
    return out


def _coroutine_exprs(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """Coroutine-making expressions inside a spawner argument: ``f(x)``, ``[f(i) for i in ..]``,
    ``*[f(i) for ...]``, ``(f(a), g(b))``."""
    if isinstance(expr, cst.Call):
        yield expr
    elif isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
        yield from _coroutine_exprs(expr.elt)
    elif isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        for el in expr.elements:
            yield from _coroutine_exprs(el.value)
    elif isinstance(expr, cst.StarredElement):
        yield from _coroutine_exprs(expr.value)


def _ray_remote_call_classes(f: ModuleFacts) -> set[ClassInfo]:
    """Same-module classes made actors by a call rather than a decorator:
    ``Actor = ray.remote(Cls)`` or ``ray.remote(num_cpus=1)(Cls)``."""
    found: set[ClassInfo] = set()
    for call in f.calls:
        func = call.func
        if isinstance(func, cst.Call):  # ray.remote(**options)(Cls)
            if f.call_name(func) not in ("ray.remote", "ray.actor.remote"):
                continue
        elif f.call_name(call) not in ("ray.remote", "ray.actor.remote"):
            continue
        args = [a for a in call.args if a.keyword is None]
        if len(args) != 1 or not isinstance(args[0].value, cst.Name):
            continue
        b = f.lookup(args[0].value.value, f.scope_of(call))
        if b is not None and b.kind == "class":
            found.add(b.target)  # type: ignore[arg-type]
    return found


def _concurrent(call: cst.Call) -> bool:
    """``max_concurrency=N`` with N > 1 (or not a literal), or ``concurrency_groups=...``."""
    for a in call.args:
        if a.keyword is None:
            continue
        if a.keyword.value == "concurrency_groups":
            return True
        if a.keyword.value == "max_concurrency":
            v = a.value
            return not (isinstance(v, cst.Integer) and v.evaluated_value <= 1)
    return False


def _threaded_actor_classes(f: ModuleFacts) -> set[ClassInfo]:
    """Same-module classes declared as actors with a thread pool: ``@ray.remote(max_concurrency=8)``,
    ``ray.remote(max_concurrency=8)(Cls)``, ``Cls.options(max_concurrency=8)`` (also through a
    name bound to ``ray.remote(Cls)``)."""
    found: set[ClassInfo] = set()
    remote = ("ray.remote", "ray.actor.remote")
    for c, exprs in f._class_decorator_exprs.items():
        if any(isinstance(e, cst.Call) and f.call_name(e) in remote and _concurrent(e) for e in exprs):
            found.add(c)

    def class_named(expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[ClassInfo]:
        if not isinstance(expr, cst.Name):
            return None
        b = f.lookup(expr.value, f.scope_of(at))
        if b is None:
            return None
        if b.kind == "class":
            return b.target  # type: ignore[return-value]
        if b.kind == "value" and isinstance(b.target, cst.Call):  # Actor = ray.remote(Cls)
            inner = b.target
            if f.call_name(inner) in remote or (isinstance(inner.func, cst.Call) and f.call_name(inner.func) in remote):
                args = [a for a in inner.args if a.keyword is None]
                if len(args) == 1:
                    return class_named(args[0].value, inner)
        return None

    for call in f.calls:
        func = call.func
        if isinstance(func, cst.Call) and f.call_name(func) in remote and _concurrent(func):
            args = [a for a in call.args if a.keyword is None]
            c = class_named(args[0].value, call) if len(args) == 1 else None
        elif isinstance(func, cst.Attribute) and func.attr.value == "options" and _concurrent(call):
            c = class_named(func.value, call)
        else:
            continue
        if c is not None:
            found.add(c)
    return found
