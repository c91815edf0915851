from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import positional
from shutdown_lint.ast_engine.facts import same_logical_line
from shutdown_lint.prefilter.words import All, Word
from shutdown_lint.facts import FunctionInfo, names_in
from shutdown_lint.rule import Fix, Invalid, Replace, Rule

from ._vocabulary import identifier_words
from .shd101_gather_without_taskgroup import _Ast as _GatherAst

_WATCHED = {"signal.SIGINT": "SIGINT", "signal.SIGTERM": "SIGTERM"}
_IGNORE = "signal.SIG_IGN"
#: Words of an awaited method that may wait on someone else: ``await x.close()``.
HANG_WORDS = frozenset({"close", "aclose", "shutdown", "join", "wait", "stop", "cleanup", "destroy", "terminate",
                        "drain", "disconnect", "finish", "teardown"})
#: Blocking methods (any receiver) that wait without a bound unless given a timeout.
BLOCKING_METHODS = frozenset({"join", "wait", "communicate", "shutdown"})
#: Blocking calls by qualified name (network, Ray, torch.distributed), unbounded without a timeout.
BLOCKING_CALLS = frozenset({
    "ray.get", "ray.wait", "ray.shutdown", "torch.distributed.destroy_process_group", "torch.distributed.barrier",
    "urllib.request.urlopen", "socket.create_connection", "requests.get", "requests.post", "requests.put",
    "requests.delete", "requests.request", "httpx.get", "httpx.post", "subprocess.run", "subprocess.call",
    "subprocess.check_call", "subprocess.check_output",
})
#: Calls a SIG_IGN right before is SHD401's business (the run it protects).
PROTECTED_CALLS = frozenset({
    "asyncio.run", "asyncio.Runner.run", "asyncio.AbstractEventLoop.run_until_complete",
    "asyncio.AbstractEventLoop.run_forever", "uvloop.run", "anyio.run", "ray.cancel",
})
_PROTECTED_METHODS = frozenset({"run_until_complete", "run_forever"})


@dataclass
class _Ignore:
    call: cst.Call
    signals: tuple[str, ...]
    stmt: Any  # the statement when it is only this call (libcst's SimpleStatementLine; on ast the Expr)


