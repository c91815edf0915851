from __future__ import annotations

import ast
from typing import Iterator, Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments, positional
from shutdown_lint.ast_engine.exit_paths import exit_paths_of
from shutdown_lint.ast_engine.facts import body_holding, same_logical_line
from shutdown_lint.ast_engine.walk import source_order
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter import ast_tree as T
from shutdown_lint.facts import RAY_REMOTE
from shutdown_lint.facts.exit_paths import EXIT_FUNCTIONS
from shutdown_lint.rule import Fix, InsertAfter, InsertBefore, Invalid, Option, Replace, Rule

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import RAY_BOUNDED_WAIT_CALLS, RAY_GUARD_WAIT_CALLS
from .shd403_ray_get_orphans_on_interrupt import _OnAst, calls_in, is_interrupt_handler

_BROAD = frozenset({"builtins.Exception", "builtins.BaseException"})


_WAIT_MESSAGE = "Wait for the cancelled work with `runtime_guard.ray.wait_for_cleanup()`"
_REPLACE_MESSAGE = "Replace with `runtime_guard.ray.cancel_and_wait()`"


class _Decide:
    """What SHD501 decides about a call, on either tree (the rule: libcst; ``_Ast``: ``ast``).
    Only the reads of the tree are written twice (below ``# the tree's answers`` in each
    subclass): ``forced``, ``ref_args``, ``statement_line`` (the cancel's simple statement line,
    or None), ``anchor`` (a node of a line to ask the facts about), ``later_lines`` (the lines
    and compound statements after one in its block; None: not in a block), ``step_out`` (the
    owner of a line's block and its kind), ``chain_top``, ``try_of``, ``finally_block``,
    ``loop_body``, ``calls_of`` (a line's or block's calls, nested defs and lambdas left out),
    ``small_statements``, ``is_raise``, ``is_return``, ``exit_call``, ``is_exit``,
    ``handlers_around``, ``is_interrupt_handler``, and for the fix ``loop_over``,
    ``is_statement``, ``extra_options``. A handler's types: the facts' ``caught_types``."""

    def _check(self, node) -> None:
        f = self.facts
        if f.call_name(node) != "ray.cancel" or self.forced(node) or f.in_lambda(node):
            return
        ref_args = self.ref_args(node)
        if not ref_args:
            return
        fn = f.enclosing_function(node)
        remote_entry = None
        if fn is not None and f.runs_in_ray_worker(fn):
            # in a Ray task or actor only an exception raised out of the remote method matters:
            # the driver waiting on it gets the error and exits (verl's TaskRunner pattern)
            remote_entry = self._remote_entry(fn)
            if remote_entry is None:
                return
        stmt = self.statement_line(node)
        if stmt is None:
            return
        outcome = self._after(stmt, in_worker=remote_entry is not None)
        if outcome is None:
            return
        what, exit_stmt = outcome
        if remote_entry is not None:
            message = (f"`ray.cancel()` is followed by {what} out of the Ray remote method `{remote_entry.name}()` "
                       "without waiting: the driver waiting on it gets the error and exits while the cancelled "
                       "work is still running its cleanup, which is then killed half-way")
        else:
            message = (f"`ray.cancel()` is followed by {what} without waiting: the driver exits while the "
                       "worker is still running its cleanup, which is then killed half-way")
        self.report(node, message, fix=self._fix(node, stmt, exit_stmt, ref_args[0]))

    def _remote_entry(self, fn, depth: int = 0):
        """The remote method/function an exception raised in ``fn`` leaves through: the
        outermost of ``fn`` and its same-module callers (calls not inside a ``try``) that is
        remote (``run()`` for ``run() -> self._loop()``)."""
        if depth <= 3:
            for node, kind in self.facts.references(fn):
                if kind not in ("call", "await") or any(t.handlers for t in self.facts.enclosing_trys(node)):
                    continue
                caller = self.facts.enclosing_function(node)
                if caller is not None and caller is not fn:
                    found = self._remote_entry(caller, depth + 1)
                    if found is not None:
                        return found
        return fn if RAY_REMOTE in self.facts.contexts(fn) else None

    # ------------------------------------------------------------------ control flow
    def _after(self, stmt, in_worker: bool = False):
        """What runs after the line ``stmt``: None (a wait, or code that carries on) or
        (description, exit statement or None for the end of the driver). ``in_worker``: only a
        ``raise`` that leaves the function counts."""
        start = self.anchor(stmt)
        in_handler = self._in_handler(start)
        # `raise`/`return` end the process only on an interrupt path or in driver code; in a
        # server coroutine (`except CancelledError: ray.cancel(ref); raise`) the process lives on
        ends_process = in_worker or self._in_interrupt_handler(start) or self.facts.runs_in_driver(start)
        cur = stmt
        while True:
            later = self.later_lines(cur)
            if later is None:
                return None  # a one-line suite such as `if x: ray.cancel(r)`
            for s in later:
                if self._waits(s):
                    return None
                exit_kind = self._exit_kind(s, in_handler, ends_process, in_worker)
                if exit_kind is not None:
                    if exit_kind == "`raise`" and self._caught_in_function(s):
                        return None  # an outer `except Exception:` of this function handles it
                    return exit_kind, s
            kind, owner = self.step_out(cur)
            if kind == "module":
                return ("the end of the driver", None) if self.facts.runs_in_driver(start) else None
            if kind == "def":
                if in_worker:
                    return None
                fn = self.facts.function_of(owner)
                if in_handler and fn is not None and self._is_entry(fn):
                    return "the end of the driver", None
                return None
            if kind in ("handler", "finally"):
                try_stmt = self.try_of(owner)
                finalbody = self.finally_block(try_stmt)
                if kind == "handler" and finalbody is not None and self._waits(finalbody):
                    return None
                cur = try_stmt
            elif kind == "loop":
                if self._waits(self.loop_body(owner)):
                    return None  # a polling loop comes back to its wait
                cur = self.chain_top(owner)  # the loop itself
            elif kind == "compound":
                # climb an if/elif/else chain (and a loop's or try's else) to its statement
                cur = self.chain_top(owner)
            else:
                return None
            if cur is None:
                return None

    def _in_interrupt_handler(self, node) -> bool:
        return any(h is None or self.is_interrupt_handler(h) for h in self.handlers_around(node))

    def _in_handler(self, node) -> bool:
        return any(True for _ in self.handlers_around(node))

    def _waits(self, node) -> bool:
        for call in self.calls_of(node):
            name = self.facts.call_name(call)
            if name in RAY_BOUNDED_WAIT_CALLS or name in RAY_GUARD_WAIT_CALLS:
                return True
        return False

    def _caught_in_function(self, stmt) -> bool:
        """A ``raise`` at ``stmt`` is caught by a broad handler of an enclosing ``try`` of the
        same function (it does not leave here)."""
        for t in self.facts.enclosing_trys(self.anchor(stmt)):
            for h in t.handlers:
                names = self.facts.caught_types(h)
                if names is None or any(self.facts.qualified_name(n, h) in _BROAD for n in names):
                    return True
        return False

    def _exit_kind(self, stmt, in_handler: bool, ends_process: bool, in_worker: bool = False) -> Optional[str]:
        smalls = self.small_statements(stmt)
        if smalls is None:
            return None
        for small in smalls:
            if self.is_raise(small) and ends_process:
                return "`raise`"
            if in_worker:
                continue
            if self.is_return(small) and in_handler and ends_process:
                return "`return`"
            call = self.exit_call(small)
            if call is not None:
                name = self.facts.call_name(call)
                if self.is_exit(call):  # the shared exit-path vocabulary
                    return f"`{name.split('.')[-1] if name.startswith('builtins.') else name}()`"
        return None

    def _is_entry(self, fn) -> bool:
        if fn.scope is None and fn.cls is None and fn.name == "main":
            return True
        return any(self.facts.in_main_guard(n) for n, kind in self.facts.references(fn) if kind in ("call", "await"))

    # ------------------------------------------------------------------ the fix's shape
    def _fix_kind(self, call, stmt, ref):
        """Which fix the cancel gets: ("loop", (the ``for``, the refs it walks)): wait for all
        of them before the exit; ("replace", None): ``cancel_and_wait``; ("after", None): a wait
        right after the cancel (it has other options); (None, None): no fix."""
        found = self.loop_over(stmt, ref)
        if found is not None:
            # `for ref in refs: ray.cancel(ref)`: wait for all of them once, before the exit
            return ("loop", found) if found[1] is not None else (None, None)
        if not self.is_statement(call, stmt):
            return None, None
        return ("after", None) if self.extra_options(call) else ("replace", None)


