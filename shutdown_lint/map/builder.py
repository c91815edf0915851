"""The walk: from the entrypoint, across the project's modules, every start point and its stops.

The walk reads each module it reaches with ``ast`` (one parse per file), resolves names through
the project index (``index/project.py``: module names to files), follows calls into the
project's own functions and methods (a local ``x = Cls(...)``, ``self.x = Cls(...)``, ``self.m()``),
and records a node for every start it meets (``model.KINDS``). How a node stops is read from its
handle: where ``t.join()``, ``ex.shutdown()``, ``p.terminate()``, ``dist.destroy_process_group()``...
are called (in a ``finally``: every ending; in ``except KeyboardInterrupt``: Ctrl+C; in the plain
body: the normal path), or from the construct itself (``with``, ``asyncio.run``'s shutdown). What a
rule knows about a gap comes from the rule: the analyzer runs on every file the walk read, and
each finding is attached to the node it is about (``attach``), setting the endings the rule
speaks of. What neither says is ``unknown``.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Iterable, Optional

from ..index.summary import dotted as index_dotted
from .entry import Entry
from .model import ENDINGS, Ending, Finding, MapResult, Node

_MAX_DEPTH = 14
#: the section of start points the entry does not reach reads at most this many project files
_MAX_UNREACHED_FILES = 400

# ---------------------------------------------------------------------------------------- names

_LOOP_RUN = {"asyncio.run"}
_NEW_LOOP = {"asyncio.new_event_loop"}
_CREATE_TASK = {"asyncio.create_task", "asyncio.ensure_future"}
_THREADS = {"threading.Thread", "threading.Timer"}
_LOOP_THREADS = {"runtime_guard.LoopThread", "runtime_guard.loop_thread.LoopThread"}
_EXECUTORS = {"concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
              "concurrent.futures.thread.ThreadPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor",
              "multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.pool.ThreadPool"}
_POPEN = {"subprocess.Popen", "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell"}
_WAITED_CHILD = {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output"}
_MP_PROCESS = {"multiprocessing.Process", "multiprocessing.context.Process"}
_PG_INIT = {"torch.distributed.init_process_group"}
_PG_DESTROY = {"torch.distributed.destroy_process_group"}
_SIGNAL = {"signal.signal"}
_ATEXIT = {"atexit.register"}
_RAY_INIT = {"ray.init"}
_RAY_REMOTE = {"ray.remote"}
#: ``with`` items that are not worth a node (short-lived, no shutdown story)
_WITH_SKIP = ("open", "io.open", "contextlib.suppress", "warnings.", "torch.no_grad", "torch.inference_mode",
              "tempfile.", "threading.Lock", "threading.RLock", "asyncio.Lock", "asyncio.timeout",
              "contextlib.redirect_", "unittest.mock")

#: runtime_guard helpers that install a signal handler (what the linter's fixes insert): signal, effect
_SIGNAL_HELPERS = {
    "runtime_guard.sigterm_as_keyboard_interrupt": ("SIGTERM", "raises"),
    "runtime_guard.signals.sigterm_as_keyboard_interrupt": ("SIGTERM", "raises"),
    "runtime_guard.torch.install_distributed_teardown": ("SIGTERM", "pg_teardown"),
    "runtime_guard.ray.setup_worker": ("SIGTERM", "ray_worker_cleanup"),
}
#: what each signal effect does, in words (the handler's name is put in front)
_EFFECT_TEXT = {
    "ignore": "ignored: the signal is lost and the program goes on",
    "default": "default action restored",
    "raises": "raises: the program unwinds as on Ctrl+C",
    "cancels": "cancels the main task (the loop unwinds)",
    "pg_teardown": "destroys the process group, then exits (no finally of the main thread runs)",
    "ray_worker_cleanup": "cancels the tasks on the actor's event loop and waits for their cleanup, then Ray exits "
                          "the worker",
    "other": "runs; what it stops is not known to the map",
}
_EFFECT_STATE = {"ignore": "left_running", "raises": "stopped", "cancels": "stopped", "pg_teardown": "killed",
                 "ray_worker_cleanup": "stopped", "other": "unknown"}

#: stop calls on a handle of each kind (method names)
_STOP_METHODS = {
    "thread": {"join"},
    "executor": {"shutdown", "terminate", "close", "join"},
    "child_process": {"terminate", "kill", "wait", "communicate", "send_signal", "join"},
    "task": {"cancel"},
    "ray_actor": set(),
    "ray_task": set(),
    "event_loop": {"close", "stop"},
}
#: module functions that stop a handle passed to them
_STOP_FUNCS = {
    "runtime_guard.terminate_process_groups": "child_process",
    "runtime_guard.shutdown_executor": "executor",
    "ray.kill": "ray_actor",
    "ray.cancel": "ray_task",
    "ray.get": "ray_task",
    "ray.wait": "ray_task",
    "runtime_guard.ray.interruptible_get": "ray_task",
    "runtime_guard.ray.interruptible_wait": "ray_task",
    "runtime_guard.ray.cancel_and_wait": "ray_task",
    "runtime_guard.ray.wait_for_cleanup": "ray_task",
    "runtime_guard.cancel_and_wait": "task",
    "runtime_guard.tasks.cancel_and_wait": "task",
    "asyncio.wait_for": "task",
    "asyncio.wait": "task",
    "asyncio.gather": "task",
}

#: which endings a rule's finding speaks of, and what it says happens there (None: the rule
#: annotates the ending without changing what the map found)
RULE_ENDINGS: dict[str, tuple[tuple[str, ...], Optional[str]]] = {
    "SHD101": (("exception",), "left_running"),
    "SHD102": (("exception",), None),
    "SHD104": (("ctrl_c", "sigterm"), "left_running"),
    "SHD105": (("normal",), None),
    "SHD106": (("normal",), None),
    "SHD201": (("exception",), "left_running"),
    "SHD202": (("ctrl_c",), None),
    "SHD204": (("ctrl_c",), None),
    "SHD401": (("ctrl_c", "sigterm"), "left_running"),
    "SHD402": (("sigterm",), "killed"),
    "SHD403": (("ctrl_c",), "killed"),
    "SHD404": (("sigterm",), "killed"),
    "SHD405": (("sigterm",), None),
    "SHD406": (("sigterm",), "left_running"),
    "SHD407": (("normal", "sigterm"), "killed"),
    "SHD501": (("exception",), "killed"),
    "SHD502": (("exception", "ctrl_c", "sigterm"), "left_running"),
    "SHD503": (("exception", "ctrl_c"), "left_running"),
    "SHD602": (("exception", "ctrl_c"), "left_running"),
}


def dotted(node: ast.AST) -> Optional[str]:
    """The index's dotted name, extended through calls in the chain (``Experiment().run``)."""
    plain = index_dotted(node)
    if plain is not None:
        return plain
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call):
        inner = dotted(node.func)
        if inner is not None:
            parts.append(inner + "()")
            return ".".join(reversed(parts))
    return None


# --------------------------------------------------------------------------------------- modules

@dataclass
class _Module:
    path: str
    name: str
    is_pkg: bool
    tree: ast.Module
    defs: dict[str, ast.AST] = field(default_factory=dict)
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, str] = field(default_factory=dict)
    #: the project's root: places are shown relative to it
    root: str = ""

    def rel(self, line: int) -> str:
        return f"{_display(self.path, self.root)}:{line}"


def _display(path: str, root: Optional[str] = None) -> str:
    try:
        rel = os.path.relpath(path, root) if root else os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _absolute(name: str, level: int, module: str, is_pkg: bool) -> str:
    if not level:
        return name
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


# ------------------------------------------------------------------------------------ the handles

@dataclass
class _Binding:
    """A name the handle is known by: a local of ``fn`` (``var``) or ``self.<attr>`` of ``cls``."""
    mod: _Module
    fn: Optional[ast.AST]
    var: Optional[str] = None
    attr: Optional[str] = None
    cls: Optional[ast.ClassDef] = None


@dataclass
class _Handle:
    node: Node
    kind: str
    #: the function (ast) that starts it, and the module
    fn: Optional[ast.AST]
    mod: _Module
    #: the names it is known by (a returned handle gets the caller's name too)
    bindings: list = field(default_factory=list)
    #: the starting call (a ``ray.get`` around it waits for it)
    call: Optional[ast.AST] = None
    #: started by code the entry does not reach
    unreached: bool = False
    #: the (SIGTERM, SIGINT) dispositions of the process it runs in (set once its walk is done)
    signals: tuple = (None, None)


@dataclass
class _Ctx:
    mod: _Module
    fn: Optional[ast.AST]
    cls: Optional[ast.ClassDef]
    parent: Node
    #: where this code runs: main, thread, daemon_thread, ray_worker, child
    where: str
    #: the nearest event loop node above (None: no loop, or not known)
    loop: Optional[Node]
    locals: dict = field(default_factory=dict)  # name -> ("class", mod, ClassDef) | ("handle", _Handle)
    depth: int = 0
    #: the endings on which this code runs: the plain body of what the entry runs {"normal"}; an
    #: ``except KeyboardInterrupt`` clause {"ctrl_c"}; a ``finally`` every ending
    on: frozenset = frozenset({"normal"})


