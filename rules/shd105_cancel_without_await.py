from __future__ import annotations

import ast
import functools
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments
from shutdown_lint.ast_engine.facts import cst_names
from shutdown_lint.ast_engine.walk import children, source_order
from shutdown_lint.facts.vocabulary import _canonical
from shutdown_lint.prefilter.words import ASYNC_DEF, All, AnyOf, InCode, Word
from shutdown_lint.rule import Fix, InsertAfter, Invalid, Option, Replace, Rule
from shutdown_lint.prefilter.ast_tree import DEFS, TRYS, nested_statements, walk_within
from shutdown_lint.prefilter.ast_tree import children as tree_children
from shutdown_lint.prefilter.ast_tree import walk as tree_walk
from shutdown_lint.traversal import leaf_types, trivia_types, walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from .shd102_unobserved_task_exception import _LOOP_NAMES, _SPAWNERS, is_task_spawn, may_spawn


@functools.cache
def _not_acted_on() -> frozenset:
    """What ``_reaped_after``'s walk skips: layout, names and literals (nothing it acts on)."""
    return trivia_types() | leaf_types()


#: Uses of a task after its cancel that neither wait for it nor hand it to someone who might.
_NEUTRAL_METHODS = frozenset({"discard", "remove", "pop", "cancel", "done", "cancelled", "get_name", "clear"})
_NEUTRAL_FUNCS = frozenset({"len", "print", "repr", "str", "id", "isinstance", "bool", "list", "tuple", "set"})
_LOG_RECEIVERS = ("log", "logger", "logging", "_log", "_logger", "LOG", "LOGGER")
#: Library awaitables that only wait: a task made from one has no cleanup to race.
_WAIT_PRIMITIVES = frozenset({"get", "wait", "sleep", "put", "join", "acquire", "read", "readline",
                              "readexactly", "readuntil", "recv", "receive", "wait_closed"})
#: Iterables that can be evaluated a second time for the fix (a copy of the same tasks).
_COPY_FUNCS = ("list", "tuple", "set")
_VIEW_METHODS = ("values",)


_TASK_FIX = "Wait for the cancelled task: `await runtime_guard.cancel_and_wait(...)`"
_LOOP_FIX = "Wait for the cancelled tasks: `await runtime_guard.cancel_and_wait(...)`"


def _message(label: str) -> str:
    return (f"`{label}.cancel()` only requests cancellation and `{label}` is never awaited afterwards: its "
            "`except CancelledError`/`finally` cleanup races what this coroutine does next (and is cut off "
            "if the loop shuts down first)")


class _Decide:
    """What SHD105 decides, on either tree (``CancelWithoutAwait``: libcst; ``_Ast``: ``ast``). The
    tree answers ``_name``, ``_attribute`` (value, name), ``_call`` (callee, libcst's ``Call.args``
    as (keyword, value)), ``_awaited``, ``_is_call``, ``_is_def``/``_is_class``,
    ``_for_loop`` (target, iterable), ``_is_spawn``, ``_held_elements``, ``_argument_of``,
    ``_subscript_targets``, ``_unpacked_into``, ``_statement_call``, ``_has_cleanup``,
    ``_synthetic_name``, ``_awaits_in``, ``_references``, ``_code``, ``_reaped_after`` and ``_fix``."""

    def _check(self, node) -> None:
        cancel = self._attribute(node.func)
        if cancel is None or cancel[1] != "cancel":
            return
        facts = self.facts
        fn = facts.enclosing_function(node)
        if fn is None or not fn.is_async or facts.in_lambda(node) or self._in_class_body(node):
            return
        receiver = cancel[0]
        loop = None
        spawns = self._task_spawns(receiver, node)
        if spawns:
            watched = [self._code(receiver)]
        else:
            loop = self._loop_over_tasks(receiver, node)
            if loop is None:
                return
            iterable = self._for_loop(loop)[1]
            holder = self._holder(iterable)
            spawns = self._held_spawns(holder, node)
            watched = [self._code(receiver), self._code(iterable), self._code(holder)]
            name = self._name(holder)
            if name is not None:  # ``pending`` from ``asyncio.wait(tasks)``: gathering ``tasks`` reaps
                for waited in self._asyncio_wait_args(name, node):
                    watched.extend(self._references(waited))
        if not any(self._may_clean_up(s) for s in spawns):
            return  # nothing runs after the CancelledError: there is no cleanup to race
        if self._reaped_after(fn.node, node, watched, loop) or self._reaped_elsewhere(receiver, fn, node):
            return
        self.report(node, _message(self._code(receiver)), fix=self._fix(node, receiver, loop))

    def _in_class_body(self, node) -> bool:
        for anc in self.facts.ancestors(node):
            if self._is_def(anc):
                return False
            if self._is_class(anc):
                return True
        return False

    # ------------------------------------------------------------------ what is a task
    def _task_spawns(self, expr, at, synthetic: bool = False) -> list:
        """The spawn calls ``expr`` was assigned from; ``[None]`` for a task of unknown origin
        (typed as a task, e.g. through an alias); ``[]`` when ``expr`` is no known task."""
        spawns: list = [v for v in self._values(expr, at) if self._is_spawn(v)]
        if not spawns:
            qn = _qualified_uncached(self.facts, expr, at) if synthetic else self.facts.qualified_name(expr, at)
            if qn in ("asyncio.Task", "asyncio.Future"):
                spawns = [None]
        return spawns

    def _values(self, expr, at) -> list:
        """The call expressions ``expr`` (a name or ``self.x``) was assigned from."""
        out = []
        for v in self._collection_values(expr, at):
            awaited = self._awaited(v)
            if awaited is not None:
                if self._is_call(awaited):
                    out.append(awaited)
            elif self._is_call(v):
                out.append(v)
        return out

    def _may_clean_up(self, spawn) -> bool:
        """The spawned coroutine may run code after its ``CancelledError``: unknown, or a same-module
        ``async def`` with a ``finally``, a ``with``/``async with`` or a handler that catches
        cancellation. A library wait (``queue.get()``, ``event.wait()``, ``asyncio.sleep()``) has none."""
        if spawn is None:
            return True
        args = self._call(spawn)[1]
        if not args:
            return True
        coro = args[0][1]
        if not self._is_call(coro):
            return True
        target = self.facts.coroutine_target(coro, spawn)
        if target is not None:
            return not target.is_async or self._has_cleanup(target)
        name = self.facts.call_name(coro) or ""
        attribute = self._attribute(coro.func)
        last = attribute[1] if attribute is not None else name.rsplit(".", 1)[-1]
        return last not in _WAIT_PRIMITIVES

    def _loop_over_tasks(self, receiver, at):
        """``for t in tasks: t.cancel()`` where ``tasks`` holds tasks this module spawned."""
        name = self._name(receiver)
        if name is None:
            return None
        loop = None
        for anc in self.facts.ancestors(at):
            if self._is_def(anc):
                break
            header = self._for_loop(anc)
            if header is not None and self._name(header[0]) == name:
                loop = anc
                break
        if loop is None:
            return None
        return loop if self._held_spawns(self._holder(header[1]), at) else None

    def _held_spawns(self, holder, at) -> list:
        found: list = []
        # a list/set/dict comprehension or literal of spawns
        for v in self._collection_values(holder, at):
            found.extend(e for e in self._held_elements(v) if self._is_call(e) and self._is_spawn(e))
        # ``done, pending = await asyncio.wait({ta, tb}, ...)``: the tasks named in the wait
        name = self._name(holder)
        if name is not None:
            for waited in self._asyncio_wait_args(name, at):
                for word in self._references(waited):
                    if word.isidentifier():
                        found.extend(self._task_spawns(self._synthetic_name(word), waited, synthetic=True))
        # ``tasks.append(create_task(...))`` / ``tasks.add(...)`` / ``tasks[k] = create_task(...)``
        text = self._code(holder)
        for call in self.facts.calls:
            if not self._is_spawn(call):
                continue
            adder = self._argument_of(call)
            if adder is not None and self._is_call(adder):
                method = self._attribute(adder.func)
                if method is not None and method[1] in ("append", "add") and self._code(method[0]) == text:
                    found.append(call)
            if any(self._code(t) == text for t in self._subscript_targets(call)):
                found.append(call)
        return found

    def _collection_values(self, holder, at) -> list:
        out: list = []
        name = self._name(holder)
        if name is not None:
            b = self.facts.lookup(name, self.facts.scope_of(at))
            if b is not None and b.kind == "value":
                out.append(b.target)
            return out
        attribute = self._attribute(holder)
        if attribute is not None and self._name(attribute[0]) == "self":
            cls = self.facts.enclosing_class(at)
            if cls is not None:
                out.extend(v for v, _ in cls.attr_values.get(attribute[1], []))
        return out

    def _asyncio_wait_args(self, name: str, at) -> list:
        fn = self.facts.enclosing_function(at)
        out: list = []
        for call in fn.calls if fn is not None else ():
            if self.facts.call_name(call) != "asyncio.wait":
                continue
            args = self._call(call)[1]
            if args and self._unpacked_into(call, name):
                out.append(args[0][1])
        return out

    # ------------------------------------------------------------------ reaped?
    def _reaped_elsewhere(self, receiver, fn, at) -> bool:
        """A task bound in an enclosing function (``server_task`` cancelled in a nested shutdown
        handler) that the enclosing function awaits; a ``self.x`` task awaited in another method."""
        text = self._code(receiver)
        regions: list = []
        name = self._name(receiver)
        if name is not None:
            b = self.facts.lookup(name, self.facts.scope_of(at))
            if b is not None and b.scope is not None and b.scope is not fn:
                regions.append(b.scope.node)
        else:
            attribute = self._attribute(receiver)
            if attribute is not None and self._name(attribute[0]) == "self" and fn.cls is not None:
                regions.extend(m.node for m in fn.cls.methods.values() if m is not fn)
        for region in regions:
            for aw in self._awaits_in(region):
                if self.facts.is_ancestor(fn.node, aw):
                    continue  # the cancelling function itself was checked in order
                if text in self._references(self._awaited(aw)):
                    return True
        return False

    def _hands_over(self, call, mentions) -> bool:
        f, args = self._call(call)
        if not any(mentions(value) for _, value in args):
            return False
        attribute = self._attribute(f)
        if attribute is not None:
            if attribute[1] in _NEUTRAL_METHODS:
                return False
            root = attribute[0]
            while (inner := self._attribute(root)) is not None:
                root = inner[0]
            if self._name(root) in _LOG_RECEIVERS:
                return False
            inner = self._attribute(attribute[0])
            if inner is not None and inner[1] in _LOG_RECEIVERS:
                return False
        if self._name(f) in _NEUTRAL_FUNCS:
            return False
        return True

    # ------------------------------------------------------------------ fix
    def _fix_kind(self, call, receiver, loop) -> Optional[str]:
        """"loop": the wait goes after the loop; "task": the cancel is replaced; None: no fix (the
        result of ``cancel()`` is used, or what it cancels cannot be evaluated again)."""
        if not self._statement_call(call):
            return None
        if loop is not None:
            return "loop" if self._reevaluable(self._for_loop(loop)[1]) else None
        return "task" if self._reevaluable(receiver) else None

    def _holder(self, iterable):
        """``tasks`` for ``tasks``, ``tasks.values()``, ``list(tasks)``."""
        call = self._call(iterable)
        if call is not None:
            f, args = call
            attribute = self._attribute(f)
            if attribute is not None and attribute[1] in _VIEW_METHODS:
                return attribute[0]
            if self._name(f) in _COPY_FUNCS and len(args) == 1:
                return args[0][1]
        return iterable

    def _reevaluable(self, expr) -> bool:
        """A name, an attribute chain, ``x.values()`` or ``list(x)`` of those: evaluating it again
        gives the same tasks and has no side effect."""
        if self._name(expr) is not None:
            return True
        attribute = self._attribute(expr)
        if attribute is not None:
            return self._reevaluable(attribute[0])
        call = self._call(expr)
        if call is not None and not [k for k, _ in call[1] if k is not None]:
            f, args = call
            attribute = self._attribute(f)
            if attribute is not None and attribute[1] in _VIEW_METHODS and not args:
                return self._reevaluable(attribute[0])
            if self._name(f) in _COPY_FUNCS and len(args) == 1:
                return self._reevaluable(args[0][1])
        return False


