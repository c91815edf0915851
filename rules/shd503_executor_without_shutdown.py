from __future__ import annotations

import ast
from typing import Optional, Union

import libcst as cst

from shutdown_lint import candidates as C
from shutdown_lint import facts as F
from shutdown_lint.facts import ClassInfo, FunctionInfo, reachable
from shutdown_lint.rule import Fix, InsertAfter, InsertBefore, Invalid, Option, Rule
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import CLEANUP_WORDS, mentions

#: Methods called on the executor that stop it.
_STOP_METHODS = frozenset({"shutdown", "close", "terminate", "__exit__"})
#: Words in a callee's name that take the executor and stop or hand it over
#: (``runtime_guard.shutdown_executor(x)``, ``loop.set_default_executor(x)``, ``atexit.register``).
_TAKERS = ("shutdown", "close", "terminate", "set_default_executor", "register", "finalize", "stop", "cleanup")
#: Cleanup methods the fix may extend, in order of preference.
_FIX_TARGETS = ("close", "shutdown", "cleanup", "stop", "teardown", "aclose", "terminate", "__exit__",
                "__aexit__", "__del__")


class ExecutorWithoutShutdown(Rule):
    """
    ## What it does
    Flags a `ThreadPoolExecutor`, `ProcessPoolExecutor` or `multiprocessing.Pool` (any
    import alias) stored on an object (`self.pool = ...`) or at module level when nothing
    shuts it down on a cleanup path: no `shutdown()`/`close()`/`terminate()` (or
    `runtime_guard.shutdown_executor(...)`, `with pool:`, `atexit.register(pool.shutdown)`,
    `loop.set_default_executor(pool)`) in a cleanup method (`close`, `shutdown`, `cleanup`,
    `stop`, `__exit__`, `__del__`, ...), a method those call, a `finally` or `except`
    block, or a signal/atexit handler.

    Not flagged: executors used in a `with` block or kept in local variables, and ones
    shut down on one of the paths above.

    Across modules (the project index): a shutdown on the shutdown path of a module that
    imports this one (up to two imports away; tests excluded for non-test code) counts:
    `loader.pool.shutdown()` in another module's `cleanup()`, `SCORER.shutdown` registered
    with `atexit`, `shutdown_executor(trainer.pool)` in a `finally`. When nothing is found,
    the message says where the index looked. The search is bounded: the second hop starts
    from the 32 nearest importers, and only importers that mention the attribute (`pool`),
    or import a module that does, are read, at most 160; past that the finding stays.

    ## Why is this bad?
    At interpreter exit `concurrent.futures` joins every worker thread, and each worker
    drains the queue first: after Ctrl+C the process stays alive until every submitted
    job has run. Measured here: with a 1-worker pool holding 10 queued 2-second jobs,
    the process was still alive 8 s after Ctrl+C (it drains ~20 s of work first); with
    `runtime_guard.shutdown_executor` on the interrupt path it exited by itself after
    the running job. Flow-Factory's zombie GPU processes after Ctrl+C came
    from a reward model's `ThreadPoolExecutor` that was never shut down: its threads kept
    the process, and the GPU memory their work referenced, alive.

    ## Example
    ```python
    from concurrent.futures import ThreadPoolExecutor

    class RewardBuffer:
        def __init__(self):
            self.executor = ThreadPoolExecutor(max_workers=4)

        def close(self):
            self.flush()
    ```

    ## Use instead
    ```python
    import runtime_guard

    class RewardBuffer:
        def __init__(self):
            self.executor = ThreadPoolExecutor(max_workers=4)

        def close(self):
            self.flush()
            runtime_guard.shutdown_executor(self.executor)
    ```

    ## Fix safety
    Safe, and only offered when the class already has a cleanup method (`close`,
    `shutdown`, `cleanup`, `stop`, `teardown`, `__exit__`, `__del__`, ...): the fix
    appends `runtime_guard.shutdown_executor(self.<attr>)` to it (before a final
    `return`). That call does `shutdown(wait=False, cancel_futures=True)`, terminates
    process-pool workers and `multiprocessing.Pool`s, and never raises. Queued jobs are
    cancelled when the object is closed; a running job still finishes in its thread.
    Otherwise no fix: add a cleanup method and call it from a `finally` or an interrupt
    handler, or use the executor in a `with` block.

    ## Options
    - `executor_factories` (list of qualified names): calls that create an executor or pool.

    ## References
    - Flow-Factory #149: graceful shutdown on Ctrl+C to prevent zombie GPU processes
    - Python docs: `concurrent.futures.Executor.shutdown(cancel_futures=True)`, `multiprocessing.pool.Pool.terminate`
    """

    code = "SHD503"
    name = "executor-without-shutdown"
    summary = "Executor or pool stored on an object or module with no shutdown on a cleanup path"
    triggers = ("Executor", "Pool")
    facts_needed = ("functions", "calls", "execution")
    options = {
        "executor_factories": Option(
            ["concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
             "multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.pool.ThreadPool",
             "multiprocessing.dummy.Pool", "torch.multiprocessing.Pool"],
            list, "qualified names of calls that create an executor or pool", item_kind=str),
    }
    # tier 1: the factories (the option's default; a rule with options set always runs)
    candidate = C.qualified(*options["executor_factories"].default)
    # tier 2: a factory's result stored on ``self`` in a method or in a module-level name
    candidate_tree = staticmethod(lambda tree: _may_store_executor(tree))

    valid = [
        # shut down in close()
        """
        from concurrent.futures import ThreadPoolExecutor
        class Buffer:
            def __init__(self):
                self.pool = ThreadPoolExecutor(4)
            def close(self):
                self.pool.shutdown(wait=False, cancel_futures=True)
        """,
        # a local executor in a with block
        """
        import concurrent.futures as cf
        def score(items):
            with cf.ThreadPoolExecutor() as ex:
                return list(ex.map(f, items))
        """,
        # module-level pool shut down at exit
        """
        import atexit
        from multiprocessing import Pool
        POOL = Pool(4)
        atexit.register(POOL.terminate)
        """,
        # shut down in a finally through a helper method
        """
        from concurrent.futures import ProcessPoolExecutor
        import runtime_guard
        class Job:
            def __init__(self):
                self._ex = ProcessPoolExecutor()
            def _release(self):
                runtime_guard.shutdown_executor(self._ex)
            def run(self):
                try:
                    self.work()
                finally:
                    self._release()
        """,
        # handed to the loop, which shuts its default executor down
        """
        import asyncio
        from concurrent.futures import ThreadPoolExecutor
        class App:
            def start(self):
                self.ex = ThreadPoolExecutor()
                asyncio.get_running_loop().set_default_executor(self.ex)
        """,
        # not an executor
        """
        class Registry:
            def __init__(self):
                self.pool = ConnectionPoolConfig()
        """,
    ]
    invalid = [
        Invalid(
            """
            from concurrent.futures import ThreadPoolExecutor

            class RewardBuffer:
                def __init__(self, workers):
                    self.executor = ThreadPoolExecutor(max_workers=workers)

                def close(self):
                    # flush pending rewards
                    self.flush()  # best effort
            """,
            fixed="""
            from concurrent.futures import ThreadPoolExecutor
            import runtime_guard

            class RewardBuffer:
                def __init__(self, workers):
                    self.executor = ThreadPoolExecutor(max_workers=workers)

                def close(self):
                    # flush pending rewards
                    self.flush()  # best effort
                    runtime_guard.shutdown_executor(self.executor)
            """,
            message_contains="Ctrl+C",
        ),
        Invalid(
            """
            import concurrent.futures as cf

            _EXECUTOR = cf.ThreadPoolExecutor(max_workers=1)

            def submit(job):
                return _EXECUTOR.submit(job)
            """,
            fixed=None,
        ),
        Invalid(
            """
            import multiprocessing as mp

            class Scorer:
                def __init__(self):
                    self.pool = mp.Pool(8)

                def __exit__(self, *exc):
                    self.log("done")
                    return False
            """,
            fixed="""
            import multiprocessing as mp
            import runtime_guard

            class Scorer:
                def __init__(self):
                    self.pool = mp.Pool(8)

                def __exit__(self, *exc):
                    self.log("done")
                    runtime_guard.shutdown_executor(self.pool)
                    return False
            """,
        ),
        Invalid(
            """
            from concurrent.futures import ProcessPoolExecutor as PPE

            class Evaluator:
                def start(self):
                    self._pool: PPE = PPE()

                def run(self):
                    self._pool.submit(work)
                    self._pool.shutdown()  # happy path only
            """,
            fixed=None,
        ),
        Invalid(
            """
            from concurrent.futures import ThreadPoolExecutor

            class Loader:
                def __init__(self):
                    self.io = ThreadPoolExecutor()

                def stop(self):
                    self.running = False

                def shutdown(self):
                    self.stop()
            """,
            fixed="""
            from concurrent.futures import ThreadPoolExecutor
            import runtime_guard

            class Loader:
                def __init__(self):
                    self.io = ThreadPoolExecutor()

                def stop(self):
                    self.running = False

                def shutdown(self):
                    self.stop()
                    runtime_guard.shutdown_executor(self.io)
            """,
        ),
    ]

    # ------------------------------------------------------------------ visitors
    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._check(node, node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check(node, node.target, node.value)

    # ------------------------------------------------------------------ logic
    def _check(self, node: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(value, cst.Call):
            return
        if self.facts.call_name(value) not in set(self.config["executor_factories"]):
            return
        fn = self.facts.enclosing_function(node)
        cls: Optional[ClassInfo] = None
        if (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name)
                and target.value.value == "self" and fn is not None and fn.cls is not None):
            cls = fn.cls
            ref = f"self.{target.attr.value}"
            scope_fns = list(cls.methods.values())
            scope_fns += [g for g in self.facts.functions if g.scope in cls.methods.values()]
        elif isinstance(target, cst.Name) and fn is None and self.facts.enclosing_class(node) is None:
            ref = target.value
            scope_fns = list(self.facts.functions)
        else:
            return  # locals and other objects' attributes: not stored here
        if self._released(ref, scope_fns, module_level=cls is None):
            return
        found, looked = self._released_elsewhere(ref)
        if found:
            return
        fix = self._fix(cls, ref) if cls is not None else None
        hint = "" if fix else (
            f"; add a close() that calls `runtime_guard.shutdown_executor({ref})` and call it from a "
            "finally or an interrupt handler, or use the executor in a `with` block")
        self.report(
            value,
            f"`{ref}` is never shut down on a cleanup path: after Ctrl+C the interpreter waits for its "
            f"running and queued jobs at exit, keeping the process (and what the jobs hold) alive{hint}"
            + F.looked_in(looked, "shutdown"),
            fix=fix,
        )

    def _released(self, ref: str, scope_fns: list[FunctionInfo], module_level: bool) -> bool:
        f = self.facts
        sites: list[tuple[cst.CSTNode, Optional[FunctionInfo], bool]] = []
        for g in scope_fns:
            sites += [(n, g, strong) for n, strong in _release_sites(g.node.body, ref)]
        if module_level:
            for stmt in f.module.body:
                if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                    sites += [(n, None, True) for n, strong in _release_sites(stmt, ref)]
        holders: set[FunctionInfo] = set()
        for node, g, strong in sites:
            if strong or g is None or self.facts.in_cleanup_block(node):
                return True
            holders.add(g)
        for g in reachable(holders, f.callers):
            if mentions(g.name, CLEANUP_WORDS) or F.CALLBACK in f.contexts(g):
                return True
            if any(self.facts.in_cleanup_block(c) for c in f.calls
                   if f._call_scope.get(c) is g and f.resolve_call(c) in holders):
                return True
        # callers that call a holder from a finally/except
        for c in f.calls:
            if f.resolve_call(c) in holders and self.facts.in_cleanup_block(c):
                return True
        return False

    def _released_elsewhere(self, ref: str) -> tuple[Optional[str], Optional[list[str]]]:
        """A shutdown of ``ref`` on the shutdown path of a module that imports this one (the
        project index): ``worker.pool.shutdown()`` in a ``cleanup()``, ``EXECUTOR.shutdown``
        registered with ``atexit``, ``shutdown_executor(trainer.pool)`` in a ``finally``."""
        view = self.facts.project
        if view is None:
            return None, None
        attr = ref.rsplit(".", 1)[-1]
        # `self.pool` is reached from elsewhere as `<obj>.pool`; a bare `pool` there is another
        # object (a local of the same name)
        least = 3 if ref.startswith("self.") else 2

        def matches(written: str, args: list[str]) -> bool:
            parts = written.split(".")
            if len(parts) >= least and parts[-1] in _STOP_METHODS and parts[-2] == attr:
                return True
            last = parts[-1].lower()
            return any(t in last for t in _TAKERS) and any(
                a.split(".")[-1] == attr and a.count(".") >= least - 2 for a in args)

        found, looked = F.teardown_elsewhere(view, matches, lambda name: mentions(name, CLEANUP_WORDS),
                                             words=(attr,))
        return found, [F.display_path(p) for p in looked]

    # ------------------------------------------------------------------ fix
    def _fix(self, cls: ClassInfo, ref: str) -> Optional[Fix]:
        method = next((cls.methods[n] for n in _FIX_TARGETS if n in cls.methods), None)
        if method is None:
            return None
        body = method.node.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            return None
        attr = ref.split(".", 1)[1]
        call = guard_call("shutdown_executor", [cst.Arg(cst.Attribute(cst.Name("self"), cst.Name(attr)))])
        line = cst.SimpleStatementLine([cst.Expr(call)])
        last = body.body[-1]
        if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return):
            edit: Union[InsertBefore, InsertAfter] = InsertBefore(last, (line,))
        else:
            edit = InsertAfter(last, (line,))
        return Fix.safe(edit, IMPORT_RUNTIME_GUARD, message=f"Shut `{ref}` down in `{method.name}()`")


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _release_sites(root: cst.CSTNode, ref: str) -> list[tuple[cst.CSTNode, bool]]:
    """Nodes in ``root`` (not in nested defs) that stop ``ref`` or hand it over. ``strong``:
    a registration or a `with` that releases it whatever path is taken."""
    found: list[tuple[cst.CSTNode, bool]] = []

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_WithItem(self, n: cst.WithItem) -> None:
            if _code(n.item) == ref:
                found.append((n, True))

        def visit_Call(self, n: cst.Call) -> None:
            func = n.func
            if isinstance(func, cst.Attribute) and func.attr.value in _STOP_METHODS and _code(func.value) == ref:
                found.append((n, False))
                return
            callee = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "")
            if not any(t in callee.lower() for t in _TAKERS):
                return
            for a in n.args:
                text = _code(a.value)
                if text == ref:
                    found.append((n, callee in ("set_default_executor",)))
                elif text.startswith(ref + ".") and text[len(ref) + 1:] in _STOP_METHODS:
                    found.append((n, True))  # atexit.register(pool.shutdown), weakref.finalize(...)

    walk(root, _Scan())
    return found


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_store_executor(tree) -> bool:
    factories = ExecutorWithoutShutdown.options["executor_factories"].default
    for target, value, fn in tree.assigns:
        if not isinstance(value, ast.Call):
            continue
        stored = (fn is not None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id == "self") or (fn is None and isinstance(target, ast.Name))
        if stored and tree.may_call_any(value, factories) and not _surely_released(tree, target, fn):
            return True
    return False