class Builder:
    def __init__(self, entry: Entry) -> None:
        from ..index.project import ProjectIndex

        self.entry = entry
        self.index = ProjectIndex([entry.project])
        self.modules: dict[str, Optional[_Module]] = {}
        self.notes: list[str] = []
        self.handles: list[_Handle] = []
        self.signal_nodes: list[tuple[str, Node, str]] = []  # (signal, node, disposition)
        self.visiting: list[tuple[str, int]] = []
        self.walked_once: set[tuple[str, int, int]] = set()
        #: class attribute types: (path, class name) -> {attr: ("class", mod, ClassDef) | _Handle}
        self.attr_types: dict[tuple[str, str], dict] = {}
        self.reached_functions: set[tuple[str, int]] = set()
        #: (path, def line) -> the endings on which the walk reached the function
        self.reached_on: dict[tuple[str, int], set[str]] = {}
        #: ending computations, run in creation order once the walk has seen every signal handler
        self.deferred: list = []
        self.sigterm = self.sigint = None
        self.in_unreached = False
        #: (path, def line, parent id) -> the handle a walked function returns
        self.returns: dict = {}
        self.actors: list[tuple[Node, _Module, ast.ClassDef]] = []

    def _handle(self, node: Node, kind: str, ctx: _Ctx, call: Optional[ast.AST] = None) -> _Handle:
        h = _Handle(node, kind, ctx.fn, ctx.mod, call=call, unreached=self.in_unreached)
        self.handles.append(h)
        return h

    def _defer(self, fn, *args) -> None:
        self.deferred.append((fn, args))

    # ---------------------------------------------------------------- modules and names
    def module(self, path: str) -> Optional[_Module]:
        path = os.path.abspath(path)
        if path in self.modules:
            return self.modules[path]
        self.modules[path] = None
        try:
            with open(path, "rb") as fh:
                tree = ast.parse(fh.read(), path)
        except (OSError, SyntaxError, ValueError, RecursionError, MemoryError) as e:
            self.notes.append(f"{_display(path, self.entry.project)}: not read ({e.__class__.__name__}: {e})")
            return None
        names = self.index.module_names(path)
        name = names[0] if names else os.path.splitext(os.path.basename(path))[0]
        mod = _Module(path, name, os.path.basename(path) == "__init__.py", tree, root=self.entry.project)
        for st in tree.body:
            self._top(st, mod)
        self.modules[path] = mod
        return mod

    def _top(self, st: ast.stmt, mod: _Module) -> None:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mod.defs[st.name] = st
        elif isinstance(st, ast.ClassDef):
            mod.classes[st.name] = st
        elif isinstance(st, ast.Import):
            for a in st.names:
                if a.asname:
                    mod.imports[a.asname] = a.name
                else:
                    mod.imports[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(st, ast.ImportFrom):
            base = _absolute(st.module or "", st.level, mod.name, mod.is_pkg)
            for a in st.names:
                if a.name != "*":
                    mod.imports[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
        elif isinstance(st, (ast.If, ast.Try)):
            for sub in [*st.body, *getattr(st, "orelse", []), *getattr(st, "finalbody", [])]:
                if not (isinstance(st, ast.If) and _is_main_guard(st.test)):
                    self._top(sub, mod)

    def canonical(self, mod: _Module, written: Optional[str]) -> Optional[str]:
        """``dist.init_process_group`` -> ``torch.distributed.init_process_group``."""
        if not written:
            return None
        head, _, rest = written.partition(".")
        if head in mod.imports:
            full = mod.imports[head]
            return f"{full}.{rest}" if rest else full
        return written

    def lookup(self, mod: _Module, written: str, depth: int = 0):
        """A project function or class a written name means: ("function", mod, def, cls|None),
        ("class", mod, ClassDef), ("module", mod) or None."""
        if depth > 6:
            return None
        head, _, rest = written.partition(".")
        if head in mod.defs and not rest:
            return ("function", mod, mod.defs[head], None)
        if head in mod.classes:
            cls = mod.classes[head]
            if not rest:
                return ("class", mod, cls)
            return self.method(mod, cls, rest)
        if head in mod.imports:
            return self.lookup_absolute(mod.imports[head] + ("." + rest if rest else ""), depth + 1)
        return None

    def lookup_absolute(self, full: str, depth: int = 0):
        parts = full.split(".")
        for i in range(len(parts), 0, -1):
            modname = ".".join(parts[:i])
            path = self.index.find(modname)
            if path is None or path.endswith(os.sep):
                continue
            target = self.module(path)
            if target is None:
                return None
            rest = parts[i:]
            if not rest:
                return ("module", target)
            return self.lookup(target, ".".join(rest), depth + 1)
        return None

    def method(self, mod: _Module, cls: ast.ClassDef, name: str, seen: int = 0):
        if "." in name or seen > 6:
            return None
        for st in cls.body:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == name:
                return ("function", mod, st, cls)
        for base in cls.bases:
            written = dotted(base)
            found = self.lookup(mod, written) if written else None
            if found and found[0] == "class":
                m = self.method(found[1], found[2], name, seen + 1)
                if m:
                    return m
        return None

    # ---------------------------------------------------------------- building
    def build(self) -> MapResult:
        try:
            return self._build()
        except RecursionError:
            from .entry import EntryError

            raise EntryError("map: the code is nested too deeply to walk (recursion limit)") from None

    def _build(self) -> MapResult:
        mod = self.module(self.entry.path)
        if mod is None:
            from .entry import EntryError

            raise EntryError(f"map: cannot read the entry {self.entry.given!r}: {self.notes[-1] if self.notes else ''}")
        label = {"script": f"python {_display(self.entry.path, self.entry.project)}", "module": f"python -m {self.entry.given}",
                 "console_script": f"{self.entry.given} ({mod.name}:{self.entry.function})"}[self.entry.kind]
        root = Node("process", label, mod.rel(1), mod.path, 1)
        self.root = root
        ctx = _Ctx(mod, None, None, root, "main", None)
        if self.entry.function:
            self._walk_module_level(mod, root, include_main=False)
            found = self.lookup(mod, self.entry.function)
            if not found or found[0] != "function":
                from .entry import EntryError

                raise EntryError(f"map: console script {self.entry.given!r}: no function "
                                 f"{self.entry.function!r} in {_display(mod.path)}")
            root.at = mod.rel(found[2].lineno)
            root.line = found[2].lineno
            self.walk_function(found[1], found[2], found[3], ctx)
        else:
            self._walk_module_level(mod, root, include_main=True)
        self._actor_methods()
        self._process_endings(root)
        self._run_deferred()
        # the project's other start points: code the entry does not reach (other entrypoints,
        # library functions), each mapped as if its own process's main thread ran it
        for h in self.handles:
            h.signals = (self.sigterm, self.sigint)
        self.in_unreached = True
        unreached = self._unreached()
        for h in self.handles:
            self.sigterm, self.sigint = h.signals
            self._stops(h)
        result = MapResult(self.entry.given, self.entry.kind, root, unreached=unreached, notes=self.notes)
        return result

    def _run_deferred(self) -> None:
        while self.deferred:
            todo, self.deferred = self.deferred, []
            for fn, args in todo:
                fn(*args)

    def _actor_methods(self) -> None:
        """A Ray actor's methods are each an entrypoint for whoever holds its handle: the ones the
        walk did not reach are walked under the actor node (``details.methods_not_called``)."""
        while self.actors:
            node, mod, cls = self.actors.pop(0)
            missed = []
            for st in cls.body:
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and not st.name.startswith("__") \
                        and (mod.path, st.lineno) not in self.reached_functions:
                    missed.append(st)
            if not missed:
                continue
            node.details["methods_not_called"] = [f"{cls.name}.{m.name} ({mod.rel(m.lineno)})" for m in missed]
            for m in missed:
                if (mod.path, m.lineno) in self.reached_functions:
                    continue  # reached through another missed method
                self.walk_function(mod, m, cls, _Ctx(mod, None, cls, node, "ray_worker", None, {}, 1))

    def _unreached(self) -> list[Node]:
        groups: list[Node] = []
        files = [f for f in self.index.project_files() if not _is_test_file(f)]
        if len(files) > _MAX_UNREACHED_FILES:
            self.notes.append(f"the project has {len(files)} files: the start points the entry does not reach are "
                              f"listed for the first {_MAX_UNREACHED_FILES} only (give --project a narrower folder)")
            files = files[:_MAX_UNREACHED_FILES]
        for path in files:
            mod = self.module(path)
            if mod is None or mod.path == self.entry.path and not self.entry.function:
                continue
            group = Node("module", f"{mod.name} (not reached from the entry)", mod.rel(1), mod.path, 1)
            first_handle = len(self.handles)
            for e in ENDINGS:
                group.endings[e] = Ending("not_applicable", "a group of start points, not a start point")
            ctx = _Ctx(mod, None, None, group, "main", None)
            # its own entrypoint first (if __name__ == "__main__"), then whatever nobody calls, then the rest
            if mod.path != self.entry.path:
                mains = [s for s in mod.tree.body if isinstance(s, ast.If) and _is_main_guard(s.test)]
                for st in mains:
                    group.spans.append((mod.path, st.lineno, st.end_lineno or st.lineno))
                    self.walk_body(st.body, ctx)
            functions = [(fn, None) for fn in mod.defs.values()]
            for cls in mod.classes.values():
                if _ray_decorator(cls, mod, self) is not None:
                    continue  # an actor class: mapped when an actor is created
                functions += [(st, cls) for st in cls.body if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))]
            called = _names_called(mod.tree)
            order = sorted(functions, key=lambda fc: (fc[0].name in called, fc[0].lineno))
            for fn, cls in order:
                if (mod.path, fn.lineno) in self.reached_functions:
                    continue
                self.walk_function(mod, fn, cls, _Ctx(mod, None, cls, group, "main", None, {}, 1))
            for cls in mod.classes.values():
                decl = _ray_decorator(cls, mod, self)
                if decl is not None and not any(n.details.get("_class") == (mod, cls) for n in self.root.walk()):
                    node = self.add(ctx, "ray_actor", f"{cls.name} (an actor class no code of the project creates)",
                                    cls.lineno, {"class": f"{cls.name} ({mod.rel(cls.lineno)})",
                                                 "resources": _resources(decl), "options": _others(decl)})
                    node.details["_class"] = (mod, cls)
                    self.actors.append((node, mod, cls))
                    self._defer(self._ray_endings, node)
            # this module's code as one program: its own signal handlers decide its SIGTERM/SIGINT
            self.sigterm = self.sigint = None
            for sig, node, effect in self.signal_nodes:
                if node.details.get("runs_in") not in ("ray_worker", "child") and any(node is n for n in group.walk()):
                    if sig == "SIGTERM":
                        self.sigterm = (node, effect)
                    elif sig == "SIGINT":
                        self.sigint = (node, effect)
            self._actor_methods()
            self._run_deferred()
            for h in self.handles[first_handle:]:
                h.signals = (self.sigterm, self.sigint)
            if group.children:
                groups.append(group)
        return groups

    def _walk_module_level(self, mod: _Module, parent: Node, include_main: bool) -> None:
        ctx = _Ctx(mod, None, None, parent, "main", None)
        body = [s for s in mod.tree.body
                if include_main or not (isinstance(s, ast.If) and _is_main_guard(s.test))]
        for st in body:
            if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
                parent.spans.append((mod.path, st.lineno, st.end_lineno or st.lineno))
        try:
            self.walk_body(body, ctx)
        except RecursionError:
            self.notes.append(f"{mod.rel(1)}: nested too deeply to walk; what its module-level code starts is not "
                              "mapped")

    def walk_function(self, mod: _Module, fn: ast.AST, cls: Optional[ast.ClassDef], ctx: _Ctx,
                      args: Optional[ast.Call] = None) -> Optional[_Handle]:
        """Walks a function's body under ``ctx.parent``; returns the handle it returns, if any."""
        key = (mod.path, fn.lineno)
        if key in self.visiting or ctx.depth > _MAX_DEPTH:
            return None
        self.reached_functions.add(key)
        self.reached_on.setdefault(key, set()).update(ctx.on)
        ctx.parent.spans.append((mod.path, fn.lineno, fn.end_lineno or fn.lineno))
        # the same function under the same parent once (a loop of calls to it adds nothing)
        once = (mod.path, fn.lineno, id(ctx.parent))
        if once in self.walked_once:
            return self.returns.get(once)
        self.walked_once.add(once)
        # a module's own import-time code runs once, before its functions are called
        if mod.path != self.entry.path and (mod.path, 0) not in self.reached_functions:
            self.reached_functions.add((mod.path, 0))
            self._walk_module_level(mod, self.root, include_main=False)
        self.visiting.append(key)
        inner = _Ctx(mod, fn, cls, ctx.parent, ctx.where, ctx.loop, {}, ctx.depth + 1, ctx.on)
        for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]:
            if a.annotation is not None:
                written = dotted(a.annotation) if not isinstance(a.annotation, ast.Constant) else a.annotation.value
                found = self.lookup(mod, written) if isinstance(written, str) else None
                if found and found[0] == "class":
                    inner.locals[a.arg] = found
        try:
            self.walk_body(fn.body, inner)
        except RecursionError:
            self.notes.append(f"{mod.rel(fn.lineno)}: nested too deeply to walk; what it starts is not mapped")
        finally:
            self.visiting.pop()
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Return) and isinstance(sub.value, ast.Name) \
                    and isinstance(inner.locals.get(sub.value.id), _Handle):
                self.returns[once] = inner.locals[sub.value.id]
                return self.returns[once]
        return None

    def walk_body(self, body: list[ast.stmt], ctx: _Ctx) -> None:
        for st in body:
            self.walk_stmt(st, ctx)

    def walk_stmt(self, st: ast.stmt, ctx: _Ctx) -> None:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for d in getattr(st, "decorator_list", []):
                self.walk_expr(d, ctx)
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and ctx.fn is not None:
                ctx.locals[st.name] = ("function", ctx.mod, st, None)
            return
        if isinstance(st, (ast.With, ast.AsyncWith)):
            self._with(st, ctx)
            return
        if isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
            parent = ctx
            if st.finalbody and self._finally_worth_a_node(st):
                node = self.add(ctx, "resource", f"try/finally: {_call_text(st.finalbody)}", st.lineno,
                                details={"cleanup": "finally", "cleanup_at": ctx.mod.rel(st.finalbody[0].lineno)})
                node.spans.append((ctx.mod.path, st.lineno, st.end_lineno or st.lineno))
                self._defer(self._finally_endings, node, st, ctx)
                parent = self._child_ctx(ctx, node)
            self.walk_body(st.body, parent)
            for h in st.handlers:
                caught = frozenset(_caught(h.type))
                self.walk_body(h.body, self._on(parent, caught if "normal" in ctx.on else ctx.on & caught))
            self.walk_body(st.orelse, parent)
            self.walk_body(st.finalbody, self._on(ctx, frozenset(_ALL) if "normal" in ctx.on else ctx.on))
            return
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            self._assign(st.targets[0], st.value, ctx)
            return
        if isinstance(st, ast.AnnAssign) and st.value is not None:
            self._assign(st.target, st.value, ctx)
            return
        for child in ast.iter_child_nodes(st):
            if isinstance(child, ast.stmt):
                self.walk_stmt(child, ctx)
            elif isinstance(child, ast.expr):
                self.walk_expr(child, ctx)
            elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                for sub in child.body:
                    self.walk_stmt(sub, ctx)

    def _assign(self, target: ast.AST, value: ast.AST, ctx: _Ctx) -> None:
        made = self.walk_expr(value, ctx)
        name = target.id if isinstance(target, ast.Name) else None
        attr = (target.attr if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self" else None)
        if made is None and isinstance(value, ast.Call):
            written = dotted(value.func)
            found = self.lookup(ctx.mod, written) if written else None
            if found and found[0] == "class":
                made = found
        if made is None:
            return
        if isinstance(made, _Handle):
            if name:
                made.bindings.append(_Binding(ctx.mod, ctx.fn, var=name))
            elif attr and ctx.cls is not None:
                made.bindings.append(_Binding(ctx.mod, ctx.fn, attr=attr, cls=ctx.cls))
            else:
                return
        if name:
            ctx.locals[name] = made
        elif attr and ctx.cls is not None:
            self.attr_types.setdefault((ctx.mod.path, ctx.cls.name), {})[attr] = made

    # ---------------------------------------------------------------- expressions and calls
    def walk_expr(self, expr: ast.AST, ctx: _Ctx):
        """Walks an expression; returns what its value is when known (a handle or a class)."""
        if isinstance(expr, (ast.Lambda,)):
            return None
        if isinstance(expr, ast.Await):
            return self.walk_expr(expr.value, ctx)
        if isinstance(expr, ast.Call):
            for a in [*expr.args, *(k.value for k in expr.keywords)]:
                if not self._is_coroutine_arg(expr, ctx):
                    self.walk_expr(a, ctx)
            self.walk_expr_func(expr.func, ctx)
            return self.call(expr, ctx)
        for child in ast.iter_child_nodes(expr):
            if isinstance(child, ast.expr):
                self.walk_expr(child, ctx)
        return None

    def walk_expr_func(self, func: ast.AST, ctx: _Ctx) -> None:
        # Experiment().run(): the inner call first
        inner = func.value if isinstance(func, ast.Attribute) else None
        while isinstance(inner, ast.Attribute):
            inner = inner.value
        if isinstance(inner, ast.Call):
            self.walk_expr(inner, ctx)

    def _is_coroutine_arg(self, call: ast.Call, ctx: _Ctx) -> bool:
        name = self.canonical(ctx.mod, dotted(call.func)) or ""
        return (name in _LOOP_RUN or name in _CREATE_TASK or name == "asyncio.gather"
                or name.endswith(".create_task") or name.endswith(".run_until_complete")
                or name.endswith(".remote"))

    def add(self, ctx: _Ctx, kind: str, label: str, line: int, details: Optional[dict] = None,
            parent: Optional[Node] = None) -> Node:
        node = Node(kind, label, ctx.mod.rel(line), ctx.mod.path, line, details=dict(details or {}))
        node.details.setdefault("runs_in", ctx.where)
        (parent or ctx.parent).children.append(node)
        return node

    def _child_ctx(self, ctx: _Ctx, node: Node, where: Optional[str] = None, loop: Optional[Node] = None) -> _Ctx:
        return _Ctx(ctx.mod, ctx.fn, ctx.cls, node, where or ctx.where, loop if loop is not None else ctx.loop,
                    ctx.locals, ctx.depth, ctx.on)

    def _on(self, ctx: _Ctx, on: frozenset) -> _Ctx:
        return _Ctx(ctx.mod, ctx.fn, ctx.cls, ctx.parent, ctx.where, ctx.loop, ctx.locals, ctx.depth, on)

    def call(self, call: ast.Call, ctx: _Ctx):
        written = dotted(call.func)
        name = self.canonical(ctx.mod, written) or ""
        line = call.lineno
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        if name in _LOOP_RUN:
            node = self.add(ctx, "event_loop", f"asyncio.run({_src(call.args[0]) if call.args else ''})", line,
                            {"runner": "asyncio.run"})
            self._defer(self._loop_endings, node, ctx)
            self._coroutine(call.args[0] if call.args else None, self._child_ctx(ctx, node, loop=node), node)
            return None
        if name in _NEW_LOOP:
            node = self.add(ctx, "event_loop", "asyncio.new_event_loop()", line, {"runner": "new_event_loop"})
            h = self._handle(node, "event_loop", ctx, call)
            return h
        if written and written.endswith((".run_until_complete", ".run_forever")):
            h = self._handle_of(call.func.value, ctx)
            if h is not None and h.kind == "event_loop":
                node = h.node
            else:
                node = self.add(ctx, "event_loop", f"{written}()", line, {"runner": written.rsplit(".", 1)[1]})
                node.endings = {e: Ending("unknown", "the loop object is not known to the map") for e in ENDINGS}
            if call.args:
                self._coroutine(call.args[0], self._child_ctx(ctx, node, loop=node), node)
            node.details.setdefault("run_at", []).append(ctx.mod.rel(line))
            return None
        if name in _CREATE_TASK or (written and written.endswith(".create_task")):
            group = None
            if written and written.endswith(".create_task") and isinstance(call.func, ast.Attribute):
                g = self._handle_of(call.func.value, ctx)
                if g is not None and g.kind == "task_group":
                    group = g.node
            node = self.add(ctx, "task", f"{written}({_src(call.args[0]) if call.args else ''})", line,
                            parent=group)
            node.details["loop"] = ctx.loop.at if ctx.loop is not None else None
            if group is not None:
                node.details["task_group"] = group.at
            self._coroutine(call.args[0] if call.args else None, self._child_ctx(ctx, node), node)
            h = self._handle(node, "task", ctx, call)
            self._defer(self._task_endings, node, ctx, group)
            return h
        if name == "asyncio.gather":
            node = self.add(ctx, "gather", f"asyncio.gather({_clip(', '.join(_src(a) for a in call.args), 60)})", line)
            for a in call.args:
                for sub in ast.walk(a):
                    if isinstance(sub, ast.Call) and self._resolves_to_function(sub, ctx):
                        self._coroutine(sub, self._child_ctx(ctx, node), node)
            self._defer(self._gather_endings, node, ctx)
            return None
        if name in _THREADS or name in _LOOP_THREADS:
            loop_thread = name in _LOOP_THREADS
            daemon = kw.get("daemon")
            d = daemon.value if isinstance(daemon, ast.Constant) else (None if daemon is not None else False)
            if loop_thread:
                d = _const(daemon) if daemon is not None else False
            node = self.add(ctx, "thread", f"{name.rsplit('.', 1)[1]}({_src(kw.get('target')) if kw.get('target') is not None else ''})",
                            line, {"daemon": d, "name": _const(kw.get("name")), "loop_thread": loop_thread})
            target = kw.get("target") or (call.args[1] if name == "threading.Timer" and len(call.args) > 1 else None)
            where = "loop_thread" if loop_thread else "daemon_thread" if d else "thread"
            if target is not None:
                self._callable(target, self._child_ctx(ctx, node, where=where, loop=None), node)
            h = self._handle(node, "thread", ctx, call)
            return h
        if name in _EXECUTORS:
            node = self.add(ctx, "executor", f"{name.rsplit('.', 1)[1]}({_args(call)})", line,
                            {"max_workers": _const(kw.get("max_workers")) if "max_workers" in kw else None})
            h = self._handle(node, "executor", ctx, call)
            return h
        if name in _POPEN or name in _WAITED_CHILD or name in _MP_PROCESS:
            waited = name in _WAITED_CHILD
            cmd = (", ".join(_src(a) for a in call.args) if name == "asyncio.create_subprocess_exec" else
                   _src(call.args[0]) if call.args else _src(kw.get("args") or kw.get("target") or ast.Constant("")))
            session = kw.get("start_new_session")
            node = self.add(ctx, "child_process", f"{name}({_clip(cmd, 60)})", line,
                            {"waited_by_call": waited,
                             "new_session": bool(isinstance(session, ast.Constant) and session.value),
                             "daemon": _const(kw.get("daemon")) if name in _MP_PROCESS else None})
            if name in _MP_PROCESS and kw.get("target") is not None:
                self._callable(kw["target"], self._child_ctx(ctx, node, where="child", loop=None), node)
            self._defer(self._child_endings, node, ctx, waited)
            if waited:
                return None
            h = self._handle(node, "child_process", ctx, call)
            return h
        if name in _RAY_INIT:
            res = {k: _src(v) for k, v in kw.items() if k in ("num_cpus", "num_gpus", "resources", "address")}
            node = self.add(ctx, "ray_cluster", f"ray.init({_clip(_args(call), 60)})", line, {"resources": res})
            self._defer(self._ray_cluster_endings, node)
            return None
        if name in _PG_INIT:
            backend = _src(call.args[0]) if call.args else _src(kw.get("backend") or ast.Constant(None))
            node = self.add(ctx, "process_group", f"init_process_group({backend})", line, {"backend": backend})
            h = self._handle(node, "process_group", ctx, call)
            return h
        if name in _SIGNAL or (written and written.endswith(".add_signal_handler")):
            self._signal(call, name, written or "", ctx)
            return None
        if name in _SIGNAL_HELPERS:
            sig, effect = _SIGNAL_HELPERS[name]
            node = self.add(ctx, "signal_handler", f"{name}()", line,
                            {"signal": sig, "handler": name, "via": name, "effect": effect})
            for e in ENDINGS:
                node.endings[e] = Ending("not_applicable", "a signal handler stays installed until replaced")
            node.endings["sigterm"] = Ending(_EFFECT_STATE[effect], f"{name} {_EFFECT_TEXT[effect]}", node.at)
            self.signal_nodes.append((sig, node, effect))
            return None
        if name in _ATEXIT and call.args:
            node = self.add(ctx, "atexit_hook", f"atexit.register({_src(call.args[0])})", line)
            self._callable(call.args[0], self._child_ctx(ctx, node), node)
            self._defer(self._atexit_endings, node)
            return None
        if written and written.endswith(".remote"):
            return self._ray_call(call, written, ctx)
        if written and isinstance(call.func, ast.Attribute):
            h = self._handle_of(call.func.value, ctx)
            if h is not None and h.kind == "executor" and call.func.attr in ("submit", "map") and call.args:
                self._callable(call.args[0], self._child_ctx(ctx, h.node, where="thread"), h.node)
                return None
        # a project function, class or method
        returned = self._follow(call, ctx)
        return returned if returned is not None else self._class_of_call(call, ctx)

    def _class_of_call(self, call: ast.Call, ctx: _Ctx):
        written = dotted(call.func)
        found = self.lookup(ctx.mod, written) if written else None
        return found if found and found[0] == "class" else None

    def _resolves_to_function(self, call: ast.Call, ctx: _Ctx) -> bool:
        return self._target(call.func, ctx) is not None

    def _target(self, func: ast.AST, ctx: _Ctx):
        """The project function a callee expression means: (mod, def, cls) or None."""
        if isinstance(func, ast.Name):
            local = ctx.locals.get(func.id)
            if isinstance(local, tuple) and local[0] == "function":
                return local[1], local[2], local[3]
            found = self.lookup(ctx.mod, func.id)
            if found and found[0] == "function":
                return found[1], found[2], found[3]
            if found and found[0] == "class":
                init = self.method(found[1], found[2], "__init__")
                return (init[1], init[2], init[3]) if init else None
            return None
        if isinstance(func, ast.Attribute):
            owner = self._type_of(func.value, ctx)
            if owner is not None:
                found = self.method(owner[1], owner[2], func.attr)
                return (found[1], found[2], found[3]) if found else None
            written = dotted(func)
            if written and "(" not in written:
                found = self.lookup(ctx.mod, written)
                if found and found[0] == "function":
                    return found[1], found[2], found[3]
        return None

    def _type_of(self, expr: ast.AST, ctx: _Ctx):
        """("class", mod, ClassDef) of an expression when known."""
        if isinstance(expr, ast.Name):
            if expr.id == "self" and ctx.cls is not None:
                return ("class", ctx.mod, ctx.cls)
            local = ctx.locals.get(expr.id)
            if isinstance(local, tuple) and local[0] == "class":
                return local
            return None
        if isinstance(expr, ast.Call):
            written = dotted(expr.func)
            found = self.lookup(ctx.mod, written) if written else None
            return found if found and found[0] == "class" else None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" \
                and ctx.cls is not None:
            t = self.attr_types.get((ctx.mod.path, ctx.cls.name), {}).get(expr.attr)
            return t if isinstance(t, tuple) else None
        return None

    def _handle_of(self, expr: ast.AST, ctx: _Ctx) -> Optional[_Handle]:
        if isinstance(expr, ast.Name):
            h = ctx.locals.get(expr.id)
            return h if isinstance(h, _Handle) else None
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == "self" \
                and ctx.cls is not None:
            h = self.attr_types.get((ctx.mod.path, ctx.cls.name), {}).get(expr.attr)
            return h if isinstance(h, _Handle) else None
        return None

    def _follow(self, call: ast.Call, ctx: _Ctx) -> Optional[_Handle]:
        target = self._target(call.func, ctx)
        if target is None:
            return None
        mod, fn, cls = target
        if cls is None and isinstance(call.func, ast.Name):
            found = self.lookup(ctx.mod, call.func.id)
            if found and found[0] == "class":
                cls = found[2]
        return self.walk_function(mod, fn, cls, ctx)

    def _coroutine(self, expr: Optional[ast.AST], ctx: _Ctx, node: Node) -> None:
        """Walks the coroutine a loop, task or gather runs (``f(...)``, ``self.m(...)``)."""
        if expr is None:
            return
        if isinstance(expr, ast.Call):
            for a in [*expr.args, *(k.value for k in expr.keywords)]:
                self.walk_expr(a, ctx)
            target = self._target(expr.func, ctx)
            if target is not None:
                node.details["runs"] = f"{_qual(target[2], target[1])} ({target[0].rel(target[1].lineno)})"
                self.walk_function(target[0], target[1], target[2], ctx)
                return
        node.details.setdefault("runs", None)

    def _callable(self, expr: ast.AST, ctx: _Ctx, node: Node) -> None:
        """Walks a function given by reference (a thread's target, an atexit hook)."""
        target = self._target(expr, ctx)
        if target is not None:
            node.details["runs"] = f"{_qual(target[2], target[1])} ({target[0].rel(target[1].lineno)})"
            self.walk_function(target[0], target[1], target[2], ctx)
        else:
            node.details["runs"] = None

    # ---------------------------------------------------------------- with, signals, Ray
    def _with(self, st: ast.AST, ctx: _Ctx) -> None:
        inner = ctx
        is_async = isinstance(st, ast.AsyncWith)
        for item in st.items:
            expr = item.context_expr
            name = self.canonical(ctx.mod, dotted(expr.func) if isinstance(expr, ast.Call) else dotted(expr)) or ""
            var = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
            if name == "asyncio.TaskGroup":
                node = self.add(inner, "task_group", "asyncio.TaskGroup()", st.lineno)
                node.spans.append((ctx.mod.path, st.lineno, st.end_lineno or st.lineno))
                self._defer(self._group_endings, node, ctx, st)
                h = _Handle(node, "task_group", ctx.fn, ctx.mod, [_Binding(ctx.mod, ctx.fn, var=var)])
                if var:
                    ctx.locals[var] = h
                inner = self._child_ctx(inner, node)
                continue
            made = self.walk_expr(expr, inner)
            if isinstance(made, _Handle):
                if var:
                    made.bindings.append(_Binding(ctx.mod, ctx.fn, var=var))
                made.node.details["with_block"] = ctx.mod.rel(st.lineno)
                self._defer(self._with_endings, made.node, made.kind, ctx, st)
                if var:
                    ctx.locals[var] = made
                continue
            if var and isinstance(made, tuple):
                ctx.locals[var] = made
            if not is_async and (name.startswith(_WITH_SKIP) or not isinstance(expr, ast.Call)):
                continue
            kind_word = "async with" if is_async else "with"
            node = self.add(inner, "resource", f"{kind_word} {_clip(_src(expr), 60)}", st.lineno,
                            {"cleanup": "__aexit__" if is_async else "__exit__"})
            node.spans.append((ctx.mod.path, st.lineno, st.end_lineno or st.lineno))
            self._defer(self._with_endings, node, "resource", ctx, st)
            inner = self._child_ctx(inner, node)
        self.walk_body(st.body, inner)

    def _signal(self, call: ast.Call, name: str, written: str, ctx: _Ctx) -> None:
        if len(call.args) < 2:
            return
        sig = self.canonical(ctx.mod, dotted(call.args[0])) or _src(call.args[0])
        sigs = []
        if isinstance(call.args[0], ast.Name) and ctx.fn is not None:
            # for sig in (signal.SIGINT, signal.SIGTERM): loop.add_signal_handler(sig, ...)
            for loop_ in ast.walk(ctx.fn):
                if isinstance(loop_, ast.For) and isinstance(loop_.target, ast.Name) \
                        and loop_.target.id == call.args[0].id and isinstance(loop_.iter, (ast.Tuple, ast.List)):
                    sigs = [self.canonical(ctx.mod, dotted(e)) or _src(e) for e in loop_.iter.elts]
        sigs = sigs or [sig]
        handler = call.args[1]
        hname = self.canonical(ctx.mod, dotted(handler)) or _src(handler)
        via = "loop.add_signal_handler" if written.endswith(".add_signal_handler") else "signal.signal"
        for s in sigs:
            short = s.rsplit(".", 1)[-1]
            if hname in ("signal.SIG_IGN", "signal.Handlers.SIG_IGN"):
                disposition = "ignore"
            elif hname in ("signal.SIG_DFL", "signal.Handlers.SIG_DFL"):
                disposition = "default"
            else:
                disposition = self._handler_effect(handler, ctx)
            node = self.add(ctx, "signal_handler", f"{via}({short}, {hname})", call.lineno,
                            {"signal": short, "handler": hname, "via": via, "effect": disposition})
            self._callable(handler, self._child_ctx(ctx, node), node) if disposition not in ("ignore", "default") \
                else None
            self.signal_nodes.append((short, node, disposition))
            ending = {"SIGINT": "ctrl_c", "SIGTERM": "sigterm"}.get(short)
            for e in ENDINGS:
                node.endings[e] = Ending("not_applicable", "a signal handler stays installed until replaced")
            if ending:
                text = _EFFECT_TEXT[disposition] if disposition in ("ignore", "default") else \
                    f"{hname} {_EFFECT_TEXT[disposition]}"
                state = _EFFECT_STATE.get(disposition) or ("killed" if short == "SIGTERM" else "stopped")
                node.endings[ending] = Ending(state, text, ctx.mod.rel(call.lineno))

    def _handler_effect(self, handler: ast.AST, ctx: _Ctx) -> str:
        written = dotted(handler) or ""
        if written.endswith(".cancel"):
            return "cancels"
        canonical = self.canonical(ctx.mod, written) or ""
        if canonical.startswith("runtime_guard.") and "keyboard" in canonical.lower():
            return "raises"
        target = self._target(handler, ctx)
        if target is None:
            return "other"
        for sub in ast.walk(target[1]):
            if isinstance(sub, ast.Raise) and sub.exc is not None:
                exc = dotted(sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc) or ""
                if exc.rsplit(".", 1)[-1] in ("KeyboardInterrupt", "SystemExit"):
                    return "raises"
            if isinstance(sub, ast.Call) and (self.canonical(target[0], dotted(sub.func)) or "") == "sys.exit":
                return "raises"
        return "other"

    def _ray_call(self, call: ast.Call, written: str, ctx: _Ctx):
        func = call.func.value  # X in X.remote / X.options(...) in X.options(...).remote
        options = {}
        if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "options":
            options = {k.arg: _src(k.value) for k in func.keywords if k.arg}
            func = func.func.value
        # actor.method.remote(...)
        if isinstance(func, ast.Attribute):
            h = self._handle_of(func.value, ctx)
            if h is not None and h.kind == "ray_actor":
                node = self.add(ctx, "ray_task", f"{_src(func)}.remote(...)", call.lineno,
                                {"actor": h.node.at, "resources": _resources(options), "options": _others(options)},
                                parent=h.node)
                cls = h.node.details.get("_class")
                if cls is not None:
                    m = self.method(cls[0], cls[1], func.attr)
                    if m:
                        sub = _Ctx(m[1], None, m[3], node, "ray_worker", None, {}, ctx.depth + 1)
                        node.details["runs"] = f"{m[3].name}.{m[2].name} ({m[1].rel(m[2].lineno)})"
                        self.walk_function(m[1], m[2], m[3], sub)
                rh = self._handle(node, "ray_task", ctx, call)
                self._defer(self._ray_endings, node)
                return rh
        written_x = dotted(func)
        found = self.lookup(ctx.mod, written_x) if written_x else None
        if found is None:
            return None
        if found[0] == "class":
            mod, cls = found[1], found[2]
            decl = _ray_decorator(cls, mod, self)
            if decl is None:
                return None
            node = self.add(ctx, "ray_actor", f"{cls.name}.remote(...)", call.lineno,
                            {"class": f"{cls.name} ({mod.rel(cls.lineno)})", "resources": _resources({**decl, **options}),
                             "options": _others({**decl, **options}),
                             "async": any(isinstance(s, ast.AsyncFunctionDef) for s in cls.body)})
            node.details["_class"] = (mod, cls)
            if not any(a[2] is cls for a in self.actors) and not any(
                    n.details.get("_class") == (mod, cls) for n in self.root.walk() if n is not node):
                self.actors.append((node, mod, cls))
            node.spans.append((mod.path, min([cls.lineno, *[d.lineno for d in cls.decorator_list]]), cls.lineno))
            init = self.method(mod, cls, "__init__")
            if init:
                self.walk_function(init[1], init[2], init[3], _Ctx(mod, None, cls, node, "ray_worker", None, {},
                                                                     ctx.depth + 1))
            h = self._handle(node, "ray_actor", ctx, call)
            self._defer(self._ray_endings, node)
            return h
        if found[0] == "function":
            mod, fn = found[1], found[2]
            decl = _ray_decorator(fn, mod, self)
            if decl is None:
                return None
            node = self.add(ctx, "ray_task", f"{fn.name}.remote(...)", call.lineno,
                            {"function": f"{fn.name} ({mod.rel(fn.lineno)})", "resources": _resources({**decl, **options}),
                             "options": _others({**decl, **options})})
            self.walk_function(mod, fn, None, _Ctx(mod, None, None, node, "ray_worker", None, {}, ctx.depth + 1))
            h = self._handle(node, "ray_task", ctx, call)
            self._defer(self._ray_endings, node)
            return h
        return None

    def _finally_worth_a_node(self, st: ast.Try) -> bool:
        return any(isinstance(s, ast.Call) for f in st.finalbody for s in ast.walk(f))

    # ---------------------------------------------------------------- endings
    def _process_endings(self, root: Node) -> None:
        """The process's own endings, then the SIGTERM/SIGINT dispositions every node inherits."""
        own = [(s, n, d) for s, n, d in self.signal_nodes if n.details.get("runs_in") not in ("ray_worker", "child")]
        term = [(n, d) for s, n, d in own if s == "SIGTERM"]
        intr = [(n, d) for s, n, d in own if s == "SIGINT"]
        self.sigterm = term[-1] if term else None
        self.sigint = intr[-1] if intr else None
        root.endings["normal"] = Ending("stopped", "returns: atexit hooks run, then the interpreter exits 0")
        root.endings["exception"] = Ending("stopped", "uncaught exception: traceback, atexit hooks, exit 1")
        root.endings["ctrl_c"] = self._inherited("ctrl_c", "stopped", "KeyboardInterrupt unwinds the main "
                                                 "thread: finally blocks and atexit hooks run, exit 130")
        root.endings["sigterm"] = self._inherited("sigterm", "killed", "SIGTERM's default action: the "
                                                  "process dies at once, no finally, no atexit hook")
        if len(term) > 1 or len(intr) > 1:
            self.notes.append("more than one handler for the same signal is installed; the map takes the "
                              "last one the walk met")

    def _inherited(self, ending: str, default_state: str, default_text: str,
                   when_raises: Optional[Ending] = None, at: Optional[str] = None) -> Ending:
        """What the process-wide signal disposition makes of ``ending`` for a node."""
        disp = self.sigterm if ending == "sigterm" else self.sigint if ending == "ctrl_c" else None
        if disp is None:
            return Ending(default_state, default_text, at)
        node, effect = disp
        if effect == "ignore":
            return Ending("left_running", f"{node.details['signal']} is ignored: the program goes on", node.at)
        if effect in ("raises", "cancels"):
            if when_raises is not None:
                return Ending(when_raises.state, f"{node.details['handler']} unwinds, then: {when_raises.by}",
                              when_raises.at)
            if effect == "raises":
                return Ending("stopped", f"the handler {node.details['handler']} raises: the main thread unwinds",
                              node.at)
            return Ending("unknown", f"the handler {node.details['handler']} cancels a task; what that stops "
                          "outside its loop is not known to the map", node.at)
        if effect in ("default", "pg_teardown"):
            if effect == "pg_teardown" and default_state == "killed":
                return Ending("killed", f"{node.details['handler']} exits the process: no finally, no atexit hook",
                              node.at)
            return Ending(default_state, default_text, at)
        return Ending("unknown", f"the handler {node.details['handler']} runs: what it stops is not known to the map",
                      node.at)

    def _sigterm(self, like_ctrl_c: Ending, killed_text: str = "the process dies at once: no cleanup runs") -> Ending:
        """SIGTERM for an in-process node: killed by default, as Ctrl+C when a handler unwinds."""
        return self._inherited("sigterm", "killed", killed_text, like_ctrl_c)

    def _in_daemon(self, ctx: _Ctx) -> bool:
        return ctx.where == "daemon_thread"

    def _loop_endings(self, node: Node, ctx: _Ctx) -> None:
        at = node.at
        if ctx.where in ("ray_worker", "child"):
            for e in ENDINGS:
                node.endings[e] = Ending("unknown", "runs in a Ray worker: its ending is the worker's"
                                         if ctx.where == "ray_worker" else
                                         "runs in a child process: its endings are the child's")
            return
        done = Ending("stopped", "asyncio.run's shutdown: cancels the tasks left, awaits them, closes the loop", at)
        node.endings["normal"] = done
        node.endings["exception"] = done
        if ctx.where == "loop_thread":
            for e in ENDINGS:
                node.endings[e] = Ending("stopped", _LOOP_THREAD_STOP if e != "sigterm" else _LOOP_THREAD_TERM)
            if self.sigterm is not None and self.sigterm[1] not in ("default",):
                node.endings["sigterm"] = Ending("unknown", "LoopThread's SIGTERM handler is not installed over "
                                                 f"{self.sigterm[0].details['handler']} ({self.sigterm[0].at})")
            return
        if ctx.where in ("thread", "daemon_thread"):
            daemon = ctx.where == "daemon_thread"
            text = ("the loop runs in a daemon thread: frozen mid-step at interpreter exit, its tasks never "
                    "cancelled" if daemon else "Ctrl+C reaches the main thread only: the interpreter waits "
                    "for this thread's loop at exit")
            node.endings["normal"] = Ending("killed", text) if daemon else done
            node.endings["ctrl_c"] = Ending("killed" if daemon else "left_running", text)
            node.endings["sigterm"] = Ending("killed", "the process dies at once: the loop's tasks never cancelled")
            return
        node.endings["ctrl_c"] = self._inherited(
            "ctrl_c", "stopped", "asyncio.run cancels the main task on SIGINT, then its own shutdown",
            Ending("stopped", "the main task unwinds; asyncio.run's shutdown", at))
        if node.endings["ctrl_c"].state == "stopped" and node.endings["ctrl_c"].at is None:
            node.endings["ctrl_c"].at = at
        node.endings["sigterm"] = self._sigterm(Ending("stopped", "the main task unwinds; asyncio.run's shutdown", at),
                                                "the process dies at once: tasks never cancelled, no finally runs")

    def _under_loop(self, ctx: _Ctx) -> Optional[Ending]:
        if ctx.loop is None:
            return None
        return Ending(ctx.loop.endings["normal"].state,
                      "cancelled by the loop's shutdown" if ctx.loop.endings["normal"].state == "stopped"
                      else ctx.loop.endings["normal"].by, ctx.loop.at)

    def _task_endings(self, node: Node, ctx: _Ctx, group: Optional[Node]) -> None:
        if group is not None:
            for e in ENDINGS:
                node.endings[e] = Ending(group.endings[e].state, f"the task group: {group.endings[e].by}",
                                         group.endings[e].at)
            return
        if ctx.loop is None:
            why = ("runs on a Ray actor's event loop: its ending is the actor's" if ctx.where == "ray_worker"
                   else "the loop it runs on is not known to the map")
            for e in ENDINGS:
                node.endings[e] = Ending("unknown", why)
            return
        for e in ENDINGS:
            loop_end = ctx.loop.endings[e]
            text = ("cancelled and awaited by asyncio.run's shutdown" if loop_end.state == "stopped"
                    else f"as its loop: {loop_end.by}")
            node.endings[e] = Ending(loop_end.state, text, loop_end.at or ctx.loop.at)

    def _group_endings(self, node: Node, ctx: _Ctx, st: ast.AST) -> None:
        end = ctx.mod.rel(st.end_lineno or st.lineno)
        for e in ENDINGS:
            node.endings[e] = Ending("stopped", "the async with block's exit waits for (or cancels) its tasks", end)
        if ctx.loop is not None:
            node.endings["sigterm"] = Ending(ctx.loop.endings["sigterm"].state,
                                             "as its loop: " + (ctx.loop.endings["sigterm"].by or ""),
                                             ctx.loop.endings["sigterm"].at)
        elif ctx.where == "ray_worker":
            node.endings["sigterm"] = Ending("unknown", "runs in a Ray worker: its ending is the worker's")

    def _gather_endings(self, node: Node, ctx: _Ctx) -> None:
        node.endings["normal"] = Ending("stopped", "gather returns when every child is done", node.at)
        node.endings["exception"] = Ending("left_running", "a child's exception returns at once; gather does not "
                                           "cancel the other children", node.at)
        node.endings["ctrl_c"] = Ending("stopped", "cancelling the gather cancels its children", node.at) \
            if ctx.loop is not None else Ending("unknown", "cancelled only if its caller is: the caller's loop is "
                                                "not known to the map")
        node.endings["sigterm"] = (Ending("unknown", "runs in a Ray worker: its ending is the worker's")
                                   if ctx.where == "ray_worker" else
                                   self._sigterm(node.endings["ctrl_c"]) if ctx.loop is not None
                                   else Ending("unknown", "the loop it runs on is not known to the map"))

    def _child_endings(self, node: Node, ctx: _Ctx, waited: bool) -> None:
        if waited:
            node.endings["normal"] = Ending("stopped", "the call waits for the child to exit", node.at)
            node.endings["exception"] = Ending("stopped", "the call waits for the child (or kills it on an "
                                               "exception inside the call)", node.at)
            node.endings["ctrl_c"] = Ending("stopped", "subprocess.run kills the child on KeyboardInterrupt", node.at)
        node.endings["sigterm"] = self._inherited("sigterm", "left_running",
                                                  "the parent dies at once; the child is not signalled")

    def _atexit_endings(self, node: Node) -> None:
        node.endings["normal"] = Ending("runs", "at interpreter exit")
        node.endings["exception"] = Ending("runs", "at interpreter exit, after the traceback")
        node.endings["ctrl_c"] = self._inherited("ctrl_c", "runs", "at interpreter exit, after KeyboardInterrupt")
        node.endings["sigterm"] = self._inherited("sigterm", "skipped", "SIGTERM's default action: no atexit hook "
                                                  "runs", Ending("runs", "at interpreter exit"))

    def _ray_cluster_endings(self, node: Node) -> None:
        hook = Ending("stopped", "ray.shutdown() from the atexit hook ray.init registers")
        node.endings["normal"] = hook
        node.endings["exception"] = hook
        node.endings["ctrl_c"] = self._inherited("ctrl_c", "stopped", hook.by)
        node.endings["sigterm"] = Ending("unknown", "no atexit hook runs; what the local cluster's processes do "
                                         "when the driver dies is not known to the map")

    def _ray_endings(self, node: Node) -> None:
        for e in ENDINGS:
            node.endings[e] = Ending("unknown", "Ray ends the work a driver owned when the driver exits; whether "
                                     "its cleanup runs is not known to the map")

    def _with_endings(self, node: Node, kind: str, ctx: _Ctx, st: ast.AST) -> None:
        end = ctx.mod.rel(st.lineno)
        pool = "multiprocessing" in node.label or node.label.startswith(("Pool(", "ThreadPool("))
        what = {"executor": "the with block's exit: Pool.terminate() (stops its workers at once)" if pool else
                "the with block's exit: shutdown(wait=True) (waits for queued jobs)",
                "child_process": "the with block's exit: waits for the child",
                "resource": f"{node.details.get('cleanup', '__exit__')} at the block's exit"}.get(kind, "the with exit")
        e_ok = Ending("stopped", what, end)
        node.endings["normal"] = e_ok
        node.endings["exception"] = e_ok
        if kind == "child_process":
            node.endings["ctrl_c"] = Ending("unknown", "Popen.__exit__ waits only briefly on KeyboardInterrupt, "
                                            "then leaves the child", end)
        else:
            node.endings["ctrl_c"] = self._unwinds(ctx, e_ok)
        node.endings["sigterm"] = self._sigterm_for(ctx, e_ok)
        if self._in_daemon(ctx):
            frozen = Ending("killed", "frozen with its daemon thread at interpreter exit")
            node.endings["normal"] = frozen
            node.endings["ctrl_c"] = frozen

    def _unwinds(self, ctx: _Ctx, ok: Ending) -> Ending:
        """Ctrl+C for code that runs a cleanup while unwinding (finally, with exits)."""
        if ctx.where == "ray_worker":
            return Ending("unknown", "runs in a Ray worker: Ctrl+C reaches the driver; the worker's ending is Ray's")
        if ctx.where == "loop_thread":
            return Ending("stopped", "the loop is cancelled by runtime_guard.LoopThread at exit: " + (ok.by or ""), ok.at)
        if ctx.where in ("thread", "daemon_thread"):
            return Ending("killed" if ctx.where == "daemon_thread" else "left_running",
                          "Ctrl+C reaches the main thread only; this code runs in a thread that goes on"
                          + (" until it is frozen at exit" if ctx.where == "daemon_thread" else ""))
        if ctx.where == "child":
            return Ending("unknown", "runs in a child process")
        return self._inherited("ctrl_c", ok.state, ok.by or "", ok, ok.at)

    def _sigterm_for(self, ctx: _Ctx, ok: Ending) -> Ending:
        if ctx.where == "ray_worker":
            return Ending("unknown", "runs in a Ray worker: its ending is the worker's")
        if ctx.where == "child":
            return Ending("unknown", "runs in a child process")
        if ctx.where == "loop_thread" and ctx.loop is not None:
            return Ending(ctx.loop.endings["sigterm"].state, "as its loop: " + (ctx.loop.endings["sigterm"].by or ""),
                          ok.at)
        if ctx.where in ("thread", "daemon_thread"):
            return Ending("killed", "the process dies at once")
        if ctx.loop is not None and ctx.loop.endings["sigterm"].state != "stopped":
            return Ending(ctx.loop.endings["sigterm"].state, "the loop never unwinds: "
                          + (ctx.loop.endings["sigterm"].by or ""), ctx.loop.endings["sigterm"].at)
        return self._sigterm(ok)

    def _finally_endings(self, node: Node, st: ast.Try, ctx: _Ctx) -> None:
        at = ctx.mod.rel(st.finalbody[0].lineno)
        ok = Ending("stopped", "the finally block runs", at)
        node.endings["normal"] = ok
        node.endings["exception"] = ok
        node.endings["ctrl_c"] = self._unwinds(ctx, ok)
        node.endings["sigterm"] = self._sigterm_for(ctx, ok)
        if self._in_daemon(ctx):
            node.endings["normal"] = Ending("killed", "frozen with its daemon thread at interpreter exit")

    # ---------------------------------------------------------------- stops found on handles
    def _stops(self, h: _Handle) -> None:
        """Where the code stops a handle: its stop calls, classified by the endings that reach them."""
        node = h.node
        if node.details.get("with_block"):
            return
        # (line, text, endings, where, method, binding, call)
        uses: list[tuple[int, str, set[str], str, Optional[str], Optional[_Binding], ast.Call]] = []
        # where to look: the function that starts it (a stop that needs no name: destroy_process_group(),
        # ray.get() around the call), then every function that names it
        scopes: list[tuple[_Module, ast.AST, Optional[str], Optional[_Binding]]] = [
            (h.mod, h.fn if h.fn is not None else h.mod.tree, None, None)]
        for b in h.bindings:
            if b.attr and b.cls is not None:
                for st in b.cls.body:
                    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        scopes.append((b.mod, st, f"{b.cls.name}.{st.name}", b))
            elif b.var:
                scopes.append((b.mod, b.fn if b.fn is not None else b.mod.tree, None, b))
        seen: set[int] = set()
        for mod, fn, method, b in scopes:
            for call, endings in _calls_with_endings(fn):
                if b is not None and isinstance(call.func, ast.Attribute) and call.func.attr == "start" \
                        and _is_handle(call.func.value, b) and h.kind in ("thread", "child_process"):
                    # Thread.start / Process.start: where the thread or process begins to run
                    node.details.setdefault("started_at", []).append(mod.rel(call.lineno))
                if id(call) not in seen and self._is_stop(call, h, mod, b):
                    seen.add(id(call))
                    uses.append((call.lineno, _src(call), endings, mod.rel(call.lineno), method, b, call))
            if b is not None:
                node.spans.extend(_anchor_spans(fn, b, mod))
        node.details["stops"] = [f"{u[1]} ({u[3]})" for u in uses]
        daemon = node.details.get("daemon")
        if h.kind == "thread":
            default = {
                True: ("killed", "daemon: frozen mid-step at interpreter exit"),
                False: ("left_running", "never joined: the interpreter waits for it at exit, as long as it runs"),
                None: ("unknown", "whether it is a daemon is not known to the map"),
            }[daemon]
            base = {"normal": default, "exception": default, "ctrl_c": default}
            node.endings["sigterm"] = self._inherited("sigterm", "killed", "the process dies at once")
            if node.details.get("loop_thread"):
                base = {e: ("stopped", _LOOP_THREAD_STOP) for e in ("normal", "exception", "ctrl_c")}
                node.endings["sigterm"] = Ending("stopped", _LOOP_THREAD_TERM) if self.sigterm is None else \
                    Ending("unknown", "LoopThread's SIGTERM handler is not installed over "
                           f"{self.sigterm[0].details['handler']} ({self.sigterm[0].at})")
        elif h.kind == "executor":
            default = ("stopped", "never shut down: concurrent.futures' exit hook waits for its running and "
                       "queued jobs")
            base = {"normal": default, "exception": default, "ctrl_c": default}
            node.endings["sigterm"] = self._inherited("sigterm", "killed", "the process dies at once")
        elif h.kind == "child_process":
            if node.details.get("daemon") and "multiprocessing" in node.label:
                default = ("stopped", "daemon process: terminated by multiprocessing's exit hook")
            elif "multiprocessing" in node.label:
                default = ("stopped", "joined by multiprocessing's exit hook (waits for it)")
            else:
                default = ("left_running", "never waited or stopped: it outlives the parent")
            base = {"normal": default, "exception": default}
            if node.details.get("new_session") or "multiprocessing" in node.label:
                base["ctrl_c"] = default
            else:
                base["ctrl_c"] = ("unknown", "the terminal's SIGINT reaches it too (same process group): it ends "
                                  "if the child ends on SIGINT")
        elif h.kind == "process_group":
            default = ("killed", "never destroyed: it ends with the process")
            base = {"normal": default, "exception": default, "ctrl_c": default}
            node.endings["sigterm"] = self._inherited("sigterm", "killed", "the process dies at once")
        elif h.kind == "task":
            base = {}
        elif h.kind == "ray_task":
            base = {}
        elif h.kind == "event_loop":
            default = ("unknown", "never closed; its pending tasks are never cancelled")
            base = {"normal": default, "exception": default, "ctrl_c": default}
        else:
            base = {}
        for e, (state, text) in base.items():
            node.endings[e] = Ending(state, text)
        found: dict[str, Ending] = {}
        for line, text, endings, at, method, b, call in uses:
            fname = self.canonical(b.mod if b else h.mod, dotted(call.func)) or ""
            if fname.startswith("runtime_guard.ray.interruptible_") and "normal" in endings:
                endings = set(endings) | {"ctrl_c"}  # it cancels and waits on Ctrl+C wherever it is
            if method is not None and b is not None and _def_line(b.cls, method) != getattr(b.fn, "lineno", None):
                # a stop in another method: on the endings the walk reached that method on
                reached = self.reached_on.get((b.mod.path, _def_line(b.cls, method)))
                if not reached:
                    for e in ("normal", "exception", "ctrl_c"):
                        if node.endings[e].state != "stopped" and e not in found:
                            node.endings[e] = Ending("unknown", f"`{text}` in {method}(), which the walk from the "
                                                     "entry does not reach", at)
                    continue
                endings = _compose(reached, endings)
            for e in endings:
                if e == "sigterm":
                    continue
                where = f" in {method}()" if method else ""
                if fname in ("runtime_guard.ray.interruptible_get", "runtime_guard.ray.interruptible_wait"):
                    state, verb = "stopped", "waited for (on Ctrl+C: cancelled, its cleanup waited for) by"
                elif fname in ("runtime_guard.ray.cancel_and_wait", "runtime_guard.ray.wait_for_cleanup",
                               "runtime_guard.cancel_and_wait", "runtime_guard.tasks.cancel_and_wait"):
                    state, verb = "stopped", "cancelled, its cleanup waited for, by"
                elif fname == "ray.kill":
                    state, verb = "killed", "ended at once (running tasks fail, no atexit handler runs in it) by"
                elif fname in ("ray.get", "ray.wait") or (isinstance(call.func, ast.Attribute)
                                                          and call.func.attr in ("join", "wait", "communicate")):
                    state, verb = "stopped", "waited for by"
                elif fname == "ray.cancel" or (isinstance(call.func, ast.Attribute) and call.func.attr == "cancel"):
                    state, verb = "stopped", "cancelled by"
                else:
                    state, verb = "stopped", "stopped by"
                if e in found:
                    found[e].by += f", then `{text}`{where}"
                else:
                    found[e] = Ending(state, f"{verb} `{text}`{where}", at)
        node.endings.update(found)
        # an ignored signal never ends anything: the program goes on
        for e, disp in (("ctrl_c", self.sigint), ("sigterm", self.sigterm)):
            if disp is not None and disp[1] == "ignore" and node.details.get("runs_in") in ("main", "thread",
                                                                                            "daemon_thread"):
                node.endings[e] = Ending("left_running", f"{disp[0].details['signal']} is ignored: the program "
                                         "goes on", disp[0].at)
        if h.kind == "process_group" and self.sigterm is not None and self.sigterm[1] == "pg_teardown":
            node.endings["sigterm"] = Ending("stopped", f"{self.sigterm[0].details['handler']}'s SIGTERM handler "
                                             "destroys it", self.sigterm[0].at)
        if h.kind == "ray_actor":
            self._worker_cleanup(node)
        # a SIGTERM handler that raises in the main thread: SIGTERM unwinds as Ctrl+C does
        if self.sigterm is not None and self.sigterm[1] == "raises" and node.details.get("runs_in") == "main" \
                and h.kind in ("thread", "executor", "child_process", "process_group", "ray_actor", "ray_task"):
            like = node.endings["ctrl_c"]
            node.endings["sigterm"] = Ending(like.state, f"{self.sigterm[0].details['handler']} raises "
                                             f"({self.sigterm[0].at}), then as on Ctrl+C: {like.by}", like.at)

    def _worker_cleanup(self, actor: Node) -> None:
        """``runtime_guard.ray.setup_worker()`` in the actor: SIGTERM cancels the tasks on its loop and
        waits for their cleanup; what the map could not tell for them on SIGTERM it now can."""
        hooks = [n for n in actor.walk() if n.kind == "signal_handler" and n.details.get("effect") == "ray_worker_cleanup"]
        if not hooks:
            return
        text = "runtime_guard.ray.setup_worker's SIGTERM handler cancels the actor loop's tasks and waits for their cleanup"
        if actor.endings["sigterm"].rule is None:
            actor.endings["sigterm"] = Ending("stopped", text, hooks[0].at)
        for n in actor.walk():
            if n is not actor and n.kind != "signal_handler" and n.endings["sigterm"].state == "unknown" \
                    and n.endings["sigterm"].rule is None:
                n.endings["sigterm"] = Ending("stopped", text, hooks[0].at)

    def _is_stop(self, call: ast.Call, h: _Handle, mod: _Module, b: Optional[_Binding]) -> bool:
        func = call.func
        if b is not None and isinstance(func, ast.Attribute) and func.attr in _STOP_METHODS.get(h.kind, set()) \
                and _is_handle(func.value, b):
            return True
        name = self.canonical(mod, dotted(func)) or ""
        if b is None and h.kind == "process_group" and name in _PG_DESTROY:
            return True
        if _STOP_FUNCS.get(name) == h.kind:
            if b is None:  # ray.get(f.remote()): the call itself inside the stop
                return h.call is not None and any(sub is h.call for sub in ast.walk(call))
            return any(_is_handle(a, b) or any(_is_handle(e, b) for e in getattr(a, "elts", []))
                       for a in call.args)
        return False


_LOOP_THREAD_STOP = ("runtime_guard.LoopThread's exit hook cancels this loop's tasks, gives their cleanup "
                     "cleanup_timeout s, stops the loop and joins the thread")
_LOOP_THREAD_TERM = "runtime_guard.LoopThread's SIGTERM handler stops this loop as at exit, then the process dies"


def _is_test_file(path: str) -> bool:
    base = os.path.basename(path)
    parts = path.split(os.sep)
    return base.startswith("test_") or base.endswith("_test.py") or base == "conftest.py" or "tests" in parts[-3:-1]


def _names_called(tree: ast.AST) -> set[str]:
    out = set()
    for sub in ast.walk(tree):
        if isinstance(sub, ast.Call):
            f = sub.func
            out.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
        elif isinstance(sub, (ast.Attribute, ast.Name)) and isinstance(sub.ctx, ast.Load):
            # passed by reference: Thread(target=f), create_task(self.m())
            out.add(sub.attr if isinstance(sub, ast.Attribute) else sub.id)
    return out


def _def_line(cls: Optional[ast.ClassDef], method: str) -> int:
    name = method.split(".")[-1]
    for st in cls.body if cls is not None else []:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)) and st.name == name:
            return st.lineno
    return -1


