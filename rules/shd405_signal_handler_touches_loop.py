from __future__ import annotations

import ast
from typing import Any, Iterable, Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import positional
from shutdown_lint.ast_engine.facts import body_holding, same_logical_line
from shutdown_lint.ast_engine.walk import children, source_order
from shutdown_lint.prefilter.words import All, Word
from shutdown_lint.facts import reachable
from shutdown_lint.rule import AddImport, Fix, Invalid, Replace, Rule, Valid
from shutdown_lint.prefilter.ast_tree import function_names, positional_args, walk_within

from ._fixes import dotted

#: Methods of asyncio objects that schedule loop work with ``call_soon`` (no wake-up, not thread-safe).
LOOP_TOUCHING_METHODS = {
    "asyncio.Event.set": "sets an asyncio.Event",
    "asyncio.Event.clear": "clears an asyncio.Event",
    "asyncio.Queue.put_nowait": "puts into an asyncio.Queue",
    "asyncio.Queue.put": "puts into an asyncio.Queue",
    "asyncio.PriorityQueue.put_nowait": "puts into an asyncio.Queue",
    "asyncio.LifoQueue.put_nowait": "puts into an asyncio.Queue",
    "asyncio.Task.cancel": "cancels a task",
    "asyncio.Future.set_result": "completes a future",
    "asyncio.Future.set_exception": "completes a future",
    "asyncio.Future.cancel": "cancels a future",
    "asyncio.create_task": "creates a task",
    "asyncio.ensure_future": "creates a task",
    "asyncio.AbstractEventLoop.create_task": "creates a task",
}
#: Event-loop methods that are fine from a signal handler (thread-safe or read-only).
LOOP_SAFE_METHODS = frozenset({"call_soon_threadsafe", "is_running", "is_closed", "time", "get_debug"})
_LOOP = "asyncio.AbstractEventLoop."
_TASK_LISTS = frozenset({"asyncio.all_tasks", "asyncio.current_task"})