class _Ast(_Decide, AstCheck):
    """SHD105 on ``ast``: ``_Decide`` with the tree's answers read from ``ast`` (libcst's ``Call.args``
    order, ``*a``/``**k`` values, ``yield from``, ``async for``/``async with``/``async def`` as
    their libcst classes, a ``finally`` as ``Try``/``TryStar.finalbody``, ``except*`` handlers not
    counted (libcst's ``ExceptStarHandler``), libcst's ``Name`` identifiers (``None``/``True``/``False``
    included), code text with owned parentheses (libcst's own reading inside an f-string), the walk
    in libcst's source order)."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    @staticmethod
    def _name(expr) -> Optional[str]:
        """A name's identifier; ``None``/``True``/``False`` too (libcst's ``Name``s)."""
        t = type(expr)
        if t is ast.Name:
            return expr.id
        if t is ast.Constant and (expr.value is None or expr.value is True or expr.value is False):
            return str(expr.value)
        return None

    @staticmethod
    def _attribute(expr) -> Optional[tuple]:
        return (expr.value, expr.attr) if type(expr) is ast.Attribute else None

    @staticmethod
    def _call(expr) -> Optional[tuple]:
        if type(expr) is not ast.Call:
            return None
        return expr.func, [(a.keyword, a.value) for a in arguments(expr)]

    @staticmethod
    def _awaited(expr):
        return expr.value if type(expr) is ast.Await else None

    @staticmethod
    def _is_call(expr) -> bool:
        return type(expr) is ast.Call

    @staticmethod
    def _is_def(node) -> bool:
        return type(node) in DEFS

    @staticmethod
    def _is_class(node) -> bool:
        return type(node) is ast.ClassDef

    @staticmethod
    def _for_loop(node) -> Optional[tuple]:
        return (node.target, node.iter) if type(node) in _AST_FORS else None

    def _is_spawn(self, call) -> bool:
        """``is_task_spawn`` on ``ast``."""
        qn = self.facts.call_name(call)
        if qn in _SPAWNERS:
            return True
        f = call.func
        if qn is None and type(f) is ast.Attribute and f.attr == "create_task":
            receiver = f.value
            last = receiver.attr if type(receiver) is ast.Attribute else (
                receiver.id if type(receiver) is ast.Name else "")
            return last in _LOOP_NAMES
        return False

    @staticmethod
    def _held_elements(value) -> list:
        t = type(value)
        if t is ast.ListComp or t is ast.SetComp or t is ast.GeneratorExp:
            return [value.elt]
        if t is ast.DictComp:
            return [value.value]
        if t is ast.List or t is ast.Set or t is ast.Tuple:
            return [e.value if type(e) is ast.Starred else e for e in value.elts]
        return []

    def _argument_of(self, call):
        """The call whose argument ``call`` is (libcst's ``Arg`` parent: a positional or ``*``
        argument, a keyword's or ``**``'s value); a class's base is none (``_check`` wants a call)."""
        parent = self.facts.parent(call)
        t = type(parent)
        if t is ast.keyword:
            return self.facts.parent(parent)
        if t is ast.Starred:
            parent = self.facts.parent(parent)
        return parent if type(parent) is ast.Call else None  # (as the callee, ``_check`` finds no method)

    def _subscript_targets(self, call) -> list:
        parent = self.facts.parent(call)
        if type(parent) is not ast.Assign:  # (a call is never an assignment's target)
            return []
        return [t.value for t in parent.targets if type(t) is ast.Subscript]

    def _unpacked_into(self, call, name: str) -> bool:
        aw = self.facts.parent(call)
        assign = self.facts.parent(aw) if type(aw) is ast.Await else None
        return type(assign) is ast.Assign and any(
            type(t) is ast.Tuple and any(
                type(e) is ast.Name and e.id == name or type(e) is ast.Starred and type(e.value) is ast.Name
                and e.value.id == name for e in t.elts)
            for t in assign.targets)

    def _statement_call(self, call) -> bool:
        return type(self.facts.parent(call)) is ast.Expr

    @staticmethod
    def _has_cleanup(fn) -> bool:
        """``_has_cleanup`` of the def's body: a ``finally``, a ``with``/``async with``, an
        ``except`` (not ``except*``) that is bare or names ``CancelledError``/``BaseException``
        (libcst's ``Name``s: an attribute's name counts), not in nested defs."""
        for n in source_order(fn.node.body, DEFS):
            t = type(n)
            if t in TRYS and n.finalbody:
                return True
            if t is ast.With or t is ast.AsyncWith:
                return True
            if t is ast.Try:
                for h in n.handlers:
                    if h.type is None or _CANCEL_WORDS & cst_names(h.type):
                        return True
        return False

    @staticmethod
    def _synthetic_name(name: str):
        return ast.Name(id=name, ctx=ast.Load())

    @staticmethod
    def _awaits_in(region) -> list:
        return [n for n in ast.walk(region) if type(n) is ast.Await]

    def _references(self, node) -> set[str]:
        return cst_names(node) | {self._code(n) for n in ast.walk(node) if type(n) is ast.Attribute}

    def _fstring_nodes(self, node: ast.JoinedStr) -> dict:
        """libcst's reading of an f-string's text, written at its statement's indentation (libcst
        drops a statement's block indentation after a newline inside brackets): its Attribute,
        Call and Subscript nodes and the Names ``ast`` has as ``Name`` (not an attribute's, a
        keyword's or a parameter's name, nor ``None``/``True``/``False``), each in source order."""
        cache = self.__dict__.setdefault("_fstrings", {})
        found = cache.get(node)
        if found is not None:
            return found
        found = cache[node] = {}
        stmt = node
        while stmt is not None and not isinstance(stmt, ast.stmt):
            stmt = self.facts.parent(stmt)
        line = self.facts.lines[stmt.lineno - 1] if stmt is not None else ""
        indent = line[:len(line) - len(line.lstrip(" \t"))]
        segment = self.facts.segment(node)
        text = f"if 1:\n{indent}({segment})\n" if indent else f"({segment})\n"
        try:
            module = cst.parse_module(text)
        except Exception:  # noqa: BLE001 - (not seen: the f-string parsed as part of its file)
            return found
        not_names: set[int] = set()
        twins = frozenset(_cst_twin().values())

        class V(cst.CSTVisitor):
            def on_visit(self, n: cst.CSTNode) -> bool:
                t = type(n)
                if t is cst.Attribute:
                    not_names.add(id(n.attr))
                elif t is cst.Arg and n.keyword is not None:
                    not_names.add(id(n.keyword))
                elif t is cst.Param:
                    not_names.add(id(n.name))
                elif t is cst.Name and (id(n) in not_names or n.value in ("None", "True", "False")):
                    return True
                if t in twins:
                    found.setdefault(t, []).append(n)
                return True

        module.visit(V())
        return found

    def _code(self, node) -> str:
        fstring = _outer_fstring(self.facts, node)
        if fstring is not None and type(node) in _TWINNED:
            return self._fstring_code(fstring, node)
        return self.facts.code_for_node(node)

    def _fstring_code(self, fstring: ast.JoinedStr, node) -> str:
        """libcst's text of ``node`` in ``fstring`` (the facts' text of a node in an f-string misses
        a doubled pair of parentheses and the indentation libcst drops inside brackets): the
        same-kind node at the same place in libcst's reading of the f-string (``_fstring_nodes``)."""
        t = type(node)
        mine = [n for n in source_order([fstring]) if type(n) is t]
        theirs = self._fstring_nodes(fstring).get(_cst_twin()[t], [])
        if len(mine) != len(theirs):  # (not seen)
            return self.facts.code_for_node(node)
        return _code(theirs[next(i for i, n in enumerate(mine) if n is node)])

    def _mentions(self, watched: list[str]):
        """``bool(_references(node) & set(watched))``; an attribute's code (with a ``.``) is never an
        identifier, so only the names are read when every watched code is one."""
        wanted = set(watched)
        if all(w.isidentifier() for w in wanted):
            return lambda node: not wanted.isdisjoint(cst_names(node))
        return lambda node: not wanted.isdisjoint(self._references(node))

    def _reaped_after(self, region, cancel: ast.Call, watched: list[str], loop) -> bool:
        """libcst's walk of ``region`` in source order: a node after the cancel (not under it), or
        anywhere under one of the loops around it but ``loop``."""
        facts = self.facts
        loops = {id(a) for a in facts.ancestors(cancel) if type(a) in _AST_LOOPS
                 and facts.is_ancestor(region, a) and a is not loop}
        mentions = self._mentions(watched)
        after = False
        stack = [(region, False)]
        while stack:
            node, in_loop = stack.pop()
            if node is cancel:
                after = True
                continue
            if after or in_loop:
                t = type(node)
                if t in _AST_YIELDS:
                    if node.value is not None and mentions(node.value):
                        return True
                elif t is ast.Call:
                    if self._hands_over(node, mentions):
                        return True
                elif t in _AST_FORS:
                    if mentions(node.iter) and any(type(n) is ast.Await for n in source_order(node.body, DEFS)):
                        return True
                elif t is ast.Assign:
                    if type(node.value) is not ast.Call and mentions(node.value):
                        return True
            inner = in_loop or id(node) in loops
            stack.extend((child, inner) for child in reversed(children(node)))
        return False

    def _fix(self, call: ast.Call, receiver, loop) -> Optional[FixPlan]:
        kind = self._fix_kind(call, receiver, loop)
        if kind is None:
            return None
        return FixPlan.unsafe(_LOOP_FIX if kind == "loop" else _TASK_FIX)


