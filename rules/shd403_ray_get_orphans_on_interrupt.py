from __future__ import annotations

import ast
from typing import NamedTuple, Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import positional
from shutdown_lint.ast_engine.walk import source_order
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter import ast_tree as T
from shutdown_lint.facts import ModuleFacts
from shutdown_lint.rule import Fix, Invalid, Option, Replace, Rule, Valid
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD, dotted
from ._vocabulary import RAY_BOUNDED_WAIT_CALLS, RAY_CANCEL_CALLS, RAY_GUARD_WAIT_CALLS

_INTERRUPT_TYPES = frozenset({"builtins.KeyboardInterrupt", "builtins.BaseException"})
_ON_INTERRUPT = "runtime_guard.on_interrupt"
#: Calls whose first result is a list of refs that are ready (``ray.get`` on them does not block).
_WAITS = ("ray.wait", "runtime_guard.ray.interruptible_wait")

_GET_MESSAGE = ("`ray.get()` blocks the driver with no Ctrl+C path that cancels the remote work and waits: "
                "on Ctrl+C the driver exits and the task is killed without running its cleanup")
_WAIT_MESSAGE = ("`ray.wait()` with no timeout blocks the driver with no Ctrl+C path that cancels the remote "
                 "work and waits: on Ctrl+C the driver exits and the pending tasks are killed without running "
                 "their cleanup")


def _coroutine_message(short: str) -> str:
    return (f"`ray.{short}()` in the driver's coroutine blocks the event loop with no Ctrl+C path that cancels "
            "the remote work and waits: under `asyncio.run` the first Ctrl+C only cancels the main task once the "
            "call returns, the second ends the driver and the remote work is killed without running its cleanup")


