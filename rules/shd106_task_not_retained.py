from __future__ import annotations

import ast
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.facts import first_argument
from shutdown_lint.prefilter.words import ASYNC_DEF, All, AnyOf, InCode, Word, qualified
from shutdown_lint.rule import Fix, Invalid, Replace, Rule
from shutdown_lint.prefilter.ast_tree import TRYS, callee_name, walk_within
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD
from ._waits import may_sleep, only_waits
from .shd102_unobserved_task_exception import _Ast as _Ast102
from .shd102_unobserved_task_exception import (_BROAD_HANDLERS, handles_own_errors, is_task_spawn, spawns,
                                               supervise_call)


#: ``_statement_use``'s answers: the spawn is an expression statement, or the value of a one-name assignment
DISCARDED = "discarded"
BOUND = "bound"
FIX_MESSAGE = 'Keep a reference: `runtime_guard.supervise(..., on_error="log")`'


class _Decide:
    """What SHD106 decides, on either tree (the libcst rule and ``_Ast``). The tree's answers are each
    class's own: ``_spawn`` (``is_task_spawn``), ``_first`` (libcst's first ``Arg``'s value),
    ``_own_errors`` (``handles_own_errors``), ``_only_sleeps`` (every ``await`` of the target's own body
    is ``asyncio.sleep(...)``), ``_statement_use`` (``DISCARDED``, or ``BOUND`` and the name),
    ``_reads(region, name)`` (a libcst ``Name`` spelled ``name`` in ``region`` that is read, see
    ``_reads``) and ``_report_dropped`` (the report, with the fix or its plan)."""

    def _judge(self, node) -> None:
        """``node`` is a call with an argument: report it when it spawns a task whose coroutine handles
        its own errors and the task is dropped."""
        if not self._spawn(node):
            return
        first = self._first(node)
        if not self._own_errors(node, first):
            return  # SHD102's call
        target = self.facts.coroutine_target(first, node)
        if target is not None and self._only_sleeps(target):
            return  # always referenced by the loop: its ready queue while it runs, a timer while it sleeps
        where = self._dropped(node)
        if where is None:
            return
        self._report_dropped(
            node,
            f"task is {where}: the event loop keeps only a weak reference, so the pending task can be "
            "garbage-collected mid-run and its coroutine silently stops (it handles its own errors, "
            "so nothing is ever reported)")

    def _dropped(self, node) -> Optional[str]:
        use, name = self._statement_use(node)
        if use == DISCARDED:
            return "discarded"
        if use == BOUND:
            fn = self.facts.enclosing_function(node)
            if fn is None or name in fn.bindings and len(fn.bindings[name]) > 1:
                return None
            if not self._reads(fn.node, name):
                return f"bound to `{name}`, which is never read"
        return None