class _Decide:
    """What SHD405 decides, on either tree (``SignalHandlerTouchesLoop``: libcst; ``_Ast``:
    ``ast``): a ``signal.signal(sig, handler)`` with two positional arguments whose handler
    (its own calls when a lambda, else the sync functions of this module reachable from it)
    touches the loop (``_first_touch``), the message, and whether a fix is offered and on which
    loop (``_fix``, ``_loop_run_after``). The tree answers ``_positional``, ``_lambda_calls``,
    ``_method``, ``_code``, ``_registration_fixable``, ``_nodes_after``, ``_runner_receiver``,
    ``_plain_name``, ``_bound_names`` and ``_make_fix``."""

    def _on_call(self, node) -> None:
        if self.facts.call_name(node) != "signal.signal":
            return
        args = self._positional(node)
        if len(args) != 2:
            return
        handler = args[1]
        touch = self._touch(handler, node)
        if touch is None:
            return
        what, call = touch
        text = _truncated(self._code(call))
        self.report(
            node,
            f"signal handler {what} (`{text}`): a `signal.signal` handler runs between two bytecodes of the main "
            f"thread and does not wake an event loop idle in `select()`, so waiting tasks notice only at the "
            f"next timer or I/O event; use `loop.add_signal_handler()` or hand over with "
            f"`loop.call_soon_threadsafe()`",
            fix=self._fix(node, args[0], handler),
        )

    # ------------------------------------------------------------------ analysis
    def _touch(self, handler, at) -> Optional[tuple[str, Any]]:
        direct = self._lambda_calls(handler)
        if direct is not None:
            roots = {t for c in direct if (t := self.facts.resolve_call(c)) is not None}
        else:
            target = self.facts.resolve_function(handler, at)
            if target is None:
                return None
            direct, roots = [], {target}
        # calling a coroutine function only makes a coroutine: do not follow into ``async def``
        roots = {r for r in roots if not r.is_async}
        closure = reachable(roots, lambda fn: (c for _, c in self.facts.callees(fn) if not c.is_async))
        calls = list(direct)
        for fn in sorted(closure, key=lambda f: f.qualname):
            calls.extend(c for c in fn.calls if not self.facts.in_lambda(c))  # a lambda there runs later
        return self._first_touch(calls)

    def _first_touch(self, calls: Iterable) -> Optional[tuple[str, Any]]:
        calls = list(calls)
        lists_tasks = any(self.facts.call_name(c) in _TASK_LISTS for c in calls)
        for call in calls:
            name = self.facts.call_name(call)
            if name in LOOP_TOUCHING_METHODS:
                return LOOP_TOUCHING_METHODS[name], call
            if name and name.startswith(_LOOP):
                method = name[len(_LOOP):]
                if method not in LOOP_SAFE_METHODS and "." not in method:
                    return f"calls the event loop's `{method}()`", call
            if lists_tasks and self._method(call) == "cancel":
                return "cancels the tasks of `asyncio.all_tasks()`", call
        return None

    # ------------------------------------------------------------------ fix
    def _fix(self, call, sig, handler):
        if not self._registration_fixable(call, sig):
            return None
        fn = self.facts.enclosing_function(call)
        if fn is not None and fn.is_async:
            # the loop that runs this coroutine is the one that runs the handler
            return self._make_fix(call, sig, handler, None)
        name = self._loop_run_after(call, fn)
        if name is None:
            return None  # which loop will run (if any) is not known here
        return self._make_fix(call, sig, handler, name)

    def _loop_run_after(self, call, fn) -> Optional[str]:
        """In sync code (a function or the module body): the plain name of the event loop that
        the first ``X.run_until_complete(...)``/``X.run_forever()`` after the registration (in
        its block or an enclosing one, same function) runs, when nothing rebinds it in between;
        else None. A loop merely held in a variable may never run (a helper loop, the legacy
        ``loop = asyncio.get_event_loop()`` before ``asyncio.run``): its wake-up fd would take
        the signal and nothing would ever handle it."""
        rebound: set[str] = set()
        for node in self._nodes_after(call, fn):
            receiver = self._runner_receiver(node)
            if receiver is not None:
                name = self._plain_name(receiver)
                if name is None or name in rebound:
                    return None
                if self.facts.qualified_name(receiver, node) != "asyncio.AbstractEventLoop":
                    return None
                return name
            rebound |= self._bound_names(node)
        return None


# ------------------------------------------------------------------ detection on ast
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_REBINDERS = frozenset({ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr})