class _Decide:
    """What SHD403 decides about a call, on either tree (``_OnCst``: libcst; ``_OnAst``: ``ast``),
    for one file's facts and the ``cleanup_calls`` option. Only the reads of the tree are written
    twice (below ``# the tree's answers`` in each subclass): ``has_timeout``, ``calls_in`` (the
    calls of a block, nested defs and lambdas left out, in source order), ``handlers``/
    ``finally_block`` of a ``try``, ``function_block``, ``is_def``, ``on_interrupt_with``,
    ``first_positional`` (no ``*a``), ``first_argument`` (``*a`` and ``**k`` included), ``code``,
    ``elements``, ``name_of``, ``subscript_value``, ``loop_iters``, ``ready_scan``,
    ``in_comprehension``."""

    def __init__(self, facts, cleanup_calls: tuple[str, ...] = ()) -> None:
        self.facts = facts
        self.extra = tuple(cleanup_calls)

    def reports(self, node) -> bool:
        """SHD403 reports ``node``."""
        f = self.facts
        name = f.call_name(node)
        if name not in ("ray.get", "ray.wait") or self.has_timeout(node):
            return False
        if not f.runs_in_driver(node):
            return False
        fn = f.enclosing_function(node)
        if fn is not None and f.runs_in_ray_worker(fn):
            return False
        if fn is not None and fn.is_async and f.in_lambda(node):
            return False
        if name == "ray.get" and self.refs_known_ready(node):
            return False
        if self.interrupt_protected(node):
            return False
        # an interrupt path that cancels these refs (and may not wait) is SHD501's business: a fix here
        # would cancel a second time, cutting short the cleanup that the first cancel started
        return not self.interrupt_path_cancels(node)

    def is_wait_call(self, call) -> bool:
        """A bounded wait for Ray work: ``ray.wait``/``ray.get`` with a timeout, or a
        runtime_guard helper that waits."""
        name = self.facts.call_name(call)
        if name in RAY_GUARD_WAIT_CALLS:
            return True
        return name in RAY_BOUNDED_WAIT_CALLS and self.has_timeout(call)

    def cancels_and_waits(self, block, depth: int = 1) -> bool:
        """``block`` (or a same-module function it calls, ``depth`` levels deep) cancels Ray
        work and then waits for it, or calls a helper that does both (``cleanup_calls``)."""
        f = self.facts
        cancelled = waited = False
        for call in self.calls_in(block):
            name = f.call_name(call)
            if name in self.extra:
                return True
            if name in RAY_CANCEL_CALLS:
                cancelled = True
            if self.is_wait_call(call) and (cancelled or name in RAY_GUARD_WAIT_CALLS):
                waited = True
            if depth > 0:
                target = f.resolve_call(call)
                if target is not None and self.cancels_and_waits(self.function_block(target), depth - 1):
                    return True
        return cancelled and waited

    def is_interrupt_handler(self, handler) -> bool:
        """``except:``, ``except KeyboardInterrupt``, ``except BaseException`` (or a tuple with one)."""
        types = self.facts.caught_types(handler)
        if types is None:
            return True
        return any(self.facts.qualified_name(t, handler) in _INTERRUPT_TYPES for t in types)

    def interrupt_protected(self, node, depth: int = 2) -> bool:
        """A Ctrl+C raised while ``node`` runs goes through code that cancels and waits."""
        f = self.facts
        for t in f.enclosing_trys(node):
            for h, block in self.handlers(t):
                if self.is_interrupt_handler(h) and self.cancels_and_waits(block):
                    return True
            block = self.finally_block(t)
            if block is not None and self.cancels_and_waits(block):
                return True
        for anc in f.ancestors(node):
            if self.is_def(anc):
                break
            if self.on_interrupt_with(anc):
                return True
        fn = f.enclosing_function(node)
        if fn is None:
            return False
        if _ON_INTERRUPT in fn.decorators:
            return True
        if depth > 0:
            refs = [n for n, kind in f.references(fn) if kind in ("call", "await")]
            if refs and all(self.interrupt_protected(n, depth - 1) for n in refs):
                return True
        return False

    def refs_of(self, expr) -> set[str]:
        """The refs an argument names: itself, and the elements of a list/tuple display."""
        return {self.code(expr)} | {self.code(el) for el in self.elements(expr)}

    def cancelled_in(self, block) -> set[str]:
        """What the Ray cancels in ``block`` name: their argument (and its elements), and the
        collection a ``for ref in refs: ray.cancel(ref)`` walks."""
        found: set[str] = set()
        for call in self.calls_in(block):
            if self.facts.call_name(call) not in RAY_CANCEL_CALLS:
                continue
            arg = self.first_positional(call)
            if arg is None:
                continue
            found |= self.refs_of(arg)
            name = self.name_of(arg)
            if name is not None:
                for it in self.loop_iters(call, name, block):
                    found |= self.refs_of(it)
        return found

    def interrupt_path_cancels(self, call) -> bool:
        """An enclosing ``try`` has an interrupt path (``except KeyboardInterrupt``/``BaseException``,
        bare ``except``, or ``finally``) that cancels every ref ``call`` waits for."""
        arg = self.first_positional(call)
        if arg is None:
            return False
        wanted = {self.code(arg)}
        elements = self.refs_of(arg) - wanted
        for t in self.facts.enclosing_trys(call):
            blocks = [block for h, block in self.handlers(t) if self.is_interrupt_handler(h)]
            last = self.finally_block(t)
            if last is not None:
                blocks.append(last)
            for block in blocks:
                cancelled = self.cancelled_in(block)
                if wanted <= cancelled or (elements and elements <= cancelled):
                    return True
        return False

    def refs_known_ready(self, call) -> bool:
        """``ray.get(ready)`` / ``ray.get(ready[0])`` / ``for r in ready: ray.get(r)`` where
        ``ready`` was unpacked from ``ray.wait(...)`` in the same function."""
        arg = self.first_argument(call)
        if arg is None:
            return False
        name = self.name_of(self.subscript_value(arg))
        if name is None:
            return False
        fn = self.facts.enclosing_function(call)
        return name in self.ready_names(fn.node if fn is not None else self.facts.module)

    def ready_names(self, root) -> set[str]:
        assigns, loops = self.ready_scan(root)
        names: set[str] = set()
        for value, firsts in assigns:
            if self.facts.call_name(value) in _WAITS:
                names.update(n for n in firsts if n is not None)
        for it, target in loops:
            if it is not None and it in names and target is not None:
                names.add(target)
        return names