def _is_handle(expr: ast.AST, h: "_Binding") -> bool:
    if h.var and isinstance(expr, ast.Name) and expr.id == h.var:
        return True
    return bool(h.attr and isinstance(expr, ast.Attribute) and expr.attr == h.attr
                and isinstance(expr.value, ast.Name) and expr.value.id == "self")


def _anchor_spans(fn: ast.AST, h: _Binding, mod: _Module) -> list[tuple[str, int, int]]:
    """One-line spans on every line that uses the handle: a finding there is about this node."""
    out = []
    for sub in ast.walk(fn):
        if isinstance(sub, (ast.Name, ast.Attribute)) and _is_handle(sub, h):
            out.append((mod.path, sub.lineno, sub.lineno))
    return out


_ALL = {"normal", "exception", "ctrl_c"}


def _compose(reached: set[str], inside: set[str]) -> set[str]:
    """The endings a call inside a function meets: the function's plain body meets those it is
    called on; its except/finally code meets its own endings when it runs on the normal path."""
    out = set(reached) if "normal" in inside else set()
    if "normal" in reached:
        out |= inside - {"normal"}
    return out


def _calls_with_endings(fn: ast.AST) -> Iterable[tuple[ast.Call, set[str]]]:
    """Each call in ``fn`` (not in nested functions) with the endings that reach it: the plain
    body the normal path; a finally every ending; an except clause the ones it catches."""
    def visit(stmts: list[ast.stmt], endings: set[str]):
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(st, ast.Try) or type(st).__name__ == "TryStar":
                yield from visit(st.body, endings)
                yield from visit(st.orelse, endings)
                for h in st.handlers:
                    yield from visit(h.body, _caught(h.type))
                yield from visit(st.finalbody, _ALL | {"sigterm"} if endings else endings)
                continue
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.stmt):
                    yield from visit([child], endings)
                elif isinstance(child, (ast.ExceptHandler, ast.match_case)):
                    yield from visit(child.body, endings)
                else:
                    for sub in ast.walk(child):
                        if isinstance(sub, ast.Call):
                            yield sub, set(endings)
    body = fn.body if hasattr(fn, "body") else []
    yield from visit(body, {"normal"})


