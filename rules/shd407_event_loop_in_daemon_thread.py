from __future__ import annotations

import ast
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments, positional
from shutdown_lint.ast_engine.walk import source_order
from shutdown_lint.prefilter.words import All, AnyOf, Word, qualified
from shutdown_lint.rule import Fix, Invalid, Replace, Rule
from shutdown_lint.prefilter.ast_tree import function_names, keyword
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD, dotted

_THREAD_CLASSES = ("threading.Thread",)
#: Calls that run an event loop until it is stopped or its main coroutine ends.
_LOOP_RUNNERS = frozenset({
    "asyncio.run", "uvloop.run", "asyncio.Runner.run",
    "asyncio.AbstractEventLoop.run_forever", "asyncio.AbstractEventLoop.run_until_complete",
})
_LOOP_METHODS = ("run_forever", "run_until_complete")
_TRYS = (ast.Try, getattr(ast, "TryStar", ast.Try))

def _message(runner: str) -> str:
    return (f"daemon thread runs an event loop ({runner}): at interpreter exit it is frozen mid-step and on "
            "SIGTERM the process dies first, so the loop's tasks are never cancelled and their `finally` "
            "cleanup never runs")


_FIX_MESSAGE = "Use `runtime_guard.LoopThread`, which stops the loop cleanly at exit and on SIGTERM"


class _Decide:
    """What SHD407 decides, on either tree (``EventLoopInDaemonThread``: libcst; ``_Ast``: ``ast``).
    The tree answers ``_keyword``, ``_positional`` (libcst's arguments without a keyword: ``*a``
    and ``**k`` included), ``_is_true``, ``_holder`` (the text of the one target the call is
    assigned to), ``_sets_daemon`` (``holder.daemon = True`` / ``holder.setDaemon(True)`` in a
    region), ``_is_def``/``_is_class``, ``_joins_in_finally``, ``_loop_method``, ``_partial_of``,
    ``_lambda_calls``, ``_code`` and ``_fix``."""

    def _check(self, node) -> None:
        if self.facts.call_name(node) not in _THREAD_CLASSES:
            return
        target = self._keyword(node, "target")
        if target is None:
            positional = self._positional(node)
            if len(positional) >= 2:  # Thread(group, target, ...)
                target = positional[1]
        if target is None or not self._daemon(node):
            return
        runner = self._runs_loop(target, node)
        if runner is None or self._scoped_to_one_call(node):
            return
        self.report(node, _message(runner), fix=self._fix(node))

    # ------------------------------------------------------------------ daemon?
    def _daemon(self, node) -> bool:
        flag = self._keyword(node, "daemon")
        if flag is not None:
            return self._is_true(flag)
        # ``t = Thread(...); t.daemon = True`` / ``t.setDaemon(True)``
        holder = self._holder(node)
        if holder is None:
            return False
        fn = self.facts.enclosing_function(node)
        return self._sets_daemon(fn.node if fn is not None else self.facts.module, holder)

    def _scoped_to_one_call(self, node) -> bool:
        """The outermost function around the thread joins it in a ``finally``: a loop made for one
        call and torn down before the call returns (nothing is left on it at exit)."""
        holder = self._holder(node)
        if holder is None:
            return False
        outer = None
        for anc in self.facts.ancestors(node):
            if self._is_def(anc):
                outer = anc
            elif self._is_class(anc):
                break
        if outer is None:
            return False
        return self._joins_in_finally(outer, holder)

    # ------------------------------------------------------------------ loop?
    def _runs_loop(self, target, at) -> Optional[str]:
        qn = self.facts.qualified_name(target, at)
        if qn in _LOOP_RUNNERS or self._loop_method(target):
            return f"`{self._code(target)}`"
        inner = self._partial_of(target, at)
        if inner is not None:
            return self._runs_loop(inner, at)
        calls = self._lambda_calls(target)
        if calls is not None:
            for call in calls:
                found = self._loop_call(call)
                if found:
                    return found
            return None
        fn = self.facts.resolve_function(target, at)
        if fn is None:
            return None
        order, depth = [fn], {fn: 0}  # breadth first, three calls deep, in source order
        for f in order:
            for call in f.calls:
                found = self._loop_call(call)
                if found:
                    return found if f is fn else f"{found} in `{f.name}()`"
            if depth[f] < 3:
                for _, callee in self.facts.callees(f):
                    if callee not in depth:
                        depth[callee] = depth[f] + 1
                        order.append(callee)
        return None

    def _loop_call(self, call) -> Optional[str]:
        qn = self.facts.call_name(call)
        f = call.func
        if qn in _LOOP_RUNNERS or self._loop_method(f):
            return f"`{self._code(f)}()`"
        return None