def _surely_released(tree, target, fn) -> bool:
    """``self.<attr> = <executor>`` in a method, and a sibling method whose name is a cleanup
    word calls ``self.<attr>.shutdown()`` (or another stop method) directly: ``_released``
    then finds that release site in a cleanup function, whatever else the module does, so
    the rule cannot report this assignment. Anything less certain stays a candidate."""
    if not (isinstance(target, ast.Attribute) and fn is not None and fn.in_class):
        return False
    siblings = next((ms for ms in tree.methods.values() if any(m is fn for m in ms)), ())
    ref = f"self.{target.attr}"
    seen: set[str] = set()
    for method in siblings:
        if method.name in seen:
            continue  # the facts know a class's first definition of a name as its method
        seen.add(method.name)
        if not mentions(method.name, CLEANUP_WORDS):
            continue
        for call, _awaited, _in_lambda in method.calls:
            func = call.func
            if (isinstance(func, ast.Attribute) and func.attr in _STOP_METHODS
                    and isinstance(func.value, ast.Attribute) and func.value.attr == target.attr
                    and isinstance(func.value.value, ast.Name) and func.value.value.id == "self"
                    # the rule compares the code as written: `self.pool`, nothing between
                    and func.value.lineno == func.value.end_lineno
                    and func.value.end_col_offset - func.value.col_offset == len(ref)):
                return True
    return False