class _OnCst(_Decide):
    """``_Decide`` reading libcst."""

    # the tree's answers
    @staticmethod
    def has_timeout(call: cst.Call) -> bool:
        """``timeout=<not None>`` among the keyword arguments."""
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "timeout":
                return not (isinstance(a.value, cst.Name) and a.value.value == "None")
        return False

    @staticmethod
    def calls_in(block: cst.CSTNode) -> list[cst.Call]:
        return calls_in(block)

    @staticmethod
    def handlers(t) -> list:
        return [(h, h.body) for h in t.handlers]

    @staticmethod
    def finally_block(t) -> Optional[cst.CSTNode]:
        return t.finalbody.body if t.finalbody is not None else None

    @staticmethod
    def function_block(fn) -> cst.CSTNode:
        return fn.node.body

    @staticmethod
    def is_def(node: cst.CSTNode) -> bool:
        return isinstance(node, cst.FunctionDef)

    def on_interrupt_with(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.With) and any(
            isinstance(item.item, cst.Call) and self.facts.call_name(item.item) == _ON_INTERRUPT for item in node.items
        )

    @staticmethod
    def first_positional(call: cst.Call) -> Optional[cst.BaseExpression]:
        args = [a for a in call.args if a.keyword is None and not a.star]
        return args[0].value if args else None

    @staticmethod
    def first_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
        args = [a for a in call.args if a.keyword is None]
        return args[0].value if args else None

    @staticmethod
    def code(expr: cst.CSTNode) -> str:
        return cst.Module(body=[]).code_for_node(expr).strip()

    @staticmethod
    def elements(expr: cst.CSTNode) -> list:
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [el.value for el in expr.elements if isinstance(el, cst.Element)]
        return []

    @staticmethod
    def name_of(expr: cst.CSTNode) -> Optional[str]:
        return expr.value if isinstance(expr, cst.Name) else None

    @staticmethod
    def subscript_value(expr: cst.CSTNode) -> cst.CSTNode:
        return expr.value if isinstance(expr, cst.Subscript) else expr

    def loop_iters(self, call: cst.Call, name: str, block: cst.CSTNode) -> list:
        """What the ``for`` loops around ``call`` in ``block`` that bind ``name`` walk."""
        out = []
        for anc in self.facts.ancestors(call):
            if anc is block:
                break
            if isinstance(anc, cst.For) and isinstance(anc.target, cst.Name) and anc.target.value == name:
                out.append(anc.iter)
        return out

    @staticmethod
    def ready_scan(root: cst.CSTNode) -> tuple[list, list]:
        """The assignments of a call under ``root`` (the call, the first name each target unpacks
        into) and its ``for`` loops (the name iterated, the name bound), in source order."""
        assigns: list = []
        loops: list = []

        class _Scan(cst.CSTVisitor):
            def visit_Assign(self, n: cst.Assign) -> None:
                if isinstance(n.value, cst.Call):
                    assigns.append((n.value, [_first_target(t.target) for t in n.targets]))

            def visit_For(self, n: cst.For) -> None:
                loops.append((n.iter.value if isinstance(n.iter, cst.Name) else None,
                              n.target.value if isinstance(n.target, cst.Name) else None))

        walk(root, _Scan())
        return assigns, loops

    def in_comprehension(self, node: cst.CSTNode) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(anc, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                return True
        return False


class _Block(NamedTuple):
    """A block on ``ast``: its statements and the node that holds them (a handler, the ``try``
    of a ``finally``, a def), where libcst has one ``IndentedBlock`` node."""

    owner: ast.AST
    body: list


_DEFS_AND_LAMBDAS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _OnAst(_Decide):
    """``_Decide`` reading ``ast``."""

    # the tree's answers
    @staticmethod
    def has_timeout(call: ast.Call) -> bool:
        for k in call.keywords:
            if k.arg == "timeout":
                return not (type(k.value) is ast.Constant and k.value.value is None)
        return False

    @staticmethod
    def calls_in(block: _Block) -> list[ast.Call]:
        return [n for n in source_order(block.body, _DEFS_AND_LAMBDAS) if type(n) is ast.Call]

    @staticmethod
    def handlers(t) -> list:
        return [(h, _Block(h, h.body)) for h in t.handlers]

    @staticmethod
    def finally_block(t) -> Optional[_Block]:
        return _Block(t, t.finalbody) if t.finalbody else None

    @staticmethod
    def function_block(fn) -> _Block:
        return _Block(fn.node, fn.node.body)

    @staticmethod
    def is_def(node: ast.AST) -> bool:
        return type(node) in (ast.FunctionDef, ast.AsyncFunctionDef)

    def on_interrupt_with(self, node: ast.AST) -> bool:
        return type(node) in (ast.With, ast.AsyncWith) and any(
            type(item.context_expr) is ast.Call and self.facts.call_name(item.context_expr) == _ON_INTERRUPT
            for item in node.items
        )

    @staticmethod
    def first_positional(call: ast.Call) -> Optional[ast.expr]:
        for a in call.args:
            if type(a) is not ast.Starred:
                return a
        return None

    @staticmethod
    def first_argument(call: ast.Call) -> Optional[ast.expr]:
        args = positional(call)
        return args[0] if args else None

    def code(self, expr: ast.AST) -> str:
        return self.facts.code_for_node(expr).strip()

    @staticmethod
    def elements(expr: ast.AST) -> list:
        if type(expr) in (ast.List, ast.Tuple):
            return [el for el in expr.elts if type(el) is not ast.Starred]
        return []

    @staticmethod
    def name_of(expr: ast.AST) -> Optional[str]:
        return expr.id if type(expr) is ast.Name else None

    @staticmethod
    def subscript_value(expr: ast.AST) -> ast.AST:
        return expr.value if type(expr) is ast.Subscript else expr

    def loop_iters(self, call: ast.Call, name: str, block: _Block) -> list:
        out = []
        for anc in self.facts.ancestors(call):
            if anc is block.owner:
                break
            if type(anc) in (ast.For, ast.AsyncFor) and type(anc.target) is ast.Name and anc.target.id == name:
                out.append(anc.iter)
        return out

    @staticmethod
    def ready_scan(root: ast.AST) -> tuple[list, list]:
        assigns: list = []
        loops: list = []
        for n in source_order([root]):
            t = type(n)
            if t is ast.Assign:
                if type(n.value) is ast.Call:
                    assigns.append((n.value, [_first_target_ast(x) for x in n.targets]))
            elif t is ast.For or t is ast.AsyncFor:
                loops.append((n.iter.id if type(n.iter) is ast.Name else None,
                              n.target.id if type(n.target) is ast.Name else None))
        return assigns, loops

    def in_comprehension(self, node: ast.AST) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, _DEFS_AND_LAMBDAS):
                return False
            if isinstance(anc, _COMPREHENSIONS):
                return True
        return False