def _caught(t: Optional[ast.AST]) -> set[str]:
    if t is None:
        return {"exception", "ctrl_c"}
    names = [dotted(e) or "" for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
    out: set[str] = set()
    for n in names:
        last = n.rsplit(".", 1)[-1]
        if last in ("BaseException",):
            out |= {"exception", "ctrl_c"}
        elif last in ("KeyboardInterrupt", "CancelledError"):
            out.add("ctrl_c")
        elif last not in ("SystemExit", "GeneratorExit"):
            out.add("exception")
    return out


#: the keyword arguments of ``@ray.remote``/``.options`` that declare resources
_RAY_RESOURCES = ("num_cpus", "num_gpus", "memory", "resources", "accelerator_type", "placement_group",
                  "scheduling_strategy", "object_store_memory")


def _resources(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if k in _RAY_RESOURCES}


def _others(kw: dict) -> dict:
    return {k: v for k, v in kw.items() if k not in _RAY_RESOURCES}


def _ray_decorator(defn: ast.AST, mod: _Module, b: Builder) -> Optional[dict]:
    """The resources declared by ``@ray.remote(...)`` on a class or function (None: not remote)."""
    for d in getattr(defn, "decorator_list", []):
        target = d.func if isinstance(d, ast.Call) else d
        if (b.canonical(mod, dotted(target)) or "") in _RAY_REMOTE:
            if isinstance(d, ast.Call):
                return {k.arg: _src(k.value) for k in d.keywords if k.arg}
            return {}
    return None


def _is_main_guard(test: ast.AST) -> bool:
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


def _src(node: Optional[ast.AST]) -> str:
    if node is None:
        return ""
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - a node unparse does not know
        return "..."


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _args(call: ast.Call) -> str:
    return ", ".join([*(_src(a) for a in call.args), *(f"{k.arg}={_src(k.value)}" for k in call.keywords if k.arg)])


def _const(node: Optional[ast.AST]):
    return node.value if isinstance(node, ast.Constant) else (None if node is None else _src(node))


def _qual(cls: Optional[ast.ClassDef], fn: ast.AST) -> str:
    return f"{cls.name}.{fn.name}" if cls is not None else fn.name


def _call_text(stmts: list[ast.stmt]) -> str:
    for st in stmts:
        for sub in ast.walk(st):
            if isinstance(sub, ast.Call):
                return _src(sub)[:60]
    return "..."


# ------------------------------------------------------------------------------ rule findings

def attach(result: MapResult, diagnostics: list, root: Optional[str] = None) -> None:
    """Attach each finding to the node it is about: the node that starts on its line, else the one
    whose handle its line uses, else the innermost code span holding it; then set the endings
    the rule speaks of (``RULE_ENDINGS``)."""
    nodes = list(result.nodes())
    for d in diagnostics:
        path = os.path.abspath(d.path)
        f = Finding(d.code, d.message, f"{_display(path, root)}:{d.line}")
        owners = [n for n in nodes if n.path == path and n.line == d.line and n.kind != "process"]
        if not owners:
            best = None
            for n in nodes:
                for p, a, b in n.spans:
                    if p == path and a <= d.line <= b:
                        size = b - a
                        if best is None or size < best[0]:
                            best = (size, [n])
                        elif size == best[0] and n not in best[1]:
                            best[1].append(n)
            owners = best[1] if best else []
        if not owners:
            result.unattached.append(f)
            continue
        for n in owners:
            n.findings.append(f)
            endings, state = RULE_ENDINGS.get(d.code, ((), None))
            for e in endings:
                if n.endings[e].state == "not_applicable":
                    continue
                old = n.endings[e]
                if state is not None:
                    n.endings[e] = Ending(state, _short(d.message), f.at, d.code)
                else:
                    n.endings[e] = Ending(old.state, old.by, old.at, d.code)


def _short(message: str) -> str:
    head = message.split(": ", 1)[-1] if ": " in message[:80] else message
    return head if len(head) <= 160 else head[:157] + "..."