class _Ast(_Decide, AstCheck):
    """SHD405 on ``ast`` (``ast_engine``): the same decisions (``_Decide``); the tree's answers
    read from ``ast`` as libcst gives them: positional arguments with ``*a``/``**k``, ``None``/
    ``True``/``False`` as names (a signal, a receiver, a rebound name), a lambda's own calls,
    libcst's statements (``a; b`` is one line: what follows the registration on its line is not
    after it; a body on its header's line: after the compound statement), ``async def``/``async
    for`` as libcst's ``FunctionDef``/``For``, the names libcst rebinds where it meets them
    (``with ... as x`` after the context expression, ``except E as e`` after the type; attribute
    and keyword names of a target too; nothing in a lambda), the call's text as
    ``cst.Module([]).code_for_node``."""

    def visit_Call(self, node: ast.Call) -> None:
        self._on_call(node)

    @staticmethod
    def _positional(call: ast.Call) -> list:
        return positional(call)

    @staticmethod
    def _lambda_calls(handler: ast.AST) -> Optional[list]:
        if type(handler) is not ast.Lambda:
            return None
        return [n for n in source_order([handler.body], skip=(ast.Lambda,)) if type(n) is ast.Call]

    @staticmethod
    def _method(call: ast.Call) -> Optional[str]:
        return call.func.attr if type(call.func) is ast.Attribute else None

    def _code(self, node: ast.AST) -> str:
        return self.facts.code_without_module(node)

    def _registration_fixable(self, call: ast.Call, sig: ast.AST) -> bool:
        if type(self.facts.parent(call)) is not ast.Expr:
            return False
        if type(sig) not in (ast.Name, ast.Attribute) and _keyword_name(sig) is None:
            return False
        return not (call.keywords or any(type(a) is ast.Starred for a in call.args) or self.facts.in_lambda(call))

    def _nodes_after(self, call: ast.Call, fn) -> Iterable[ast.AST]:
        stmt = self.facts.enclosing_statement(call)
        stop = fn.node if fn is not None else None
        for later in self._statements_after(stmt, stop):
            yield later
            yield from source_order(children(later), skip=_NESTED)

    def _statements_after(self, stmt: Optional[ast.stmt], stop: Optional[ast.AST]) -> Iterable[ast.stmt]:
        """libcst's ``_statements_after``: the statements after ``stmt``'s line in its block (not
        those joined to it by ``;``), then after the compound statement holding that block, and so
        on up to (not past) the function, a class or the module."""
        cur: Optional[ast.AST] = stmt
        first = True
        while cur is not None and cur is not stop:
            parent = self.facts.parent(cur)
            body, i = body_holding(parent, cur)  # type: ignore[arg-type]
            if body is not None:
                j = i + 1
                while first and j < len(body) and same_logical_line(self.facts, body[j - 1], body[j]):
                    j += 1
                yield from body[j:]
            if parent is None or parent is stop or type(parent) in _NESTED:
                return
            cur, first = parent, False

    @staticmethod
    def _runner_receiver(node: ast.AST) -> Optional[ast.AST]:
        if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr in _LOOP_RUNNERS:
            return node.func.value
        return None

    @staticmethod
    def _plain_name(expr: ast.AST) -> Optional[str]:
        return expr.id if type(expr) is ast.Name else _keyword_name(expr)

    def _bound_names(self, node: ast.AST) -> set[str]:
        """The names libcst's walk rebinds on reaching ``node``: its own target's, and the ``as``
        name met just before it (``with``: after the context expression; ``except``: after the
        type, so with the first statement of the handler's body)."""
        out: set[str] = set()
        parent = self.facts.parent(node)
        if type(parent) is ast.withitem and parent.optional_vars is node:
            out = _names_in_target(node)
        elif type(parent) is ast.ExceptHandler and parent.name and parent.body[0] is node:
            out = {parent.name}
        t = type(node)
        if t is ast.Assign:
            return out | {n for target in node.targets for n in _names_in_target(target)}
        if t in _REBINDERS:
            return out | _names_in_target(node.target)
        if t is ast.Import or t is ast.ImportFrom:
            return out | {a.asname for a in node.names if a.asname}
        return out

    def _make_fix(self, call: ast.Call, sig: ast.AST, handler: ast.AST, loop_name: Optional[str]) -> FixPlan:
        return FixPlan.unsafe(_FIX_MESSAGE)


def _keyword_name(expr: ast.AST) -> Optional[str]:
    """``None``, ``True``, ``False``: constants in ``ast``, ``Name`` nodes in libcst."""
    if type(expr) is ast.Constant and (expr.value is None or expr.value is True or expr.value is False):
        return str(expr.value)
    return None


def _names_in_target(target: ast.AST) -> set[str]:
    """The values of libcst's ``Name`` nodes in a target, not in a lambda (``_target_names``):
    names, attributes' and keywords' names, ``None``/``True``/``False``."""
    out: set[str] = set()
    for n in source_order([target], skip=(ast.Lambda,)):
        t = type(n)
        if t is ast.Name:
            out.add(n.id)
        elif t is ast.Attribute:
            out.add(n.attr)
        elif t is ast.keyword:
            if n.arg is not None:
                out.add(n.arg)
        else:
            name = _keyword_name(n)
            if name is not None:
                out.add(name)
    return out