class CancelWithoutAwait(_Decide, Rule):
    """
    ## What it does
    Flags `task.cancel()` in a coroutine, where `task` is an asyncio task this module made
    (`asyncio.create_task`, `loop.create_task`, `asyncio.ensure_future`, kept in a name, a
    `self` attribute, or a list/set of them iterated with `for t in tasks: t.cancel()`), when
    the coroutine never awaits the task after the cancel: no `await task`,
    `await asyncio.gather(*tasks)`, `await asyncio.wait(...)`, `wait_for`, and the task is
    not returned or handed to another call after it.

    Not flagged: tasks with no cleanup to race (a same-module coroutine with no `finally`, no
    `with`/`async with` and no handler that catches cancellation; a task made from a library
    wait such as `queue.get()`, `event.wait()` or `asyncio.sleep()`), the reaping idiom
    (cancel, then await or gather the task), cancels of tasks
    a `TaskGroup` or `asyncio.timeout` owns (they are not typed as tasks here), cancels in
    plain functions and callbacks (they cannot await; the caller may), and cancels in a
    lambda.

    Options: `cleanup_timeout` (number, default 30) is the `timeout=` the fix writes.

    ## Why is this bad?
    `cancel()` only *requests* cancellation: the task gets `CancelledError` at its next
    `await` and then runs its `except CancelledError` / `finally` code — closing sandboxes,
    flushing a buffer, releasing a lease — over further awaits. The canceller goes on at
    once: it starts the next epoch's generator, writes the final checkpoint, returns, or
    exits. The cleanup races all of that. When the canceller is the program's main coroutine,
    `asyncio.run` then cancels the still-running task a *second* time while it awaits in its
    `finally`, which aborts the cleanup outright (measured in
    tests/behaviour/test_shd105_cancel_without_await.py: the cleanup marker is missing at
    the checkpoint and after exit; present in both after the fix).

    ## Example
    ```python
    async def run_epoch(self):
        gen = asyncio.create_task(self.generate())
        await self.train_on(self.queue)
        gen.cancel()  # generate()'s finally is still running...
        self.save_checkpoint()  # ...while this runs
    ```

    ## Use instead
    ```python
    import runtime_guard

    async def run_epoch(self):
        gen = asyncio.create_task(self.generate())
        await self.train_on(self.queue)
        await runtime_guard.cancel_and_wait(gen, timeout=30)
        self.save_checkpoint()
    ```
    `runtime_guard.cancel_and_wait(task_or_tasks, timeout=...)` cancels, then waits (bounded)
    until the tasks ended, absorbing only their own `CancelledError`: if the caller itself is
    cancelled while it waits, that propagates. Written out by hand:
    `task.cancel()` then `with contextlib.suppress(asyncio.CancelledError): await
    asyncio.wait_for(task, 30)` (which, unlike the helper, also swallows the caller's own
    cancellation).

    ## Fix safety
    Unsafe: the coroutine now suspends until the cancelled tasks finished their cleanup (at
    most `cleanup_timeout` seconds), so other tasks run at that point and the code after the
    cancel runs later than before. That is the point when a cleanup is still running (the
    hazard's path), but the suspension also happens when the tasks had already finished
    and nothing raced, and an exception a task raises in its cleanup is now logged there
    (see docs/fix-safety.md). A statement `task.cancel()` is replaced by
    `await runtime_guard.cancel_and_wait(task, timeout=30)`; for a loop
    `for t in tasks: t.cancel()` the wait is inserted after the loop (tasks already being
    cancelled are not cancelled twice). No fix when the cancel's result is used, or the
    loop's iterable cannot be evaluated again. The fix adds `import runtime_guard`.

    ## References
    - Python docs: `asyncio.Task.cancel` ("This arranges for a CancelledError exception to be
      thrown into the wrapped coroutine on the next cycle of the event loop")
    - Python docs: `asyncio.run` (cancels the remaining tasks when the main coroutine ends)

    ## Known limits
    An `await` of the task in the function that binds it (when a nested function cancels it)
    or, for a `self.x` task, in any other method counts as reaping, whatever the order.
    Tasks are recognised only when this module creates them; a task received as a parameter
    or from another module's API is not. A cancel in a plain function is not flagged, even
    when every caller moves on. An await of the same name later in the function counts as
    reaping even when it is on another branch.
    """

    code = "SHD105"
    name = "cancel-without-await"
    summary = "A cancelled asyncio task is never awaited: its cleanup races what the canceller does next"
    triggers = ("cancel",)
    # "Task"/"Future": the rule also reports asyncio.Task(coro) and asyncio.Future() made directly.
    # In code: an ``async def`` and ``cancel``. Implied by tier 2 (``_may_cancel_a_task``): it reads
    # only calls made directly in an ``async def`` (``fn.is_async``) whose callee is an attribute
    # ``<x>.cancel`` (``func.attr == "cancel"``: the word spelled in code)
    candidate = All(InCode(All(ASYNC_DEF, Word("cancel"))),
                    AnyOf(Word("create_task", "ensure_future", "Task", "Future")))
    # tier 2: a ``.cancel()`` called directly in a coroutine (not in a lambda or a nested def)
    # on a receiver that may be a task (``_may_cancel_a_task``)
    candidate_tree = staticmethod(lambda tree: _may_cancel_a_task(tree))
    facts_needed = ("functions", "calls")
    ast_check = _Ast
    options = {
        "cleanup_timeout": Option(
            default=30,
            kind=(int, float),
            doc="Seconds the inserted `cancel_and_wait` waits for the cancelled tasks' cleanup.",
        ),
    }

    valid = [
        # the reaping idiom
        """
        import asyncio

        async def main():
            t = asyncio.create_task(work())
            await asyncio.sleep(1)
            t.cancel()
            try:
                await t
            except asyncio.CancelledError:
                pass
        """,
        # cancel every pending task, then gather them
        """
        import asyncio

        class Pool:
            async def start(self):
                self.workers = [asyncio.create_task(self.work(i)) for i in range(4)]

            async def close(self):
                for w in self.workers:
                    w.cancel()
                await asyncio.gather(*self.workers, return_exceptions=True)
        """,
        # a plain function cannot await: not flagged (its caller may reap)
        """
        import asyncio

        class Client:
            def start(self):
                self._pump = asyncio.ensure_future(self.pump())

            def stop(self):
                self._pump.cancel()
        """,
        # handed over to someone who awaits it
        """
        import asyncio

        async def restart(self):
            old = asyncio.create_task(self.serve())
            old.cancel()
            await self.reaper.reap(old)
        """,
        # not an asyncio task (a timer handle, a concurrent future)
        """
        import asyncio

        async def main(loop, executor):
            handle = loop.call_later(5, tick)
            handle.cancel()
            fut = executor.submit(job)
            fut.cancel()
        """,
        # near miss from real code: idle queue workers with nothing to clean up
        """
        import asyncio

        async def dispatch(queue, n):
            async def worker():
                while True:
                    item = await queue.get()
                    await handle(item)
                    queue.task_done()

            workers = [asyncio.create_task(worker()) for _ in range(n)]
            await queue.join()
            for w in workers:
                w.cancel()
        """,
        # near miss from real code: racing two library waits, the loser has no cleanup
        """
        import asyncio

        async def next_item(buffer, finished):
            get_task = asyncio.ensure_future(buffer.get())
            done_task = asyncio.ensure_future(finished.wait())
            done, pending = await asyncio.wait({get_task, done_task}, return_when=asyncio.FIRST_COMPLETED)
            for t in pending:
                t.cancel()
            return get_task.result() if get_task in done else None
        """,
        # near miss from real code: the losers of asyncio.wait are reaped by gathering the whole set
        """
        import asyncio

        async def splice(a, b):
            async def pipe(src, dst):
                try:
                    await copy(src, dst)
                finally:
                    dst.close()

            tasks = {asyncio.create_task(pipe(a, b)), asyncio.create_task(pipe(b, a))}
            _, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        """,
        # near miss from real code (vLLM's launcher): a nested shutdown handler cancels the server
        # task that the enclosing function awaits
        """
        import asyncio

        async def serve_http(server, loop):
            server_task = loop.create_task(server.serve())

            async def handle_shutdown():
                server.should_exit = True
                server_task.cancel()

            loop.create_task(handle_shutdown())
            await server_task
        """,
        # near miss from real code: cancelled, then awaited one by one through a list
        """
        import asyncio

        async def test_refresh(client):
            refresh = asyncio.create_task(client.refresh())
            waiter = asyncio.create_task(client.wait_ready())
            refresh.cancel()
            waiter.cancel()
            for t in [refresh, waiter]:
                try:
                    await t
                except asyncio.CancelledError:
                    pass
        """,
        # wait_for over the cancelled task
        """
        import asyncio, contextlib

        async def stop(self):
            task = asyncio.create_task(self.loop_forever())
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(task, timeout=10)
        """,
    ]
    invalid = [
        Invalid(
            """
            import asyncio

            class Trainer:
                async def run_epoch(self):
                    gen = asyncio.create_task(self.generate())
                    await self.train_on(self.queue)
                    gen.cancel()  # epoch over
                    self.save_checkpoint()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Trainer:
                async def run_epoch(self):
                    gen = asyncio.create_task(self.generate())
                    await self.train_on(self.queue)
                    await runtime_guard.cancel_and_wait(gen, timeout=30)  # epoch over
                    self.save_checkpoint()
            """,
            message_contains="races",
        ),
        # first-completed race: the loser is cancelled and forgotten
        Invalid(
            """
            import asyncio

            async def first_answer(a, b):
                ta = asyncio.create_task(a)
                tb = asyncio.create_task(b)
                done, pending = await asyncio.wait({ta, tb}, return_when=asyncio.FIRST_COMPLETED)
                for t in pending:
                    t.cancel()
                return done.pop().result()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def first_answer(a, b):
                ta = asyncio.create_task(a)
                tb = asyncio.create_task(b)
                done, pending = await asyncio.wait({ta, tb}, return_when=asyncio.FIRST_COMPLETED)
                for t in pending:
                    t.cancel()
                await runtime_guard.cancel_and_wait(pending, timeout=30)
                return done.pop().result()
            """,
            count=1,
        ),
        Invalid(
            """
            import asyncio

            class Server:
                async def start(self):
                    self._tasks = [asyncio.create_task(self.serve(p)) for p in self.ports]

                async def stop(self):
                    # stop serving
                    for t in self._tasks:
                        t.cancel()
                    self._tasks.clear()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Server:
                async def start(self):
                    self._tasks = [asyncio.create_task(self.serve(p)) for p in self.ports]

                async def stop(self):
                    # stop serving
                    for t in self._tasks:
                        t.cancel()
                    await runtime_guard.cancel_and_wait(self._tasks, timeout=30)
                    self._tasks.clear()
            """,
        ),
        Invalid(
            """
            import asyncio as aio

            class Actor:
                async def __aenter__(self):
                    self._hb = aio.get_running_loop().create_task(self.heartbeat())
                    return self

                async def __aexit__(self, *exc):
                    if self._hb is not None:
                        self._hb.cancel("closing")
            """,
            fixed="""
            import asyncio as aio
            import runtime_guard

            class Actor:
                async def __aenter__(self):
                    self._hb = aio.get_running_loop().create_task(self.heartbeat())
                    return self

                async def __aexit__(self, *exc):
                    if self._hb is not None:
                        await runtime_guard.cancel_and_wait(self._hb, timeout=30, msg="closing")
            """,
        ),
    ]

    # ------------------------------------------------------------------ visitor
    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    # the tree's answers (libcst)
    @staticmethod
    def _name(expr) -> Optional[str]:
        return expr.value if isinstance(expr, cst.Name) else None

    @staticmethod
    def _attribute(expr) -> Optional[tuple]:
        return (expr.value, expr.attr.value) if isinstance(expr, cst.Attribute) else None

    @staticmethod
    def _call(expr) -> Optional[tuple]:
        """(callee, [(keyword or None, value)] as libcst's ``Call.args``) of a call, else None."""
        if not isinstance(expr, cst.Call):
            return None
        return expr.func, [(a.keyword.value if a.keyword is not None else None, a.value) for a in expr.args]

    @staticmethod
    def _awaited(expr):
        return expr.expression if isinstance(expr, cst.Await) else None

    @staticmethod
    def _is_call(expr) -> bool:
        return isinstance(expr, cst.Call)

    @staticmethod
    def _is_def(node) -> bool:
        return isinstance(node, cst.FunctionDef)

    @staticmethod
    def _is_class(node) -> bool:
        return isinstance(node, cst.ClassDef)

    @staticmethod
    def _for_loop(node) -> Optional[tuple]:
        return (node.target, node.iter) if isinstance(node, cst.For) else None

    def _is_spawn(self, call) -> bool:
        return is_task_spawn(self.facts, call)

    @staticmethod
    def _held_elements(value) -> list:
        """The elements a comprehension (its element, a dict's value) or a list/set/tuple holds."""
        if isinstance(value, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return [value.elt]
        if isinstance(value, cst.DictComp):
            return [value.value]
        if isinstance(value, (cst.List, cst.Set, cst.Tuple)):
            return [e.value for e in value.elements]
        return []

    def _argument_of(self, call):
        """The call (or class) whose argument ``call`` is, else None."""
        parent = self.facts.parent(call)
        return self.facts.parent(parent) if isinstance(parent, cst.Arg) else None

    def _subscript_targets(self, call) -> list:
        """``x`` of each ``x[k] = call``."""
        parent = self.facts.parent(call)
        if not isinstance(parent, cst.Assign):
            return []
        return [t.target.value for t in parent.targets if isinstance(t.target, cst.Subscript)]

    def _unpacked_into(self, call, name: str) -> bool:
        """``..., name, ... = await call``."""
        aw = self.facts.parent(call)
        assign = self.facts.parent(aw) if isinstance(aw, cst.Await) else None
        return isinstance(assign, cst.Assign) and any(
            isinstance(t.target, cst.Tuple) and any(
                isinstance(e.value, cst.Name) and e.value.value == name for e in t.target.elements)
            for t in assign.targets)

    def _statement_call(self, call) -> bool:
        return isinstance(self.facts.parent(call), cst.Expr)

    @staticmethod
    def _has_cleanup(fn) -> bool:
        return _has_cleanup(fn.node.body)

    @staticmethod
    def _synthetic_name(name: str):
        return cst.Name(name)

    @staticmethod
    def _awaits_in(region) -> list:
        return _awaits_in(region)

    @staticmethod
    def _references(node) -> set[str]:
        return _references(node)

    @staticmethod
    def _code(node) -> str:
        return _code(node)

    def _reaped_after(self, region: cst.CSTNode, cancel: cst.Call, watched: list[str],
                      loop: Optional[cst.For]) -> bool:
        """After ``cancel`` (in source order; anywhere in an enclosing loop), the task is awaited,
        returned, yielded, stored elsewhere or handed to another call."""
        facts = self.facts
        found = []
        state = {"after": False}
        loops = [a for a in facts.ancestors(cancel) if isinstance(a, (cst.For, cst.While))
                 and facts.is_ancestor(region, a) and a is not loop]

        def mentions(node: cst.CSTNode) -> bool:
            return bool(_references(node) & set(watched))

        rule = self
        inside = [0]  # how many of ``loops`` the walk is under (is_ancestor per node was most of the rule's time)

        class V(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                in_loop = inside[0] > 0
                if any(node is lp for lp in loops):
                    inside[0] += 1
                if node is cancel:
                    state["after"] = True
                    return False
                if found:
                    return False
                counted = state["after"] or in_loop
                if not counted:
                    return True
                if isinstance(node, (cst.Await, cst.Return, cst.Yield)) and node is not None:
                    value = node.expression if isinstance(node, cst.Await) else node.value
                    if value is not None and mentions(value):
                        found.append(node)
                        return False
                if isinstance(node, cst.Call) and rule._hands_over(node, mentions):
                    found.append(node)
                    return False
                if isinstance(node, cst.For) and mentions(node.iter) and _awaits(node.body):
                    found.append(node)  # ``for t in [task, other]: await t``
                    return False
                if isinstance(node, cst.Assign) and mentions(node.value) and not isinstance(node.value, cst.Call):
                    found.append(node)  # kept elsewhere: ``self._old = task``
                    return False
                return True

            def on_leave(self, original_node: cst.CSTNode) -> None:
                if any(original_node is lp for lp in loops):
                    inside[0] -= 1

        # region.visit(V()) without rebuilding every node, and without layout, names and literals:
        # ``on_visit`` acts on none of them (it prunes at them only after a find, and nothing is
        # under them but layout)
        walk(region, V(), _not_acted_on())
        return bool(found)

    # ------------------------------------------------------------------ fix
    def _timeout_arg(self) -> cst.Arg:
        value = self.config["cleanup_timeout"]
        return cst.Arg(cst.Integer(str(value)) if isinstance(value, int) else cst.Float(repr(value)),
                       keyword=cst.Name("timeout"), equal=_eq())

    def _fix(self, call: cst.Call, receiver: cst.BaseExpression, loop: Optional[cst.For]) -> Optional[Fix]:
        kind = self._fix_kind(call, receiver, loop)
        if kind is None:
            return None
        if kind == "loop":
            stmt = cst.SimpleStatementLine([cst.Expr(cst.Await(guard_call(
                "cancel_and_wait", [cst.Arg(loop.iter), self._timeout_arg()])))])
            return Fix.unsafe(InsertAfter(loop, (stmt,)), IMPORT_RUNTIME_GUARD, message=_LOOP_FIX)
        args = [cst.Arg(receiver), self._timeout_arg()]
        positional = [a for a in call.args if a.keyword is None]
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "msg":
                args.append(cst.Arg(a.value, keyword=cst.Name("msg"), equal=_eq()))
        if positional:
            args.append(cst.Arg(positional[0].value, keyword=cst.Name("msg"), equal=_eq()))
        new = cst.Await(guard_call("cancel_and_wait", args))
        return Fix.unsafe(Replace(call, new), IMPORT_RUNTIME_GUARD, message=_TASK_FIX)


@functools.cache
def _eq() -> cst.AssignEqual:
    """``=`` with no space around it (a keyword argument's)."""
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))


