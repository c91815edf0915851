from __future__ import annotations

import ast
from typing import Optional, Union

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments, execution_of, positional
from shutdown_lint.prefilter.words import qualified
from shutdown_lint.facts import FunctionInfo, reachable
from shutdown_lint.rule import Applicability, Fix, Invalid, Replace, Rule
from shutdown_lint.prefilter.ast_tree import DEFS, TRYS, identifiers, walk, walk_within

from ._exits import CHILD_STARTERS_POSITIONAL, CHILD_TARGET_KEYWORDS, child_process_reason, rule_runs_here
from ._fixes import IMPORT_RUNTIME_GUARD, guard_call, strip_trailing_comma

_OS_EXIT = "os._exit"
_SIGNAL_REGISTRARS = frozenset({"signal.signal", "asyncio.AbstractEventLoop.add_signal_handler"})
_Handler = Union["cst.ExceptHandler", "cst.ExceptStarHandler"]  # strings: libcst is imported on first use


_FIX_MESSAGE = "Replace with `runtime_guard.hard_exit()` (flush, atexit handlers bounded, then `os._exit`)"


class _Decide:
    """What SHD204 decides, on either tree (``OsExitSkipsCleanup``: libcst; ``_Ast``: ``ast``).
    The tree answers ``_single_zero``, ``_child_reason``, ``_interrupt_handler``, ``_in_finally``,
    ``_is_lambda``, ``_is_call``, ``_adds_signal_handler``, ``_positional`` and ``_report_exit``
    (the fix); ``_where`` gives the execution queries (``references``)."""

    def _check(self, node) -> None:
        if self.facts.call_name(node) != _OS_EXIT:
            return
        path = self._path(node)
        if path is None or self._child_reason(node) is not None:
            return
        zero_status = None
        status_note = ""
        handler = self._interrupt_handler(node)
        if handler is not None and rule_runs_here("SHD202", self.facts, self.settings) and self._single_zero(node):
            from .shd202_interrupt_exit_zero import InterruptExitZero

            zero_status = self.settings.rule_option(InterruptExitZero, "exit_code")
            status_note = (f"; it also exits with status 0, so the interrupted run looks successful "
                           f"(SHD202: exit {zero_status})")
        self._report_exit(
            node,
            f"`os._exit()` {path} skips `finally` blocks, `atexit` handlers and buffered writes: experiment "
            f"trackers (wandb, swanlab, tensorboard) lose unsynced data and the last log lines are lost"
            f"{status_note}",
            zero_status,
        )

    # ------------------------------------------------------------------ context
    def _path(self, node) -> Optional[str]:
        if self._in_deadline_timer(node):
            return None
        if self._in_signal_handler(node):
            return "in a signal handler"
        if not self.facts.in_cleanup_block(node):
            return None
        if self._interrupt_handler(node) is not None:
            return "on Ctrl+C (`except KeyboardInterrupt`)"
        if self._in_finally(node):
            return "in a `finally` block"
        return "in an `except` handler"

    def _in_deadline_timer(self, node) -> bool:
        """A ``threading.Timer`` callback is a deadline: it ends a process that is already
        stuck, where waiting on atexit handlers is what it must not do (pytest-timeout)."""
        fn = self.facts.enclosing_function(node)
        if fn is None or self.facts.in_lambda(node):
            return False
        return any(kind == "thread" and self._is_call(ref) and self.facts.call_name(ref) == "threading.Timer"
                   for ref, kind in self._where.references(fn))

    def _in_signal_handler(self, node) -> bool:
        handlers, lambdas = self._signal_handlers()
        for anc in self.facts.ancestors(node):
            if self._is_lambda(anc) and anc in lambdas:
                return True
        fn = self.facts.enclosing_function(node)
        return fn is not None and not self.facts.in_lambda(node) and fn in handlers

    def _signal_handlers(self) -> tuple[set[FunctionInfo], set]:
        cache = self.facts.__dict__.setdefault("_shd204_handlers", {})
        if "handlers" not in cache:
            roots: set[FunctionInfo] = set()
            lambdas: set = set()
            for call in self.facts.calls:
                name = self.facts.call_name(call)
                if name not in _SIGNAL_REGISTRARS and not self._adds_signal_handler(call.func):
                    continue
                args = self._positional(call)
                if len(args) < 2:
                    continue
                if self._is_lambda(args[1]):
                    lambdas.add(args[1])
                    continue
                target = self.facts.resolve_function(args[1], call)
                if target is not None:
                    roots.add(target)
            cache["handlers"] = reachable(roots, lambda fn: (c for _, c in self.facts.callees(fn)))
            cache["lambdas"] = lambdas
        return cache["handlers"], cache["lambdas"]


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD204 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers
    read from ``ast`` (an ``except`` body or a ``finally`` block is a list of statements; the
    arguments in libcst's order: ``ast_engine.execution.arguments``)."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    def _report_exit(self, node: ast.Call, message: str, zero_status: Optional[int]) -> None:
        self.report(node, message, fix=FixPlan(Applicability.SAFE, _FIX_MESSAGE))

    @staticmethod
    def _single_zero(node: ast.Call) -> bool:
        args = arguments(node)
        return len(args) == 1 and args[0].keyword is None and _is_zero_ast(args[0].value)

    def _child_reason(self, node: ast.Call) -> Optional[str]:
        return child_process_reason(self.facts, node, _child_roots_ast)

    def _interrupt_handler(self, node: ast.AST) -> Optional[ast.ExceptHandler]:
        """The innermost ``except`` handler of ``node``'s function whose body holds it, if it
        catches KeyboardInterrupt (``_interrupt_handler``)."""
        facts = self.facts
        child = node
        for anc in facts.ancestors(node):
            t = type(anc)
            if t in _SCOPES_AST:
                return None
            if t is ast.ExceptHandler and any(s is child for s in anc.body):
                exprs = facts.caught_types(anc)
                if exprs is None:
                    return None
                ok = any(facts.qualified_name(e, anc) == "builtins.KeyboardInterrupt" for e in exprs)
                return anc if ok else None
            child = anc
        return None

    def _in_finally(self, node: ast.AST) -> bool:
        child = node
        for anc in self.facts.ancestors(node):
            t = type(anc)
            if t in _FUNCTIONS_AST:
                break
            if t in TRYS and any(s is child for s in anc.finalbody):
                return True
            child = anc
        return False

    @staticmethod
    def _is_lambda(node) -> bool:
        return type(node) is ast.Lambda

    @staticmethod
    def _is_call(node) -> bool:
        return type(node) is ast.Call

    @staticmethod
    def _adds_signal_handler(func) -> bool:
        return type(func) is ast.Attribute and func.attr == "add_signal_handler"

    @staticmethod
    def _positional(call: ast.Call) -> list:
        return positional(call)

    @property
    def _where(self):
        return execution_of(self.facts)


_FUNCTIONS_AST = frozenset({*DEFS, ast.Lambda})
_SCOPES_AST = frozenset({*DEFS, ast.Lambda, ast.ClassDef})


def _is_zero_ast(expr: ast.AST) -> bool:
    """``_is_zero`` on ``ast``: an int literal 0 (libcst's ``Integer``; ``False`` is a name there)
    or an ``EX_OK``/``EXIT_SUCCESS`` attribute."""
    if type(expr) is ast.Constant:
        return type(expr.value) is int and expr.value == 0
    return type(expr) is ast.Attribute and expr.attr in ("EX_OK", "EXIT_SUCCESS")


def _child_roots_ast(facts) -> set[FunctionInfo]:
    """``_exits._child_roots`` on ``ast``: the targets of ``multiprocessing`` children (keyword
    ``target``/``initializer``, the function ``spawn`` starts) and ``run`` of a ``Process`` subclass."""
    roots: set[FunctionInfo] = set()
    for call in facts.calls:
        name = facts.call_name(call) or ""
        func = call.func
        attr = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        is_process = attr in ("Process", "Pool", "ProcessPoolExecutor") and (
            "multiprocessing" in name or name.endswith((".Process", ".Pool")) or type(func) is ast.Attribute)
        if is_process:
            for a in arguments(call):
                if a.keyword is not None and a.keyword in CHILD_TARGET_KEYWORDS:
                    t = facts.resolve_function(a.value, call)
                    if t is not None:
                        roots.add(t)
        idx = CHILD_STARTERS_POSITIONAL.get(name)
        if idx is None and attr in ("spawn", "start_processes") and "multiprocessing" in name:
            idx = 0
        if idx is not None:
            args = positional(call)
            if len(args) > idx:
                t = facts.resolve_function(args[idx], call)
                if t is not None:
                    roots.add(t)
    for cls in facts.classes:  # class Worker(multiprocessing.Process): def run(self): ...
        for base in cls.node.bases:
            q = facts.qualified_name(base.value if type(base) is ast.Starred else base, cls.node) or ""
            if q.endswith(".Process") and "multiprocessing" in q and "run" in cls.methods:
                roots.add(cls.methods["run"])
    return roots


class OsExitSkipsCleanup(_Decide, Rule):
    """
    ## What it does
    Flags `os._exit(...)` on an interrupt, signal or error path of a normal process: in an
    `except` handler or a `finally` block, or in a function (or lambda) installed as a
    signal handler with `signal.signal()` / `loop.add_signal_handler()` and what it calls
    in the same module.

    Not flagged: `os._exit` in a forked child (its function, or an enclosing one, calls
    `os.fork()`; module-level code of a script that forks), in the target of a
    `multiprocessing` / `torch.multiprocessing` child (`Process(target=...)`,
    `Pool(initializer=...)`, `spawn(fn)`, `run()` of a `Process` subclass) and what that
    calls, `os._exit` in a `threading.Timer` callback (a deadline that ends a process
    already stuck, as pytest-timeout does), and `os._exit` on the normal path (the last
    line of a script, `if pending: os._exit(1)` after a timed-out graceful shutdown).

    ## Why is this bad?
    `os._exit` ends the process at once: no `finally` block of any thread runs, no
    `atexit` handler runs, and nothing buffered in Python is written. Experiment trackers
    sync their last metrics in `atexit` handlers (wandb, swanlab) or on `close()` of a
    buffered writer (tensorboard's `SummaryWriter`), so a run stopped with Ctrl+C loses
    its last steps, and stdout/stderr lose their last lines (the traceback that says why
    the process died). Flow-Factory's Ctrl+C fix (#149) used `os._exit(0)` to avoid
    NCCL heartbeat noise, then recorded that wandb/swanlab lost unsynced metrics, tried
    calling `finish()` by hand, and gave up on it.

    SHD202 is about the exit *status* of an interrupted run; this rule is about the
    *cleanup* the exit skips. An `os._exit(0)` in an `except KeyboardInterrupt:` handler
    is reported once, by this rule (its message and fix cover the status too when SHD202
    is enabled); SHD202 reports it alone when this rule is not selected.

    ## Example
    ```python
    import os

    def main():
        try:
            trainer.start()
        except KeyboardInterrupt:
            trainer.cleanup()
            os._exit(130)  # wandb's atexit sync never runs
    ```

    ## Use instead
    ```python
    import runtime_guard

    def main():
        try:
            trainer.start()
        except KeyboardInterrupt:
            trainer.cleanup()
            runtime_guard.hard_exit(130)
    ```

    `runtime_guard.hard_exit(code)` flushes stdio and logging handlers, runs the `atexit`
    handlers (in a helper thread, all together bounded by 5 s by default; a hung one is
    abandoned), flushes again and then calls `os._exit(code)`, from any thread. It still
    skips what made the author reach for `os._exit`: it joins no thread (NCCL heartbeat
    threads, executor workers) and the exit stays bounded.

    ## Fix safety
    Safe. The fix replaces `os._exit(code)` with `runtime_guard.hard_exit(code)` (same
    status) and adds `import runtime_guard` (the project must then depend on it, see
    docs/fix-safety.md). Reaching a flagged `os._exit` is the hazard's path itself: there
    the process now flushes stdio and logging and runs its `atexit` handlers (bounded by
    `atexit_timeout`, 5 s, so a slow or hung handler delays the exit by at most that)
    before it ends with the same status. A run that does not reach it is unchanged. In a
    child forked after `runtime_guard` was imported the parent's `atexit` handlers are not
    run, so a forked child that ends this way prints and runs nothing more than before
    (measured in tests/behaviour/test_shd204_os_exit_skips_cleanup.py). In an
    `except KeyboardInterrupt:` handler an exit status 0 becomes 130 when SHD202 is
    enabled (its `exit_code` option): that is SHD202's safe status change, made in the
    same edit.

    ## Known limits
    - A fork whose child code lives in a function the forking function does not contain or
      call in the same module is not recognised as a child (the `os._exit` there is flagged).
    - `os._exit` on an error path decided by an `if` outside any `except`/`finally` (`if
      pending: os._exit(1)`, Ray's `if unexpected_deceased: ... os._exit(1)`) is not
      flagged: it is often a deliberate deadline, and telling the two apart needs more than
      the syntax.
    - A deadline written as a `threading.Thread` target that sleeps and then exits from a
      `finally` is flagged (only `threading.Timer` callbacks are known deadlines).
    - Signal handlers installed by another module are not known.

    ## References
    - Flow-Factory #149: graceful shutdown on Ctrl+C; `os._exit(0)` lost unsynced wandb/swanlab metrics
    - Python docs: `os._exit` ("without calling cleanup handlers, flushing stdio buffers"), `atexit`
    - SHD201 (`sys.exit` in a task or thread) and SHD202 (interrupted run exits with status 0)
    """

    code = "SHD204"
    name = "os-exit-skips-cleanup"
    summary = "`os._exit()` on an interrupt, signal or error path skips `finally`, `atexit` and buffered writes"
    triggers = ("_exit",)
    candidate = qualified("os._exit")
    # tier 2: an os._exit in an except/finally block or reached from a signal handler
    candidate_tree = staticmethod(lambda tree: _may_os_exit_on_cleanup_path(tree))
    facts_needed = ("functions", "calls", "parents")

    valid = [
        # the normal end of a script (a workaround for crashing library threads at shutdown)
        """
        import os, sys
        if __name__ == "__main__":
            rc = main()
            sys.stdout.flush()
            os._exit(rc)
        """,
        # a forked child must not run the parent's cleanup
        """
        import os
        def run_child(job):
            pid = os.fork()
            if pid == 0:
                try:
                    job()
                except Exception:
                    os._exit(1)
                os._exit(0)
            return pid
        """,
        # a multiprocessing child's target
        """
        import multiprocessing as mp, os
        def worker(q):
            try:
                serve(q)
            except KeyboardInterrupt:
                os._exit(0)
        def start(q):
            p = mp.Process(target=worker, args=(q,))
            p.start()
            return p
        """,
        # a deadline after a timed-out graceful shutdown (not an except/finally path)
        """
        import asyncio, os
        async def shutdown(task):
            _, pending = await asyncio.wait({task}, timeout=30)
            if pending:
                os._exit(0)
        """,
        # a deadline timer (pytest-timeout): the process is already stuck
        """
        import os, sys, threading
        def timeout_timer(item):
            try:
                dump_stacks()
            finally:
                sys.stdout.flush()
                os._exit(1)
        threading.Timer(30, timeout_timer, (None,)).start()
        """,
        # the remedy
        """
        import runtime_guard
        def main():
            try:
                run()
            except KeyboardInterrupt:
                runtime_guard.hard_exit(130)
        """,
        # a user-defined _exit
        """
        def _exit(code):
            print(code)
        try:
            run()
        except Exception:
            _exit(1)
        """,
    ]
    invalid = [
        # Flow-Factory #149, with SHD202 not selected: the status stays
        Invalid(
            """
            import os

            def main():
                trainer = None
                try:
                    trainer = load_trainer()
                    trainer.start()
                except KeyboardInterrupt:
                    try:
                        trainer.cleanup()
                    finally:
                        # bypass NCCL heartbeat noise
                        os._exit(130)  # fast exit
            """,
            fixed="""
            import os
            import runtime_guard

            def main():
                trainer = None
                try:
                    trainer = load_trainer()
                    trainer.start()
                except KeyboardInterrupt:
                    try:
                        trainer.cleanup()
                    finally:
                        # bypass NCCL heartbeat noise
                        runtime_guard.hard_exit(130)  # fast exit
            """,
            message_contains="atexit",
        ),
        # SkyRL's generator worker: an error path in a coroutine
        Invalid(
            """
            import os, sys

            class Trainer:
                async def generate_loop(self):
                    try:
                        await self.step()
                    except Exception as e:
                        log.error(f"worker errored: {e}")
                        sys.stderr.flush()  # flush before os._exit
                        os._exit(1)
            """,
            fixed="""
            import os, sys
            import runtime_guard

            class Trainer:
                async def generate_loop(self):
                    try:
                        await self.step()
                    except Exception as e:
                        log.error(f"worker errored: {e}")
                        sys.stderr.flush()  # flush before os._exit
                        runtime_guard.hard_exit(1)
            """,
        ),
        # a signal handler, and a lambda one; an alias of os
        Invalid(
            """
            import os as _os
            import signal

            def on_term(signum, frame):
                flush_metrics()
                _os._exit(143)

            signal.signal(signal.SIGTERM, on_term)
            signal.signal(signal.SIGINT, lambda *_: _os._exit(130))
            """,
            fixed="""
            import os as _os
            import signal
            import runtime_guard

            def on_term(signum, frame):
                flush_metrics()
                runtime_guard.hard_exit(143)

            signal.signal(signal.SIGTERM, on_term)
            signal.signal(signal.SIGINT, lambda *_: runtime_guard.hard_exit(130))
            """,
            count=2,
            message_contains="signal handler",
        ),
        # a done-callback's finally (verl's headless server); a callee of a signal handler
        Invalid(
            """
            import asyncio, os, signal
            from os import _exit

            def die():
                _exit(1)

            async def serve():
                loop = asyncio.get_running_loop()
                loop.add_signal_handler(signal.SIGTERM, die)

            def on_done(fut):
                try:
                    fut.exception()
                finally:
                    os._exit(1)
            """,
            fixed="""
            import asyncio, os, signal
            from os import _exit
            import runtime_guard

            def die():
                runtime_guard.hard_exit(1)

            async def serve():
                loop = asyncio.get_running_loop()
                loop.add_signal_handler(signal.SIGTERM, die)

            def on_done(fut):
                try:
                    fut.exception()
                finally:
                    runtime_guard.hard_exit(1)
            """,
            count=2,
        ),
    ]

    ast_check = _Ast

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def _report_exit(self, node: cst.Call, message: str, zero_status: Optional[int]) -> None:
        args = strip_trailing_comma(node.args)
        if zero_status is not None:
            args = [args[0].with_changes(value=cst.Integer(str(zero_status)))]
        fix = Fix.safe(Replace(node, guard_call("hard_exit", args)), IMPORT_RUNTIME_GUARD, message=_FIX_MESSAGE)
        self.report(node, message, fix=fix)

    # ------------------------------------------------------------------ the tree's answers
    @staticmethod
    def _single_zero(node: cst.Call) -> bool:
        args = strip_trailing_comma(node.args)
        return len(args) == 1 and args[0].keyword is None and _is_zero(args[0].value)

    def _child_reason(self, node: cst.Call) -> Optional[str]:
        return child_process_reason(self.facts, node)

    def _interrupt_handler(self, node: cst.CSTNode) -> Optional[_Handler]:
        return _interrupt_handler(self.facts, node)

    def _in_finally(self, node: cst.CSTNode) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                break
            if isinstance(anc, cst.Finally):
                return True
        return False

    @staticmethod
    def _is_lambda(node) -> bool:
        return isinstance(node, cst.Lambda)

    @staticmethod
    def _is_call(node) -> bool:
        return isinstance(node, cst.Call)

    @staticmethod
    def _adds_signal_handler(func) -> bool:
        return isinstance(func, cst.Attribute) and func.attr.value == "add_signal_handler"

    @staticmethod
    def _positional(call: cst.Call) -> list:
        return [a.value for a in call.args if a.keyword is None]

    @property
    def _where(self):
        return self.facts


def _interrupt_handler(facts, node: cst.CSTNode) -> Optional[_Handler]:
    """The innermost ``except`` handler of ``node``'s function whose body holds it, if it
    catches KeyboardInterrupt."""
    child = node
    for anc in facts.ancestors(node):
        if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return None
        if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)) and child is anc.body:
            exprs = facts.caught_types(anc)
            if exprs is None:
                return None
            ok = any(facts.qualified_name(e, anc) == "builtins.KeyboardInterrupt" for e in exprs)
            return anc if ok else None
        child = anc
    return None