_DEFS_AND_LAMBDAS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_TRYS = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
#: statements with a block: never on a line with another statement
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, *_LOOPS, ast.With, ast.AsyncWith, *_TRYS,
             *((ast.Match,) if hasattr(ast, "Match") else ()))


class _Ast(_Decide, AstCheck):
    """SHD501 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers
    read from ``ast``; the fix's plan, never its edits.

    libcst's ``SimpleStatementLine`` (``a; b`` on one logical line) is several ``ast``
    statements: a *line* here is the list of them (a compound statement: a list of one), so a
    wait anywhere on a later line stops the search before a ``raise`` earlier on it, and a
    ``raise`` on the cancel's own line is not after it, as on libcst. libcst's ``Else`` and
    ``Finally`` are fields here (``orelse``, ``finalbody``): ``step_out`` reads which field
    holds a line; an ``else`` of a ``try``/``except*`` stops the climb, as libcst's chain climb
    (which stops at a ``TryStar``) leaves it outside any block."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    def _fix(self, call: ast.Call, stmt: list, exit_stmt, ref) -> Optional[FixPlan]:
        kind, _ = self._fix_kind(call, stmt, ref)
        if kind is None:
            return None
        return FixPlan.unsafe(_REPLACE_MESSAGE if kind == "replace" else _WAIT_MESSAGE)

    # the tree's answers (ast)
    @staticmethod
    def forced(call: ast.Call) -> bool:
        """The first ``force=`` keyword is there and not the literal ``False`` (libcst: the
        ``Name`` ``False``; ``**kw`` names no keyword)."""
        for k in call.keywords:
            if k.arg == "force":
                return not (type(k.value) is ast.Constant and k.value.value is False)
        return False

    @staticmethod
    def ref_args(call: ast.Call) -> list:
        return positional(call)

    def statement_line(self, node: ast.Call) -> Optional[list]:
        """The statements of libcst's ``SimpleStatementLine`` holding ``node`` (``a; b``: both),
        or None when libcst's enclosing statement is compound (a body on its header's line)."""
        if not self.facts.simple_statement_line(node):
            return None
        stmt = self.facts.enclosing_statement(node)
        body, i = body_holding(self.facts.parent(stmt), stmt)
        if body is None:
            return [stmt]
        first = last = i
        while first > 0 and self._joined(body[first - 1], body[first]):
            first -= 1
        while last + 1 < len(body) and self._joined(body[last], body[last + 1]):
            last += 1
        return body[first:last + 1]

    def _joined(self, a: ast.stmt, b: ast.stmt) -> bool:
        return type(a) not in _COMPOUND and type(b) not in _COMPOUND and same_logical_line(self.facts, a, b)

    @staticmethod
    def anchor(line: list) -> ast.stmt:
        return line[0]

    def later_lines(self, line: list) -> Optional[list]:
        body, i = body_holding(self.facts.parent(line[-1]), line[-1])
        if body is None:
            return None
        out: list = []
        for st in body[i + 1:]:
            if out and self._joined(out[-1][-1], st):
                out[-1].append(st)
            else:
                out.append([st])
        return out

    def step_out(self, line: list) -> tuple[str, Optional[ast.AST]]:
        st = line[0]
        owner = self.facts.parent(st)
        t = type(owner)
        if t is ast.Module:
            return "module", None
        if t in (ast.FunctionDef, ast.AsyncFunctionDef):
            return "def", owner
        if t is ast.ExceptHandler:
            return "handler", owner
        if t in _TRYS:
            if any(s is st for s in owner.finalbody):
                return "finally", owner
            if t is not ast.Try and any(s is st for s in owner.orelse):
                return "other", owner  # libcst's climb stops at the ``Else`` of a ``TryStar``: no block holds it
            return "compound", owner
        if t in _LOOPS:
            return ("loop" if any(s is st for s in owner.body) else "compound"), owner
        if t in (ast.If, ast.With, ast.AsyncWith):
            return "compound", owner
        return "other", owner  # a class body, a ``match`` case

    @staticmethod
    def chain_top(owner: ast.AST) -> list:
        return [owner]  # an ``elif`` is the only statement of its ``orelse``: climbed one by one, the same

    def try_of(self, owner: ast.AST) -> list:
        return [owner if type(owner) in _TRYS else self.facts.parent(owner)]

    @staticmethod
    def finally_block(try_line: list) -> Optional[list]:
        return try_line[0].finalbody or None

    @staticmethod
    def loop_body(loop: ast.AST) -> list:
        return loop.body  # type: ignore[attr-defined]

    @staticmethod
    def calls_of(stmts: list) -> list[ast.Call]:
        return [n for n in source_order(stmts, _DEFS_AND_LAMBDAS) if type(n) is ast.Call]

    @staticmethod
    def small_statements(line: list) -> Optional[list]:
        return None if type(line[0]) in _COMPOUND else line

    @staticmethod
    def is_raise(small: ast.stmt) -> bool:
        return type(small) is ast.Raise

    @staticmethod
    def is_return(small: ast.stmt) -> bool:
        return type(small) is ast.Return

    @staticmethod
    def exit_call(small: ast.stmt) -> Optional[ast.Call]:
        return small.value if type(small) is ast.Expr and type(small.value) is ast.Call else None

    def is_exit(self, call: ast.Call) -> bool:
        return exit_paths_of(self.facts).is_exit(call)

    def handlers_around(self, node: ast.AST) -> Iterator[Optional[ast.AST]]:
        """As libcst's: the ``except`` handlers whose body holds ``node`` and (None) the
        ``finally`` blocks, up to its def, class or lambda, innermost first."""
        child = node
        for anc in self.facts.ancestors(node):
            t = type(anc)
            if t in _SCOPES:
                return
            if t is ast.ExceptHandler:
                yield anc
            elif t in _TRYS and any(s is child for s in anc.finalbody):
                yield None
            child = anc

    def is_interrupt_handler(self, handler: ast.ExceptHandler) -> bool:
        return _OnAst(self.facts).is_interrupt_handler(handler)

    @staticmethod
    def is_statement(call: ast.Call, line: list) -> bool:
        return len(line) == 1 and type(line[0]) is ast.Expr and line[0].value is call

    @staticmethod
    def extra_options(call: ast.Call) -> bool:
        return any(k.arg is not None and k.arg != "force" for k in call.keywords)

    def loop_over(self, line: list, ref: ast.AST) -> Optional[tuple[ast.AST, Optional[ast.AST]]]:
        """libcst's ``loop_over``: the ``for`` whose body holds the line, binding ``ref``, and the
        refs it walks (the node to name them by; None when they cannot be named again)."""
        st = line[0]
        loop = self.facts.parent(st)
        if type(loop) not in (ast.For, ast.AsyncFor) or not any(s is st for s in loop.body) \
                or type(ref) is not ast.Name:
            return None
        target, it = loop.target, loop.iter
        if type(target) is ast.Name and target.id == ref.id:
            return loop, it if type(it) in (ast.Name, ast.Attribute) else None
        if type(target) is ast.Tuple and len(target.elts) == 2 and type(it) is ast.Call:
            second = target.elts[1]
            if type(second) is ast.Starred:
                second = second.value  # libcst's ``StarredElement.value``
            if type(second) is ast.Name and second.id == ref.id:
                func = it.func
                args = arguments(it)
                if type(func) is ast.Name and func.id == "enumerate" and len(args) == 1 \
                        and type(args[0].value) in (ast.Name, ast.Attribute):
                    return loop, args[0].value
                if type(func) is ast.Attribute and func.attr == "items" and not args \
                        and type(func.value) in (ast.Name, ast.Attribute):
                    return loop, it
                return loop, None
        return None


class CancelWithoutCleanupWait(_Decide, Rule):
    """
    ## What it does
    Flags `ray.cancel(ref)` (cooperative: not `force=True`) that is followed, in the same
    handler, by `raise`, `sys.exit()`, `os._exit()`, `exit()`, a `return` from an
    `except`/`finally` block, or the end of the driver (the end of `main()`, of a function
    the `__main__` block calls, or of the script), with no wait for the cancelled work in
    between: no `ray.wait(...)`, `ray.get(...)` or `runtime_guard.ray.cancel_and_wait(...)`.

    `raise` and `return` count on an interrupt path (`except KeyboardInterrupt`,
    `except BaseException`, bare `except`, `finally`) or in driver code; elsewhere (a server
    coroutine forwarding its own cancellation) the process lives on.

    In a Ray task or actor the worker process outlives the call, so only a `raise` counts
    there: one that leaves the remote method (directly, or through same-module calls outside
    any `try`). The driver waiting on that method gets the error and usually exits at once
    (verl's `TaskRunner.run()`: `for f in futures: ray.cancel(f)` then `raise`).

    Not flagged: `ray.cancel(ref, force=True)` (that kills the worker on purpose, without
    cleanup), a cancel followed by any wait, a cancel whose code goes on running (a
    scheduler dropping stragglers and continuing), a `raise` caught by an enclosing
    `except Exception:` of the same function (that handler decides), and returns or exits
    in Ray tasks and actors.

    Options: `cleanup_timeout` (number, default 30) is the `timeout=` the fix writes.

    ## Why is this bad?
    `ray.cancel(force=False)` only *asks* the worker to stop: it raises
    `KeyboardInterrupt` in the task (or cancels the actor's coroutine), whose `finally`
    blocks then delete sandboxes, release leases and close sessions. That takes time. If
    the driver exits right after the call, its job ends and Ray kills the worker in the
    middle of that cleanup; at 50 sandboxes, most leak (SkyRL #1160: "the driver exits
    immediately after calling cancel").

    ## Example
    ```python
    try:
        ray.get(ref)
    except KeyboardInterrupt:
        ray.cancel(ref)
        raise  # the driver exits while the worker is still cleaning up
    ```

    ## Use instead
    ```python
    import runtime_guard

    try:
        ray.get(ref)
    except KeyboardInterrupt:
        runtime_guard.ray.cancel_and_wait(ref, timeout=30)
        raise
    ```

    ## Fix safety
    Unsafe, by the contract (a fix is safe only if the program does exactly what it did on
    every path where the hazard does not occur). Only the exit path after the cancel changes,
    but there it changes even when no cleanup is lost: when the cancelled work does not stop
    (a task blocked in C code that never sees the `KeyboardInterrupt`, an actor method that
    swallows it), the driver now waits up to `timeout` seconds before the exit that used to
    be immediate; and a Ctrl+C during that new wait ends the driver with `KeyboardInterrupt`
    there, instead of the exit status the program chose. When the work has ended or ends its
    cleanup, the exit is delayed by just that cleanup.

    What the fix writes: a plain `ray.cancel(ref)` statement becomes
    `runtime_guard.ray.cancel_and_wait(ref, timeout=30)`, which cancels cooperatively, exactly
    like `ray.cancel(ref)`, then waits with `ray.wait` for up to `timeout` seconds for the work
    to finish its cleanup. It cancels once: refs that a runtime_guard helper already cancelled
    (an interrupted `runtime_guard.ray.interruptible_get` in the `try`'s body) are only waited
    for, since a second `ray.cancel` raises a second `KeyboardInterrupt` in the task and cuts
    its cleanup short. A cancel inside a `for ref in refs:` loop (also
    `for i, ref in enumerate(refs)` and `for key, ref in d.items()`, which wait on
    `d.values()`) gets a `runtime_guard.ray.wait_for_cleanup(refs, timeout=30)` before the
    exit, and so does a cancel with other options (`recursive=True`), right after it: that
    helper only waits. No fix is offered when the cancelled refs cannot be named again at the
    exit (e.g. a cancel in a comprehension over a call's result). The fix adds
    `import runtime_guard`.

    With SHD403 on the same `try` (`ray.get(ref)` in the body, `ray.cancel(ref)` in the
    `except KeyboardInterrupt`), only this rule reports: the interrupt path already cancels,
    and the fixed program cancels once and waits once.

    ## References
    - SkyRL #1160, fix 3b: "Driver exits before worker finishes cleanup"
    - Ray docs: `ray.cancel`, `ray.wait`
    """

    code = "SHD501"
    name = "cancel-without-cleanup-wait"
    summary = "`ray.cancel()` followed by an exit without waiting for the cancelled work's cleanup"
    triggers = ("cancel",)
    # tier 1: ray.cancel then exit
    candidate = C.qualified("ray.cancel")
    # tier 2: a call that may be ``ray.cancel`` with a positional argument (the refs)
    candidate_tree = staticmethod(lambda tree: _may_cancel_then_exit(tree))
    facts_needed = ("functions", "calls", "execution")
    options = {
        "cleanup_timeout": Option(
            default=30,
            kind=(int, float),
            doc="Seconds the inserted `cancel_and_wait` waits for the cancelled work's cleanup.",
        ),
    }

    valid = [
        # waits after cancelling
        """
        import ray
        try:
            ray.get(ref)
        except KeyboardInterrupt:
            ray.cancel(ref)
            ray.wait([ref], timeout=120)
            raise
        """,
        # force=True kills without cleanup on purpose
        """
        import ray, sys
        def main():
            ray.cancel(ref, force=True)
            sys.exit(1)
        """,
        # a scheduler cancelling stragglers and carrying on
        """
        import ray

        def schedule(refs):
            done, rest = ray.wait(refs, num_returns=4, timeout=10)
            for r in rest:
                ray.cancel(r)
            return done
        """,
        # inside an actor: the worker process stays alive after the return
        """
        import ray, sys

        @ray.remote
        class Supervisor:
            def stop(self, ref):
                try:
                    pass
                finally:
                    ray.cancel(ref)
                    return None
        """,
        # the helper already waits
        """
        import runtime_guard
        from ray import cancel as ray_cancel, get

        def main():
            ref = job.remote()
            try:
                get(ref)
            except BaseException:
                ray_cancel(ref)
                get(ref, timeout=60)
                raise
        """,
        # in an actor, the error is handled by the method's own broad handler
        """
        import ray

        @ray.remote
        class Runner:
            def run(self):
                try:
                    try:
                        ray.get(self.futures)
                    except ValueError as e:
                        for f in self.futures:
                            ray.cancel(f)
                        raise e
                except Exception:
                    self.report_failure()
        """,
        # in an actor, a return after the cancel: the worker lives on
        """
        import ray

        @ray.remote
        class Runner:
            def stop(self):
                for f in self.futures:
                    ray.cancel(f)
                return True
        """,
        # a helper (not an entry function) whose handler cancels and returns: its caller goes on
        """
        import ray

        def collect(ref):
            try:
                return ray.get(ref)
            except KeyboardInterrupt:
                ray.cancel(ref)

        def main():
            collect(job.remote())
            carry_on()
        """,
        # asyncio cancel is not ray.cancel
        """
        import asyncio
        async def main(task):
            task.cancel()
            raise RuntimeError("stop")
        """,
    ]
    invalid = [
        Invalid(
            """
            import ray

            def main():
                ray.init()
                ref = rollout.remote()
                try:
                    ray.get(ref)
                except KeyboardInterrupt:
                    # tell the worker to clean up
                    ray.cancel(ref)
                    raise
            """,
            fixed="""
            import ray
            import runtime_guard

            def main():
                ray.init()
                ref = rollout.remote()
                try:
                    ray.get(ref)
                except KeyboardInterrupt:
                    # tell the worker to clean up
                    runtime_guard.ray.cancel_and_wait(ref, timeout=30)
                    raise
            """,
            message_contains="exits",
        ),
        Invalid(
            """
            import sys
            import ray as r

            def stop(refs):
                for ref in refs:
                    r.cancel(ref, force=False)
                sys.exit(130)
            """,
            fixed="""
            import sys
            import ray as r
            import runtime_guard

            def stop(refs):
                for ref in refs:
                    r.cancel(ref, force=False)
                runtime_guard.ray.wait_for_cleanup(refs, timeout=30)
                sys.exit(130)
            """,
        ),
        # the end of the driver
        Invalid(
            """
            from ray import cancel, get

            if __name__ == "__main__":
                ref = train.remote()
                try:
                    get(ref)
                except KeyboardInterrupt:
                    cancel(ref)  # keep
            """,
            fixed="""
            from ray import cancel, get
            import runtime_guard

            if __name__ == "__main__":
                ref = train.remote()
                try:
                    get(ref)
                except KeyboardInterrupt:
                    runtime_guard.ray.cancel_and_wait(ref, timeout=30)  # keep
            """,
            message_contains="end of the driver",
        ),
        Invalid(
            """
            import os
            import ray

            class Driver:
                def shutdown(self):
                    try:
                        self.flush()
                    finally:
                        ray.cancel(self.ref)
                        os._exit(1)
            """,
            fixed="""
            import os
            import ray
            import runtime_guard

            class Driver:
                def shutdown(self):
                    try:
                        self.flush()
                    finally:
                        runtime_guard.ray.cancel_and_wait(self.ref, timeout=60)
                        os._exit(1)
            """,
            options={"cleanup_timeout": 60},
        ),
        Invalid(
            """
            import ray

            def run(ref):
                try:
                    return ray.get(ref)
                except BaseException as exc:
                    if not isinstance(exc, ray.exceptions.RayError):
                        ray.cancel(ref, recursive=True)
                    return None
            """,
            fixed="""
            import ray
            import runtime_guard

            def run(ref):
                try:
                    return ray.get(ref)
                except BaseException as exc:
                    if not isinstance(exc, ray.exceptions.RayError):
                        ray.cancel(ref, recursive=True)
                        runtime_guard.ray.wait_for_cleanup(ref, timeout=30)
                    return None
            """,
        ),
        # cancel over the remaining refs, then raise out of an actor's remote method: the driver
        # waiting on run() exits (verl's TaskRunner)
        Invalid(
            """
            import ray

            @ray.remote(num_cpus=1)
            class TaskRunner:
                def run(self, config):
                    self._start(config)
                    self._loop()

                def _loop(self):
                    futures = [self.rollouter.fit.remote(), self.trainer.fit.remote()]
                    try:
                        while futures:
                            done, futures = ray.wait(futures, num_returns=1)
                            ray.get(done)
                    except Exception as e:
                        for future in futures:
                            ray.cancel(future)
                        raise e
            """,
            fixed="""
            import ray
            import runtime_guard

            @ray.remote(num_cpus=1)
            class TaskRunner:
                def run(self, config):
                    self._start(config)
                    self._loop()

                def _loop(self):
                    futures = [self.rollouter.fit.remote(), self.trainer.fit.remote()]
                    try:
                        while futures:
                            done, futures = ray.wait(futures, num_returns=1)
                            ray.get(done)
                    except Exception as e:
                        for future in futures:
                            ray.cancel(future)
                        runtime_guard.ray.wait_for_cleanup(futures, timeout=30)
                        raise e
            """,
            message_contains="remote method `run()`",
        ),
        # a dict of pending refs in the driver
        Invalid(
            """
            import ray

            def main():
                pending = {name: job.remote(name) for name in names}
                try:
                    ray.get(list(pending.values()))
                except Exception:
                    for name, ref in pending.items():
                        ray.cancel(ref)
                    raise
            """,
            fixed="""
            import ray
            import runtime_guard

            def main():
                pending = {name: job.remote(name) for name in names}
                try:
                    ray.get(list(pending.values()))
                except Exception:
                    for name, ref in pending.items():
                        ray.cancel(ref)
                    runtime_guard.ray.wait_for_cleanup(pending.values(), timeout=30)
                    raise
            """,
        ),
        # a handler at the end of main(): the driver ends when main() returns
        Invalid(
            """
            import ray

            def main():
                ref = train.remote()
                try:
                    ray.get(ref)
                except KeyboardInterrupt:
                    print("stopping")
                    ray.cancel(ref)

            if __name__ == "__main__":
                main()
            """,
            fixed="""
            import ray
            import runtime_guard

            def main():
                ref = train.remote()
                try:
                    ray.get(ref)
                except KeyboardInterrupt:
                    print("stopping")
                    runtime_guard.ray.cancel_and_wait(ref, timeout=30)

            if __name__ == "__main__":
                main()
            """,
            message_contains="end of the driver",
        ),
        # the get already interruptible: cancel_and_wait only waits for refs it cancelled
        Invalid(
            """
            import ray
            import runtime_guard

            def main():
                task = entrypoint.remote()
                try:
                    runtime_guard.ray.interruptible_get(task)
                except KeyboardInterrupt:
                    print("shutting down")
                    ray.cancel(task)
                    raise
            """,
            fixed="""
            import ray
            import runtime_guard

            def main():
                task = entrypoint.remote()
                try:
                    runtime_guard.ray.interruptible_get(task)
                except KeyboardInterrupt:
                    print("shutting down")
                    runtime_guard.ray.cancel_and_wait(task, timeout=30)
                    raise
            """,
        ),
        # no name to wait on at the exit: flagged without a fix
        Invalid(
            """
            import ray

            def main():
                [ray.cancel(r) for r in pending()]
                raise SystemExit(1)
            """,
            fixed=None,
        ),
    ]

    ast_check = _Ast

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    # the tree's answers (libcst)
    @staticmethod
    def forced(call: cst.Call) -> bool:
        return _forced(call)

    @staticmethod
    def ref_args(call: cst.Call) -> list:
        return [a.value for a in call.args if a.keyword is None]

    def statement_line(self, node: cst.Call) -> Optional[cst.SimpleStatementLine]:
        stmt = self.facts.enclosing_statement(node)
        return stmt if isinstance(stmt, cst.SimpleStatementLine) else None

    @staticmethod
    def anchor(stmt: cst.CSTNode) -> cst.CSTNode:
        return stmt

    def later_lines(self, cur: cst.CSTNode) -> Optional[list]:
        block = self.facts.parent(cur)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        siblings = list(block.body)
        idx = next(i for i, s in enumerate(siblings) if s is cur)
        return siblings[idx + 1:]

    def step_out(self, cur: cst.CSTNode) -> tuple[str, Optional[cst.CSTNode]]:
        block = self.facts.parent(cur)
        if isinstance(block, cst.Module):
            return "module", None
        owner = self.facts.parent(block)
        if isinstance(owner, cst.FunctionDef):
            return "def", owner
        if isinstance(owner, (cst.ExceptHandler, cst.ExceptStarHandler)):
            return "handler", owner
        if isinstance(owner, cst.Finally):
            return "finally", owner
        if isinstance(owner, (cst.For, cst.While)):
            return "loop", owner
        if isinstance(owner, (cst.If, cst.Else, cst.With, cst.Try, cst.TryStar)):
            return "compound", owner
        return "other", owner

    def chain_top(self, owner: cst.CSTNode) -> Optional[cst.CSTNode]:
        cur = owner
        while isinstance(cur, (cst.If, cst.Else)) and isinstance(
            self.facts.parent(cur), (cst.If, cst.Else, cst.For, cst.While, cst.Try)
        ):
            cur = self.facts.parent(cur)  # type: ignore[assignment]
        return cur

    def try_of(self, owner: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self.facts.parent(owner)

    @staticmethod
    def finally_block(try_stmt: cst.CSTNode) -> Optional[cst.CSTNode]:
        return getattr(try_stmt, "finalbody", None)

    @staticmethod
    def loop_body(loop: cst.CSTNode) -> cst.CSTNode:
        return loop.body  # type: ignore[attr-defined]

    @staticmethod
    def calls_of(node: cst.CSTNode) -> list[cst.Call]:
        return calls_in(node)

    @staticmethod
    def small_statements(stmt: cst.CSTNode) -> Optional[list]:
        return list(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else None

    @staticmethod
    def is_raise(small: cst.CSTNode) -> bool:
        return isinstance(small, cst.Raise)

    @staticmethod
    def is_return(small: cst.CSTNode) -> bool:
        return isinstance(small, cst.Return)

    @staticmethod
    def exit_call(small: cst.CSTNode) -> Optional[cst.Call]:
        return small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None

    def is_exit(self, call: cst.Call) -> bool:
        return self.facts.is_exit(call)

    def handlers_around(self, node: cst.CSTNode) -> Iterator[Optional[cst.CSTNode]]:
        """The ``except`` handlers (and, as None, the ``finally`` blocks) around ``node`` in its
        function or class body, innermost first."""
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return
            if isinstance(anc, cst.Finally):
                yield None
            elif isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)):
                yield anc

    def is_interrupt_handler(self, handler: cst.CSTNode) -> bool:
        return is_interrupt_handler(self.facts, handler)

    @staticmethod
    def is_statement(call: cst.Call, stmt: cst.SimpleStatementLine) -> bool:
        return len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr) and stmt.body[0].value is call

    @staticmethod
    def extra_options(call: cst.Call) -> bool:
        return any(a.keyword is not None and a.keyword.value != "force" for a in call.args)

    # ------------------------------------------------------------------ fix
    def _fix(self, call: cst.Call, stmt: cst.SimpleStatementLine, exit_stmt: Optional[cst.BaseStatement],
             ref: cst.BaseExpression) -> Optional[Fix]:
        kind, found = self._fix_kind(call, stmt, ref)
        if kind is None:
            return None
        timeout = self.config["cleanup_timeout"]
        timeout_arg = cst.Arg(
            keyword=cst.Name("timeout"),
            equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
            value=cst.Integer(str(int(timeout))) if float(timeout).is_integer() else cst.Float(repr(float(timeout))),
        )
        if kind == "loop":
            loop, refs = found
            wait = _wait_statement(refs, timeout_arg)
            edit = InsertBefore(exit_stmt, (wait,)) if exit_stmt is not None else InsertAfter(loop, (wait,))
            return Fix.unsafe(edit, IMPORT_RUNTIME_GUARD, message=_WAIT_MESSAGE)
        if kind == "replace":
            new = guard_call("ray.cancel_and_wait", [_first_arg(ref), timeout_arg])
            return Fix.unsafe(Replace(call, new), IMPORT_RUNTIME_GUARD, message=_REPLACE_MESSAGE)
        # keep options such as recursive=True on the cancel; wait right after it
        return Fix.unsafe(InsertAfter(stmt, (_wait_statement(ref, timeout_arg),)), IMPORT_RUNTIME_GUARD,
                          message=_WAIT_MESSAGE)

    def loop_over(self, stmt: cst.BaseStatement, ref: cst.BaseExpression
                  ) -> Optional[tuple[cst.For, Optional[cst.BaseExpression]]]:
        """The ``for`` loop whose body holds ``stmt`` directly and binds ``ref``, with the
        collection of refs it walks: ``for ref in refs`` -> ``refs``, ``for i, ref in
        enumerate(refs)`` -> ``refs``, ``for k, ref in d.items()`` -> ``d.values()`` (None when
        it cannot be written again)."""
        block = self.facts.parent(stmt)
        loop = self.facts.parent(block) if block is not None else None
        if not isinstance(loop, cst.For) or not isinstance(ref, cst.Name):
            return None
        target, it = loop.target, loop.iter
        if isinstance(target, cst.Name) and target.value == ref.value:
            return loop, it if isinstance(it, (cst.Name, cst.Attribute)) else None
        if (isinstance(target, cst.Tuple) and len(target.elements) == 2
                and isinstance(target.elements[1].value, cst.Name) and target.elements[1].value.value == ref.value
                and isinstance(it, cst.Call)):
            func = it.func
            base = func.value if isinstance(func, cst.Attribute) else None
            if isinstance(func, cst.Name) and func.value == "enumerate" and len(it.args) == 1 \
                    and isinstance(it.args[0].value, (cst.Name, cst.Attribute)):
                return loop, it.args[0].value
            if isinstance(func, cst.Attribute) and func.attr.value == "items" and not it.args \
                    and isinstance(base, (cst.Name, cst.Attribute)):
                return loop, cst.Call(cst.Attribute(base, cst.Name("values")))
            return loop, None
        return None


def _forced(call: cst.Call) -> bool:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "force":
            return not (isinstance(a.value, cst.Name) and a.value.value == "False")
    return False


def _first_arg(value: cst.BaseExpression) -> cst.Arg:
    return cst.Arg(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))


def _wait_statement(refs: cst.BaseExpression, timeout_arg: cst.Arg) -> cst.SimpleStatementLine:
    """Wait for refs already cancelled, without cancelling again (a second cancel would cut the
    cleanup short)."""
    return cst.SimpleStatementLine([cst.Expr(guard_call("ray.wait_for_cleanup", [_first_arg(refs), timeout_arg]))])


# ------------------------------------------------------------------ candidate tier 2 (ast)
_CANCEL = ("ray.cancel",)
_REMOTE = ("ray.remote", "ray.actor.remote")


def _cooperative_cancels(tree, calls):
    """``ray.cancel`` candidates the rule's ``visit_Call`` goes past: a call that may be
    ``ray.cancel``, not in a lambda, with a positional argument (``*refs`` and ``**kw`` too:
    libcst gives those ``keyword=None``), not forced (the first ``force=`` keyword is absent
    or the literal ``False``; ``0``/``None`` count as forced there too)."""
    out = []
    for c, _, lam in calls:
        if lam or not (c.args or any(k.arg is None for k in c.keywords)):
            continue
        force = next((k for k in c.keywords if k.arg == "force"), None)
        if force is not None and not (isinstance(force.value, ast.Constant) and force.value.value is False):
            continue
        if tree.may_call_any(c, _CANCEL):
            out.append(c)
    return out


def _remote_roots(tree) -> set[str]:
    """Names of functions the facts may give ``RAY_REMOTE``: decorated with something that
    may be ``ray.remote`` (called or not), functions named inside the arguments of a call that
    may be ``ray.remote`` / ``ray.remote(...)(x)``, and the methods of every class (a class
    becomes part of an actor through a subclass made remote here or in another module:
    ``remote_bases``, the project index)."""
    def remote_decorator(node) -> bool:
        for d in node.decorator_list:
            if "remote" in tree.words(d.func if isinstance(d, ast.Call) else d):
                return True
        return False

    roots = {fn.name for fn in tree.functions if remote_decorator(fn.node)}
    handed: set[str] = set()
    for c in tree.all_calls():
        if tree.may_call_any(c, _REMOTE) or (isinstance(c.func, ast.Call) and tree.may_call_any(c.func, _REMOTE)):
            for a in [*c.args, *(k.value for k in c.keywords)]:
                handed |= T.identifiers(a)
    roots |= {fn.name for fn in tree.functions if fn.name in handed}
    for cls in tree.classes:
        # any class: a subclass made an actor elsewhere (the project index) makes its methods remote
        roots |= {m.name for m in tree.methods.get(id(cls), ())}
    return roots


def _covers(start: int, end: int, line: int) -> bool:
    return start <= line <= end


def _may_cancel_then_exit(tree) -> bool:
    """Tier 2 for SHD501: a cooperative ``ray.cancel(refs)`` that may be followed, in its own
    code, by an exit the rule counts.

    The rule reports a cancel (``visit_Call``) only when ``_after`` finds, climbing from the
    cancel's statement through enclosing blocks but never past its ``def``/class body:
    - the end of the module (``the end of the driver``): only for module-level code -> clause
      (a): any candidate outside every ``def`` (module or class-body code) keeps the file;
    - the end of an entry function from one of its handlers (``the end of the driver``) ->
      clause (e), in ``_in_handler``;
    - an exit-call statement (``sys.exit``... ``is_exit``: ``EXIT_FUNCTIONS``), counted
      whatever ``ends_process`` is, unless in a worker -> clause (b): such a statement among the
      ones ``_after`` looks at (``_after_statements``: the later siblings of the cancel's
      statement and of each statement around it, up to the ``def``);
    - a ``raise`` when ``ends_process`` (in a Ray worker with a remote entry, in an interrupt
      handler / ``finally``, or in driver code) -> clause (c): a ``raise`` among those
      statements, and the function may be a worker (reachable by name from a possible
      ``RAY_REMOTE`` root), or the cancel's line lies in a ``finally``/interrupt handler of the
      function, or the function may be driver code (``driver_names``);
    - a ``return`` in a handler (``in_handler``) when ``ends_process`` and not in a worker ->
      clause (d): a ``return`` among those statements, and the cancel lies in a
      ``finally``/interrupt handler or the function may be driver code.
    Everything else returns None before ``self.report``. No clause reads other modules; the one
    fact that does (``RAY_REMOTE`` of a base class's methods, from a subclass made an actor
    elsewhere) is covered by counting every method as a possible remote root.
    """
    module_cancels = _cooperative_cancels(tree, tree.module_calls)
    if module_cancels:
        return True  # (a)
    todo = []
    for fn in tree.functions:
        cancels = _cooperative_cancels(tree, fn.calls)
        if cancels:
            todo.append((fn, min(c.lineno for c in cancels), cancels))
    if not todo:
        return False
    drivers = workers = entries = None
    for fn, first, cancels in todo:
        # the statements ``_after`` may stop at: later siblings along its climb from each cancel
        after = [st for c in cancels for st in _after_statements(tree, fn, c)]
        # (b) an exit-call statement after a cancel
        if any(type(st) is ast.Expr and type(st.value) is ast.Call and tree.may_call_any(st.value, EXIT_FUNCTIONS)
               for st in after):
            return True
        raises = any(type(st) is ast.Raise for st in after)
        returns = any(type(st) is ast.Return for st in after)
        if any(_in_handler(fn, c.lineno) for c in cancels):
            if raises or returns:
                return True  # (c)/(d) in an interrupt handler or finally
            if entries is None:
                entries = _entry_names(tree)
            if fn.name in entries:
                return True  # (e): see _in_handler
        if not raises and not returns:
            continue
        if drivers is None:
            drivers = T.driver_names(tree)
        if fn.name in drivers:
            return True  # (c)/(d) driver code
        if raises:
            if workers is None:
                roots = _remote_roots(tree)
                workers = tree.reachable_names(roots) if roots else set()
            if fn.name in workers:
                return True  # (c) in a Ray worker
    return False


def _entry_names(tree) -> set[str]:
    """Names of the functions ``_is_entry`` may accept: ``main``, and every name spelled in an
    ``if __name__ == ...`` block outside any def or class (its "call"/"await" references:
    ``main()``, ``asyncio.run(amain())``; a superset by name)."""
    out = {"main"}
    if tree.has_main_guard:
        for st in T.nested_statements(tree.module.body, enter=lambda st: not isinstance(st, (*T.DEFS, ast.ClassDef))):
            if type(st) is ast.If and T.is_main_guard(st.test):
                out |= T.identifiers(st)
    return out


def _in_handler(fn, line: int) -> bool:
    """The call at ``line`` may sit in an ``except`` or ``finally`` block of ``fn``: a superset
    of the interrupt handlers and ``finally`` blocks that (c) and (d) need (with a ``raise`` or
    a ``return`` after the cancel), and (e) any handler: ``_after`` reports a cancel in any
    handler of an entry function (``main()``, or one the ``__main__`` block calls:
    ``_entry_names``) that reaches the end of that function (``the end of the driver``)."""
    for t in fn.trys:
        if t.finalbody and _covers(t.finalbody[0].lineno, t.finalbody[-1].end_lineno, line):
            return True
        if any(_covers(h.lineno, h.end_lineno, line) for h in t.handlers):
            return True
    return False


def _after_statements(tree, fn, call: ast.Call) -> list:
    """The statements ``_after`` may meet after the cancel ``call`` of ``fn``: the later siblings
    (in their block) of the statement that holds the call, then of the statement around that
    block, and so on up to ``fn``'s body, through ``if``/``else``, loops, ``with``, ``try`` bodies,
    handlers, ``else`` and ``finally`` blocks (``_after`` climbs those; any other owner, a class
    body or a ``match`` case, ends its climb). ``_exit_kind`` reads only simple statements, so
    the ``raise``/``return``/exit-call statements among these are all it can stop at (a superset:
    ``_after`` also stops at a wait, or at a one-line suite)."""
    parents = tree.parents(fn.node)
    cur = parents.get(id(call))
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = parents.get(id(cur))
    out: list = []
    while cur is not None and cur is not fn.node:
        owner = parents.get(id(cur))
        if owner is None:
            break
        for field in ("body", "orelse", "finalbody"):
            block = getattr(owner, field, None)
            if type(block) is list:
                for i, st in enumerate(block):
                    if st is cur:
                        out.extend(block[i + 1:])
                        break
        t = type(owner)
        if t is ast.ExceptHandler:
            cur = parents.get(id(owner))  # the try
        elif t in _CLIMBED:
            cur = owner
        else:
            break  # the def itself, a class body, a ``match`` case
    return out


_CLIMBED = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, *T.TRYS)