#: ``ast`` node types whose libcst twins ``_Ast._fstring_code`` finds by their place in an f-string
_TWINNED = frozenset({ast.Name, ast.Attribute, ast.Call, ast.Subscript})


@functools.cache
def _cst_twin() -> dict[type, type]:
    """``_TWINNED``'s libcst twins, by ``ast`` type."""
    return {ast.Name: cst.Name, ast.Attribute: cst.Attribute, ast.Call: cst.Call, ast.Subscript: cst.Subscript}


def _outer_fstring(facts, node) -> Optional[ast.JoinedStr]:
    """The outermost f-string ``node`` is in (None: none; the walk stops at a statement)."""
    found = None
    up = facts.parent(node)
    while up is not None and not isinstance(up, ast.stmt):
        if type(up) is ast.JoinedStr:
            found = up
        up = facts.parent(up)
    return found


_AST_FORS = (ast.For, ast.AsyncFor)
_AST_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_AST_YIELDS = (ast.Await, ast.Return, ast.Yield, ast.YieldFrom)


def _qualified_uncached(facts, expr, at) -> Optional[str]:
    """``facts.qualified_name(expr, at)`` without its cache: the cache is keyed by ``id(expr)``, and
    a name made for one question (``_held_spawns``) is freed after it, so a later one could get
    its answer."""
    result = facts._qualified(expr, facts.scope_of(at))
    return _canonical(result) if result is not None else None