class SignalHandlerTouchesLoop(_Decide, Rule):
    """
    ## What it does
    Flags `signal.signal(sig, handler)` whose handler (a function, method, `functools.partial`
    or lambda of this module), directly or through functions of this module it calls,
    sets or clears an `asyncio.Event`, puts into an `asyncio.Queue`, completes or cancels a
    task or future, creates a task (`create_task`, `ensure_future`), cancels the tasks of
    `asyncio.all_tasks()`, or calls an event-loop method other than
    `call_soon_threadsafe` (`loop.stop()`, `loop.call_soon()`, ...).

    The asyncio objects are recognised by type: bound to `asyncio.Event()`,
    `asyncio.Queue()`, `create_task(...)`, `asyncio.get_running_loop()` and friends in this
    module (a local, a global, or `self.x` set in a method of the class).

    Not flagged: handlers installed with `loop.add_signal_handler()`, and handlers that
    hand the action to the loop with `loop.call_soon_threadsafe(event.set)` or
    `asyncio.run_coroutine_threadsafe(...)`; handlers that only set a flag, raise
    (`KeyboardInterrupt`, `SystemExit`) or touch a `threading.Event`.

    ## Why is this bad?
    A `signal.signal` handler runs in the main thread between two bytecodes, wherever the
    main thread happens to be. When it is inside the event loop's `select()`, CPython
    runs the handler on `EINTR` and then goes back into `select()` with the time that was
    left: `event.set()` queued a wake-up callback with `call_soon`, which does not write
    to the loop's self-pipe, so nothing wakes the loop. Tasks waiting on the event see it
    only when the next timer or I/O event happens to end the `select()`: seconds later on
    an idle server, never if nothing is scheduled. (Measured here: a loop whose next timer
    was 6 s away, signalled 0.5 s in, noticed the event 5.50 s after SIGTERM in 3 of 3
    runs; with no timer at all it was still waiting 20 s later; 0.0003-0.0004 s with
    `add_signal_handler` or a `call_soon_threadsafe` hand-over.) And asyncio objects are not safe to touch there: the handler
    may run in the middle of the loop's own bookkeeping.

    `loop.add_signal_handler()` makes the loop handle the signal: CPython's C handler
    writes the signal number to the loop's wake-up fd, the loop wakes at once and runs the
    callback as a normal loop callback.

    ## Example
    ```python
    async def serve(self):
        stop_event = asyncio.Event()

        def on_signal(sig, frame):
            stop_event.set()

        signal.signal(signal.SIGTERM, on_signal)
        await self.run_until(stop_event)
    ```

    ## Use instead
    ```python
    async def serve(self):
        stop_event = asyncio.Event()

        def on_signal(sig, frame):
            stop_event.set()

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_signal, signal.SIGTERM, None)
        await self.run_until(stop_event)
    ```

    Where no loop is at hand when the handler is installed, keep `signal.signal` and hand the
    action over: `loop.call_soon_threadsafe(stop_event.set)`.

    ## Fix safety
    Unsafe (a fix is safe only if the program does exactly what it did on every path where
    the hazard does not occur, and this one changes when and how the handler runs).
    The fix calls `loop.add_signal_handler(sig, handler, sig, None)` on the loop that runs
    the program's code when the signal comes, so the handler still receives `(signum,
    frame)`, with `frame` now `None`. It is offered only when that loop is known:
    - the registration sits in a coroutine (not in a lambda): the loop running that
      coroutine, `asyncio.get_running_loop()`;
    - in sync code (a function or the module body), a plain name that holds an event loop
      and that the same code runs after the registration (`loop.run_until_complete(...)` /
      `loop.run_forever()`, the first run that follows, nothing rebinding the name in
      between): that loop.

    A loop merely held in a variable gets no fix: a helper loop kept for sync code, or the
    legacy module-level `loop = asyncio.get_event_loop()` of a program that then calls
    `asyncio.run()`. `add_signal_handler` turns the Python handler into a no-op and points
    the wake-up fd at that loop, which never runs: the signal would be swallowed for the
    life of the program (measured in `tests/behaviour/test_shd405_signal_handler_touches_loop.py`:
    the handler runs before, never after such a binding). Also needs: the registration is
    a statement of its own (its return value, the previous handler, is not used) and the
    signal is a name or attribute.

    What changes on every path, hence unsafe: `add_signal_handler` is Unix-only and
    needs the main thread (a `RuntimeError` instead of `signal.signal`'s `ValueError`
    elsewhere); the handler runs as a loop callback (after the current step of the loop
    rather than between two bytecodes), so while the loop is not running (before
    `run_until_complete`, after it returns) the signal waits for the next run; an exception
    it raises other than `SystemExit`/`KeyboardInterrupt` goes to the loop's exception
    handler; `signal.getsignal()` no longer returns the handler; when the loop closes the
    handler is removed with it (SIGTERM then ends the process by default, SIGINT raises
    `KeyboardInterrupt`).

    ## Known limits
    - Handlers and asyncio objects defined in another module are not seen; an object
      whose type the module does not show (`self.stop_event` assigned from a parameter)
      is not recognised.
    - A handler that touches the loop only on some path (e.g. after a check that the loop
      runs in another thread) is flagged as well.

    ## References
    - Python docs: `signal` ("Python signal handlers are always executed in the main Python
      thread ... between bytecode instructions"), `loop.add_signal_handler`,
      `loop.call_soon_threadsafe` ("thread-safe variant of call_soon ... wakes up the loop")
    - PEP 475: system calls retried on `EINTR` after running the signal handlers
    - verifiers' env server: `signal.signal` handler setting an `asyncio.Event`
    """

    code = "SHD405"
    name = "signal-handler-touches-loop"
    summary = "`signal.signal` handler touches asyncio objects: the loop is not woken and they are not safe there"
    triggers = ("signal",)
    candidate = All(Word("signal"), Word("asyncio", "uvloop"))
    # tier 2: a signal.signal handler that may reach a call touching the loop
    candidate_tree = staticmethod(lambda tree: _may_touch_loop_in_handler(tree))
    facts_needed = ("imports", "functions", "calls", "parents")
    ast_check = _Ast

    valid = [
        # the loop handles the signal
        """
        import asyncio, signal
        async def serve():
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
        """,
        # handed over thread-safely
        """
        import asyncio, signal
        async def serve():
            loop = asyncio.get_running_loop()
            stop = asyncio.Event()
            signal.signal(signal.SIGTERM, lambda s, f: loop.call_soon_threadsafe(stop.set))
            await stop.wait()
        """,
        # a threading.Event and a flag are fine
        """
        import asyncio, signal, threading
        stop = threading.Event()
        state = {"stopping": False}
        def on_term(signum, frame):
            stop.set()
            state["stopping"] = True
        signal.signal(signal.SIGTERM, on_term)
        asyncio.run(main())
        """,
        # raising KeyboardInterrupt lets asyncio.run cancel the main task itself
        """
        import asyncio, signal
        def handler(*_):
            raise KeyboardInterrupt("terminated")
        signal.signal(signal.SIGTERM, handler)
        asyncio.run(serve())
        """,
        # a coroutine-safe hand-over from a handler
        """
        import asyncio, signal
        loop = asyncio.new_event_loop()
        async def stop_all():
            pass
        def on_term(signum, frame):
            asyncio.run_coroutine_threadsafe(stop_all(), loop)
        signal.signal(signal.SIGTERM, on_term)
        """,
        # an event set in a nested callback the handler only schedules
        Valid(
            """
            import asyncio, signal
            ev = asyncio.Event()
            def on_term(signum, frame):
                loop.call_soon_threadsafe(lambda: ev.set())
            signal.signal(signal.SIGTERM, on_term)
            """
        ),
    ]
    invalid = [
        # verifiers' env server
        Invalid(
            """
            import asyncio
            import signal

            class EnvServer:
                async def run(self):
                    stop_event = asyncio.Event()

                    def signal_handler(sig, frame):
                        stop_event.set()

                    # stop serving on SIGTERM
                    signal.signal(signal.SIGTERM, signal_handler)  # keep
                    await self.serve(stop_event=stop_event)
            """,
            fixed="""
            import asyncio
            import signal

            class EnvServer:
                async def run(self):
                    stop_event = asyncio.Event()

                    def signal_handler(sig, frame):
                        stop_event.set()

                    # stop serving on SIGTERM
                    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, signal_handler, signal.SIGTERM, None)  # keep
                    await self.serve(stop_event=stop_event)
            """,
            message_contains="asyncio.Event",
        ),
        # through a callee that creates a task on a loop that the module then runs
        Invalid(
            """
            import asyncio as aio
            from signal import signal, SIGINT

            loop = aio.new_event_loop()

            def teardown():
                loop.create_task(close_all())

            def on_int(signum, frame):
                teardown()

            signal(SIGINT, on_int)
            loop.run_until_complete(serve())
            """,
            fixed="""
            import asyncio as aio
            from signal import signal, SIGINT

            loop = aio.new_event_loop()

            def teardown():
                loop.create_task(close_all())

            def on_int(signum, frame):
                teardown()

            loop.add_signal_handler(SIGINT, on_int, SIGINT, None)
            loop.run_until_complete(serve())
            """,
            message_contains="creates a task",
        ),
        # a module-level loop that never runs: asyncio.run runs another one, no fix
        # (add_signal_handler on `helper_loop` would swallow SIGTERM for good)
        Invalid(
            """
            import asyncio, signal

            helper_loop = asyncio.new_event_loop()
            stop = asyncio.Event()

            def on_term(signum, frame):
                stop.set()

            signal.signal(signal.SIGTERM, on_term)
            asyncio.run(main())
            """,
            fixed=None,
        ),
        # the legacy module-level get_event_loop(), then asyncio.run: no fix either
        Invalid(
            """
            import asyncio, signal

            loop = asyncio.get_event_loop()

            def on_term(signum, frame):
                loop.stop()

            def main():
                signal.signal(signal.SIGTERM, on_term)
                asyncio.run(serve())
            """,
            fixed=None,
            message_contains="loop.stop",
        ),
        # a sync function that runs its own loop after the registration: that loop
        Invalid(
            """
            import asyncio, signal

            def main():
                loop = asyncio.new_event_loop()
                stop = asyncio.Event()
                signal.signal(signal.SIGTERM, lambda s, f: stop.set())
                try:
                    loop.run_until_complete(serve(stop))
                finally:
                    loop.close()
            """,
            fixed="""
            import asyncio, signal

            def main():
                loop = asyncio.new_event_loop()
                stop = asyncio.Event()
                loop.add_signal_handler(signal.SIGTERM, lambda s, f: stop.set(), signal.SIGTERM, None)
                try:
                    loop.run_until_complete(serve(stop))
                finally:
                    loop.close()
            """,
        ),
        # a method handler cancelling tasks; a queue; no loop at hand: no fix
        Invalid(
            """
            import asyncio, signal

            class Worker:
                def __init__(self):
                    self.queue = asyncio.Queue()
                    signal.signal(signal.SIGTERM, self.on_term)
                    signal.signal(signal.SIGINT, lambda *_: [t.cancel() for t in asyncio.all_tasks()])

                def on_term(self, signum, frame):
                    self.queue.put_nowait(None)
            """,
            count=2,
        ),
        # loop.stop() from the handler; the previous handler is used: no fix
        Invalid(
            """
            import asyncio, signal

            async def main():
                loop = asyncio.get_running_loop()
                previous = signal.signal(signal.SIGTERM, lambda s, f: loop.stop())
            """,
            message_contains="loop.stop",
        ),
    ]

    # ------------------------------------------------------------------ libcst reads
    def visit_Call(self, node: cst.Call) -> None:
        self._on_call(node)

    @staticmethod
    def _positional(call: cst.Call) -> list:
        return [a.value for a in call.args if a.keyword is None]

    @staticmethod
    def _lambda_calls(handler: cst.BaseExpression) -> Optional[list]:
        """A lambda handler's own calls (not those of lambdas in it), in source order; None for another handler."""
        return list(_calls_in(handler.body)) if isinstance(handler, cst.Lambda) else None

    @staticmethod
    def _method(call: cst.Call) -> Optional[str]:
        return call.func.attr.value if isinstance(call.func, cst.Attribute) else None

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def _registration_fixable(self, call: cst.Call, sig: cst.BaseExpression) -> bool:
        """A statement of its own (its value unused), the signal a name or attribute, no keyword or
        starred argument, not in a lambda."""
        if not isinstance(self.facts.parent(call), cst.Expr) or not isinstance(sig, (cst.Name, cst.Attribute)):
            return False
        return not (any(a.keyword is not None or a.star for a in call.args) or self.facts.in_lambda(call))

    def _nodes_after(self, call: cst.Call, fn) -> Iterable[cst.CSTNode]:
        stmt = self.facts.enclosing_statement(call)
        stop = fn.node if fn is not None else None
        for later in _statements_after(self.facts, stmt, stop):
            yield from _own_nodes(later)

    @staticmethod
    def _runner_receiver(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value in _LOOP_RUNNERS:
            return node.func.value
        return None

    @staticmethod
    def _plain_name(expr: cst.BaseExpression) -> Optional[str]:
        return expr.value if isinstance(expr, cst.Name) else None

    @staticmethod
    def _bound_names(node: cst.CSTNode) -> set[str]:
        if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.AsName, cst.NamedExpr)):
            return _target_names(node)
        return set()

    def _make_fix(self, call: cst.Call, sig: cst.BaseExpression, handler: cst.BaseExpression,
                  loop_name: Optional[str]) -> Fix:
        """``loop.add_signal_handler(sig, handler, sig, None)`` on ``loop_name``, or on
        ``asyncio.get_running_loop()`` (None: in a coroutine)."""
        edits = []
        if loop_name is None:
            alias = self.facts.module_import_name("asyncio")
            if alias is None:
                alias = "asyncio"
                edits.append(AddImport("asyncio"))
            loop: cst.BaseExpression = cst.Call(func=dotted(f"{alias}.get_running_loop"))
        else:
            loop = cst.Name(loop_name)
        new = cst.Call(
            func=cst.Attribute(value=loop, attr=cst.Name("add_signal_handler")),
            args=[cst.Arg(sig), cst.Arg(handler), cst.Arg(sig), cst.Arg(cst.Name("None"))],
        )
        return Fix.unsafe(Replace(call, new), *edits, message=_FIX_MESSAGE)


