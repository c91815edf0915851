"""Shared facts about one module, computed once per file for all rules.

One walk over the libcst tree (``_Collector``) records parents, scopes and their
bindings, functions, classes and calls. Everything else is derived from that index on
demand and cached: qualified names through import aliases (``import asyncio as aio``,
``from asyncio import gather``), the type of a few well-known objects (event loops,
task groups, executors), which same-module function a call resolves to, and *where a
function runs* (as a task, in an executor or thread, in a Ray worker, in the driver, in
a torch.distributed worker).

We deliberately do not use libcst's ScopeProvider/QualifiedNameProvider: on real code
they cost several times the parse itself, and the rules only need the module's own
imports and a light notion of scope.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Iterator, Optional, Union

import libcst as cst

#: Facts a rule may declare in ``facts_needed``. All are derived from one walk.
FACTS = ("parents", "imports", "functions", "calls", "execution")

_BUILTINS = frozenset(dir(builtins))

# ---------------------------------------------------------------- execution contexts
TASK = "task"  # coroutine wrapped into a Task (create_task, ensure_future, gather, TaskGroup)
MAIN_COROUTINE = "main-coroutine"  # passed to asyncio.run / run_until_complete on a main-thread entrypoint
LOOP_THREAD = "loop-thread"  # coroutine whose loop runs in a thread other than the main one
EXECUTOR = "executor"  # passed to to_thread / run_in_executor / submit / map
THREAD = "thread"  # threading.Thread target
CALLBACK = "callback"  # loop.call_soon / add_signal_handler / signal.signal handler / add_done_callback
RAY_REMOTE = "ray-remote"  # @ray.remote function, or method of an @ray.remote class
RAY_ASYNC_ACTOR = "ray-async-actor"  # method of an @ray.remote class that has async methods
RAY_WORKER = "ray-worker"  # runs in a Ray worker process (remote, or called from remote)
DRIVER = "driver"  # process entrypoint: __main__ block, main(), calls ray.init, called from those
TORCH_WORKER = "torch-worker"  # calls init_process_group, or is called from a function that does

TASK_SPAWNERS = frozenset(
    {
        "asyncio.create_task",
        "asyncio.ensure_future",
        "asyncio.AbstractEventLoop.create_task",
        "asyncio.TaskGroup.create_task",
        "asyncio.run_coroutine_threadsafe",
        "asyncio.gather",
        "asyncio.wait",
        "asyncio.as_completed",
        "asyncio.shield",
        "asyncio.wait_for",
        "tqdm.asyncio.tqdm.gather",
        "tqdm.asyncio.tqdm_asyncio.gather",
        "anyio.abc.TaskGroup.start_soon",
    }
)
MAIN_RUNNERS = frozenset(
    {"asyncio.run", "asyncio.AbstractEventLoop.run_until_complete", "asyncio.Runner.run", "uvloop.run"}
)
EXECUTOR_SUBMITTERS = {
    # qualified name -> index of the callable argument
    "asyncio.to_thread": 0,
    "asyncio.AbstractEventLoop.run_in_executor": 1,
    "concurrent.futures.ThreadPoolExecutor.submit": 0,
    "concurrent.futures.ProcessPoolExecutor.submit": 0,
    "concurrent.futures.Executor.submit": 0,
    "concurrent.futures.ThreadPoolExecutor.map": 0,
    "concurrent.futures.ProcessPoolExecutor.map": 0,
    "anyio.to_thread.run_sync": 0,
}
CALLBACK_REGISTRARS = {
    "asyncio.AbstractEventLoop.call_soon": 0,
    "asyncio.AbstractEventLoop.call_soon_threadsafe": 0,
    "asyncio.AbstractEventLoop.call_later": 1,
    "asyncio.AbstractEventLoop.call_at": 1,
    "asyncio.AbstractEventLoop.add_signal_handler": 1,
    "signal.signal": 1,
    "atexit.register": 0,
}

#: Calls whose result is an instance of a known type, for ``x = f()`` bindings.
FACTORY_TYPES = {
    "asyncio.get_running_loop": "asyncio.AbstractEventLoop",
    "asyncio.get_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.new_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.events.get_running_loop": "asyncio.AbstractEventLoop",
    "asyncio.events.get_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.events.new_event_loop": "asyncio.AbstractEventLoop",
    "uvloop.new_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.TaskGroup": "asyncio.TaskGroup",
    "asyncio.taskgroups.TaskGroup": "asyncio.TaskGroup",
    "asyncio.Runner": "asyncio.Runner",
    "anyio.create_task_group": "anyio.abc.TaskGroup",
    "multiprocessing.Pool": "multiprocessing.pool.Pool",
    "multiprocessing.pool.Pool": "multiprocessing.pool.Pool",
    "multiprocessing.pool.ThreadPool": "multiprocessing.pool.ThreadPool",
    "asyncio.create_task": "asyncio.Task",
    "asyncio.ensure_future": "asyncio.Task",
    "asyncio.AbstractEventLoop.create_task": "asyncio.Task",
    "threading.Thread": "threading.Thread",
    "concurrent.futures.ThreadPoolExecutor": "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.ProcessPoolExecutor": "concurrent.futures.ProcessPoolExecutor",
    "concurrent.futures.thread.ThreadPoolExecutor": "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.process.ProcessPoolExecutor": "concurrent.futures.ProcessPoolExecutor",
    # futures from executors and cross-thread submission (their ``.result()`` blocks: SHD301)
    "concurrent.futures.ThreadPoolExecutor.submit": "concurrent.futures.Future",
    "concurrent.futures.ProcessPoolExecutor.submit": "concurrent.futures.Future",
    "concurrent.futures.Executor.submit": "concurrent.futures.Future",
    "asyncio.run_coroutine_threadsafe": "concurrent.futures.Future",
}
#: Modules re-exporting names under a canonical module (``from concurrent.futures.thread import X``).
_CANONICAL_PREFIXES = (
    ("asyncio.tasks.", "asyncio."),
    ("asyncio.runners.", "asyncio."),
    ("asyncio.events.", "asyncio."),
    ("asyncio.taskgroups.", "asyncio."),
    ("concurrent.futures.thread.", "concurrent.futures."),
    ("concurrent.futures.process.", "concurrent.futures."),
    ("torch.distributed.distributed_c10d.", "torch.distributed."),
)

Scope = Union["FunctionInfo", None]  # None is the module scope


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    qualname: str
    scope: Scope  # enclosing function, if the class is local
    outer_class: Optional["ClassInfo"]
    methods: dict[str, "FunctionInfo"] = field(default_factory=dict)
    #: ``self.x = <expr>`` assignments in any method: name -> value expressions
    attr_values: dict[str, list[tuple[cst.BaseExpression, "FunctionInfo"]]] = field(default_factory=dict)
    decorators: list[str] = field(default_factory=list)

    def __hash__(self) -> int:
        return id(self)

    @property
    def has_async_methods(self) -> bool:
        return any(m.is_async for m in self.methods.values())


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef
    name: str
    qualname: str
    is_async: bool
    scope: Scope  # enclosing function (None at module level or directly in a class)
    cls: Optional[ClassInfo]  # the class this is a method of
    bindings: dict[str, list["_Binding"]] = field(default_factory=dict)
    calls: list[cst.Call] = field(default_factory=list)  # calls in this body, not in nested defs
    nested: dict[str, "FunctionInfo"] = field(default_factory=dict)
    decorators: list[str] = field(default_factory=list)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<FunctionInfo {self.qualname}>"

    @property
    def is_method(self) -> bool:
        return self.cls is not None


@dataclass
class _Binding:
    kind: str  # "import" | "def" | "class" | "value" | "other"
    qualified: str | None = None  # for imports
    target: object = None  # FunctionInfo / ClassInfo / value expression
    scope: Scope = None


# --------------------------------------------------------------------------- collector


class _Collector(cst.CSTVisitor):
    """The one walk: parents, scopes, bindings, functions, classes, calls."""

    def __init__(self, facts: "ModuleFacts") -> None:
        self.f = facts
        self.stack: list[cst.CSTNode] = []
        self.scopes: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []
        # classes and functions interleave: remember which one is innermost
        self.kinds: list[str] = []

    # -- generic
    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.f._parents[node] = self.stack[-1]
        self.stack.append(node)
        return super().on_visit(node)

    def on_leave(self, original_node: cst.CSTNode) -> None:
        super().on_leave(original_node)
        self.stack.pop()

    @property
    def scope(self) -> Scope:
        return self.scopes[-1] if self.scopes else None

    def _in_class_body(self) -> Optional[ClassInfo]:
        return self.classes[-1] if self.kinds and self.kinds[-1] == "class" else None

    def bind(self, name: str, binding: _Binding) -> None:
        binding.scope = self.scope
        table = self.scope.bindings if self.scope is not None else self.f._module_bindings
        table.setdefault(name, []).append(binding)

    # -- definitions
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        cls = self._in_class_body()
        name = node.name.value
        if cls is not None:
            qual = f"{cls.qualname}.{name}"
        elif self.scope is not None:
            qual = f"{self.scope.qualname}.<locals>.{name}"
        else:
            qual = name
        info = FunctionInfo(
            node=node,
            name=name,
            qualname=qual,
            is_async=node.asynchronous is not None,
            scope=self.scope,
            cls=cls,
        )
        info.decorators = [d for d in (self.f._decorator_name(dec.decorator, self.scope) for dec in node.decorators) if d]
        self.f._decorator_exprs[info] = [dec.decorator for dec in node.decorators]
        self.f.functions.append(info)
        self.f._function_of[node] = info
        if cls is not None:
            cls.methods.setdefault(name, info)
        else:
            if self.scope is not None:
                self.scope.nested.setdefault(name, info)
            self.bind(name, _Binding("def", target=info))
        self.scopes.append(info)
        self.kinds.append("function")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scopes.pop()
        self.kinds.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self._in_class_body()
        name = node.name.value
        qual = f"{outer.qualname}.{name}" if outer else (
            f"{self.scope.qualname}.<locals>.{name}" if self.scope else name
        )
        info = ClassInfo(node=node, name=name, qualname=qual, scope=self.scope, outer_class=outer)
        self.f._class_decorator_exprs[info] = [dec.decorator for dec in node.decorators]
        self.f.classes.append(info)
        self.f._class_of[node] = info
        if outer is None:
            self.bind(name, _Binding("class", target=info))
        self.classes.append(info)
        self.kinds.append("class")

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes.pop()
        self.kinds.pop()

    # -- imports
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = _dotted(alias.name)
            if dotted is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bind(alias.asname.name.value, _Binding("import", qualified=dotted))
            else:
                top = dotted.split(".")[0]
                self.bind(top, _Binding("import", qualified=top))
        self.f.has_imports = True

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = _dotted(node.module) if node.module is not None else ""
        dots = "." * len(node.relative)
        base = f"{dots}{module or ''}"
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _dotted(alias.name)
            if name is None:
                continue
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            qualified = f"{base}.{name}" if base and not base.endswith(".") else f"{base}{name}"
            self.bind(local, _Binding("import", qualified=qualified))

    # -- bindings we can type
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        # comprehension variables live in their own scope; binding them as "other"
        # only matters for shadowing builtins, which is what we want
        self._bind_target(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, node.item)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.bind(node.name.name.value, _Binding("other"))

    def visit_Global(self, node: cst.Global) -> None:
        return None

    def _bind_target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Name):
            if value is not None:
                self.bind(target.value, _Binding("value", target=value))
            else:
                self.bind(target.value, _Binding("other"))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                inner = el.value
                if isinstance(inner, cst.StarredElement):
                    inner = inner.value
                self._bind_target(inner, None)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None)
        elif (
            isinstance(target, cst.Attribute)
            and isinstance(target.value, cst.Name)
            and target.value.value == "self"
            and self.scope is not None
            and self.scope.cls is not None
            and value is not None
        ):
            self.scope.cls.attr_values.setdefault(target.attr.value, []).append((value, self.scope))

    # -- calls, awaits, main guard
    def visit_Call(self, node: cst.Call) -> None:
        self.f.calls.append(node)
        self.f._call_scope[node] = self.scope
        if self.scope is not None:
            self.scope.calls.append(node)
        else:
            self.f.module_calls.append(node)

    def visit_Await(self, node: cst.Await) -> None:
        if isinstance(node.expression, cst.Call):
            self.f._awaited.add(node.expression)

    def visit_If(self, node: cst.If) -> None:
        if self.scope is None and not self.classes and _is_main_guard(node.test):
            self.f.main_guards.append(node)


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, comp = test.left, test.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return False
    sides = [left, comp.comparator]
    has_name = any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
    has_main = any(isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides)
    return has_name and has_main


def _dotted(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def _canonical(qualified: str) -> str:
    for prefix, repl in _CANONICAL_PREFIXES:
        if qualified.startswith(prefix):
            return repl + qualified[len(prefix):]
    return qualified


# --------------------------------------------------------------------------- facts


class ModuleFacts:
    """Facts about one parsed module. Built by ``ModuleFacts.build(module)``."""

    def __init__(self, module: cst.Module, path: str = "<string>") -> None:
        self.module = module
        self.path = path
        self._parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._module_bindings: dict[str, list[_Binding]] = {}
        self.functions: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []
        self.calls: list[cst.Call] = []
        self.module_calls: list[cst.Call] = []
        self.main_guards: list[cst.If] = []
        self.has_imports = False
        self._function_of: dict[cst.FunctionDef, FunctionInfo] = {}
        self._class_of: dict[cst.ClassDef, ClassInfo] = {}
        self._call_scope: dict[cst.Call, Scope] = {}
        self._awaited: set[cst.Call] = set()
        self._decorator_exprs: dict[FunctionInfo, list[cst.BaseExpression]] = {}
        self._class_decorator_exprs: dict[ClassInfo, list[cst.BaseExpression]] = {}
        self._qn_cache: dict[tuple[int, int], Optional[str]] = {}
        self._typing_stack: set[int] = set()

    @classmethod
    def build(cls, module: cst.Module, path: str = "<string>") -> "ModuleFacts":
        facts = cls(module, path)
        from .traversal import walk  # local: traversal imports rule, which names facts

        walk(module, _Collector(facts))  # = module.visit(...) without rebuilding nodes (traversal.py)
        # decorators were recorded before all imports were seen; resolve them now
        for fn, exprs in facts._decorator_exprs.items():
            fn.decorators = [d for d in (facts._decorator_name(e, fn.scope) for e in exprs) if d]
        for c, exprs in facts._class_decorator_exprs.items():
            c.decorators = [d for d in (facts._decorator_name(e, c.scope) for e in exprs) if d]
        return facts

    # ------------------------------------------------------------------ tree shape
    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self._parents.get(node)
        while cur is not None:
            yield cur
            cur = self._parents.get(cur)

    def is_ancestor(self, ancestor: cst.CSTNode, node: cst.CSTNode) -> bool:
        return any(a is ancestor for a in self.ancestors(node))

    def enclosing_function(self, node: cst.CSTNode) -> Optional[FunctionInfo]:
        """The innermost ``def``/``async def`` whose body contains ``node`` (a lambda does
        not count; use ``in_lambda``). A function's own node maps to its parent scope."""
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return self._function_of.get(anc)
        return None

    def enclosing_class(self, node: cst.CSTNode) -> Optional[ClassInfo]:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.ClassDef):
                return self._class_of.get(anc)
        return None

    def in_lambda(self, node: cst.CSTNode) -> bool:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.Lambda):
                return True
            if isinstance(anc, cst.FunctionDef):
                return False
        return False

    def enclosing_statement(self, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
        """The statement (simple line or compound) that contains ``node``."""
        cur: Optional[cst.CSTNode] = node
        while cur is not None and not isinstance(cur, cst.BaseStatement):
            cur = self._parents.get(cur)
        return cur  # type: ignore[return-value]

    def enclosing_trys(self, node: cst.CSTNode) -> Iterator[cst.Try | cst.TryStar]:
        """``try`` statements whose *body* contains ``node``, innermost first, within the
        enclosing function."""
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return
            if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
                yield anc
            child = anc

    def in_cleanup_block(self, node: cst.CSTNode) -> bool:
        """``node`` sits in a ``finally:`` block or an ``except`` handler's body of its own
        function (code that runs when the normal path fails or is interrupted)."""
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(anc, cst.Finally):
                return True
            if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)) and child is anc.body:
                return True
            child = anc
        return False

    def in_main_guard(self, node: cst.CSTNode) -> bool:
        return any(g is a for a in self.ancestors(node) for g in self.main_guards)

    def function_of(self, node: cst.FunctionDef) -> Optional[FunctionInfo]:
        return self._function_of.get(node)

    def class_of(self, node: cst.ClassDef) -> Optional[ClassInfo]:
        return self._class_of.get(node)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        if isinstance(node, cst.Call) and node in self._call_scope:
            return self._call_scope[node]
        return self.enclosing_function(node)

    def is_awaited(self, call: cst.Call) -> bool:
        return call in self._awaited

    # ------------------------------------------------------------------ names
    def lookup(self, name: str, scope: Scope) -> Optional[_Binding]:
        """The binding of ``name`` visible from ``scope`` (innermost last assignment wins)."""
        cur = scope
        while cur is not None:
            b = cur.bindings.get(name)
            if b:
                return b[-1]
            cur = cur.scope
        b = self._module_bindings.get(name)
        if b:
            # prefer an import over later plain assignments of the same name at module level
            return b[-1]
        return None

    def is_builtin(self, name: str, at: cst.CSTNode) -> bool:
        return name in _BUILTINS and self.lookup(name, self.scope_of(at)) is None

    def module_import_name(self, qualified: str) -> Optional[str]:
        """The module-level local name bound by ``import <qualified> [as x]``
        (``aio`` for ``import asyncio as aio``), for fixes that must write
        ``<alias>.TaskGroup()``; ``None`` when the module has no such import."""
        for local, bindings in self._module_bindings.items():
            if any(b.kind == "import" and b.qualified == qualified for b in bindings):
                return local
        return None

    def qualified_name(self, expr: cst.BaseExpression, at: Optional[cst.CSTNode] = None) -> Optional[str]:
        """Dotted name that ``expr`` refers to, through imports and aliases.

        ``aio.gather`` -> ``asyncio.gather``; ``loop.create_task`` where ``loop`` came
        from ``asyncio.get_running_loop()`` -> ``asyncio.AbstractEventLoop.create_task``;
        ``exit`` -> ``builtins.exit``; a same-module function -> its qualname prefixed by
        ``<module>.``. ``None`` when unknown.
        """
        scope = self.scope_of(at if at is not None else expr)
        key = (id(expr), id(scope))
        if key in self._qn_cache:
            return self._qn_cache[key]
        result = self._qualified(expr, scope)
        if result is not None:
            result = _canonical(result)
        self._qn_cache[key] = result
        return result

    def _qualified(self, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
        if isinstance(expr, cst.Name):
            b = self.lookup(expr.value, scope)
            if b is None:
                return f"builtins.{expr.value}" if expr.value in _BUILTINS else None
            if b.kind == "import":
                return b.qualified
            if b.kind == "def":
                return f"<module>.{b.target.qualname}"  # type: ignore[union-attr]
            if b.kind == "class":
                return f"<module>.{b.target.qualname}"  # type: ignore[union-attr]
            if b.kind == "value":
                return self._instance_type(b.target, b.scope)  # type: ignore[arg-type]
            return None
        if isinstance(expr, cst.Attribute):
            base = expr.value
            if isinstance(base, cst.Name) and base.value == "self" and scope is not None:
                cls = self._method_class(scope)
                if cls is not None:
                    attr = expr.attr.value
                    if attr in cls.methods:
                        return f"<module>.{cls.methods[attr].qualname}"
                    values = cls.attr_values.get(attr)
                    if values:
                        return self._instance_type(values[-1][0], values[-1][1])
                    return None
            inner = self._qualified(base, scope)
            if inner is None:
                return None
            return f"{_canonical(inner)}.{expr.attr.value}"
        if isinstance(expr, cst.Call):
            return self._call_result_type(expr, scope)
        return None

    def _method_class(self, scope: FunctionInfo) -> Optional[ClassInfo]:
        cur: Scope = scope
        while cur is not None:
            if cur.cls is not None:
                return cur.cls
            cur = cur.scope
        return None

    def _instance_type(self, value: cst.BaseExpression, scope: Scope) -> Optional[str]:
        if isinstance(value, cst.Await):
            value = value.expression
        if isinstance(value, cst.Call):
            return self._call_result_type(value, scope)
        if isinstance(value, (cst.Name, cst.Attribute)):
            if id(value) in self._typing_stack:
                return None
            self._typing_stack.add(id(value))
            try:
                return self._qualified(value, scope)
            finally:
                self._typing_stack.discard(id(value))
        return None

    def _call_result_type(self, call: cst.Call, scope: Scope) -> Optional[str]:
        if id(call) in self._typing_stack:
            return None
        self._typing_stack.add(id(call))
        try:
            callee = self._qualified(call.func, scope)
        finally:
            self._typing_stack.discard(id(call))
        if callee is None:
            return None
        callee = _canonical(callee)
        if callee in FACTORY_TYPES:
            return FACTORY_TYPES[callee]
        last = callee.rsplit(".", 1)[-1]
        if last[:1].isupper() and not callee.startswith("<module>."):
            return callee  # ``ThreadPoolExecutor()`` -> an instance of that class
        return None

    def _decorator_name(self, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
        if isinstance(expr, cst.Call):
            expr = expr.func
        q = self._qualified(expr, scope)
        return _canonical(q) if q else None

    def call_name(self, call: cst.Call) -> Optional[str]:
        """Qualified name of the callee of ``call``."""
        return self.qualified_name(call.func, call)

    # ------------------------------------------------------------------ resolution
    def resolve_function(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[FunctionInfo]:
        """The same-module function/method that ``expr`` names (``f``, ``self.m``,
        ``Cls.m``), looking through ``functools.partial(f, ...)``."""
        scope = self.scope_of(at)
        if isinstance(expr, cst.Call):
            if self.qualified_name(expr.func, at) == "functools.partial" and expr.args:
                return self.resolve_function(expr.args[0].value, at)
            return None
        if isinstance(expr, cst.Name):
            b = self.lookup(expr.value, scope)
            if b is not None and b.kind == "def":
                return b.target  # type: ignore[return-value]
            return None
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name):
                if expr.value.value in ("self", "cls") and scope is not None:
                    cls = self._method_class(scope)
                    if cls is not None:
                        return cls.methods.get(expr.attr.value)
                b = self.lookup(expr.value.value, scope)
                if b is not None and b.kind == "class":
                    return b.target.methods.get(expr.attr.value)  # type: ignore[union-attr]
        return None

    def resolve_call(self, call: cst.Call) -> Optional[FunctionInfo]:
        """The same-module function that ``call`` calls, if any."""
        return self.resolve_function(call.func, call)

    def coroutine_target(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[FunctionInfo]:
        """For ``create_task(f(x))``-style arguments: the function whose call makes the
        coroutine."""
        if isinstance(expr, cst.Call):
            return self.resolve_function(expr.func, at)
        return None

    def callees(self, fn: FunctionInfo) -> Iterator[tuple[cst.Call, FunctionInfo]]:
        for call in fn.calls:
            target = self.resolve_call(call)
            if target is not None:
                yield call, target

    # ------------------------------------------------------------------ execution
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

    def only_main_task(self, fn: FunctionInfo) -> bool:
        """True when the module only ever runs coroutine ``fn`` as the main coroutine of
        ``asyncio.run`` on the main thread (directly, or awaited from such a coroutine)."""
        return fn in self._execution.main_task_only

    def module_alias(self, module: str) -> Optional[str]:
        """The local name under which ``import module`` (or ``import module as x``) is
        bound at module level, e.g. ``aio`` for ``import asyncio as aio``; None if absent."""
        for name, bindings in self._module_bindings.items():
            if any(b.kind == "import" and b.qualified == module for b in bindings):
                return name
        return None

    @cached_property
    def _positions(self):
        from libcst.metadata import MetadataWrapper, PositionProvider

        return MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)

    def line_of(self, node: cst.CSTNode) -> int:
        """1-based line of ``node`` (computed lazily; costs one render of the module)."""
        return self._positions[node].start.line


class _Execution:
    """Where functions run, derived from calls that spawn, submit or decorate them."""

    def __init__(self, facts: ModuleFacts) -> None:
        self.facts = facts
        self.contexts: dict[FunctionInfo, set[str]] = {}
        self.callers: dict[FunctionInfo, set[FunctionInfo]] = {}
        self.references: dict[FunctionInfo, list[tuple[cst.CSTNode, str]]] = {}
        self.ray_classes: set[ClassInfo] = set()
        self.module_calls_ray_init = False
        self.main_task_only: set[FunctionInfo] = set()
        self._compute()

    def add(self, fn: Optional[FunctionInfo], ctx: str) -> None:
        if fn is not None:
            self.contexts.setdefault(fn, set()).add(ctx)

    def ref(self, fn: Optional[FunctionInfo], node: cst.CSTNode, kind: str) -> None:
        if fn is not None:
            self.references.setdefault(fn, []).append((node, kind))

    def _compute(self) -> None:
        f = self.facts
        for fn in f.functions:
            if fn.is_async:
                self.contexts.setdefault(fn, set())
        # decorators: @ray.remote
        for c in f.classes:
            if any(d in ("ray.remote", "ray.actor.remote") for d in c.decorators):
                self.ray_classes.add(c)
        self.ray_classes |= _ray_remote_call_classes(f)  # ``ray.remote(Cls)`` / ``ray.remote(**kw)(Cls)``
        for fn in f.functions:
            if any(d in ("ray.remote", "ray.actor.remote") for d in fn.decorators):
                self.add(fn, RAY_REMOTE)
            if fn.cls is not None and fn.cls in self.ray_classes:
                self.add(fn, RAY_REMOTE)
                if fn.cls.has_async_methods:
                    self.add(fn, RAY_ASYNC_ACTOR)

        entry_calls: list[tuple[cst.Call, FunctionInfo]] = []  # (asyncio.run call, coroutine fn)
        torch_roots: set[FunctionInfo] = set()
        driver_roots: set[FunctionInfo] = set()
        consumed: set[cst.Call] = set()  # coroutine calls handed to a spawner or runner
        for call in f.calls:
            name = f.call_name(call)
            scope = f._call_scope.get(call)
            target = f.resolve_call(call)
            if target is not None and scope is not None:
                self.callers.setdefault(target, set()).add(scope)
            if name is None:
                continue
            args = [a for a in call.args if a.keyword is None]
            if name in TASK_SPAWNERS:
                for a in args:
                    for expr in _coroutine_exprs(a.value):
                        t = f.coroutine_target(expr, call)
                        self.add(t, TASK)
                        self.ref(t, call, "task")
                        if t is not None:
                            consumed.add(expr)  # type: ignore[arg-type]
            elif name in MAIN_RUNNERS and args:
                t = f.coroutine_target(args[0].value, call)
                if t is not None:
                    entry_calls.append((call, t))
                    self.ref(t, call, "main")
                    consumed.add(args[0].value)  # type: ignore[arg-type]
            elif name in EXECUTOR_SUBMITTERS:
                idx = EXECUTOR_SUBMITTERS[name]
                if len(args) > idx:
                    t = f.resolve_function(args[idx].value, call)
                    self.add(t, EXECUTOR)
                    self.ref(t, call, "executor")
            elif name in ("threading.Thread", "threading.Timer"):
                for a in call.args:
                    if (a.keyword is not None and a.keyword.value in ("target", "function")) or (
                        name == "threading.Timer" and a.keyword is None and a is call.args[min(1, len(call.args) - 1)]
                    ):
                        t = f.resolve_function(a.value, call)
                        self.add(t, THREAD)
                        self.ref(t, call, "thread")
            elif name in CALLBACK_REGISTRARS or name.endswith(".add_done_callback"):
                idx = CALLBACK_REGISTRARS.get(name, 0)
                if len(args) > idx:
                    t = f.resolve_function(args[idx].value, call)
                    self.add(t, CALLBACK)
                    self.ref(t, call, "callback")
            elif name == "ray.remote" and args:
                t = f.resolve_function(args[0].value, call)
                self.add(t, RAY_REMOTE)
            elif name in ("ray.init",):
                if scope is None:
                    self.module_calls_ray_init = True
                else:
                    driver_roots.add(scope)
            elif name in ("torch.distributed.init_process_group", "torch.distributed.device_mesh.init_device_mesh"):
                if scope is not None:
                    torch_roots.add(scope)

        for call in f.calls:
            if call in consumed:
                continue
            target = f.resolve_call(call)
            if target is not None:
                self.ref(target, call, "await" if f.is_awaited(call) else "call")

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
        off_main = {fn for fn, ctx in self.contexts.items() if ctx & {THREAD, EXECUTOR}}
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

    def _closure(self, roots: Iterable[FunctionInfo], stop=None) -> set[FunctionInfo]:
        return reachable(
            roots,
            lambda fn: (c for _, c in self.facts.callees(fn) if stop is None or not stop(c)),
        )


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier (``Name``) used anywhere under ``node``."""
    from .traversal import walk

    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

    walk(node, _Names())
    return found


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