def _awaits_in(region: cst.CSTNode) -> list[cst.Await]:
    found: list[cst.Await] = []

    class V(cst.CSTVisitor):
        def visit_Await(self, n: cst.Await) -> None:
            found.append(n)

    walk(region, V())
    return found


def _awaits(body: cst.CSTNode) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Await(self, n: cst.Await) -> None:
            found.append(n)

    walk(body, V())
    return bool(found)


def _has_cleanup(body: cst.CSTNode) -> bool:
    """A ``finally``, a ``with``/``async with``, or a handler that catches cancellation
    (``CancelledError``, ``BaseException``, bare ``except``) in ``body`` (not in nested defs)."""
    found = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Finally(self, n: cst.Finally) -> None:
            found.append(n)

        def visit_With(self, n: cst.With) -> None:
            found.append(n)

        def visit_ExceptHandler(self, n: cst.ExceptHandler) -> None:
            if n.type is None or {"CancelledError", "BaseException"} & _references(n.type) \
                    or any(r.endswith((".CancelledError", ".BaseException")) for r in _references(n.type)):
                found.append(n)

    walk(body, V())
    return bool(found)


def _references(node: cst.CSTNode) -> set[str]:
    """The names and attribute chains (``t``, ``self._tasks``) used under ``node``."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> None:
            found.add(_code(n))

    walk(node, V())
    return found


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


# ------------------------------------------------------------------ candidate tier 2 (ast)
#: Last words of what a task receiver's qualified name, or the call it was assigned from, may
#: be: ``_task_spawns`` needs a value that ``is_task_spawn`` (its callee's last word is
#: ``create_task``/``ensure_future``) or a qualified name ``asyncio.Task``/``asyncio.Future``.
_TASK_WORDS = frozenset({"create_task", "ensure_future", "Task", "Future"})


def _may_cancel_a_task(tree) -> bool:
    """``visit_Call`` reports only ``<receiver>.cancel()`` called directly in an ``async def``
    (not in a lambda) whose receiver is a task: ``_task_spawns`` finds a spawn among the values
    ``_collection_values`` reads (the single-name value bindings of a name, the ``self.<x> =``
    values of its class: ``Tree.words`` follows both, scopes ignored, and a call's words are its
    callee's) or a qualified name ``asyncio.Task``/``asyncio.Future`` (``Tree.words``: the last
    words it may have; a call's include its factory's result type); else ``_loop_over_tasks``
    needs a name that an enclosing ``for`` binds. Any other receiver gives ``_task_spawns`` no
    value (``_collection_values`` reads a name or ``self.<x>``), and a qualified name only when a
    call (``_call_result_type``) or an attribute ending in ``Task``/``Future`` (the facts' name of
    ``<e>.<x>`` ends in ``.<x>`` unless ``e`` is ``self``): a subscript, an await... is out. Then
    ``_may_clean_up`` must hold for one of the spawns: a name or ``self.<x>`` whose every
    binding is a spawn of a coroutine that surely has no cleanup (``_spawns_quiet``) is out.
    A ``self.<x>`` is out too when no ``self.<x> = v`` of the module may give a spawn or a
    task's type (``_value_may_be_task``), or when ``_reaped_after``/``_reaped_elsewhere``
    surely find it awaited (``_self_reaped``)."""
    for fn in tree.functions:
        if not fn.is_async:
            continue
        parents = None
        for c, _, lam in fn.calls:
            func = c.func
            if lam or type(func) is not ast.Attribute or func.attr != "cancel":
                continue
            receiver = func.value
            t = type(receiver)
            if t is ast.Name:
                if parents is None:
                    parents = tree.parents(fn.node)
                up = parents.get(id(c))
                while up is not None and up is not fn.node:
                    if type(up) in (ast.For, ast.AsyncFor) and type(up.target) is ast.Name \
                            and up.target.id == receiver.id:
                        if _tree_may_hold_spawns(tree, fn, up, receiver.id) and not _tree_reaped_after(
                                tree, fn, c, receiver.id, up):
                            return True
                        break
                    up = parents.get(id(up))
                else:
                    if _name_may_be_task(tree, fn, receiver.id) and not _spawns_quiet(
                            tree, _name_values(tree, fn, receiver.id)) and not _tree_reaped_after(
                            tree, fn, c, receiver.id, None):
                        return True
            elif t is ast.Attribute and type(receiver.value) is ast.Name and receiver.value.id == "self":
                values = _attr_values(tree, receiver.attr)
                if _self_may_be_task(tree, fn, values) and not _spawns_quiet(tree, values) \
                        and not _self_reaped(tree, fn, c, receiver):
                    return True
            elif (t is ast.Call and tree.words(receiver) & _TASK_WORDS
                  or t is ast.Attribute and receiver.attr in _TASK_CLASSES):
                return True
    return False


def _chain(fn, g) -> bool:
    """``g`` (a ``Function`` or None: the module) may hold a binding ``lookup`` finds from ``fn``."""
    return g is None or g is fn or (g.node.lineno <= fn.node.lineno and g.node.end_lineno >= fn.node.end_lineno)


def _name_values(tree, fn, name: str) -> Optional[list]:
    """(value, its ``Function``) of every binding of ``name`` that ``lookup`` may find from
    ``fn``; None when some binding has no value here (``with ... as``, ``:=``) or an import
    alias names a task."""
    own = {name} | {word for local, word in tree._imports if local == name}
    if own & _TASK_WORDS:
        return None
    out, values = [], 0
    for target, value, g in tree.assigns:
        if type(target) is ast.Name and target.id == name:
            values += 1
            if _chain(fn, g):
                out.append((value, g))
    if sum(1 for bound, _ in tree.value_bindings if bound == name) > values:
        return None
    return out


def _attr_values(tree, attr: str) -> Optional[list]:
    """(value, its ``Function``) of every ``self.<attr> = value`` in the module (the class's
    ``attr_values`` are among them); None when a ``with ... as self.<attr>`` binds it too."""
    out, values = [], 0
    for target, value, g in tree.assigns:
        if type(target) is ast.Attribute and target.attr == attr:
            values += 1
            if type(target.value) is ast.Name and target.value.id == "self":
                out.append((value, g))
    if sum(1 for bound, _ in tree._attr_bindings if bound == attr) > values:
        return None
    return out


def _spawns_quiet(tree, values: Optional[list]) -> bool:
    """Every value is a spawn (``spawns``' reading of ``is_task_spawn``) whose coroutine surely
    has no cleanup, or no call, name or attribute (``None``, a literal: no spawn, no type): then
    ``_task_spawns`` gives some of those spawns (or none, and then no qualified name of a task:
    the values are spawns or untyped) and ``_may_clean_up`` is False for each."""
    if not values:
        return False
    for value, g in values:
        if type(value) not in _TYPED:
            continue  # ``None``, a literal: no spawn (``_values`` keeps calls), no type (``_instance_type``)
        if type(value) is ast.Await:
            value = value.value
        if type(value) is ast.Call and not _value_may_be_task(tree, value):
            continue  # a call that is no spawn and gives no task's type (``_call_result_type``)
        if type(value) is not ast.Call or not may_spawn(tree, value) or _may_clean_up_ast(tree, value, g):
            return False
    return True


def _self_may_be_task(tree, fn, values: Optional[list]) -> bool:
    """``_task_spawns(self.<x>)`` in ``fn`` may give something: ``values`` are every
    ``self.<x> = v`` of the module (``_attr_values``; None: a ``with ... as self.<x>`` too). In a
    method, the facts read only its class's ``attr_values`` (the ``self.<x> = v`` directly in the
    class's methods, in source order): a spawn among them, or a task's type from the last one
    (``qualified_name``); elsewhere (a nested def) any value may give either."""
    if values is None:
        return True
    if fn.cls is None:
        return any(_value_may_be_task(tree, v) for v, _ in values)
    own = [v for v, g in values if g is not None and g.cls is fn.cls]
    if not own:
        return False
    for v in own:
        call = v.value if type(v) is ast.Await else v
        if type(call) is ast.Call and may_spawn(tree, call):
            return True
    return _value_may_be_task(tree, own[-1])


#: last words of a callee whose call the facts type as ``asyncio.Task``/``asyncio.Future`` by
#: its own name (``_call_result_type``: a capitalised callee is the instance's class)
_TASK_CLASSES = frozenset({"Task", "Future"})


def _value_may_be_task(tree, value) -> bool:
    """``value`` (bound to a name or ``self.<x>``) may give ``_task_spawns`` a spawn or a
    qualified name ``asyncio.Task``/``asyncio.Future``: a call (awaited or not) that may be a
    spawn (``may_spawn``, a superset of ``is_task_spawn``; the facts' ``FACTORY_TYPES`` give
    ``asyncio.Task`` only to those spawners) or whose callee may be ``Task``/``Future`` itself;
    a name or attribute whose words meet ``_TASK_WORDS`` (typed through its own bindings).
    Anything else (a literal, ``None``, an operation) is neither."""
    if type(value) is ast.Await:
        value = value.value
    t = type(value)
    if t is ast.Call:
        return may_spawn(tree, value) or bool(tree.words(value.func) & _TASK_CLASSES)
    if t is ast.Name or t is ast.Attribute:
        return bool(tree.words(value) & _TASK_WORDS)
    return False


#: values that ``_values`` may keep or ``_instance_type`` may type
_TYPED = (ast.Call, ast.Await, ast.Name, ast.Attribute)


def _may_clean_up_ast(tree, spawn: ast.Call, g) -> bool:
    """``_may_clean_up`` unless surely False: the coroutine is ``self.<m>(...)`` made in a method
    of a class whose methods named ``m`` are all ``async def``s with no cleanup
    (``_has_cleanup``), or none is and ``m`` is a ``_WAIT_PRIMITIVES`` word; or ``<x>.<m>(...)``
    with ``x`` no class of this module (``resolve_function`` finds nothing) or a longer
    receiver, ``m`` such a word; or ``f(...)`` with ``f`` a def of this module seen from the
    spawn's function ``g`` (``_local_quiet``)."""
    if not spawn.args:
        return True
    coro = spawn.args[0]
    if type(coro) is ast.Call and type(coro.func) is ast.Name:
        return not _local_quiet(tree, coro.func.id, g)
    if type(coro) is not ast.Call or type(coro.func) is not ast.Attribute:
        return True
    func = coro.func
    owner = func.value
    if type(owner) is ast.Name:
        if owner.id in ("self", "cls"):
            if g is None or not g.in_class:
                return True  # ``_method_class`` looks further out
            same = [m for m in tree.methods.get(id(g.cls), ()) if m.name == func.attr]
            if same:
                return any(not m.is_async or _has_cleanup_ast(m.node.body) for m in same)
        elif any(c.name == owner.id for c in tree.classes):
            return True
    return func.attr not in _WAIT_PRIMITIVES


def _local_quiet(tree, name: str, g) -> bool:
    """``coroutine_target`` surely gives an ``async def`` with no cleanup for ``<name>(...)`` made
    in ``g`` (a ``Function``, None: the module): every place binding ``name`` in the module is a
    def (``Tree.binding_count``: no import, assignment, parameter...), each one bound as a name
    (not a method) is an ``async def`` without cleanup (``_has_cleanup_ast``), and one of them is
    bound in a scope ``facts.lookup`` searches from ``g``: ``g``, a function around it, or the
    module. Then whichever of them ``lookup`` finds (the innermost such scope's last), it is quiet."""
    defs = [fn for fn in tree.functions if fn.name == name]
    bound = [fn for fn in defs if fn.cls is None]
    if not bound or any(not fn.is_async or _has_cleanup_ast(fn.node.body) for fn in bound):
        return False
    if tree.binding_count(name) != len(defs):  # asked last: a walk of the whole module
        return False
    chain = []
    f = g
    while f is not None:
        chain.append(f)
        f = _outer_function(tree, f)
    return any(_outer_function(tree, fn) in (None, *chain) for fn in bound)  # (cls None: not in a class body)


def _outer_function(tree, fn):
    """The innermost ``Function`` whose node holds ``fn``'s (by source position), None: none."""
    start = (fn.node.lineno, fn.node.col_offset)
    end = (fn.node.end_lineno, fn.node.end_col_offset)
    best = None
    for other in tree.functions:
        n = other.node
        if other is not fn and (n.lineno, n.col_offset) <= start and end <= (n.end_lineno, n.end_col_offset):
            if best is None or (n.lineno, n.col_offset) >= (best.node.lineno, best.node.col_offset):
                best = other
    return best


def _has_cleanup_ast(body: list) -> bool:
    """``_has_cleanup`` on the ``ast``, a superset: a ``finally``, a ``with``/``async with``, a
    handler that is bare or names ``CancelledError``/``BaseException`` (as a name or an
    attribute), not in nested defs (lambdas and classes are walked, as the rule does)."""
    for n in walk_within(body, DEFS):
        t = type(n)
        if t in TRYS and n.finalbody:
            return True
        if t is ast.With or t is ast.AsyncWith:
            return True
        if t is ast.ExceptHandler:
            if n.type is None:
                return True
            for x in tree_walk(n.type):
                if (type(x) is ast.Name and x.id in _CANCEL_WORDS) or (
                        type(x) is ast.Attribute and x.attr in _CANCEL_WORDS):
                    return True
    return False


_CANCEL_WORDS = frozenset({"CancelledError", "BaseException"})


def _name_may_be_task(tree, fn, name: str) -> bool:
    """``facts.lookup(name)`` from ``fn`` finds a binding of ``fn``, of a function around it or
    of the module (class bodies included: a superset); only a ``value`` one gives values
    (``_collection_values``) or a qualified name (``_instance_type`` of its value), an import
    gives its own. So: a one-target ``name = v`` / ``name: T = v`` in those scopes with
    ``Tree.words(v)`` meeting ``_TASK_WORDS``, or ``name``'s own words (itself, an import
    alias) do. A ``with ... as name`` or ``name := v`` binding (no scope known): its words too."""
    own = {name}
    for local, word in tree._imports:
        if local == name:
            own.add(word)
    if own & _TASK_WORDS:
        return True
    values = 0
    node = fn.node
    for target, value, g in tree.assigns:
        if type(target) is not ast.Name or target.id != name:
            continue
        values += 1
        if g is None or g is fn or (g.node.lineno <= node.lineno and g.node.end_lineno >= node.end_lineno):
            if _value_may_be_task(tree, value):
                return True
    if sum(1 for bound, _ in tree.value_bindings if bound == name) > values:
        return bool(tree.words(ast.Name(name)) & _TASK_WORDS)
    return False


def _tree_reaped_after(tree, fn, cancel: ast.Call, name: str, loop) -> bool:
    """``<name>.cancel()`` (``cancel``, directly in ``fn``) that ``_reaped_after`` surely finds
    reaped: a node of ``fn`` that starts after the cancel ends (by source position: libcst's walk
    is in source order, and meets it after the cancel) and is an ``await``/``return``/``yield``
    whose value mentions the task, a call that hands it over (``_hands_over``), a ``for`` over it
    whose body awaits, or an assignment of a value mentioning it that is not a call; the same
    anywhere inside a loop around the cancel (``_reaped_after``'s ``loops``: every ``for``/``while``
    around it in ``fn`` but ``_loop_over_tasks``' loop, which ``loop`` is when there is one). The task is
    mentioned by a ``Name`` (``_references`` holds every name under a node, whatever the
    parentheses): ``name`` (``watched`` always holds ``_code(receiver)``, which is ``name`` when
    the receiver has no parentheses) and, when ``loop`` is the innermost ``for`` binding ``name``
    (``_loop_over_tasks``' loop) and nothing the facts can name or type binds ``name``
    (``_fn_names``: then ``_task_spawns`` finds nothing and
    ``_loop_over_tasks`` decides), its iterable's name and its holder's (``tasks``,
    ``tasks.values()``, ``list(tasks)``, written with no parentheses or spaces that would make
    their code more than the name). Nodes in f-strings are not looked at (their positions are
    not the source's on every Python)."""
    if cancel.func.col_offset != cancel.func.value.col_offset:
        return False  # ``(t).cancel()``: ``_code(receiver)`` is ``(t)``, which no reference is
    watched = {name}
    if loop is not None and not _fn_names(tree, fn, name):
        it = loop.iter
        if it.lineno == loop.target.end_lineno and it.col_offset == loop.target.end_col_offset + 4:
            # ``for t in tasks``: no parenthesis around the iterable (its code is its name)
            if type(it) is ast.Name:
                watched.add(it.id)
            holder = _holder_ast(it)
            if type(holder) is ast.Name and holder is not it and (
                    holder.col_offset == it.col_offset if type(it.func) is ast.Attribute
                    else holder.col_offset == it.func.end_col_offset + 1 and holder.lineno == it.lineno):
                watched.add(holder.id)
    end = (cancel.end_lineno, cancel.end_col_offset)
    parents = tree.parents(fn.node)
    loops = set()
    up = parents.get(id(cancel))
    while up is not None and up is not fn.node:
        if type(up) in (ast.For, ast.AsyncFor, ast.While) and up is not loop:
            loops.add(id(up))
        up = parents.get(id(up))

    def mentions(node) -> bool:
        return any(type(n) is ast.Name and n.id in watched for n in tree_walk(node))

    todo = [(fn.node, False)]
    while todo:
        node, in_loop = todo.pop()
        t = type(node)
        if t is ast.JoinedStr or node is cancel:
            continue
        inner = in_loop or id(node) in loops
        todo.extend((child, inner) for child in tree_children(node))
        if t not in _REAPERS or not in_loop and (node.lineno, node.col_offset) < end:
            continue
        if t is ast.Await or t is ast.Return or t is ast.Yield or t is ast.YieldFrom:
            if node.value is not None and mentions(node.value):
                return True
        elif t is ast.Call:
            if _hands_over_ast(node, mentions):
                return True
        elif t is ast.For or t is ast.AsyncFor:
            if mentions(node.iter) and any(type(n) is ast.Await for n in walk_within(node.body, DEFS)):
                return True
        elif type(node.value) is not ast.Call and mentions(node.value):  # ast.Assign
            return True
    return False


_REAPERS = frozenset({ast.Await, ast.Return, ast.Yield, ast.YieldFrom, ast.Call, ast.For, ast.AsyncFor, ast.Assign})


def _tight_self(node) -> bool:
    """``node`` is ``self.<x>`` written on one line with nothing between its parts (no space,
    no parenthesis inside it): libcst's code for it is ``self.<x>`` when no parenthesis is
    around it either."""
    value = node.value
    return (type(value) is ast.Name and value.id == "self" and node.lineno == node.end_lineno
            and value.col_offset == node.col_offset and value.end_col_offset == node.col_offset + 4
            and node.end_col_offset == node.col_offset + 5 + len(node.attr.encode()))


def _awaits_self(node, attr: str) -> bool:
    """``node`` is ``await self.<attr>`` on one line with one character between ``await`` and
    the attribute (not a parenthesis: the await would end after the closing one): the
    awaited expression's code is ``self.<attr>``."""
    value = node.value
    return (type(value) is ast.Attribute and value.attr == attr and _tight_self(value)
            and node.lineno == value.lineno and value.col_offset == node.col_offset + 6
            and node.end_lineno == value.end_lineno and node.end_col_offset == value.end_col_offset)


def _self_reaped(tree, fn, cancel: ast.Call, receiver) -> bool:
    """``self.<x>.cancel()`` (``cancel``, directly in ``fn``; the receiver's code is ``self.<x>``:
    ``_tight_self`` and no parenthesis before it) that ``visit_Call`` surely finds reaped: an
    ``await self.<x>`` (``_awaits_self``: ``_references`` of the awaited expression holds
    ``self.<x>``, the one ``watched`` code) in ``fn`` starting after the cancel ends, or
    anywhere inside a ``for``/``while`` around it in ``fn`` (``_reaped_after``: its walk is in
    source order; no loop over the tasks for an attribute receiver); or, ``fn`` being a method,
    anywhere in another method of its class (``_reaped_elsewhere`` reads ``cls.methods``: the
    first ``def`` of each name). Nothing inside an f-string is looked at."""
    if cancel.func.col_offset != receiver.col_offset or not _tight_self(receiver):
        return False
    attr = receiver.attr
    end = (cancel.end_lineno, cancel.end_col_offset)
    parents = tree.parents(fn.node)
    loops = set()
    up = parents.get(id(cancel))
    while up is not None and up is not fn.node:
        if type(up) in (ast.For, ast.AsyncFor, ast.While):
            loops.add(id(up))
        up = parents.get(id(up))
    todo = [(fn.node, False)]
    while todo:
        node, in_loop = todo.pop()
        t = type(node)
        if t is ast.JoinedStr or node is cancel:
            continue
        inner = in_loop or id(node) in loops
        todo.extend((child, inner) for child in tree_children(node))
        if t is ast.Await and (in_loop or (node.lineno, node.col_offset) >= end) and _awaits_self(node, attr):
            return True
    if fn.cls is None:
        return False
    seen = set()
    for m in tree.methods.get(id(fn.cls), ()):
        if m.name in seen:
            continue
        seen.add(m.name)
        if m is fn:
            continue
        todo = [m.node]
        while todo:
            node = todo.pop()
            if type(node) is ast.JoinedStr:
                continue
            if type(node) is ast.Await and _awaits_self(node, attr):
                return True
            todo.extend(tree_children(node))
    return False


def _holder_ast(iterable: ast.AST) -> ast.AST:
    """``_holder`` on the ``ast``."""
    if type(iterable) is ast.Call and type(iterable.func) is ast.Attribute and iterable.func.attr in _VIEW_METHODS:
        return iterable.func.value
    if type(iterable) is ast.Call and type(iterable.func) is ast.Name and iterable.func.id in _COPY_FUNCS \
            and len(iterable.args) + len(iterable.keywords) == 1 and iterable.args \
            and type(iterable.args[0]) is not ast.Starred:
        return iterable.args[0]
    return iterable


def _hands_over_ast(call: ast.Call, mentions) -> bool:
    """``_hands_over`` on the ``ast`` (an argument's value: a positional one, ``*x``, a keyword's,
    ``**x``)."""
    if not any(mentions(a) for a in [*call.args, *(k.value for k in call.keywords)]):
        return False
    f = call.func
    if type(f) is ast.Attribute:
        if f.attr in _NEUTRAL_METHODS:
            return False
        root = f.value
        while type(root) is ast.Attribute:
            root = root.value
        if type(root) is ast.Name and root.id in _LOG_RECEIVERS:
            return False
        if type(f.value) is ast.Attribute and f.value.attr in _LOG_RECEIVERS:
            return False
    if type(f) is ast.Name and f.id in _NEUTRAL_FUNCS:
        return False
    return True


def _fn_names(tree, fn, name: str) -> bool:
    """``fn`` may give ``name`` a binding the facts can name or type (an import, a def, a class,
    a value): a ``def``/``class`` named so, an import alias binding it, or ``name`` stored by an
    assignment, an annotated assignment, a ``:=`` or a ``with ... as`` anywhere in ``fn`` (nested
    defs too: a superset). Not a ``for``/comprehension target nor an augmented assignment: the
    collector binds those as "other". A loop ``for name in ...`` directly in ``fn`` binds ``name``
    in ``fn``'s scope, so without such a binding ``facts.lookup`` from ``fn`` ends at an "other"
    one: ``_task_spawns`` finds nothing (no value, no qualified name)."""
    others: set[int] = set()
    for n in tree_walk(fn.node):
        t = type(n)
        if t is ast.For or t is ast.AsyncFor or t is ast.comprehension or t is ast.AugAssign:
            others.update(id(x) for x in tree_walk(n.target))
        elif t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if n.name == name and n is not fn.node:
                return True
        elif t is ast.Import or t is ast.ImportFrom:
            if any((a.asname or a.name.split(".")[0]) == name or a.name == name for a in n.names):
                return True
    for n in tree_walk(fn.node):
        if type(n) is ast.Name and n.id == name and type(n.ctx) is ast.Store and id(n) not in others:
            return True
    return False


def _tree_may_hold_spawns(tree, fn, loop, name: str) -> bool:
    """``for <name> in <iterable>: <name>.cancel()``: False only where ``_loop_over_tasks`` surely
    returns None, so ``visit_Call`` returns: ``fn`` gives ``name`` no binding the facts can name
    or type (``_fn_names``: ``_task_spawns`` finds nothing, the loop decides), the holder
    (``_holder``) is a name or an attribute, and ``_held_spawns`` surely finds no spawn
    (``may_spawn``, a superset of ``is_task_spawn``): no binding of the holder (the name; any
    ``<x>.<attr> =`` for an attribute: ``_collection_values`` reads ``self.<attr>``'s) to a
    literal or comprehension with a spawn among its elements, no ``... = await <call>`` unpacked
    into a tuple naming a name holder in ``fn`` (``asyncio.wait``), no spawn handed to
    ``<holder>.append/add`` or assigned to ``<holder>[k]`` (the code of the receiver is the
    holder's: for an attribute, an attribute of the same name)."""
    if _fn_names(tree, fn, name):
        return True
    holder = _holder_ast(loop.iter)
    if type(holder) is ast.Name:
        text = holder.id
        bindings = tree.value_bindings

        def same(e) -> bool:
            return type(e) is ast.Name and e.id == text
    elif type(holder) is ast.Attribute:
        text = holder.attr
        bindings = tree._attr_bindings

        def same(e) -> bool:
            return type(e) is ast.Attribute and e.attr == text
    else:
        return True
    for bound, value in bindings:
        if bound != text:
            continue
        t = type(value)
        if t in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
            elts = [value.elt]
        elif t is ast.DictComp:
            elts = [value.value]
        elif t in (ast.List, ast.Set, ast.Tuple):
            elts = [e.value if type(e) is ast.Starred else e for e in value.elts]
        else:
            continue
        if any(type(e) is ast.Call and may_spawn(tree, e) for e in elts):
            return True
    if type(holder) is ast.Name:
        for st in tree_walk(fn.node):
            if type(st) is ast.Assign and type(st.value) is ast.Await and any(
                    type(tg) is ast.Tuple and any(same(e) or type(e) is ast.Starred and same(e.value)
                                                  for e in tg.elts)
                    for tg in st.targets):
                return True
    for n in tree.all_calls():  # every call of the module (the summary walk's)
        f = n.func
        if type(f) is ast.Attribute and f.attr in ("append", "add") and same(f.value) \
                and any(type(a) is ast.Call and may_spawn(tree, a) for a in (
                    *(x.value if type(x) is ast.Starred else x for x in n.args), *(k.value for k in n.keywords))):
            return True
    for n in nested_statements(tree.module.body):  # every statement of the module
        if type(n) is ast.Assign:
            if type(n.value) is ast.Call and any(type(tg) is ast.Subscript and same(tg.value) for tg in n.targets) \
                    and may_spawn(tree, n.value):
                return True
    return False