class _Decide:
    """What SHD406 decides, on either tree (``SignalIgnoredUntilExit``: libcst; ``_Ast``:
    ``ast``): an ignore never restored before a call that can hang, one report per run of
    ignores, the message. The tree answers ``_ignore``, ``_restored``, ``_protected``,
    ``_can_hang``, ``_run_of``, ``_fix`` and ``_callee_text``."""

    def _signal_name(self, expr, at) -> Optional[str]:
        q = self.facts.qualified_name(expr, at)
        if q is None:
            return None
        return q.replace("signal.Signals.", "signal.").replace("signal.Handlers.", "signal.")

    def _check(self, fn: Optional[FunctionInfo], calls: Sequence) -> None:
        flagged: set[int] = set()  # statements already covered by a report
        for i, call in enumerate(calls):
            ignore = self._ignore(call)
            if ignore is None:
                continue
            rest = calls[i + 1:]
            if self._restored(rest, ignore.signals) or self._protected(rest):
                continue
            hang = next((c for c in rest if self._can_hang(c)), None)
            if hang is None:
                continue
            run = self._run_of(ignore, calls, i)
            if any(id(r.call) in flagged for r in run):
                continue
            flagged.update(id(r.call) for r in run)
            signals = sorted({s for r in run for s in r.signals})
            text = _truncated(self._callee_text(hang))
            self.report(
                call,
                f"{' and '.join(signals)} ignored and never restored before `{text}()`, which can hang: "
                f"then only SIGKILL ends the process (Ctrl+C and a scheduler's SIGTERM are lost, and no "
                f"cleanup runs); restore the previous handler in a `finally` before it, or bound it",
                fix=self._fix(run, hang),
            )


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD406 on ``ast`` (``ast_engine``): the same decisions (``_Decide``); the tree's answers
    read from ``ast``: positional arguments as libcst's (``*a``, ``**k``), ``False`` as a
    constant, string receivers (bytes and f-strings too), ``async def``/``async for`` as libcst's
    ``FunctionDef``/``For``, libcst's statements (an ignore alone on its line: not ``a; b``, not
    a body on its header's line; the hang's statement from the start of its line), the
    callee's text as ``cst.Module([]).code_for_node``."""

    def visit_Module(self, node: ast.Module) -> None:
        self._check(None, self.facts.module_calls)

    def visit_FunctionDef(self, node: ast.AST) -> None:
        fn = self.facts.function_of(node)
        if fn is not None:
            self._check(fn, fn.calls)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _callee_text(self, call: ast.Call) -> str:
        return _GatherAst._code(self, call.func)

    def _alone(self, stmt: ast.stmt) -> Optional[list]:
        """The body holding ``stmt`` when ``stmt`` is a libcst line of its own (a
        ``SimpleStatementLine`` of one statement), else None."""
        if not self.facts.simple_statement_line(stmt):
            return None
        body = _body_of(self.facts.parent(stmt), stmt)
        if body is None:
            return None
        k = next(i for i, s in enumerate(body) if s is stmt)
        if k > 0 and same_logical_line(self.facts, body[k - 1], stmt):
            return None
        if k + 1 < len(body) and same_logical_line(self.facts, stmt, body[k + 1]):
            return None
        return body

    def _ignore(self, call: ast.Call) -> Optional[_Ignore]:
        if self.facts.call_name(call) != "signal.signal":
            return None
        args = positional(call)
        if len(args) != 2 or self._signal_name(args[1], call) != _IGNORE:
            return None
        sig = self._signal_name(args[0], call)
        if sig in _WATCHED:
            signals: tuple[str, ...] = (_WATCHED[sig],)
        elif type(args[0]) is ast.Name:
            signals = self._loop_signals(call, args[0].id)
            if not signals:
                return None
        else:
            return None
        parent = self.facts.parent(call)
        stmt = parent if type(parent) is ast.Expr and self._alone(parent) is not None else None
        return _Ignore(call, signals, stmt)

    def _loop_signals(self, call: ast.Call, var: str) -> tuple[str, ...]:
        for anc in self.facts.ancestors(call):
            t = type(anc)
            if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
                return ()
            if t in (ast.For, ast.AsyncFor) and type(anc.target) is ast.Name and anc.target.id == var:
                if type(anc.iter) not in (ast.Tuple, ast.List):
                    return ()
                names = {self._signal_name(el.value if type(el) is ast.Starred else el, anc) for el in anc.iter.elts}
                return tuple(sorted(_WATCHED[n] for n in names if n in _WATCHED))
        return ()

    def _restored(self, calls: Sequence[ast.Call], signals: tuple[str, ...]) -> bool:
        for call in calls:
            name = self.facts.call_name(call) or ""
            func = call.func
            is_loop_handler = name.endswith("add_signal_handler") or (
                type(func) is ast.Attribute and func.attr == "add_signal_handler")
            if name != "signal.signal" and not is_loop_handler:
                continue
            args = positional(call)
            if len(args) < 2:
                continue
            if not is_loop_handler and self._signal_name(args[1], call) == _IGNORE:
                continue
            sig = self._signal_name(args[0], call)
            if sig in _WATCHED and _WATCHED[sig] in signals:
                return True
            if sig is None or not sig.startswith("signal."):
                return True
        return False

    def _protected(self, calls: Sequence[ast.Call]) -> bool:
        for call in calls:
            if self.facts.call_name(call) in PROTECTED_CALLS:
                return True
            func = call.func
            if type(func) is ast.Attribute and func.attr in _PROTECTED_METHODS:
                return True
        return False

    def _can_hang(self, call: ast.Call) -> bool:
        if any(k.arg == "timeout" for k in call.keywords):
            return False
        if self.facts.in_lambda(call):
            return False
        name = self.facts.call_name(call)
        func = call.func
        if name in BLOCKING_CALLS:
            if name == "ray.get" and len(positional(call)) > 1:
                return False
            return True
        if type(func) is not ast.Attribute:
            return False
        attr = func.attr
        if self.facts.is_awaited(call):
            if name and name.startswith("asyncio.") and name.rsplit(".", 1)[-1] in ("wait_for", "sleep", "timeout"):
                return False
            return any(w in HANG_WORDS for w in identifier_words(attr))
        if attr in BLOCKING_METHODS:
            if attr == "shutdown" and any(k.arg == "wait" and type(k.value) is ast.Constant and k.value.value is False
                                          for k in call.keywords):
                return False
            if attr in ("join", "wait") and positional(call):
                return False
            receiver = func.value
            if attr == "join" and (type(receiver) is ast.JoinedStr or (
                    type(receiver) is ast.Constant and type(receiver.value) in (str, bytes))):
                return False
            return True
        return False

    def _run_of(self, ignore: _Ignore, calls: Sequence[ast.Call], i: int) -> list[_Ignore]:
        run = [ignore]
        if ignore.stmt is None:
            return run
        body = self._alone(ignore.stmt)
        idx = next(k for k, s in enumerate(body) if s is ignore.stmt)  # type: ignore[arg-type]
        for stmt in body[idx + 1:]:  # type: ignore[index]
            nxt = None
            if type(stmt) is ast.Expr and type(stmt.value) is ast.Call and self._alone(stmt) is not None:
                nxt = self._ignore(stmt.value)
            if nxt is None:
                break
            run.append(nxt)
        return run

    def _fix(self, run: list[_Ignore], hang: ast.Call) -> Optional[FixPlan]:
        if any(r.stmt is None or len(r.signals) != 1 for r in run):
            return None
        last = run[-1].stmt
        body = self._alone(last)
        start = next(k for k, s in enumerate(body) if s is last)  # type: ignore[arg-type]
        cur: Optional[ast.AST] = hang
        while cur is not None and not any(s is cur for s in body):  # type: ignore[union-attr]
            cur = self.facts.parent(cur)
        if cur is None:
            return None
        end = next(k for k, s in enumerate(body) if s is cur)  # type: ignore[arg-type]
        while end > 0 and same_logical_line(self.facts, body[end - 1], body[end]):  # libcst's line starts there
            end -= 1
        if end <= start + 1:
            return None
        return FixPlan.unsafe("Restore the previous handler in a `finally` before the call that can hang")