class _Ast(_Decide, AstCheck):
    """SHD407 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers
    read from ``ast`` (arguments as libcst's ``Call.args``, ``True`` a constant, ``finally``
    blocks as ``Try.finalbody``, code text with owned parentheses); the fix's plan, never its edits."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    @staticmethod
    def _fix(node: ast.Call) -> FixPlan:
        return FixPlan.unsafe(_FIX_MESSAGE)

    @staticmethod
    def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
        for k in call.keywords:
            if k.arg == name:
                return k.value
        return None

    @staticmethod
    def _positional(call: ast.Call) -> list:
        return positional(call)

    @staticmethod
    def _is_true(expr: ast.AST) -> bool:
        return type(expr) is ast.Constant and expr.value is True

    def _code(self, node: ast.AST) -> str:
        return self.facts.code_for_node(node)

    def _holder(self, node: ast.Call) -> Optional[str]:
        parent = self.facts.parent(node)
        if not (type(parent) is ast.Assign and len(parent.targets) == 1):
            return None
        return self._code(parent.targets[0])

    def _sets_daemon(self, region: ast.AST, holder: str) -> bool:
        for n in ast.walk(region):
            t = type(n)
            if t is ast.Assign:
                if self._is_true(n.value) and any(type(x) is ast.Attribute and x.attr == "daemon"
                                                  and self._code(x.value) == holder for x in n.targets):
                    return True
            elif t is ast.Call:
                func = n.func
                if type(func) is ast.Attribute and func.attr == "setDaemon" and self._code(func.value) == holder:
                    args = arguments(n)
                    if args and self._is_true(args[0].value):
                        return True
        return False

    @staticmethod
    def _is_def(node: ast.AST) -> bool:
        return type(node) in (ast.FunctionDef, ast.AsyncFunctionDef)

    @staticmethod
    def _is_class(node: ast.AST) -> bool:
        return type(node) is ast.ClassDef

    def _joins_in_finally(self, outer: ast.AST, holder: str) -> bool:
        for n in ast.walk(outer):
            if type(n) in _TRYS and n.finalbody:
                for call in source_order(n.finalbody):
                    if type(call) is ast.Call and type(call.func) is ast.Attribute and call.func.attr == "join" \
                            and self._code(call.func.value) == holder:
                        return True
        return False

    @staticmethod
    def _loop_method(expr: ast.AST) -> bool:
        return type(expr) is ast.Attribute and expr.attr in _LOOP_METHODS

    def _partial_of(self, target: ast.AST, at: ast.AST) -> Optional[ast.expr]:
        if type(target) is ast.Call and self.facts.qualified_name(target.func, at) == "functools.partial":
            args = arguments(target)
            if args:
                return args[0].value
        return None

    @staticmethod
    def _lambda_calls(target: ast.AST) -> Optional[list]:
        if type(target) is not ast.Lambda:
            return None
        return [n for n in source_order([target.body]) if type(n) is ast.Call]


class EventLoopInDaemonThread(_Decide, Rule):
    """
    ## What it does
    Flags `threading.Thread(target=..., daemon=True)` (or a thread made a daemon later with
    `t.daemon = True` / `t.setDaemon(True)`) whose target runs an event loop: `asyncio.run`,
    `uvloop.run`, `loop.run_forever` or `loop.run_until_complete`, given directly
    (`target=loop.run_forever`, `target=asyncio.run, args=(main(),)`), in a lambda, or in a
    same-module function the target is or calls (three calls deep).

    Not flagged: non-daemon threads (they keep the process alive instead: a different
    problem), threads whose target runs no loop, a loop thread made for one call (the
    function that starts it joins it in a `finally`), and `runtime_guard.LoopThread`.

    ## Why is this bad?
    At interpreter exit Python does not wait for daemon threads: once the main thread ends
    they are frozen mid-step. The loop's tasks are never cancelled, no `finally` or
    `async with` exit runs, sandboxes, leases and connections stay open, buffered data is
    lost. SIGTERM is worse: with the default action the process dies before any Python code
    runs, and even a Python SIGTERM handler runs only in the main thread, which cannot reach
    the loop's tasks; a `SystemExit` raised in one of the loop's tasks ends only that thread.
    Measured in tests/behaviour/test_shd407_event_loop_in_daemon_thread.py: 5 of 5 lease
    files left behind at a normal exit and 5 of 5 after SIGTERM; 0 after the fix.

    ## Example
    ```python
    def _run_loop():
        asyncio.run(serve_rollouts())

    threading.Thread(target=_run_loop, daemon=True).start()
    ```

    ## Use instead
    ```python
    import runtime_guard

    runtime_guard.LoopThread(target=_run_loop, daemon=True).start()
    ```
    `runtime_guard.LoopThread` is a `threading.Thread` with the same arguments (plus
    `cleanup_timeout=10`). It records the loops its target runs and, at interpreter exit
    (a daemon thread's loop after the last `atexit` handler, so the program's own exit code
    can still use it; a non-daemon thread's before the interpreter joins it) and on SIGTERM,
    cancels each loop's tasks once, roots first, waits up to `cleanup_timeout` seconds for
    their cleanup, stops the loop, joins the thread and closes the loop. On SIGTERM it then calls the SIGTERM handler that was installed before
    it, or, where SIGTERM had its default action, lets the process die of SIGTERM as before.
    It blocks no signal in the thread.

    ## Fix safety
    Unsafe (under docs/fix-safety.md: a safe fix changes nothing where the hazard does not
    occur). The hazard's path is interpreter exit, or SIGTERM to this process, while the
    loop runs: there the fix cancels the loop's tasks and waits for their cleanup (bounded by
    `cleanup_timeout`). What stays the same: the thread runs the same target with the same
    signal mask as a `threading.Thread` (no signal is blocked in it, so threads, `subprocess`
    commands and `multiprocessing` children started from the loop die of SIGTERM as before),
    the exit status (0 at a normal exit; SIGTERM still ends the process with -15 when no
    handler was installed, or calls the handler that was: it chains, and it never replaces an
    ignored SIGTERM or a handler installed outside Python), and forked children get the
    previous SIGTERM handler back. Why it is still unsafe: the first `start()` from the main
    thread installs a Python SIGTERM handler where SIGTERM had its default action, for the
    rest of the process's life. A Python handler runs only when the main thread runs Python
    code; so that a process whose main thread is blocked in a C call (a collective, a C++
    rendezvous) still dies of SIGTERM, the signal is also heard at delivery, and when the
    handler has not started 1 s later a helper thread stops the loops and the process dies of
    SIGTERM (-15): 1 s later than before, not at once (measured: a gloo rendezvous outlived
    SIGTERM before this; now -15 at 1.1 s). A C call that holds the GIL still delays it until
    the call returns. One faulthandler hook on SIGTERM and one helper thread are added; and
    `signal.getsignal(SIGTERM)` no longer returns
    `SIG_DFL` (code that installs its own handler only over the default acts differently).
    On SIGTERM with a loop running, one warning line is logged. The fix adds
    `import runtime_guard`.
    Exit-time code that uses the loop (fix audit N1): `atexit` handlers, registered before or
    after the thread started, and non-daemon threads still finishing at exit find the loop
    running, as with the daemon thread (measured in the behaviour test: the audit's
    `run(coro)` bridge prints `atexit hook: client closed`, status 0, before and after).
    What remains different: the loop's tasks are cancelled after the last `atexit` handler,
    when `concurrent.futures` has already shut its executors down, so task cleanup that calls
    `run_in_executor`/`asyncio.to_thread` raises `RuntimeError`; a loop stopped this way (or
    on SIGTERM) is closed, so a later submission raises `RuntimeError: Event loop is closed`
    at once: from a SIGTERM handler chained after it or the exit code a SIGTERM handler
    raising `SystemExit` leads to (the daemon thread's loop still served those), and from a
    module global's `__del__` at module teardown (measured: with the daemon thread it never
    ran; now it runs, fails, and is reported as "Exception ignored"); `hard_exit`
    (`os._exit`) still leaves the loop frozen, as before. Measured on CPython 3.11 only.

    ## References
    - Python docs: `threading` ("Daemon threads are abruptly stopped at shutdown. Their
      resources ... may not be released properly")
    - shutdown-lint lab: `sysexit_task_loop_thread.py` (`sys.exit` in a task on a loop in
      another thread kills only that thread)

    ## Known limits
    A `close()`/`shutdown()` method that only calls `loop.stop()` does not help (the pending
    tasks are never resumed: a `finally` that awaits never completes), so such classes are still
    flagged; one that cancels and awaits the tasks first is flagged too (a false alarm).
    A daemon loop that is idle at exit (only short calls awaited by their caller) has nothing to
    lose but is flagged. A thread subclass that runs a loop in its `run()` method, and loops reached through
    another module's function, are not recognised. A program that stops the loop's tasks
    itself at exit (an `atexit` hook that cancels and waits) is still flagged.
    """

    code = "SHD407"
    name = "event-loop-in-daemon-thread"
    summary = "An event loop in a daemon thread is frozen at exit: its tasks' cleanup never runs"
    triggers = ("Thread",)
    candidate = All(Word("Thread"), AnyOf(Word("daemon", "setDaemon")),
                    AnyOf(qualified("asyncio.run", "uvloop.run"), Word("run_forever", "run_until_complete", "Runner")))
    # tier 2: a Thread call that may make a daemon whose target may run a loop
    candidate_tree = staticmethod(lambda tree: _may_run_loop_in_daemon_thread(tree))
    facts_needed = ("functions", "calls")

    valid = [
        # not a daemon: the interpreter waits for it (a different problem)
        """
        import asyncio, threading

        def run():
            asyncio.run(serve())

        threading.Thread(target=run).start()
        """,
        # a daemon thread that runs no loop
        """
        import threading, time

        def beat():
            while True:
                time.sleep(1)

        threading.Thread(target=beat, daemon=True).start()
        """,
        # already a LoopThread
        """
        import asyncio, runtime_guard

        def run():
            asyncio.run(serve())

        runtime_guard.LoopThread(target=run, daemon=True).start()
        """,
        # near miss from real code (verl): a loop thread made for one call, joined in a finally
        """
        import asyncio, threading

        def run_in_temp_loop(coro):
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, daemon=True)
            thread.start()
            try:
                return asyncio.run_coroutine_threadsafe(coro, loop).result()
            finally:
                loop.call_soon_threadsafe(loop.stop)
                thread.join()
        """,
        # daemon=False explicitly
        """
        import asyncio, threading

        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=False).start()
        """,
    ]
    invalid = [
        Invalid(
            """
            import asyncio
            import threading

            def _run_loop():
                asyncio.run(serve_rollouts())

            threading.Thread(target=_run_loop, daemon=True).start()  # background server
            """,
            fixed="""
            import asyncio
            import threading
            import runtime_guard

            def _run_loop():
                asyncio.run(serve_rollouts())

            runtime_guard.LoopThread(target=_run_loop, daemon=True).start()  # background server
            """,
            message_contains="daemon",
        ),
        Invalid(
            """
            import asyncio
            from threading import Thread

            class Engine:
                def __init__(self):
                    self.loop = asyncio.new_event_loop()
                    self.thread = Thread(target=self.loop.run_forever, name="engine-loop", daemon=True)
                    self.thread.start()
            """,
            fixed="""
            import asyncio
            from threading import Thread
            import runtime_guard

            class Engine:
                def __init__(self):
                    self.loop = asyncio.new_event_loop()
                    self.thread = runtime_guard.LoopThread(target=self.loop.run_forever, name="engine-loop", daemon=True)
                    self.thread.start()
            """,
        ),
        Invalid(
            """
            import asyncio, threading

            def start(coro):
                t = threading.Thread(target=lambda: asyncio.run(coro))
                t.daemon = True
                t.start()
                return t
            """,
            fixed="""
            import asyncio, threading
            import runtime_guard

            def start(coro):
                t = runtime_guard.LoopThread(target=lambda: asyncio.run(coro))
                t.daemon = True
                t.start()
                return t
            """,
        ),
        Invalid(
            """
            import asyncio, threading

            class Worker:
                def _thread_main(self):
                    self.loop = asyncio.new_event_loop()
                    asyncio.set_event_loop(self.loop)
                    self._serve()

                def _serve(self):
                    self.loop.run_until_complete(self.main())

                def start(self):
                    threading.Thread(target=self._thread_main, daemon=True).start()
            """,
            fixed="""
            import asyncio, threading
            import runtime_guard

            class Worker:
                def _thread_main(self):
                    self.loop = asyncio.new_event_loop()
                    asyncio.set_event_loop(self.loop)
                    self._serve()

                def _serve(self):
                    self.loop.run_until_complete(self.main())

                def start(self):
                    runtime_guard.LoopThread(target=self._thread_main, daemon=True).start()
            """,
        ),
    ]

    ast_check = _Ast

    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    @staticmethod
    def _fix(node: cst.Call) -> Fix:
        return Fix.unsafe(Replace(node.func, dotted("runtime_guard.LoopThread")), IMPORT_RUNTIME_GUARD,
                          message=_FIX_MESSAGE)

    # ------------------------------------------------------------------ the tree's answers (libcst)
    @staticmethod
    def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return a.value
        return None

    @staticmethod
    def _positional(call: cst.Call) -> list:
        return [a.value for a in call.args if a.keyword is None]

    @staticmethod
    def _is_true(expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value == "True"

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def _holder(self, node: cst.Call) -> Optional[str]:
        parent = self.facts.parent(node)
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1):
            return None
        return self._code(parent.targets[0].target)

    def _sets_daemon(self, region: cst.CSTNode, holder: str) -> bool:
        found = []
        code, is_true = self._code, self._is_true

        class V(cst.CSTVisitor):
            def visit_Assign(self, n: cst.Assign) -> None:
                for t in n.targets:
                    if (isinstance(t.target, cst.Attribute) and t.target.attr.value == "daemon"
                            and code(t.target.value) == holder and is_true(n.value)):
                        found.append(n)

            def visit_Call(self, n: cst.Call) -> None:
                if (isinstance(n.func, cst.Attribute) and n.func.attr.value == "setDaemon"
                        and code(n.func.value) == holder and n.args and is_true(n.args[0].value)):
                    found.append(n)

        walk(region, V())
        return bool(found)

    @staticmethod
    def _is_def(node: cst.CSTNode) -> bool:
        return isinstance(node, cst.FunctionDef)

    @staticmethod
    def _is_class(node: cst.CSTNode) -> bool:
        return isinstance(node, cst.ClassDef)

    def _joins_in_finally(self, outer: cst.CSTNode, holder: str) -> bool:
        found = []
        code = self._code

        class V(cst.CSTVisitor):
            def visit_Finally(self, n: cst.Finally) -> None:
                for call in _calls(n):
                    if (isinstance(call.func, cst.Attribute) and call.func.attr.value == "join"
                            and code(call.func.value) == holder):
                        found.append(call)

        walk(outer, V())
        return bool(found)

    @staticmethod
    def _loop_method(expr: cst.CSTNode) -> bool:
        return isinstance(expr, cst.Attribute) and expr.attr.value in _LOOP_METHODS

    def _partial_of(self, target: cst.BaseExpression, at: cst.Call) -> Optional[cst.BaseExpression]:
        if isinstance(target, cst.Call) and self.facts.qualified_name(target.func, at) == "functools.partial" \
                and target.args:
            return target.args[0].value
        return None

    @staticmethod
    def _lambda_calls(target: cst.BaseExpression) -> Optional[list]:
        return _calls(target.body) if isinstance(target, cst.Lambda) else None


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    walk(node, V())
    return found


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_run_loop_in_daemon_thread(tree) -> bool:
    """The one report path, ``visit_Call``: a call the facts name ``threading.Thread``
    (``may_call``, through aliases) with a target (the ``target=`` keyword, else its second
    positional argument as libcst counts them, ``*a``/``**kw`` included) that is a daemon
    (``_daemon``: ``daemon=True`` spelled so; without a ``daemon=`` keyword, the call is the value
    of a one-target assignment and the module sets some ``x.daemon = True`` or calls
    ``x.setDaemon(..True..)``: ``_sets_daemon``, the holder and the region not compared), and
    whose target may run a loop (``_runs_loop``: ``_may_be_runner``). ``_scoped_to_one_call``
    only removes reports: not checked."""
    assigned = None
    sets_daemon = None
    for call in tree.all_calls():
        if not tree.may_call_any(call, _THREAD_CLASSES):
            continue
        target = keyword(call, "target")
        if target is None:
            positional = [*call.args, *(k.value for k in call.keywords if k.arg is None)]
            if len(positional) < 2:
                continue
            target = positional[1]
            if type(target) is ast.Starred:
                target = target.value
        if not _may_be_runner(tree, target):
            continue
        flag = keyword(call, "daemon")
        if flag is not None:
            if type(flag) is ast.Constant and flag.value is True:
                return True
            continue
        if assigned is None:  # ``t = Thread(...)`` (one target): ``t.daemon = True`` may follow
            assigned = {id(value) for _target, value, _fn in tree.assigns}
        if id(call) not in assigned:
            continue
        if sets_daemon is None:
            sets_daemon = _sets_daemon(tree)
        if sets_daemon:
            return True
    return False




def _may_be_runner(tree, target: ast.AST, depth: int = 0) -> bool:
    """``_runs_loop``: the target may be a loop runner itself (``_LOOP_RUNNERS`` through aliases,
    or an attribute ``run_forever``/``run_until_complete``), ``partial(..)`` of one (every argument
    tried), a lambda with a runner call anywhere in its body (``_may_call_runner``), or a function
    whose name it may resolve to with a runner call among the calls of the functions reachable from
    it within three calls (by name: a name's distance is at most the resolved function's)."""
    t = type(target)
    if t is ast.Starred:
        return _may_be_runner(tree, target.value, depth)
    if tree.may_call_any(ast.Call(func=target, args=[], keywords=[]), _LOOP_RUNNERS) or (
            t is ast.Attribute and target.attr in _LOOP_METHODS):
        return True
    if t is ast.Lambda:
        return any(type(n) is ast.Call and _may_call_runner(tree, n) for n in ast.walk(target.body))
    if t is ast.Call:
        if depth > 20:
            return True  # absurd nesting: keep
        return any(_may_be_runner(tree, a, depth + 1) for a in [*target.args, *(k.value for k in target.keywords)])
    if t is ast.Name:
        roots = {target.id}
    elif t is ast.Attribute:
        roots = {target.attr}
    else:
        return False  # ``resolve_function`` gives None
    by_name: dict = {}
    for fn in tree.functions:  # async ones too: ``_runs_loop`` follows every callee
        by_name.setdefault(fn.name, []).append(fn)
    frontier = [n for n in roots if n in by_name]
    seen = set(frontier)
    for level in range(4):  # the target (0) and callees up to three calls deep
        nxt = []
        for name in frontier:
            for fn in by_name[name]:
                for c, _awaited, _in_lambda in fn.calls:  # lambdas' calls included
                    if _may_call_runner(tree, c):
                        return True
                    if level < 3:
                        for n in function_names(c.func):
                            if n in by_name and n not in seen:
                                seen.add(n)
                                nxt.append(n)
        frontier = nxt
    return False


def _may_call_runner(tree, call: ast.Call) -> bool:
    """``_loop_call``: the callee may be a ``_LOOP_RUNNERS`` name, or is ``x.run_forever``/
    ``x.run_until_complete``."""
    func = call.func
    return (type(func) is ast.Attribute and func.attr in _LOOP_METHODS) or tree.may_call_any(call, _LOOP_RUNNERS)


def _sets_daemon(tree) -> bool:
    """What ``_daemon``'s visitor finds somewhere in the module: an assignment with a target
    ``x.daemon`` and the value ``True``, or a call ``x.setDaemon(..)`` with ``True`` as an argument
    (libcst's first argument may be a keyword one)."""
    for n in ast.walk(tree.module):
        t = type(n)
        if t is ast.Assign:
            if type(n.value) is ast.Constant and n.value.value is True and any(
                    type(x) is ast.Attribute and x.attr == "daemon" for x in n.targets):
                return True
        elif t is ast.Call:
            if type(n.func) is ast.Attribute and n.func.attr == "setDaemon" and any(
                    type(a) is ast.Constant and a.value is True for a in [*n.args, *(k.value for k in n.keywords)]):
                return True
    return False