_FIX_MESSAGE = "Install the handler with `loop.add_signal_handler()`"


#: Event-loop methods that run the loop in the calling thread.
_LOOP_RUNNERS = frozenset({"run_until_complete", "run_forever"})


def _statements_after(facts, stmt: Optional[cst.CSTNode], stop: Optional[cst.CSTNode]) -> Iterable[cst.CSTNode]:
    """The statements that run after ``stmt`` in its block, then after the compound statement
    holding that block, and so on up to (not past) ``stop`` (the function) or the module."""
    cur = stmt
    while cur is not None and cur is not stop:
        block = facts.parent(cur)
        if isinstance(block, (cst.IndentedBlock, cst.Module)):
            body = list(block.body)
            idx = next((i for i, s in enumerate(body) if s is cur), None)
            if idx is not None:
                yield from body[idx + 1:]
        if block is None or block is stop or isinstance(block, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return
        cur = block


def _own_nodes(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node`` and its descendants in source order, not inside nested defs, classes or lambdas."""
    found: list[cst.CSTNode] = []

    class _V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if n is not node and isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            found.append(n)
            return True

    node.visit(_V())
    return found


def _target_names(node: cst.CSTNode) -> set[str]:
    target = getattr(node, "target", None) or getattr(node, "name", None)
    out: set[str] = set()
    if target is not None:
        for n in _own_nodes(target):
            if isinstance(n, cst.Name):
                out.add(n.value)
    return out


def _calls_in(node: cst.CSTNode) -> Iterable[cst.Call]:
    found: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

    node.visit(_V())
    return found


def _truncated(text: str) -> str:
    return text if len(text) <= 50 else text[:47] + "..."


# ------------------------------------------------------------------ candidate tier 2 (ast)
_LOOP_TYPE = "AbstractEventLoop"


def _may_touch_loop_in_handler(tree) -> bool:
    """The one report path, ``visit_Call``: a call the facts name ``signal.signal`` (``may_call``,
    through aliases) with exactly two positional arguments as libcst counts them (``*a`` and
    ``**kw`` included); ``_touch`` then needs the handler (args[1]) to be a lambda or to resolve
    (``resolve_function``: a name, ``self.m``/``Cls.m``, ``partial(f, ..)``) to a same-module
    sync function, and ``_first_touch`` a touching call among the lambda's own calls and the
    non-lambda calls of the sync functions reachable from it (``_handler_calls``: by name, through
    every call, lambdas and ``partial`` included): a ``LOOP_TOUCHING_METHODS`` call
    (``may_call_any``), an event-loop method other than the safe ones (``_may_call_loop_method``),
    or an ``all_tasks()``/``current_task()`` call together with an ``x.cancel()`` call."""
    loop_methods = None
    for call in tree.all_calls():
        args = positional_args(call)
        if len(args) != 2 or not tree.may_call_any(call, ("signal.signal",)):
            continue
        calls = _handler_calls(tree, args[1])
        if not calls:
            continue
        if any(tree.may_call_any(c, LOOP_TOUCHING_METHODS) for c in calls):
            return True
        if any(tree.may_call_any(c, _TASK_LISTS) for c in calls) and any(
                type(c.func) is ast.Attribute and c.func.attr == "cancel" for c in calls):
            return True
        if loop_methods is None:
            loop_methods = _loop_method_words(tree)
        if any(_may_call_loop_method(tree, c, loop_methods) for c in calls):
            return True
    return False


def _handler_calls(tree, handler: ast.AST) -> list:
    """A superset of the calls ``_touch`` hands to ``_first_touch``: a lambda's own calls (not
    those of lambdas nested in it), and the calls outside lambdas of every sync function whose
    name the handler (or a call of the lambda) or, transitively, a call of such a function may
    resolve to (``_names``)."""
    direct: list = []
    if type(handler) is ast.Lambda:
        # a lambda nested in it runs later, if ever
        direct = [n for n in walk_within([handler.body], (ast.Lambda,)) if type(n) is ast.Call]
        roots = {name for c in direct for name in function_names(c.func)}
    else:
        roots = function_names(handler)
    # ``_touch`` does not follow into ``async def``; a lambda's calls in a function run later
    # (not a touch) but are followed
    reached = tree.reached_by_name(roots, lambda fn: {n for c, _, _ in fn.calls for n in function_names(c.func)},
                                   only=lambda fn: not fn.is_async)
    return direct + [c for fn in reached for c, _, in_lambda in fn.calls if not in_lambda]


def _loop_method_words(tree) -> set:
    """Every ``m`` (not a safe method) that a qualified name ``asyncio.AbstractEventLoop.m`` can
    end with: such a name is built from an attribute ``X.m`` whose ``X`` may be an event loop
    (its words meet ``AbstractEventLoop``: the factories' result type included), or from an
    import whose dotted path passes through ``AbstractEventLoop``."""
    out = set()
    for n in ast.walk(tree.module):
        t = type(n)
        if t is ast.Attribute:
            if n.attr not in LOOP_SAFE_METHODS and _LOOP_TYPE in tree.words(n.value):
                out.add(n.attr)
        elif t is ast.ImportFrom or t is ast.Import:
            for alias in n.names:
                full = f"{n.module or ''}.{alias.name}" if t is ast.ImportFrom else alias.name
                parts = full.split(".")
                if _LOOP_TYPE in parts[:-1]:
                    out.add(parts[-1])
    return out - LOOP_SAFE_METHODS


def _may_call_loop_method(tree, call: ast.Call, loop_methods: set) -> bool:
    """``call``'s qualified name may be ``asyncio.AbstractEventLoop.m`` with ``m`` not safe:
    ``x.m()`` with ``x`` possibly a loop, or a callee (``stop()``, ``self.stop()``) that may be
    bound to one of the loop methods the module spells (``loop_methods``)."""
    func = call.func
    if type(func) is ast.Attribute:
        if func.attr not in LOOP_SAFE_METHODS and _LOOP_TYPE in tree.words(func.value):
            return True
        return not tree.aliases_of_attr(func.attr).isdisjoint(loop_methods)
    return not tree.words(func).isdisjoint(loop_methods)