def _first_target_ast(target: ast.AST) -> Optional[str]:
    """``_first_target`` on ``ast``: a starred first element names its value, as libcst's."""
    if type(target) in (ast.Tuple, ast.List) and target.elts:
        inner = target.elts[0]
        if type(inner) is ast.Starred:
            inner = inner.value
        return inner.id if type(inner) is ast.Name else None
    return None


class _Reports:
    """What SHD403 reports for a call, on either tree (the rule: libcst, ``_Ast``: ``ast``):
    ``_reads`` is the tree's ``_Decide``; ``_fix``/``_await_fix`` build the fix (libcst) or
    its plan (``ast``)."""

    def _check(self, node) -> None:
        name = self.facts.call_name(node)
        decide = self._reads(self.facts, tuple(self.config["cleanup_calls"]))
        if not decide.reports(node):
            return
        fn = self.facts.enclosing_function(node)
        if fn is not None and fn.is_async:
            # in the driver's coroutine: the awaitable helper, ``await``ed (never the sync one,
            # which would block the loop as the call does now); none inside a comprehension
            short = "get" if name == "ray.get" else "wait"
            helper = f"runtime_guard.ray.interruptible_{short}_async"
            fix = None if decide.in_comprehension(node) else self._await_fix(node, helper)
            self.report(node, _coroutine_message(short), fix=fix)
            return
        if name == "ray.wait":
            self.report(node, _WAIT_MESSAGE, fix=self._fix(node, "runtime_guard.ray.interruptible_wait"))
            return
        self.report(node, _GET_MESSAGE, fix=self._fix(node, "runtime_guard.ray.interruptible_get"))


class _Ast(_Reports, AstCheck):
    """SHD403 on ``ast`` (``ast_engine``): the same decisions (``_Reports``, ``_Decide``), the
    tree's answers read from ``ast`` (``_OnAst``); the fix's plan, never its edits."""

    _reads = _OnAst

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    @staticmethod
    def _fix(node: ast.Call, helper: str) -> FixPlan:
        return FixPlan.unsafe(f"Replace with `{helper}()`")

    @staticmethod
    def _await_fix(node: ast.Call, helper: str) -> FixPlan:
        return FixPlan.unsafe(f"Replace with `await {helper}()`")