class _Ast(_Decide, AstCheck):
    """SHD106 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers read from
    ``ast`` as libcst's. Whether a call spawns a task and whether its coroutine handles its own errors
    are SHD102's reads (``_Ast`` there: the split between the two rules has one definition);
    ``_reads`` counts the identifiers libcst holds in ``Name`` nodes that ``ast`` holds as strings
    (defs, classes, keyword arguments, imports, ``except ... as``, ``global``, patterns)."""

    _spawn = _Ast102._spawn
    _own_errors = _Ast102._own_errors
    # what ``_own_errors`` reads (SHD102's ``_swallows_errors`` and ``_only_waits`` on ``ast``)
    _swallows = _Ast102._swallows
    _only_waits = _Ast102._only_waits
    _bookkeeping = _Ast102._bookkeeping
    _block = _Ast102._block
    _string = _Ast102._string
    _text = _Ast102._text

    def visit_Call(self, node: ast.Call) -> None:
        if node.args or node.keywords:
            self._judge(node)

    @staticmethod
    def _first(node: ast.Call) -> ast.AST:
        return first_argument(node)

    def _only_sleeps(self, target) -> bool:
        """``_only_sleeps``: the awaits of the def's body, not in nested defs (f-strings' too)."""
        call_name = self.facts.call_name
        return all(type(n.value) is ast.Call and call_name(n.value) == "asyncio.sleep"
                   for n in walk_within(target.node.body, _DEFS) if type(n) is ast.Await)

    def _statement_use(self, node: ast.Call) -> tuple[Optional[str], Optional[str]]:
        parent = self.facts.parent(node)
        t = type(parent)
        if t is ast.Expr:
            return DISCARDED, None
        if t is ast.Assign and len(parent.targets) == 1 and type(parent.targets[0]) is ast.Name:
            return BOUND, parent.targets[0].id
        return None, None

    @staticmethod
    def _reads(region: ast.AST, name: str) -> bool:
        """``_reads``: a libcst ``Name`` spelled ``name`` in ``region``, not an assignment's own
        target (``x = ...``'s ``x``), not in parameters (libcst's ``Param``: names, annotations,
        defaults; ``ast.arguments``), not an attribute's name nor a dotted import's later part."""
        todo = [region]
        while todo:
            n = todo.pop()
            t = type(n)
            if t is ast.Name:
                if n.id == name:
                    return True
                continue
            if t is ast.arguments:
                continue
            if t is ast.Assign:
                todo.extend(x for x in n.targets if type(x) is not ast.Name)
                todo.append(n.value)
                continue
            if name in _identifiers(n, t):
                return True
            todo.extend(ast.iter_child_nodes(n))
        return False

    def _report_dropped(self, node: ast.Call, message: str) -> None:
        self.report(node, message, fix=FixPlan.safe(FIX_MESSAGE))


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _identifiers(n: ast.AST, t: type) -> tuple:
    """The identifiers ``n`` holds as strings where libcst holds ``Name`` nodes: a def's or class's
    name, a keyword argument's, an import's first dotted part and its ``as`` name (the later parts
    are libcst ``Attribute`` names), ``except ... as``'s (``except*`` too), ``global``'s and
    ``nonlocal``'s, capture patterns' and class patterns' keywords."""
    if t in _DEFS or t is ast.ClassDef:
        return (n.name,)
    if t is ast.keyword:
        return (n.arg,)
    if t is ast.alias:
        return (n.name.split(".")[0], n.asname)
    if t is ast.ImportFrom:
        return (n.module.split(".")[0],) if n.module else ()
    if t is ast.ExceptHandler or t is ast.MatchAs or t is ast.MatchStar:
        return (n.name,)
    if t is ast.Global or t is ast.Nonlocal:
        return tuple(n.names)
    if t is ast.MatchMapping:
        return (n.rest,)
    if t is ast.MatchClass:
        return tuple(n.kwd_attrs)
    return ()