def _is_zero(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value == 0
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in ("EX_OK", "EXIT_SUCCESS")
    return False


# ------------------------------------------------------------------ candidate tier 2 (ast)


def _may_os_exit_on_cleanup_path(tree) -> bool:
    """The one report path (``visit_Call``) needs a call whose ``call_name`` is ``os._exit``
    (``may_call_any``: last word ``_exit`` through every alias) for which ``_path`` is not None:

    1. ``in_cleanup_block``: it sits in an ``except`` handler's body or a ``finally`` block
       with no ``def``/``lambda`` in between (a class body does not stop it);
    2. ``_in_signal_handler``: it sits (at any depth) in a lambda given as the second
       positional argument (``*x``/``**x`` counted as libcst does) of a ``signal``/
       ``add_signal_handler`` call, or its function (not in a lambda) is reached by calls, by
       name, from a function named in that argument (``resolve_function``: a name,
       ``self.m``/``Cls.m``, ``partial(f)``; then ``reachable`` over ``callees``).

    The exclusions (``child_process_reason``, ``_in_deadline_timer``) are not used: keeping a
    file is always sound."""
    exits = {id(c) for c in tree.all_calls() if tree.may_call_any(c, ("os._exit",))}
    if not exits:
        return False
    # 1. an except handler's body or a finally block, up to the innermost def/lambda
    blocks = [h.body for h in tree.handlers]
    blocks += [n.finalbody for n in walk(tree.module) if type(n) in TRYS and n.finalbody]
    if any(type(n) is ast.Call and id(n) in exits for body in blocks for n in walk_within(body, (*DEFS, ast.Lambda))):
        return True
    # 2. a signal handler and what it calls
    names: set[str] = set()
    for _call, args in tree.signal_handler_installs():
        handler = args[1]
        if type(handler) is ast.Lambda:
            if any(type(n) is ast.Call and id(n) in exits for n in ast.walk(handler)):
                return True
            continue
        names |= identifiers(handler)
    # the handler's function and what it calls, by the names spelled in each callee (lambdas'
    # calls too: the facts' callees follow them), with an os._exit outside a lambda
    reached = tree.reached_by_name(names, lambda fn: {n for c, _, _ in fn.calls for n in identifiers(c.func)})
    return any(not in_lambda and id(c) in exits for fn in reached for c, _, in_lambda in fn.calls)