class RayGetOrphansOnInterrupt(_Reports, Rule):
    """
    ## What it does
    Flags a blocking `ray.get(refs)` (no `timeout`, or `timeout=None`) in driver code —
    the `__main__` block, a module-level `main()`, a function that calls `ray.init`, a
    module that calls `ray.init` at top level, and the same-module functions and
    coroutines they call — when no Ctrl+C path cancels the remote work and waits for it.
    A path counts when the `ray.get` sits in the body of a `try` whose
    `except KeyboardInterrupt` / `except BaseException` / bare `except` handler (or
    `finally`) calls `ray.cancel` and then waits with a bounded `ray.wait`/`ray.get(...,
    timeout=...)` (or calls `runtime_guard.ray.cancel_and_wait`), when it runs under
    `runtime_guard.on_interrupt(...)` (a `with` or a decorator), or when every call of
    the enclosing function is itself protected that way.

    The same holds for `ray.wait(refs)` with no `timeout` (or `timeout=None`), alone or in a
    monitoring loop (`while refs: done, refs = ray.wait(refs, num_returns=1)`): it blocks
    until the work finishes and Ctrl+C cannot interrupt it any better than `ray.get`.

    In the driver's coroutine (`async def main()` run by `asyncio.run`) the call also blocks
    the event loop; this rule reports it there (SHD301 leaves the driver's `ray.get`/`ray.wait`
    to it, so each call is reported once) and its fix awaits the coroutine helper.

    Not flagged: `ray.get` of refs that a `ray.wait(...)` returned as ready (a polling
    loop), `ray.get`/`ray.wait` with a timeout (`ray.wait(refs, timeout=0)` polls), code in
    Ray tasks and actors (a blocking call in an actor's coroutine is SHD301's), calls in a
    `lambda` inside a coroutine, and a call in a `try` whose interrupt path (`except
    KeyboardInterrupt` / `BaseException` / bare, or `finally`) already cancels the same refs
    without waiting: the missing wait is SHD501's business, and a fix here would cancel the
    refs a second time, cutting short the cleanup the first cancel started.

    Options: `cleanup_calls` (list of qualified names, e.g. `"mypkg.jobs.cancel_all"`)
    are project helpers that cancel Ray work and wait for it; a handler that calls one
    counts as a Ctrl+C path.

    ## Why is this bad?
    Ctrl+C does reach a driver blocked in `ray.get` (within about 2 s with Ray 2.60),
    but `KeyboardInterrupt` only ends the driver: the remote task keeps running, and when
    the driver's job ends Ray kills the task's worker without running its `finally`
    blocks. Every sandbox, container or lease the task held leaks (5 of 5 in our
    measurement; 27 to 50 of 50 Daytona sandboxes in SkyRL #1160). Some launchers also
    mask SIGINT while the driver sits in Ray's C code, so Ctrl+C does nothing at all.

    ## Example
    ```python
    import ray

    ray.init()
    ref = rollout.remote(batch)
    results = ray.get(ref)  # Ctrl+C here leaks every sandbox rollout holds
    ```

    ## Use instead
    ```python
    import ray
    import runtime_guard

    ray.init()
    ref = rollout.remote(batch)
    results = runtime_guard.ray.interruptible_get(ref)
    ```
    For `ray.wait`, `runtime_guard.ray.interruptible_wait(refs, num_returns=1)` takes the
    same arguments and returns the same `(ready, not_ready)`; on Ctrl+C it cancels the refs
    not yet ready and waits for their cleanup. In a coroutine, `await
    runtime_guard.ray.interruptible_get_async(ref)` / `await
    runtime_guard.ray.interruptible_wait_async(refs, ...)`: the sync helpers always return
    the value (called from a coroutine they block the loop, as `ray.get` does), the async
    ones always return a coroutine.

    `interruptible_get` polls with an interruptible sleep and `ray.wait(timeout=0)`,
    re-installs SIGINT/SIGTERM handlers that Ray or a launcher masked (on the main thread,
    when no event loop runs there), and on the first Ctrl+C cancels the work
    (`ray.cancel(force=False)`) and waits, bounded, for its cleanup; a second Ctrl+C
    force-cancels. Or write the `try/except KeyboardInterrupt` with `ray.cancel` and a
    bounded `ray.wait` yourself.

    ## Fix safety
    Unsafe, by the contract (a fix is safe only if the program does exactly what it did on
    every path where the hazard does not occur). The values, shapes and errors are those of
    `ray.get`/`ray.wait` (`GetTimeoutError`, the first failed ref's error as soon as it is
    ready), but the normal path changes:
    - sync (`runtime_guard.ray.interruptible_get` / `interruptible_wait`, same arguments):
      the call polls (it returns up to 0.1 s after the work is ready), and on the main
      thread with no event loop running it installs SIGINT/SIGTERM handlers while it waits
      (restoring them after; a SIGTERM within 5 s after a Ctrl+C cleanup is absorbed), so a
      launcher's `SIG_IGN` no longer hides Ctrl+C there. Called from sync code that a
      coroutine runs, it touches no handler and blocks the loop exactly as the call did;
    - in a coroutine (`await runtime_guard.ray.interruptible_get_async(...)` /
      `interruptible_wait_async`; no fix inside a comprehension): the loop is no longer
      blocked, so other tasks run while the driver waits, and a cancellation of the task
      now arrives during the wait (it cancels the remote work) instead of after it.
    The fix adds `import runtime_guard`.

    ## References
    - SkyRL #1160: Daytona sandboxes leak on Ctrl+C during Harbor RL training
    - Ray docs: `ray.cancel`, "Cancelling Misbehaving Tasks"
    - shutdown-lint lab: `ray_driver_ctrl_c.py` (5 of 5 sandbox files leak)
    - tests/behaviour/test_shd403_ray_wait_interrupt.py: the same leak behind a `ray.wait` loop

    ## Known limits
    A driver is recognised by `main()`, the `__main__` block or `ray.init` in the same
    module; a `ray.wait`/`ray.get` in a library function called only from another module's
    driver is not flagged. Benchmark and example drivers with nothing to clean up are
    reported like any other.
    """

    code = "SHD403"
    name = "ray-get-orphans-on-interrupt"
    summary = "Blocking `ray.get`/`ray.wait` in the driver without a Ctrl+C path that cancels the work and waits"
    triggers = ("get", "wait")
    # tier 1: ray.get / ray.wait in the driver
    # (the call in code, ``C.InCode``; so are the driver's main() and ray.init, but not "__main__": a string)
    candidate = C.All(C.InCode(C.qualified("ray.get", "ray.wait")), C.context("driver"))
    # tier 2: a ray.get / ray.wait without a timeout at module level, or in a function (or
    # coroutine) that may run in the driver
    candidate_tree = staticmethod(lambda tree: _may_get_in_driver(tree))
    facts_needed = ("functions", "calls", "execution")
    options = {
        "cleanup_calls": Option(
            default=[],
            kind=list,
            item_kind=str,
            doc="Qualified names of project helpers that cancel Ray work and wait for its cleanup.",
        ),
    }

    valid = [
        # bounded wait: the driver decides what happens after the timeout
        """
        import ray
        ray.init()
        ref = work.remote()
        out = ray.get(ref, timeout=600)
        """,
        # the interrupt path cancels and waits
        """
        import ray

        def main():
            ray.init()
            ref = rollout.remote()
            try:
                return ray.get(ref)
            except KeyboardInterrupt:
                ray.cancel(ref)
                ray.wait([ref], timeout=120)
                raise
        """,
        # a polling loop: ray.get only sees refs that are ready
        """
        import time
        import ray

        def main():
            ray.init()
            pending = [work.remote(i) for i in range(8)]
            while pending:
                ready, pending = ray.wait(pending, timeout=0)
                for ref in ready:
                    print(ray.get(ref))
                time.sleep(1)
        """,
        # inside a Ray task: not driver code
        """
        import ray

        @ray.remote
        def outer(refs):
            return sum(ray.get(refs))

        if __name__ == "__main__":
            ray.init()
            ray.get(outer.remote([]), timeout=60)
        """,
        # library code that never runs as a driver entrypoint
        """
        import ray

        def collect(refs):
            return ray.get(refs)
        """,
        # runs under runtime_guard.on_interrupt, whose cleanup cancels and waits
        """
        import ray
        import runtime_guard

        @runtime_guard.on_interrupt(lambda: None)
        def main():
            ray.init()
            ray.get(train.remote())
        """,
        # a helper whose only caller is protected
        """
        from ray import get, cancel, wait

        def fetch(ref):
            return get(ref)

        def main():
            ref = job.remote()
            try:
                fetch(ref)
            except BaseException:
                cancel(ref)
                wait([ref], timeout=30)
                raise
        """,
        # a project helper configured as a cleanup call
        Valid(
            """
            import ray
            from jobs import stop_all

            def main():
                ref = job.remote()
                try:
                    ray.get(ref)
                except KeyboardInterrupt:
                    stop_all([ref])
                    raise
            """,
            options={"cleanup_calls": ["jobs.stop_all"]},
        ),
        # ray.wait polling with a timeout
        """
        import ray

        def main():
            ray.init()
            refs = [step.remote(i) for i in range(4)]
            while refs:
                done, refs = ray.wait(refs, num_returns=1, timeout=1.0)
        """,
        # already interruptible: the refs it returns as ready are not flagged either
        """
        import ray
        import runtime_guard

        def main():
            ray.init()
            refs = [step.remote(i) for i in range(4)]
            while refs:
                done, refs = runtime_guard.ray.interruptible_wait(refs, num_returns=1)
                print(ray.get(done))
        """,
        # the interrupt path cancels these refs but does not wait: SHD501's business (a fix here
        # would cancel them a second time and cut short the cleanup the first cancel started)
        """
        import ray

        def main():
            ray.init()
            ref = rollout.remote()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                print("shutting down")
                ray.cancel(ref)
                raise
        """,
        """
        import ray

        def main():
            refs = [rollout.remote(i) for i in range(4)]
            try:
                ray.wait(refs, num_returns=len(refs))
            finally:
                for r in refs:
                    ray.cancel(r)
        """,
        # a coroutine that is not driver code (a Ray async actor's method) is SHD301's business
        """
        import ray

        @ray.remote
        class Worker:
            async def run(self, refs):
                return ray.get(refs)
        """,
    ]
    invalid = [
        Invalid(
            """
            import ray

            ray.init(num_cpus=2)
            ref = rollout.remote("batch-0")
            results = ray.get(ref)
            """,
            fixed="""
            import ray
            import runtime_guard

            ray.init(num_cpus=2)
            ref = rollout.remote("batch-0")
            results = runtime_guard.ray.interruptible_get(ref)
            """,
            message_contains="Ctrl+C",
        ),
        Invalid(
            """
            import ray as r

            def main():
                r.init()
                refs = [step.remote(i) for i in range(4)]
                # wait for the whole batch
                out = r.get(refs)  # the slow part
                print(out)
            """,
            fixed="""
            import ray as r
            import runtime_guard

            def main():
                r.init()
                refs = [step.remote(i) for i in range(4)]
                # wait for the whole batch
                out = runtime_guard.ray.interruptible_get(refs)  # the slow part
                print(out)
            """,
        ),
        Invalid(
            """
            from ray import get

            if __name__ == "__main__":
                ref = trainer.fit.remote()
                get(ref, timeout=None)
            """,
            fixed="""
            from ray import get
            import runtime_guard

            if __name__ == "__main__":
                ref = trainer.fit.remote()
                runtime_guard.ray.interruptible_get(ref, timeout=None)
            """,
        ),
        # the handler cancels something else: these refs are orphaned
        Invalid(
            """
            import ray

            def main():
                ray.init()
                ref, other = rollout.remote(), rollout.remote()
                try:
                    ray.get([ref, other])
                except KeyboardInterrupt:
                    ray.cancel(other)
                    raise
            """,
            fixed="""
            import ray
            import runtime_guard

            def main():
                ray.init()
                ref, other = rollout.remote(), rollout.remote()
                try:
                    runtime_guard.ray.interruptible_get([ref, other])
                except KeyboardInterrupt:
                    ray.cancel(other)
                    raise
            """,
        ),
        # the driver's coroutine: the awaitable helper, awaited
        Invalid(
            """
            import asyncio, ray

            async def main():
                ray.init()
                refs = [job.remote(i) for i in range(4)]
                first = ray.get(refs)[0]
                done, rest = ray.wait(refs, num_returns=2)
                return first, [ray.get(r) for r in rest]

            if __name__ == "__main__":
                asyncio.run(main())
            """,
            fixed="""
            import asyncio, ray
            import runtime_guard

            async def main():
                ray.init()
                refs = [job.remote(i) for i in range(4)]
                first = (await runtime_guard.ray.interruptible_get_async(refs))[0]
                done, rest = await runtime_guard.ray.interruptible_wait_async(refs, num_returns=2)
                return first, [ray.get(r) for r in rest]

            if __name__ == "__main__":
                asyncio.run(main())
            """,
            count=3,
        ),
        # a helper called from the driver, with an unprotected caller
        Invalid(
            """
            import ray

            class Runner:
                def wait_all(self, refs):
                    return ray.get(refs)

                def run(self):
                    return self.wait_all([gen.remote()])

            def main():
                ray.init()
                finish(ray.get(gen.remote()))
            """,
            fixed="""
            import ray
            import runtime_guard

            class Runner:
                def wait_all(self, refs):
                    return ray.get(refs)

                def run(self):
                    return self.wait_all([gen.remote()])

            def main():
                ray.init()
                finish(runtime_guard.ray.interruptible_get(gen.remote()))
            """,
            count=1,
        ),
        # a monitoring loop over ray.wait with no timeout
        Invalid(
            """
            import ray

            def main():
                ray.init()
                refs = [rollout.remote(i) for i in range(8)]
                while refs:
                    done, refs = ray.wait(refs, num_returns=1)
                    print(ray.get(done[0]))
            """,
            fixed="""
            import ray
            import runtime_guard

            def main():
                ray.init()
                refs = [rollout.remote(i) for i in range(8)]
                while refs:
                    done, refs = runtime_guard.ray.interruptible_wait(refs, num_returns=1)
                    print(ray.get(done[0]))
            """,
            message_contains="`ray.wait()`",
        ),
        Invalid(
            """
            from ray import wait

            if __name__ == "__main__":
                refs = [job.remote(i) for i in range(4)]
                ready, _ = wait(refs, num_returns=len(refs), timeout=None)
            """,
            fixed="""
            from ray import wait
            import runtime_guard

            if __name__ == "__main__":
                refs = [job.remote(i) for i in range(4)]
                ready, _ = runtime_guard.ray.interruptible_wait(refs, num_returns=len(refs), timeout=None)
            """,
        ),
        # `except Exception` does not catch KeyboardInterrupt
        Invalid(
            """
            import ray

            def run_job():
                ray.init()
                ref = job.remote()
                try:
                    return ray.get(ref)
                except Exception:
                    ray.cancel(ref)
                    ray.wait([ref], timeout=60)
                    raise
            """,
            fixed="""
            import ray
            import runtime_guard

            def run_job():
                ray.init()
                ref = job.remote()
                try:
                    return runtime_guard.ray.interruptible_get(ref)
                except Exception:
                    ray.cancel(ref)
                    ray.wait([ref], timeout=60)
                    raise
            """,
        ),
    ]

    ast_check = _Ast
    _reads = _OnCst

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    @staticmethod
    def _fix(node: cst.Call, helper: str) -> Fix:
        return Fix.unsafe(
            Replace(node, node.with_changes(func=dotted(helper))),
            IMPORT_RUNTIME_GUARD,
            message=f"Replace with `{helper}()`",
        )

    def _await_fix(self, node: cst.Call, helper: str) -> Fix:
        parent = self.facts.parent(node)
        # `await` binds tighter than a call, a subscript or an attribute: `(await f())[0]`
        bare = not (isinstance(parent, (cst.Attribute, cst.Subscript)) and parent.value is node
                    or isinstance(parent, cst.Call) and parent.func is node)
        awaited = cst.Await(expression=node.with_changes(func=dotted(helper)), lpar=[] if bare else [cst.LeftParen()],
                            rpar=[] if bare else [cst.RightParen()])
        return Fix.unsafe(Replace(node, awaited), IMPORT_RUNTIME_GUARD, message=f"Replace with `await {helper}()`")