def _body_of(parent: Optional[ast.AST], stmt: ast.stmt) -> Optional[list]:
    for name in ("body", "orelse", "finalbody"):
        body = getattr(parent, name, None)
        if type(body) is list and any(s is stmt for s in body):
            return body
    return None


def _truncated(text: str) -> str:
    return text if len(text) <= 50 else text[:47] + "..."


class SignalIgnoredUntilExit(_Decide, Rule):
    """
    ## What it does
    Flags `signal.signal(SIGINT or SIGTERM, SIG_IGN)` that no later code of the same
    function restores (no `signal.signal(sig, <handler>)` for that signal after it, no
    `loop.add_signal_handler(sig, ...)`), followed in the same function by work that can
    hang: an `await` of a close/shutdown/join/wait/stop-like method, a blocking `.join()`,
    `.wait()`, `.communicate()` or `.shutdown()`, `ray.get`, `ray.shutdown`,
    `destroy_process_group`, `barrier`, a `requests`/`urllib`/`subprocess` call; each only
    when it has no `timeout`.

    Not flagged: a guarded window that restores the previous handler afterwards
    (`old = signal.signal(sig, SIG_IGN)` ... `signal.signal(sig, old)`, e.g. in a
    `finally`); an ignore with nothing that can hang after it (a worker initializer that
    ignores Ctrl+C for good, a handler that ignores a second SIGTERM and re-raises); an
    ignore followed by `asyncio.run()`/`run_until_complete()`/`ray.cancel()`: that is the
    call it protects, and SHD401 (early-signal-ignore) judges whether it comes too early.

    SHD401 is about an ignore set *before setup*, long ahead of the call it protects;
    this rule is about an ignore set *for the shutdown* and never undone, so the shutdown
    itself can no longer be interrupted.

    ## Why is this bad?
    A process that ignores SIGINT and SIGTERM can only be ended with SIGKILL. Code that
    ignores them "so the cleanup is not interrupted" and then awaits a close that waits on
    a dead peer, a thread join or a network call hangs with no way out but `kill -9`:
    Ctrl+C does nothing, a scheduler's SIGTERM is lost, and when the scheduler escalates
    to SIGKILL no cleanup runs at all, the part that had finished included.

    ## Example
    ```python
    async def run(self):
        try:
            await self.serve(stop_event)
        finally:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # "do not interrupt teardown"
            await self.router.close()                     # waits on a dead worker: kill -9 only
            await self.close()
    ```

    ## Use instead
    Protect only the part that must not be cut, restore the previous handler in a
    `finally`, and bound what can hang:

    ```python
    def shutdown(self):
        prev = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            self.save_checkpoint()          # must not be cut half way
        finally:
            signal.signal(signal.SIGTERM, prev)
        self.client.close()                 # SIGTERM can end it again
    ```

    ## Fix safety
    Offered when the ignore is a statement of its own (one signal), some statements sit
    between it and the first statement of the same block that can hang, and the rest is
    in that block: the ignore keeps the previous handler (`_prev_sigterm = signal.signal(
    ...)`), the statements in between go into a `try:` whose `finally:` restores it
    (`if _prev_sigterm is not None:`, since `signal.signal` returns None for a handler
    installed outside Python, and restoring None would raise `TypeError`), and the
    statement that can hang, and what follows, run with the previous handler again. No
    fix when the hanging call comes right after the ignore (bound it with a timeout, or
    drop the ignore).

    Unsafe. A run that gets no signal runs the same statements in the same order, with the
    same values and output, also when a statement of the window raises. But from the end
    of the window on (after an exception in it too) the program runs with the previous
    handler where the original left the signal ignored for good: a signal that arrives
    later ends work that would have finished, which is the point but reaches beyond the
    hazard's path (measured in tests/behaviour/test_shd406_signal_ignored_until_exit.py).
    See docs/fix-safety.md.

    ## Known limits
    - Only calls in the same function are seen: an ignore in a signal handler that raises
      `KeyboardInterrupt`, whose hanging cleanup then runs in `asyncio.run`'s shutdown, is
      not flagged.
    - A restore anywhere later in the function counts, even on another path.
    - Synchronous `.close()` is not counted as work that can hang (too many files).

    ## References
    - Python docs: `signal.signal`, `signal.SIG_IGN`; POSIX: ignored signals stay ignored
      across `exec`
    - Kubernetes: SIGTERM, then SIGKILL after `terminationGracePeriodSeconds`
    - SHD401 (early-signal-ignore)
    """

    code = "SHD406"
    name = "signal-ignored-until-exit"
    summary = "SIGINT/SIGTERM ignored for good before work that can hang: only SIGKILL can end it"
    triggers = ("SIG_IGN",)
    candidate = All(Word("SIG_IGN"), Word("signal"))
    facts_needed = ("imports", "functions", "calls", "parents")
    ast_check = _Ast

    valid = [
        # the guarded window: restored in a finally
        """
        import signal
        def shutdown(self):
            old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                self.save()
            finally:
                signal.signal(signal.SIGTERM, old)
            self.worker.join()
        """,
        # a worker initializer ignores Ctrl+C for good, with nothing that can hang after it
        """
        import signal
        def init_worker():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            setup_logging()
        """,
        # the protected run: SHD401's business
        """
        import asyncio, signal
        def main():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            asyncio.run(serve())
        """,
        # bounded waits
        """
        import asyncio, signal
        async def stop(self):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            await asyncio.wait_for(self.client.close(), timeout=10)
            self.thread.join(timeout=5)
        """,
        # a handler that ignores a second SIGTERM and re-raises (verifiers' pool workers)
        """
        import signal
        def on_sigterm(*_):
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            raise KeyboardInterrupt
        """,
        # SIGHUP is not a stop signal
        """
        import signal
        async def close(self):
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            await self.conn.close()
        """,
    ]
    invalid = [
        # verifiers' env server: the teardown cannot be interrupted
        Invalid(
            """
            import signal

            class EnvServer:
                async def run(self, stop_event):
                    try:
                        await self.serve(stop_event=stop_event)
                    finally:
                        # Ignore signals during cleanup to avoid interrupting teardown.
                        signal.signal(signal.SIGTERM, signal.SIG_IGN)
                        signal.signal(signal.SIGINT, signal.SIG_IGN)
                        await self.router.close()
                        await self.close()
            """,
            count=1,
            message_contains="SIGINT and SIGTERM",
        ),
        # a window with protected work in front of the hang: restore before it
        Invalid(
            """
            import signal
            import ray

            def shutdown(trainer, refs):
                # a checkpoint must not be cut half way
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # keep
                trainer.save_checkpoint()
                trainer.flush_metrics()
                ray.get(refs)
                ray.shutdown()
            """,
            fixed="""
            import signal
            import ray

            def shutdown(trainer, refs):
                # a checkpoint must not be cut half way
                _prev_sigterm = signal.signal(signal.SIGTERM, signal.SIG_IGN)  # keep
                try:
                    trainer.save_checkpoint()
                    trainer.flush_metrics()
                finally:
                    if _prev_sigterm is not None:
                        signal.signal(signal.SIGTERM, _prev_sigterm)
                ray.get(refs)
                ray.shutdown()
            """,
            message_contains="ray.get",
        ),
        # aliases, a thread join
        Invalid(
            """
            from signal import signal, SIGINT, SIG_IGN

            def stop(self):
                signal(SIGINT, SIG_IGN)
                self.running = False
                self.pump.join()
            """,
            fixed="""
            from signal import signal, SIGINT, SIG_IGN

            def stop(self):
                _prev_sigint = signal(SIGINT, SIG_IGN)
                try:
                    self.running = False
                finally:
                    if _prev_sigint is not None:
                        signal(SIGINT, _prev_sigint)
                self.pump.join()
            """,
        ),
        # a signal handler that ignores both and waits on a process: no fix (nothing in between)
        Invalid(
            """
            import signal, sys

            def on_term(signum, frame):
                for sig in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(sig, signal.SIG_IGN)
                server.wait()
                sys.exit(0)

            signal.signal(signal.SIGTERM, on_term)
            """,
        ),
    ]

    # ------------------------------------------------------------------ visitors
    def visit_Module(self, node: cst.Module) -> None:
        self._check(None, self.facts.module_calls)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        fn = self.facts.function_of(node)
        if fn is not None:
            self._check(fn, fn.calls)

    # ------------------------------------------------------------------ recognisers
    @staticmethod
    def _callee_text(call: cst.Call) -> str:
        return cst.Module([]).code_for_node(call.func)

    def _ignore(self, call: cst.Call) -> Optional[_Ignore]:
        if self.facts.call_name(call) != "signal.signal":
            return None
        args = [a.value for a in call.args if a.keyword is None]
        if len(args) != 2 or self._signal_name(args[1], call) != _IGNORE:
            return None
        sig = self._signal_name(args[0], call)
        if sig in _WATCHED:
            signals: tuple[str, ...] = (_WATCHED[sig],)
        elif isinstance(args[0], cst.Name):
            signals = self._loop_signals(call, args[0].value)
            if not signals:
                return None
        else:
            return None
        parent = self.facts.parent(call)
        stmt = self.facts.parent(parent) if isinstance(parent, cst.Expr) else None
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
            stmt = None
        return _Ignore(call, signals, stmt)

    def _loop_signals(self, call: cst.Call, var: str) -> tuple[str, ...]:
        """``for sig in (SIGINT, SIGTERM): signal.signal(sig, SIG_IGN)``."""
        for anc in self.facts.ancestors(call):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return ()
            if isinstance(anc, cst.For) and isinstance(anc.target, cst.Name) and anc.target.value == var:
                if not isinstance(anc.iter, (cst.Tuple, cst.List)):
                    return ()
                names = {self._signal_name(el.value, anc) for el in anc.iter.elements}
                return tuple(sorted(_WATCHED[n] for n in names if n in _WATCHED))
        return ()

    def _restored(self, calls: Sequence[cst.Call], signals: tuple[str, ...]) -> bool:
        for call in calls:
            name = self.facts.call_name(call) or ""
            func = call.func
            is_loop_handler = name.endswith("add_signal_handler") or (
                isinstance(func, cst.Attribute) and func.attr.value == "add_signal_handler")
            if name != "signal.signal" and not is_loop_handler:
                continue
            args = [a.value for a in call.args if a.keyword is None]
            if len(args) < 2:
                continue
            if not is_loop_handler and self._signal_name(args[1], call) == _IGNORE:
                continue
            sig = self._signal_name(args[0], call)
            if sig in _WATCHED and _WATCHED[sig] in signals:
                return True
            if sig is None or not sig.startswith("signal."):  # a variable: may be ours
                return True
        return False

    def _protected(self, calls: Sequence[cst.Call]) -> bool:
        for call in calls:
            if self.facts.call_name(call) in PROTECTED_CALLS:
                return True
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value in _PROTECTED_METHODS:
                return True
        return False

    def _can_hang(self, call: cst.Call) -> bool:
        if any(a.keyword is not None and a.keyword.value == "timeout" for a in call.args):
            return False
        if self.facts.in_lambda(call):
            return False
        name = self.facts.call_name(call)
        func = call.func
        if name in BLOCKING_CALLS:
            if name == "ray.get" and len([a for a in call.args if a.keyword is None]) > 1:
                return False  # ray.get(refs, timeout) positionally
            return True
        if not isinstance(func, cst.Attribute):
            return False
        attr = func.attr.value
        if self.facts.is_awaited(call):
            if name and name.startswith("asyncio.") and name.rsplit(".", 1)[-1] in ("wait_for", "sleep", "timeout"):
                return False
            return any(w in HANG_WORDS for w in identifier_words(attr))
        if attr in BLOCKING_METHODS:
            if attr == "shutdown" and any(a.keyword is not None and a.keyword.value == "wait"
                                          and isinstance(a.value, cst.Name) and a.value.value == "False"
                                          for a in call.args):
                return False
            if attr in ("join", "wait") and [a for a in call.args if a.keyword is None]:
                # ``t.join(5)``, ``ev.wait(1.0)``: a positional timeout; ``" ".join(x)``: a string
                return False
            if attr == "join" and isinstance(func.value, (cst.SimpleString, cst.FormattedString,
                                                          cst.ConcatenatedString)):
                return False
            return True
        return False

    def _run_of(self, ignore: _Ignore, calls: Sequence[cst.Call], i: int) -> list[_Ignore]:
        """The ignore and the ignore statements right after it in the same block."""
        run = [ignore]
        if ignore.stmt is None:
            return run
        block = self.facts.parent(ignore.stmt)
        body = getattr(block, "body", None)
        if not isinstance(body, (list, tuple)):
            return run
        idx = next((k for k, s in enumerate(body) if s is ignore.stmt), None)
        if idx is None:
            return run
        for stmt in body[idx + 1:]:
            nxt = None
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(
                    stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call):
                nxt = self._ignore(stmt.body[0].value)
            if nxt is None:
                break
            run.append(nxt)
        return run

    # ------------------------------------------------------------------ fix
    def _fix(self, run: list[_Ignore], hang: cst.Call) -> Optional[Fix]:
        if any(r.stmt is None or len(r.signals) != 1 for r in run):
            return None
        first, last = run[0].stmt, run[-1].stmt
        block = self.facts.parent(first)
        body = list(getattr(block, "body", ()))
        start = next((k for k, s in enumerate(body) if s is last), None)
        hang_stmt = self._statement_in(body, hang)
        if start is None or hang_stmt is None:
            return None
        end = body.index(hang_stmt)
        window = body[start + 1:end]
        if not window:
            return None
        fn = self.facts.enclosing_function(first)
        taken = names_in(fn.node) if fn is not None else names_in(self.facts.module)
        edits = []
        restores = []
        for r in run:
            var = _fresh(f"_prev_{r.signals[0].lower()}", taken)
            taken.add(var)
            call = r.call
            sig_arg = [a for a in call.args if a.keyword is None][0]
            assign = cst.Assign(targets=[cst.AssignTarget(cst.Name(var))], value=call)
            edits.append(Replace(r.stmt.body[0], assign))
            restore = cst.SimpleStatementLine([cst.Expr(cst.Call(
                func=call.func, args=[cst.Arg(sig_arg.value), cst.Arg(cst.Name(var))]))])
            # None: the previous handler was not installed from Python; signal.signal(sig, None)
            # would raise TypeError in the finally and replace the exception in flight (audit 5.2)
            restores.append(cst.If(
                test=cst.Comparison(cst.Name(var), [cst.ComparisonTarget(cst.IsNot(), cst.Name("None"))]),
                body=cst.IndentedBlock(body=[restore]),
            ))
        inner = [window[0].with_changes(leading_lines=())] + list(window[1:]) if hasattr(
            window[0], "leading_lines") else list(window)
        guarded = cst.Try(
            body=cst.IndentedBlock(body=inner),
            finalbody=cst.Finally(body=cst.IndentedBlock(body=restores)),
            leading_lines=getattr(window[0], "leading_lines", ()),
        )
        edits.append(Replace(window[0], guarded))
        for stmt in window[1:]:
            edits.append(Replace(stmt, cst.RemovalSentinel.REMOVE))
        return Fix.unsafe(*edits, message="Restore the previous handler in a `finally` before the call that can hang")

    def _statement_in(self, body: list, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
        ids = {id(s) for s in body}
        cur: Optional[cst.CSTNode] = node
        while cur is not None and id(cur) not in ids:
            cur = self.facts.parent(cur)
        return cur  # type: ignore[return-value]


def _fresh(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name