class TaskNotRetained(_Decide, Rule):
    """
    ## What it does
    Flags `asyncio.create_task(...)`, `loop.create_task(...)` or `asyncio.ensure_future(...)`
    whose task is dropped — the call is a statement of its own, or its result is bound to a
    local name that is never read — when the spawned coroutine is a same-module `async def`
    that catches every `Exception` itself (a `try/except Exception` around its body or its
    loop's body, without re-raising).

    That condition is the split with SHD102 (unobserved-task-exception): when the coroutine's
    failure could go unobserved, SHD102 reports the call (its fix, `supervise`, also keeps a
    reference); when the coroutine handles its own errors SHD102 stays quiet and this rule
    looks only at the reference. The two never report the same call. `TaskGroup.create_task`
    and tasks kept in a name, attribute or collection, returned, awaited or handed to another
    call are not flagged.

    ## Why is this bad?
    The event loop keeps only a *weak* reference to a task. A pending task that nothing else
    references — typically one waiting on a future that only its own coroutine holds — is
    garbage-collected mid-run: its coroutine is closed where it stands ("Task was destroyed
    but it is pending!"), so the background loop silently stops (no heartbeat, no reporting,
    no cleanup at shutdown) while the rest of the program goes on. A catch-all `except
    Exception` inside the coroutine does not help: nothing is raised, the task just vanishes.
    The asyncio documentation warns about exactly this ("save a reference to the result of
    this function").

    ## Example
    ```python
    async def heartbeat(conn):
        while True:
            try:
                await conn.ping()
                await asyncio.sleep(5)
            except Exception:
                log.exception("heartbeat failed")

    async def start(conn):
        asyncio.create_task(heartbeat(conn))  # only a weak reference is left
    ```

    ## Use instead
    ```python
    import runtime_guard

    async def start(conn):
        runtime_guard.supervise(asyncio.create_task(heartbeat(conn)), on_error="log")
    ```
    `runtime_guard.supervise` keeps a strong reference until the task ends (and with
    `on_error="log"` only logs if it ever fails). Or keep the task yourself: a module- or
    object-level set, `tasks.add(t)` and `t.add_done_callback(tasks.discard)`, or an
    attribute that a `close()` method awaits.

    ## Fix safety
    Safe: `supervise` returns the task itself, so the expression keeps its value and type, and
    with `on_error="log"` (passed explicitly, so `$RUNTIME_GUARD_TASK_POLICY` and
    `runtime_guard.set_default_policy` do not apply) it only keeps a strong reference until the
    task ends and logs a failure with its traceback: no signal, no handler or hook installed, no
    cancellation, no exit. On every path where the task is not collected mid-run the program
    does exactly what it did; where it would have been collected, it now runs on. A failure the
    coroutine lets through anyway (a `BaseException`, a `finally` that raises) is logged at once
    instead of when the task is collected. The fix adds `import runtime_guard`.

    ## References
    - Python docs: `asyncio.create_task` ("Important: Save a reference to the result of this
      function, to avoid a task disappearing mid-execution")
    - Python docs: asyncio "Detect never-retrieved exceptions" / "Task was destroyed but it is pending!"
    - ruff RUF006 (asyncio-dangling-task) flags the same call shape without the SHD102 split

    ## Known limits
    A coroutine whose only awaits are `asyncio.sleep(...)` is not flagged: while it sleeps the
    loop's timer holds its future and through it the task, so it cannot be collected (periodic
    loops such as Ray Serve's metric reporters). Whether another dropped task is actually
    collected depends on what it waits for: only a task waiting on something nothing else
    references (a future only its coroutine holds) goes away; one reading a socket the loop
    watches stays alive. The rule follows the documented contract and flags both.
    Only same-module coroutines are inspected: a dropped task of a library coroutine is
    SHD102's finding. A task bound to a local name that is read later counts as kept, even
    when the function returns before the task ends.
    """

    code = "SHD106"
    name = "task-not-retained"
    summary = "A dropped task whose coroutine handles its own errors can be garbage-collected mid-run"
    triggers = ("create_task", "ensure_future")
    # tier 1: a spawn (create_task / asyncio.ensure_future) and an ``async def``, both in code.
    # Implied by tier 2 (``_may_drop_a_self_handling_task``): it needs a spawn (``spawns``:
    # ``Tree.may_call_any`` of create_task/ensure_future, a callee whose words meet them: its own
    # name or attribute, or the words of its aliases, which are import names and heads of bound
    # values, spelled in code, or factory result types, none of them these) that runs a coroutine
    # of an ``async def`` of the module (``_may_handle_own_errors``: ``fn.is_async``)
    candidate = All(AnyOf(Word("create_task"), qualified("asyncio.ensure_future")),
                    InCode(All(ASYNC_DEF, Word("create_task", "ensure_future"))))
    # tier 2: a dropped spawn of a same-module coroutine that may handle its own errors
    candidate_tree = staticmethod(lambda tree: _may_drop_a_self_handling_task(tree))
    facts_needed = ("functions", "calls")
    ast_check = _Ast

    valid = [
        # near miss from real code (Ray Serve's replica): a periodic loop that only sleeps is
        # held by the loop's timer
        """
        import asyncio

        class Replica:
            async def _report_forever(self):
                while True:
                    try:
                        await asyncio.sleep(10)
                        self._report()
                    except Exception:
                        logger.exception("report failed")

            def start(self):
                self._event_loop.create_task(self._report_forever())
        """,
        # kept in a set with the documented discard callback
        """
        import asyncio

        background = set()

        async def heartbeat():
            while True:
                try:
                    await asyncio.sleep(5)
                except Exception:
                    pass

        async def start():
            t = asyncio.create_task(heartbeat())
            background.add(t)
            t.add_done_callback(background.discard)
        """,
        # stored on the object
        """
        import asyncio

        class Client:
            async def _pump(self):
                try:
                    await self.reader.read()
                except Exception:
                    self.log()

            def start(self):
                self._pump_task = asyncio.create_task(self._pump())
        """,
        # the coroutine can fail: SHD102's finding, not this rule's
        """
        import asyncio

        async def work():
            await asyncio.sleep(1)
            raise RuntimeError("boom")

        async def main():
            asyncio.create_task(work())
        """,
        # TaskGroup keeps its children
        """
        import asyncio

        async def quiet():
            try:
                await asyncio.sleep(1)
            except Exception:
                pass

        async def main():
            async with asyncio.TaskGroup() as tg:
                tg.create_task(quiet())
        """,
        # already supervised
        """
        import asyncio, runtime_guard

        async def quiet():
            try:
                await asyncio.sleep(1)
            except Exception:
                pass

        async def main():
            runtime_guard.supervise(asyncio.create_task(quiet()), on_error="log")
        """,
        # a local that is read later (awaited)
        """
        import asyncio

        async def quiet():
            try:
                await asyncio.sleep(1)
            except Exception:
                pass

        async def main():
            t = asyncio.create_task(quiet())
            await t
        """,
    ]
    invalid = [
        Invalid(
            """
            import asyncio

            async def heartbeat(conn):
                while True:
                    try:
                        await conn.ping()
                        await asyncio.sleep(5)
                    except Exception:
                        log.exception("heartbeat failed")

            async def start(conn):
                asyncio.create_task(heartbeat(conn))  # keep pinging
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def heartbeat(conn):
                while True:
                    try:
                        await conn.ping()
                        await asyncio.sleep(5)
                    except Exception:
                        log.exception("heartbeat failed")

            async def start(conn):
                runtime_guard.supervise(asyncio.create_task(heartbeat(conn)), on_error="log")  # keep pinging
            """,
            message_contains="weak reference",
        ),
        Invalid(
            """
            import asyncio

            class Replica:
                async def _report(self):
                    try:
                        await self.push_metrics()
                    except Exception:
                        pass

                def on_step(self, loop):
                    task = loop.create_task(self._report())
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Replica:
                async def _report(self):
                    try:
                        await self.push_metrics()
                    except Exception:
                        pass

                def on_step(self, loop):
                    task = runtime_guard.supervise(loop.create_task(self._report()), on_error="log")
            """,
        ),
        Invalid(
            """
            from asyncio import ensure_future

            async def drain(q):
                try:
                    while True:
                        await q.get()
                except BaseException:
                    return

            def spawn(q):
                ensure_future(drain(q))
            """,
            fixed="""
            from asyncio import ensure_future
            import runtime_guard

            async def drain(q):
                try:
                    while True:
                        await q.get()
                except BaseException:
                    return

            def spawn(q):
                runtime_guard.supervise(ensure_future(drain(q)), on_error="log")
            """,
        ),
    ]

    # ------------------------------------------------------------------ the tree's answers (libcst)
    def visit_Call(self, node: cst.Call) -> None:
        if node.args:
            self._judge(node)

    def _spawn(self, node: cst.Call) -> bool:
        return is_task_spawn(self.facts, node)

    @staticmethod
    def _first(node: cst.Call) -> cst.BaseExpression:
        return node.args[0].value

    def _own_errors(self, node: cst.Call, first: cst.BaseExpression) -> bool:
        return handles_own_errors(self.facts, node)

    def _only_sleeps(self, target) -> bool:
        return _only_sleeps(self.facts, target.node.body)

    def _statement_use(self, node: cst.Call) -> tuple[Optional[str], Optional[str]]:
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Expr):
            return DISCARDED, None
        if (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            return BOUND, parent.targets[0].target.value
        return None, None

    @staticmethod
    def _reads(region: cst.CSTNode, name: str) -> bool:
        return _reads(region, name)

    def _report_dropped(self, node: cst.Call, message: str) -> None:
        self.report(node, message, fix=Fix.safe(Replace(node, supervise_call(node, "log")), IMPORT_RUNTIME_GUARD,
                                                message=FIX_MESSAGE))


def _only_sleeps(facts, body: cst.CSTNode) -> bool:
    """Every ``await`` in the coroutine's own body is ``asyncio.sleep(...)``: a sleeping task is held
    by the loop's timer (the timer holds the sleep's future, whose callback is the task)."""
    awaits: list[cst.Await] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Await(self, n: cst.Await) -> None:
            awaits.append(n)

    walk(body, V())
    return all(isinstance(a.expression, cst.Call) and facts.call_name(a.expression) == "asyncio.sleep"
               for a in awaits)


def _reads(region: cst.CSTNode, name: str) -> bool:
    """``name`` is loaded somewhere in ``region`` (assignment targets do not count)."""
    found = []

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            return not isinstance(n.target, cst.Name)

        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found.append(n)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            walk(n.value, self)
            return False

        def visit_Param(self, n: cst.Param) -> bool:
            return False

    walk(region, V())
    return bool(found)


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_drop_a_self_handling_task(tree) -> bool:
    """A report needs ``_dropped`` (the spawn is a statement of its own, or the value of a
    one-name assignment in a function) and ``handles_own_errors`` (an argument makes a
    coroutine of a same-module ``async def`` that catches every ``Exception``, which needs
    a ``try``, or whose body is only expression statements and ``pass``)."""
    for call, fn in spawns(tree):
        if not any(_may_handle_own_errors(tree, a) for a in [*call.args, *(k.value for k in call.keywords)]):
            continue
        if _surely_only_sleeps(tree, call, fn):
            continue
        parent = tree.parents(fn.node if fn is not None else tree.module).get(id(call))
        if isinstance(parent, ast.Expr):
            return True
        if fn is not None and isinstance(parent, ast.Assign) and len(parent.targets) == 1 \
                and isinstance(parent.targets[0], ast.Name) and not _loads(fn.node, parent.targets[0].id):
            return True
    return False


def _loads(region: ast.AST, name: str) -> bool:
    """``region`` loads ``name`` where ``_reads`` looks (parameters, defaults and annotations
    of parameters are not looked at): then ``_dropped`` finds the name read, no report."""
    todo = [region]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            t = type(child)
            if t is ast.Name:
                if child.id == name and type(child.ctx) is ast.Load:
                    return True
            elif t is not ast.arguments:
                todo.append(child)
    return False


def _may_handle_own_errors(tree, coro: ast.AST) -> bool:
    """``handles_own_errors``: ``_only_waits`` needs a body of expression statements and
    ``pass``; ``_swallows_errors`` needs a ``try`` with a broad handler (bare, or a type whose
    code's last word is ``Exception``/``BaseException``: a superset on the ``ast``, where a
    parenthesised name loses its parentheses) among the body's statements or, through
    ``while``/``for`` bodies, theirs."""
    if not isinstance(coro, ast.Call):
        return False
    name = callee_name(coro)
    return any(fn.is_async and fn.name == name and (
        _guards_broadly(fn.node.body) and _may_swallow(fn.node.body) or only_waits(fn.node.body, surely=False))
        for fn in tree.functions)


def _may_swallow(stmts: list) -> bool:
    """False only where ``_swallows_errors`` surely is: read in order, a statement it rejects
    before it could return True: a ``try`` with an ``else``, none of whose handlers may be broad
    (bare, or a name or attribute ending in ``Exception``/``BaseException``), with a surely broad
    handler (bare, or such a name right after ``except ``: its code) that raises, or whose
    ``finally`` raises (``_raises``: not in nested defs); a loop with an ``else`` or whose body
    surely does not swallow; any other statement ``_bookkeeping`` surely rejects
    (``_not_bookkeeping``)."""
    for st in stmts:
        t = type(st)
        if t is ast.Try:
            if st.orelse or not any(h.type is None or (type(h.type) is ast.Name and h.type.id in _BROAD_HANDLERS) or (
                    type(h.type) is ast.Attribute and h.type.attr in _BROAD_HANDLERS) for h in st.handlers):
                return False
            if any(_surely_broad(h) and _raises_ast(h.body) for h in st.handlers) or _raises_ast(st.finalbody):
                return False
        elif t is ast.While or t is ast.For or t is ast.AsyncFor:
            if st.orelse or not _may_swallow(st.body):
                return False
        elif _not_bookkeeping(st):
            return False
    return True


def _surely_broad(h: ast.ExceptHandler) -> bool:
    """``_swallows_errors`` counts ``h`` as broad: bare, or ``Exception``/``BaseException`` written
    as a plain name right after ``except `` (``_code(h.type)`` is that name)."""
    t = h.type
    return t is None or (type(t) is ast.Name and t.id in _BROAD_HANDLERS and t.lineno == h.lineno
                         and t.col_offset == h.col_offset + 7)


def _raises_ast(stmts: list) -> bool:
    """``_raises``: a ``raise`` in ``stmts``, not in nested defs."""
    return any(type(n) is ast.Raise for n in walk_within(stmts, (ast.FunctionDef, ast.AsyncFunctionDef)))


#: simple statements ``_bookkeeping`` accepts (an expression statement only when a string or an await)
_BOOKKEEPING = (ast.Pass, ast.Assert, ast.Continue, ast.Break, ast.Assign, ast.AnnAssign, ast.AugAssign,
                ast.Nonlocal, ast.Global)


def _not_bookkeeping(st: ast.stmt) -> bool:
    """``_bookkeeping`` surely rejects ``st``: an ``if`` one of whose blocks (its ``else``/``elif``
    ones too) holds a statement surely rejected (an indented block checks each; a one-line one is
    always rejected); a statement that is no ``if`` nor simple (``try``, a loop, ``with``, a def...);
    a simple one not in ``_BOOKKEEPING`` nor an expression statement holding a plain string or an
    ``await`` of a call that may sleep (``_waits.may_sleep``: those may pass)."""
    t = type(st)
    if t is ast.If:
        return any(_not_bookkeeping(s) for s in (*st.body, *st.orelse))
    if t in _BOOKKEEPING:
        return False
    if t is ast.Expr:
        v = st.value
        if type(v) is ast.Constant:
            return type(v.value) not in (str, bytes)
        if type(v) is not ast.Await:
            return True
        return not may_sleep(v.value)
    return True


def _surely_only_sleeps(tree, call: ast.Call, fn) -> bool:
    """``visit_Call`` surely returns at ``_only_sleeps``: the spawn, directly in a method, runs
    ``self.<m>(...)`` (its first argument, positional: ``coroutine_target`` resolves it to the
    first ``def m`` of the method's class, ``cls.methods``) and every ``await`` of that def's body
    (not in nested defs; f-strings' too) is ``await asyncio.sleep(...)`` with
    ``asyncio`` bound once in the module, by ``import asyncio`` at its top level (the facts'
    ``call_name`` is then ``asyncio.sleep``)."""
    if fn is None or fn.cls is None or not call.args or type(call.args[0]) is not ast.Call:
        return False
    coro = call.args[0]
    f = coro.func
    if type(f) is not ast.Attribute or type(f.value) is not ast.Name or f.value.id != "self":
        return False
    target = next((m for m in tree.methods.get(id(fn.cls), ()) if m.name == f.attr), None)
    if target is None:
        return False
    for n in walk_within(target.node.body, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if type(n) is ast.Await:
            c = n.value
            if not (type(c) is ast.Call and type(c.func) is ast.Attribute and c.func.attr == "sleep"
                    and type(c.func.value) is ast.Name and c.func.value.id == "asyncio"):
                return False
    return _asyncio_imported_once(tree)  # last: ``binding_count`` walks the whole module


def _asyncio_imported_once(tree) -> bool:
    """The module binds ``asyncio`` in one place, an ``import asyncio`` among its top-level
    statements, and has no ``*`` import (``Tree.binding_count``, asked last: a walk of the
    whole module)."""
    return any(type(st) is ast.Import and any(a.name == "asyncio" and a.asname is None for a in st.names)
               for st in tree.module.body) and tree.binding_count("asyncio") == 1


def _guards_broadly(stmts) -> bool:
    for st in stmts:
        t = type(st)
        if t in TRYS:
            if any(h.type is None or (type(h.type) is ast.Name and h.type.id in _BROAD_HANDLERS) or (
                    type(h.type) is ast.Attribute and h.type.attr in _BROAD_HANDLERS) for h in st.handlers):
                return True
        elif (t is ast.While or t is ast.For or t is ast.AsyncFor) and not st.orelse and _guards_broadly(st.body):
            return True
    return False