def reports(facts, node, cleanup_calls: tuple[str, ...] = ()) -> bool:
    """SHD403 reports ``node`` (SHD301 asks, to leave the driver's ``ray.get``/``ray.wait`` in a
    coroutine to this rule): a libcst call with libcst facts, or an ``ast`` call with ``AstFacts``."""
    reads = _OnAst if isinstance(node, ast.AST) else _OnCst
    return reads(facts, cleanup_calls).reports(node)


# ---------------------------------------------------------------------- shared helpers
# (also used by SHD501)


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False  # a nested def does not run here

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

    walk(node, _Calls())
    return found


def is_interrupt_handler(facts: ModuleFacts, handler: cst.CSTNode) -> bool:
    """``except:``, ``except KeyboardInterrupt``, ``except BaseException`` (or a tuple with one)."""
    return _OnCst(facts).is_interrupt_handler(handler)


def _first_target(target: cst.BaseExpression) -> Optional[str]:
    if isinstance(target, (cst.Tuple, cst.List)) and target.elements:
        inner = target.elements[0].value
        return inner.value if isinstance(inner, cst.Name) else None
    return None


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _unbounded_ray_get(tree, call: ast.Call) -> bool:
    if not (tree.may_call(call, "get", ("ray",)) or tree.may_call(call, "wait", ("ray",))):
        return False
    timeout = T.keyword(call, "timeout")
    return timeout is None or isinstance(timeout, ast.Constant) and timeout.value is None


def _may_get_in_driver(tree) -> bool:
    if any(_unbounded_ray_get(tree, c) for c, _, _ in tree.module_calls):
        return True
    holders = {fn.name for fn in tree.functions if any(_unbounded_ray_get(tree, c) for c, _, _ in fn.calls)}
    return bool(holders) and bool(holders & T.driver_names(tree))
