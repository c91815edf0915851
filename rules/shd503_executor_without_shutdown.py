from __future__ import annotations

import ast
import tokenize
import weakref
from typing import Optional, Union

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.prefilter import words as C
from shutdown_lint import facts as F
from shutdown_lint.facts import ClassInfo, FunctionInfo, reachable
from shutdown_lint.rule import Fix, InsertAfter, InsertBefore, Invalid, Option, Replace, Rule
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import CLEANUP_WORDS, mentions
from shutdown_lint.prefilter.ast_tree import COMPREHENSIONS, DEFS, TRYS, children, nested_statements, walk_within
from shutdown_lint.prefilter.ast_tree import STATEMENT_BLOCKS, statement_blocks
from shutdown_lint.ast_engine.check import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments, execution_of
from shutdown_lint.ast_engine.facts import cst_names

#: Methods called on the executor that stop it.
_STOP_METHODS = frozenset({"shutdown", "close", "terminate", "__exit__"})
#: Words in a callee's name that take the executor and stop or hand it over
#: (``runtime_guard.shutdown_executor(x)``, ``loop.set_default_executor(x)``, ``atexit.register``).
_TAKERS = ("shutdown", "close", "terminate", "set_default_executor", "register", "finalize", "stop", "cleanup")
#: Pools whose ``with`` block ends in ``terminate()``: they never wait for queued work.
_TERMINATING_POOLS = frozenset({"multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.pool.ThreadPool",
                                "multiprocessing.dummy.Pool", "torch.multiprocessing.Pool"})
#: Methods that queue work on an executor; ``map`` queues every item at once.
_QUEUE_METHODS = frozenset({"submit", "map"})
#: Exception types whose handler runs on Ctrl+C.
_INTERRUPT_TYPES = frozenset({"KeyboardInterrupt", "BaseException"})
#: Cleanup methods the fix may extend, in order of preference.
_FIX_TARGETS = ("close", "shutdown", "cleanup", "stop", "teardown", "aclose", "terminate", "__exit__",
                "__aexit__", "__del__")


# ------------------------------------------------------------------ candidate tier 1 (text)
#: what a scan skips between two tokens: spaces, line ends, a backslash continuation's ``\\``
_GAP = frozenset(b" \t\f\r\n\\")
#: byte value -> 1 for ``_ 0-9 A-Z a-z``
_IDENT = C.IDENT_BYTES


class _FactoryMayBeCalled(C.Cond):
    """Tier 1: a factory's last word ``W`` (``Pool``, ``ThreadPool``, ``ThreadPoolExecutor``,
    ``ProcessPoolExecutor``) written where tier 2 may see a call of it or an alias of it
    (``_calls_or_binds``).

    Necessary for tier 2 (``_may_store_executor``): each of its shapes needs a call ``c`` that is
    an assignment's value (stored, or a local ``V = c`` with work queued) or a ``with`` item,
    with ``tree.may_call_any(c, <factories>)``: ``W`` among the words of ``c``'s callee. They come
    - from the callee itself: ``W`` called (``W(``, past closing brackets) after an ``=`` or, in
      a ``with`` item, after ``with`` or ``,`` (only ``(``, ``await`` and the dotted chain that
      ends in ``W`` between);
    - from the alias tables (``Tree._aliases``), seeded only by ``import ... W as x`` and by
      one-target bindings (``=``, ``: T =``, ``:=``, ``with ... as x``) whose value's head (under
      awaits and calls) is ``W``: ``W`` then ``as``; ``W`` after an ``=`` as above, called or
      closed by as many ``)`` as were opened (``(W, 1)`` is a tuple); ``W`` called in a ``with``
      item (``with W() as x``);
    - from the factory results, which give a factory word only for a factory word
      (``_factory_results``, checked in tests/perf/test_s14_t1_shd502_503.py).
    An annotation (``x: Optional[W]``), ``isinstance(x, W)``, ``class P(W)``, an import without
    ``as``, ``f(W())``, ``return W()`` give tier 2 nothing.

    Read on the whole text (no code view: building one cost more than the parses it saved), every
    occurrence of ``W`` (in strings and comments too: they only count more). Between ``W`` and the
    tokens read only whitespace, backslash continuations and comments can stand: a comment is
    read over forwards (to its line's end); read backwards, a line break into a line with a ``#``
    makes the occurrence count (the comment's text is not told from code). Whatever else is not
    read counts: a chain past a bracket (``f().W``); any ``=`` (``f(n=W)``, ``==``)."""

    def __init__(self, factories) -> None:
        self.words = frozenset(n.rsplit(".", 1)[-1].encode() for n in factories)
        #: a word in every word (``Pool``): one search finds them all (or None: one per word)
        shortest = min(self.words, key=len)
        self.anchor = shortest if all(shortest in w for w in self.words) else None
        self.key = ("SHD503 factory may be called", tuple(sorted(self.words)))

    def holds(self, text: "C.FileText") -> bool:
        return text.memo(self.key, self._scan)

    def _scan(self, text: "C.FileText") -> bool:
        src = text.source
        end, ident, words = len(src), _IDENT, self.words
        for anchor in (self.anchor,) if self.anchor is not None else sorted(self.words):
            i = src.find(anchor)
            while i >= 0:  # the identifier around each occurrence of the anchor
                p, q = i, i + len(anchor)
                while p > 0 and ident[src[p - 1]]:
                    p -= 1
                while q < end and ident[src[q]]:
                    q += 1
                if src[p:q] in words and _calls_or_binds(src, p, q):
                    return True
                i = src.find(anchor, q)
        return False

    def __repr__(self) -> str:
        return f"_FactoryMayBeCalled({', '.join(sorted(w.decode() for w in self.words))})"


#: ``_skip_back``'s answer when it would read back past a comment
_UNREAD = -2


def _skip_back(src: bytes, i: int) -> int:
    """The last byte at or before ``i`` that is not between two tokens (``_GAP``), -1 at the
    text's start, or ``_UNREAD`` where a line break leads back into a line with a ``#`` (a
    comment may end it)."""
    while i >= 0:
        c = src[i]
        if c not in _GAP:
            return i
        if c == 10 or c == 13:
            start = max(src.rfind(b"\n", 0, i), src.rfind(b"\r", 0, i)) + 1
            if src.find(b"#", start, i) >= 0:
                return _UNREAD
        i -= 1
    return i


def _skip_on(src: bytes, i: int) -> int:
    """The first byte at or after ``i`` that is not between two tokens (a comment read to its
    line's end), or ``len(src)``."""
    end = len(src)
    while i < end:
        c = src[i]
        if c == 35:  # "#": a comment
            while i < end and src[i] != 10 and src[i] != 13:
                i += 1
        elif c in _GAP:
            i += 1
        else:
            break
    return i


def _word_start(src: bytes, i: int) -> int:
    """The first byte of the identifier run that ends at ``i``."""
    while i >= 0 and _IDENT[src[i]]:
        i -= 1
    return i + 1


def _calls_or_binds(src: bytes, p: int, q: int) -> bool:
    """The identifier at ``src[p:q]`` may be a call's callee or an alias's source, as
    ``Tree.words`` reads them (``_FactoryMayBeCalled``): followed by ``as`` (an import or ``with``
    alias), or preceded (over a dotted chain, ``(`` and ``await``) by an ``=`` (an assignment's
    value, a ``:=``, a keyword: any ``=`` counts) and called or closed by as many ``)``, or called
    after ``with`` or a ``,`` (a ``with`` item). True where it cannot read back (``_UNREAD``)."""
    end = len(src)
    k = _skip_on(src, q)
    closes = 0
    while k < end and src[k] == 41:  # ")"
        closes += 1
        k = _skip_on(src, k + 1)
    if src.startswith(b"as", k) and (k + 2 >= end or not _IDENT[src[k + 2]]):
        return True
    called = k < end and src[k] == 40  # "("
    k = _skip_back(src, p - 1)
    while k >= 0 and src[k] == 46:  # ".": the chain's word before
        k = _skip_back(src, k - 1)
        if k < 0 or not _IDENT[src[k]]:
            return True  # ``f().W``, ``x[0].W``, ``"".W``, a comment: not read
        k = _skip_back(src, _word_start(src, k) - 1)
    opens = 0
    while k >= 0:
        if src[k] == 40:  # "("
            opens += 1
            k = _skip_back(src, k - 1)
        elif _IDENT[src[k]] and src[_word_start(src, k):k + 1] == b"await":
            k = _skip_back(src, k - 5)
        else:
            break
    if k == _UNREAD:
        return True
    if k < 0:
        return False
    if src[k] == 61:  # "="
        return called or opens <= closes
    return called and (src[k] == 44 or (_IDENT[src[k]] and src[_word_start(src, k):k + 1] == b"with"))

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

    Not flagged: executors kept in local variables or used in a `with` block (but see the
    second shape below), and ones shut down on one of the paths above.

    Second shape: a `ThreadPoolExecutor` or `ProcessPoolExecutor` used as a `with` block (or a
    local one shut down with the default `wait=True`, `ex.shutdown()`) while work is queued in
    bulk on it: `ex.submit` in a loop or a comprehension, or an `ex.map(...)` iterator kept in
    a variable, and no interrupt path that cancels it in the function: no
    `ex.shutdown(..., cancel_futures=True)`, no `runtime_guard.shutdown_executor(ex)`, no
    `.cancel()` in a `finally` or in a handler that catches KeyboardInterrupt (bare,
    `BaseException`, `KeyboardInterrupt`). Not flagged: a loop that submits one job per worker
    (`for i in range(n)` with `max_workers=n`, or over `xs` with `max_workers=len(xs)`), an
    `ex.map` iterated where it is made (its iterator cancels what is left when an interrupt
    stops it), `multiprocessing` pools (their `with` block ends in `terminate()`).

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

    The second shape is the same wait written as a `with` block: Ctrl+C raises
    KeyboardInterrupt in the main thread at once, and leaving the block calls
    `shutdown(wait=True)`, which runs every queued job before the interrupt can end the
    program. Measured (tests/behaviour/test_shd503_with_block_drains_on_interrupt.py, SIGINT to
    the process group): 8 one-second jobs on one thread, 7.7 s from Ctrl+C to exit, 0.7 s
    fixed; 16 one-second jobs on a 2-process pool, 7.1 s, 0.1 s fixed. shutdown-lint's own
    runner had this shape (issue 31): Ctrl+C waited 3.8 s over ray + torch, `--fix` went on
    writing every file.

    Precision of the second shape, every report read: 33 reports, 32 true, 1 false. The
    installed site-packages of the test environment (ray 2.60, torch 2.13, setuptools,
    pre-commit...): 15 reports, 14 true (ray's autoscaler, data, llm download helpers; torch's
    tunable-op GEMM pool and checkpoint consolidation; setuptools' parallel build_ext;
    pre-commit autoupdate), 1 false (ray train's torchft start-up: one job per replica group on
    a default-sized pool, which the groups do not outnumber in practice). The repositories of
    OpenHands, SkyRL, OpenRLHF, prime-rl, slime, ruff, trl, AReaL, flake8-async, rllm and verl:
    18 reports, 18 true (checkpoint converters and mergers, reward and health-check fan-outs;
    one, slime's delta updater, bounds its queue to twice the workers). Before the
    one-job-per-worker and consumed-`map` exclusions the same read gave 7 more, all false.

    ## Example
    ```python
    from concurrent.futures import ThreadPoolExecutor

    class RewardBuffer:
        def __init__(self):
            self.executor = ThreadPoolExecutor(max_workers=4)

        def close(self):
            self.flush()
    ```

    ```python
    def score_all(items):
        with ThreadPoolExecutor(max_workers=4) as ex:
            futures = [ex.submit(score, item) for item in items]
            return [f.result() for f in futures]
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

    ```python
    def score_all(items):
        with ThreadPoolExecutor(max_workers=4) as ex:
            try:
                futures = [ex.submit(score, item) for item in items]
                return [f.result() for f in futures]
            except KeyboardInterrupt:
                ex.shutdown(wait=False, cancel_futures=True)
                raise
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

    The second shape's fix (a `with` block; Python 3.9 or later targeted, the block not
    `async`, the name not rebound in it) is safe: the block's body goes into
    `try: ... except KeyboardInterrupt: <stop>; raise`. The hazard's path is a
    KeyboardInterrupt leaving the block; on every other path (no exception, any other
    exception, a `return`) the handler never runs and the program does exactly what it did,
    the block's own `shutdown(wait=True)` included. On the hazard's path, `<stop>` cancels
    the jobs not yet started, the same KeyboardInterrupt propagates, and the block's exit
    then waits only for the jobs already running. For a `ThreadPoolExecutor`, `<stop>` is
    `ex.shutdown(wait=False, cancel_futures=True)` (it cancels at once). For a
    `ProcessPoolExecutor` it is `runtime_guard.shutdown_executor(ex)`: that pool cancels in
    its manager thread, and the block's `shutdown(wait=True)` right after would withdraw the
    request before that thread sees it, so the helper also stops the workers (SIGTERM, SIGKILL
    after 5 s): the jobs they were running end there, which the page promises for the
    interrupt. The local `ex.shutdown()` shape has no fix (where the cancel belongs depends on
    the code around it).

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
    # tier 1: the factories (the option's default; a rule with options set always runs), and a
    # factory's word where it may be called or aliased (``_FactoryMayBeCalled``: every call tier 2
    # reads needs one, as its callee's own word or an alias's source)
    candidate = C.All(C.qualified(*options["executor_factories"].default),
                      _FactoryMayBeCalled(options["executor_factories"].default))
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
        # queued in bulk, cancelled on Ctrl+C
        """
        from concurrent.futures import ThreadPoolExecutor
        def score_all(items):
            with ThreadPoolExecutor(4) as ex:
                try:
                    futures = [ex.submit(score, i) for i in items]
                    return [f.result() for f in futures]
                except KeyboardInterrupt:
                    ex.shutdown(wait=False, cancel_futures=True)
                    raise
        """,
        # one job per worker: nothing waits in the queue
        """
        from concurrent.futures import ThreadPoolExecutor, as_completed
        def start_all(nprocs):
            with ThreadPoolExecutor(max_workers=nprocs) as executor:
                futures = [executor.submit(start, i) for i in range(nprocs)]
                return [f.result() for f in as_completed(futures)]
        """,
        # the futures are cancelled in a finally
        """
        from concurrent.futures import ProcessPoolExecutor
        def run(jobs):
            with ProcessPoolExecutor(2) as pool:
                futures = [pool.submit(work, j) for j in jobs]
                try:
                    return [f.result() for f in futures]
                finally:
                    for f in futures:
                        f.cancel()
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
        Invalid(
            """
            from concurrent.futures import ThreadPoolExecutor

            def score_all(items):
                with ThreadPoolExecutor(max_workers=4) as ex:
                    futures = [ex.submit(score, item) for item in items]
                    return [f.result() for f in futures]
            """,
            fixed="""
            from concurrent.futures import ThreadPoolExecutor

            def score_all(items):
                with ThreadPoolExecutor(max_workers=4) as ex:
                    try:
                        futures = [ex.submit(score, item) for item in items]
                        return [f.result() for f in futures]
                    except KeyboardInterrupt:
                        ex.shutdown(wait=False, cancel_futures=True)
                        raise
            """,
            message_contains="runs every queued job",
        ),
        Invalid(
            """
            import concurrent.futures

            def run(batches):
                with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
                    futures = []
                    for batch in batches:
                        futures.append(pool.submit(work, batch))
                    for fut in concurrent.futures.as_completed(futures):
                        report(fut.result())
            """,
            fixed="""
            import concurrent.futures
            import runtime_guard

            def run(batches):
                with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
                    try:
                        futures = []
                        for batch in batches:
                            futures.append(pool.submit(work, batch))
                        for fut in concurrent.futures.as_completed(futures):
                            report(fut.result())
                    except KeyboardInterrupt:
                        runtime_guard.shutdown_executor(pool)
                        raise
            """,
        ),
        Invalid(
            """
            from concurrent.futures import ThreadPoolExecutor

            def fetch_all(urls):
                ex = ThreadPoolExecutor(8)
                results = ex.map(fetch, urls)
                ex.shutdown()
                return list(results)
            """,
            fixed=None,
            message_contains="default `wait=True`",
        ),
    ]

    # ------------------------------------------------------------------ visitors
    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._check(node, node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check(node, node.target, node.value)

    def visit_With(self, node: cst.With) -> None:
        draining = self._draining()
        for item in node.items:
            call, alias = item.item, item.asname
            if not (isinstance(call, cst.Call) and alias is not None and isinstance(alias.name, cst.Name)):
                continue
            if self.facts.call_name(call) not in draining:
                continue
            name = alias.name.value
            how = _queues_in_bulk(node.body, name, call)
            if how is None:
                continue
            fn = self.facts.enclosing_function(node)
            if _cancelled(self.facts, fn.node if fn is not None else self.facts.module, name):
                continue
            fix = self._drain_fix(node, name, self.facts.call_name(call) == "concurrent.futures.ThreadPoolExecutor")
            self.report(call, _with_message(_code(call.func), name, how), fix=fix)

    # ------------------------------------------------------------------ logic
    def _draining(self) -> set[str]:
        return _draining(self.config)

    def _check(self, node: cst.CSTNode, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if not isinstance(value, cst.Call):
            return
        if self.facts.call_name(value) not in set(self.config["executor_factories"]):
            return
        fn = self.facts.enclosing_function(node)
        if isinstance(target, cst.Name) and fn is not None:
            self._check_local(value, target.value, fn)
            return
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
        sites: list[tuple[cst.CSTNode, Optional[FunctionInfo], bool]] = []
        for g in scope_fns:
            sites += [(n, g, strong) for n, strong in _release_sites(g.node.body, ref)]
        if cls is None:
            for stmt in self.facts.module.body:
                if not isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                    sites += [(n, None, True) for n, strong in _release_sites(stmt, ref)]
        if _released(self.facts, sites):
            return
        found, looked = _released_elsewhere(self.facts.project, ref, self.__dict__.setdefault("_elsewhere", {}))
        if found:
            return
        fix = self._fix(cls, ref) if cls is not None else None
        self.report(value, _stored_message(ref, fix is not None, looked), fix=fix)

    def _check_local(self, call: cst.Call, name: str, fn: FunctionInfo) -> None:
        """A local executor shut down with the default ``wait=True`` (``ex.shutdown()``) after
        work queued in bulk, with no interrupt path that cancels it: the ``with`` block's hazard
        written out by hand (and, where the shutdown is not in a ``finally``, at interpreter exit)."""
        if self.facts.call_name(call) not in self._draining():
            return
        body = fn.node.body
        waits = [c for c in _calls_on(body, name, _SHUTDOWN) if not _no_wait(_cst_args(c), _code)]
        if not waits:
            return
        how = _queues_in_bulk(body, name, call, until=waits[-1])
        if how is None or _cancelled(self.facts, fn.node, name):
            return
        self.report(call, _local_message(name, how))

    def _drain_fix(self, node: cst.With, name: str, threads: bool) -> Optional[Fix]:
        """The ``with`` body in ``try: ... except KeyboardInterrupt: <stop>; raise``: exact on
        every path but an interrupt in the block. ``<stop>`` is ``<name>.shutdown(wait=False,
        cancel_futures=True)`` for a ``ThreadPoolExecutor`` (it cancels at once);
        ``runtime_guard.shutdown_executor(<name>)`` for the others: a ``ProcessPoolExecutor``
        cancels in its manager thread, and the block's own ``shutdown(wait=True)`` right after
        would clear the request before that thread sees it (3.9-3.13); its workers are stopped
        instead, so that what is queued fails at once."""
        if not self.settings.target_at_least("py39"):  # cancel_futures is new in 3.9
            return None
        body = node.body
        if not isinstance(body, cst.IndentedBlock) or not body.body or node.asynchronous is not None:
            return None
        if _rebinds(body, name):
            return None
        edits: list = []
        if threads:
            stop = cst.Call(
                func=cst.Attribute(cst.Name(name), cst.Name("shutdown")),
                args=[cst.Arg(cst.Name("False"), keyword=cst.Name("wait"),
                              equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))),
                      cst.Arg(cst.Name("True"), keyword=cst.Name("cancel_futures"),
                              equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))])
        else:
            stop = guard_call("shutdown_executor", [cst.Arg(cst.Name(name))])
            edits.append(IMPORT_RUNTIME_GUARD)
        shutdown = cst.SimpleStatementLine([cst.Expr(stop)])
        handler = cst.ExceptHandler(
            body=cst.IndentedBlock([shutdown, cst.SimpleStatementLine([cst.Raise()])]),
            type=cst.Name("KeyboardInterrupt"),
        )
        guarded = cst.Try(body=cst.IndentedBlock(body=list(body.body)), handlers=[handler])
        new = node.with_changes(body=body.with_changes(body=[guarded]))
        return Fix.safe(Replace(node, new), *edits, message=_drain_fix_message(name))

    # ------------------------------------------------------------------ fix
    def _fix(self, cls: ClassInfo, ref: str) -> Optional[Fix]:
        method = _fix_method(cls)
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
        return Fix.safe(edit, IMPORT_RUNTIME_GUARD, message=_fix_message(ref, method))


# ------------------------------------------------------------------ shared by both trees
# What the rule decides does not depend on the tree: the libcst hooks above and the ``ast``
# check below (``_Ast``) read their nodes and hand these the answers.
_SHUTDOWN = frozenset({"shutdown"})


def _draining(config: dict) -> set[str]:
    """The configured factories whose executor waits for its queued work when shut down."""
    return set(config["executor_factories"]) - _TERMINATING_POOLS


def _taker(callee: str) -> bool:
    """A callee whose name says it takes the executor to stop it or hand it over."""
    return any(t in callee.lower() for t in _TAKERS)


def _hands_over(callee: str, text: str, ref: str) -> Optional[bool]:
    """What ``callee(..., <text>, ...)`` (a ``_taker``) does with ``ref``: None (nothing), else a
    release site, strong (it releases it whatever path is taken) for ``set_default_executor(ref)``
    and a registered stop method (``atexit.register(pool.shutdown)``, ``weakref.finalize(...)``)."""
    if text == ref:
        return callee in ("set_default_executor",)
    if text.startswith(ref + ".") and text[len(ref) + 1:] in _STOP_METHODS:
        return True
    return None


def _no_wait(args: list, code) -> bool:
    """A ``shutdown`` call that does not wait (``wait=False``, or a first argument ``False``) or
    that cancels the queued work. ``args``: (keyword or None, value) as written; ``code``: the
    tree's ``_code``."""
    for i, (keyword, value) in enumerate(args):
        key = keyword if keyword is not None else ("wait" if i == 0 else "")
        if key == "wait" and code(value) != "True" or key == "cancel_futures" and code(value) != "False":
            return True
    return False


def _cancels_futures(args: list, code) -> bool:
    """``shutdown(..., cancel_futures=<not False>)`` (``args`` as for ``_no_wait``)."""
    return any(keyword == "cancel_futures" and code(value) != "False" for keyword, value in args)


def _submit_how(name: str) -> str:
    return f"`{name}.submit` in a loop or comprehension"


def _map_how(name: str, kept: list[str], consumed: set[str]) -> Optional[str]:
    """How ``name.map`` queues in bulk: an iterator dropped ("" in ``kept``) or kept in a variable
    that is not ``consumed`` (iterated or handed to a call before the shutdown); else None."""
    if "" in kept:
        return f"a `{name}.map` whose iterator is dropped"
    if any(v not in consumed for v in kept):
        return f"a `{name}.map` iterator kept in a variable and iterated only after the shutdown"
    return None


def _with_message(func: str, name: str, how: str) -> str:
    return (f"`with {func}(...) as {name}` queues work in bulk ({how}) and no interrupt path "
            f"cancels it: on Ctrl+C the block's exit "
            f"calls `{name}.shutdown(wait=True)`, which runs every queued job before the interrupt can end "
            f"the program; cancel the queued work on KeyboardInterrupt "
            f"(`{name}.shutdown(wait=False, cancel_futures=True)`)")


def _local_message(name: str, how: str) -> str:
    return (f"`{name}` queues work in bulk ({how}) and is "
            f"shut down with the default `wait=True`, and no interrupt path cancels it: on Ctrl+C every queued "
            f"job runs before the program can end; cancel the queued work on KeyboardInterrupt "
            f"(`{name}.shutdown(wait=False, cancel_futures=True)` in an `except KeyboardInterrupt`)")


def _stored_message(ref: str, has_fix: bool, looked: Optional[list[str]]) -> str:
    hint = "" if has_fix else (
        f"; add a close() that calls `runtime_guard.shutdown_executor({ref})` and call it from a "
        "finally or an interrupt handler, or use the executor in a `with` block")
    return (f"`{ref}` is never shut down on a cleanup path: after Ctrl+C the interpreter waits for its "
            f"running and queued jobs at exit, keeping the process (and what the jobs hold) alive{hint}"
            + F.looked_in(looked, "shutdown"))


def _drain_fix_message(name: str) -> str:
    return f"Cancel `{name}`'s queued work on KeyboardInterrupt"


def _fix_method(cls: ClassInfo) -> Optional[FunctionInfo]:
    """The cleanup method ``_fix`` extends: the first of ``_FIX_TARGETS`` the class has."""
    return next((cls.methods[n] for n in _FIX_TARGETS if n in cls.methods), None)


def _fix_message(ref: str, method: FunctionInfo) -> str:
    return f"Shut `{ref}` down in `{method.name}()`"


def _released(f, sites: list) -> bool:
    """``sites`` (node, function holding it or None at module level, strong) release the executor
    on a cleanup path: a strong or module-level site, one in a ``finally``/``except`` body; or a
    function holding one is reached from a cleanup-named function or a callback, or is called
    from a cleanup block. ``f``: the facts of either tree (the same questions asked of both)."""
    holders: set[FunctionInfo] = set()
    for node, g, strong in sites:
        if strong or g is None or f.in_cleanup_block(node):
            return True
        holders.add(g)
    if not holders:
        return False
    reach = reachable(holders, f.callers)
    # in the module's order (where a function runs is computed on the first ``contexts``: the
    # same functions asked in the same order on both trees)
    order = {fn: i for i, fn in enumerate(f.functions)}
    for g in sorted(reach, key=lambda fn: order.get(fn, -1)):
        if mentions(g.name, CLEANUP_WORDS) or F.CALLBACK in f.contexts(g):
            return True
        if any(f.in_cleanup_block(c) for c in g.calls if f.resolve_call(c) in holders):
            return True
    # callers that call a holder from a finally/except
    for c in f.calls:
        if f.resolve_call(c) in holders and f.in_cleanup_block(c):
            return True
    return False


def _released_elsewhere(view, ref: str, memo: dict) -> tuple[Optional[str], Optional[list[str]]]:
    """A shutdown of ``ref`` on the shutdown path of a module that imports this one (the
    project index): ``worker.pool.shutdown()`` in a ``cleanup()``, ``EXECUTOR.shutdown``
    registered with ``atexit``, ``shutdown_executor(trainer.pool)`` in a ``finally``. ``memo``:
    the file's answers (the search depends on (attr, least) only: two classes of the module
    storing `self.pool` read the importers once)."""
    if view is None:
        return None, None
    attr = ref.rsplit(".", 1)[-1]
    # `self.pool` is reached from elsewhere as `<obj>.pool`; a bare `pool` there is another
    # object (a local of the same name)
    least = 3 if ref.startswith("self.") else 2
    if (attr, least) not in memo:
        memo[(attr, least)] = _search_elsewhere(view, attr, least)
    return memo[(attr, least)]


def _search_elsewhere(view, attr: str, least: int) -> tuple[Optional[str], Optional[list[str]]]:

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


# ------------------------------------------------------------------ libcst helpers
def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _calls_on(root: cst.CSTNode, name: str, methods: frozenset[str], bulk: bool = False,
              loops: Optional[list] = None) -> list[cst.Call]:
    """Calls ``<name>.<method>(...)`` in ``root`` outside nested defs and lambdas; with ``bulk``,
    only those inside a loop or a comprehension (there, within ``root``), and ``loops`` gets, for
    each, what its innermost loop iterates (None for a ``while``)."""
    found: list[cst.Call] = []

    class _Scan(cst.CSTVisitor):
        def __init__(self) -> None:
            self.loops: list[Optional[cst.BaseExpression]] = []

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is root

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        loop_types = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)

        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, self.loop_types):
                self.loops.append(n.iter if isinstance(n, cst.For) else (
                    None if isinstance(n, cst.While) else n.for_in.iter))  # type: ignore[attr-defined]
            return super().on_visit(n)

        def on_leave(self, n: cst.CSTNode) -> None:
            if isinstance(n, self.loop_types):
                self.loops.pop()
            super().on_leave(n)

        def visit_Call(self, n: cst.Call) -> None:
            func = n.func
            if (isinstance(func, cst.Attribute) and func.attr.value in methods and isinstance(func.value, cst.Name)
                    and func.value.value == name and (not bulk or self.loops)):
                found.append(n)
                if loops is not None:
                    loops.append(self.loops[-1] if self.loops else None)

    walk(root, _Scan())
    return found


def _workers(factory: Optional[cst.Call]) -> Optional[str]:
    """The code of the factory's ``max_workers`` (keyword or first positional argument)."""
    if factory is None:
        return None
    for i, arg in enumerate(factory.args):
        if (arg.keyword is not None and arg.keyword.value in ("max_workers", "processes")) or (
                i == 0 and arg.keyword is None and arg.star == ""):
            return _code(arg.value)
    return None


def _one_job_per_worker(iterable, workers: Optional[str], code) -> bool:
    """A loop over ``range(W)``, or over ``Y`` (``enumerate(Y)``, ``Y.items()``...) with ``W`` being
    ``len(Y)``, where ``W`` is the pool's worker count: nothing waits in the queue. ``iterable``: what
    the loop iterates (None: a ``while``), a node of either tree; ``code``: its tree's ``_code``."""
    if iterable is None or workers is None:
        return False
    text = code(iterable)
    if text == f"range({workers})":
        return True
    for head, tail in (("enumerate(", ")"), ("", ".items()"), ("", ".keys()"), ("", ".values()")):
        if text.startswith(head) and text.endswith(tail) and len(text) > len(head) + len(tail):
            text = text[len(head):len(text) - len(tail)]
            break
    return workers == f"len({text})"


def _queues_in_bulk(root: cst.CSTNode, name: str, factory: Optional[cst.Call] = None,
                    until: Optional[cst.CSTNode] = None) -> Optional[str]:
    """How ``root`` queues work on ``name`` in bulk (for the message), or None: ``<name>.submit(...)``
    in a loop or a comprehension (unless it loops once per worker), or ``<name>.map(...)`` (it
    submits every item at once) whose iterator is kept in a variable that is neither iterated nor
    handed to a call in ``root`` (before ``until``, the shutdown, when given). A ``map`` iterated
    before the shutdown is not enough: an interrupt while its results are awaited runs the
    iterator's ``finally``, which cancels the futures not yet done."""
    iterables: list = []
    _calls_on(root, name, frozenset({"submit"}), bulk=True, loops=iterables)
    workers = _workers(factory)
    if any(not _one_job_per_worker(it, workers, _code) for it in iterables):
        return _submit_how(name)
    maps = {id(c) for c in _calls_on(root, name, frozenset({"map"}))}
    if not maps:
        return None
    kept: list[str] = []  # variables holding a map iterator
    consumed: set[str] = set()  # ... iterated or handed to a call before ``until``
    done = False

    class _Scan(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            nonlocal done
            if n is until:
                done = True
            return not done and super().on_visit(n)

        def visit_Assign(self, n: cst.Assign) -> None:
            if id(n.value) in maps and len(n.targets) == 1 and isinstance(n.targets[0].target, cst.Name):
                kept.append(n.targets[0].target.value)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            if n.value is not None and id(n.value) in maps and isinstance(n.target, cst.Name):
                kept.append(n.target.value)

        def visit_Expr(self, n: cst.Expr) -> None:
            if id(n.value) in maps:  # the iterator is dropped unstarted: nothing ever cancels
                kept.append("")

        def visit_For(self, n: cst.For) -> None:
            if isinstance(n.iter, cst.Name):
                consumed.add(n.iter.value)

        def visit_CompFor(self, n: cst.CompFor) -> None:
            if isinstance(n.iter, cst.Name):
                consumed.add(n.iter.value)

        def visit_Arg(self, n: cst.Arg) -> None:
            if isinstance(n.value, cst.Name):
                consumed.add(n.value.value)

    walk(root, _Scan())
    return _map_how(name, kept, consumed)


def _cst_args(call: cst.Call) -> list[tuple[Optional[str], cst.BaseExpression]]:
    """``call``'s arguments as written: (keyword or None, value); ``*a``/``**k``: (None, a/k)."""
    return [(a.keyword.value if a.keyword is not None else None, a.value) for a in call.args]


def _cancelled(facts, scope: cst.CSTNode, name: str) -> bool:
    """Some interrupt path in ``scope`` may cancel ``name``'s queued work: a ``<name>.shutdown``
    with ``cancel_futures``; ``<name>`` handed to a call that stops it
    (``runtime_guard.shutdown_executor(ex)``); a ``.cancel()`` in a ``finally`` or in a handler that
    catches KeyboardInterrupt (bare, ``BaseException``, ``KeyboardInterrupt``); or such a handler
    that ends the process at once (``os._exit``)."""
    for call in _calls_on(scope, name, _SHUTDOWN):
        if _cancels_futures(_cst_args(call), _code):
            return True
    hit = False

    class _Scan(cst.CSTVisitor):
        def __init__(self) -> None:
            self.interrupt_blocks = 0

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is scope

        def visit_ExceptHandler(self, n: cst.ExceptHandler) -> None:
            if _catches_interrupt(facts, n):
                self.interrupt_blocks += 1

        def leave_ExceptHandler(self, n: cst.ExceptHandler) -> None:
            if _catches_interrupt(facts, n):
                self.interrupt_blocks -= 1

        def visit_Finally(self, n: cst.Finally) -> None:
            self.interrupt_blocks += 1

        def leave_Finally(self, n: cst.Finally) -> None:
            self.interrupt_blocks -= 1

        def visit_Call(self, n: cst.Call) -> None:
            nonlocal hit
            func = n.func
            callee = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "")
            if _taker(callee) and any(_code(a.value) == name for a in n.args):
                hit = True
            elif self.interrupt_blocks and (callee == "cancel" or _code(func) in ("os._exit", "_exit")):
                hit = True

    walk(scope, _Scan())
    return hit


def _catches_interrupt(facts, handler: cst.ExceptHandler) -> bool:
    """Bare, or a type whose last name is KeyboardInterrupt/BaseException; a ``*x`` element
    never counts (read as written, not unwrapped: as ``_ast_catches_interrupt``)."""
    types = facts.caught_types(handler)
    if types is None:
        return True
    return any(_last_name(t) in _INTERRUPT_TYPES and type(facts.parent(t)) is not cst.StarredElement for t in types)


def _last_name(node) -> str:
    """``b`` for ``a.b``, ``a`` for ``a``, else "" (either tree; ``ast``'s types first: an ast-only
    run does not import libcst)."""
    t = type(node)
    if t is ast.Attribute:
        return node.attr
    if t is ast.Name:
        return node.id
    if isinstance(node, ast.AST):
        return ""
    if t is cst.Attribute:
        return node.attr.value
    if t is cst.Name:
        return node.value
    return ""


def _rebinds(root: cst.CSTNode, name: str) -> bool:
    """``name`` is assigned (or deleted) somewhere in ``root``."""
    found = False

    class _Scan(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal found
            if n.value == name:
                found = True

    targets: list[cst.CSTNode] = []

    class _Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            targets.append(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            targets.append(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            targets.append(n.target)

        def visit_For(self, n: cst.For) -> None:
            targets.append(n.target)

        def visit_AsName(self, n: cst.AsName) -> None:
            targets.append(n.name)

        def visit_Del(self, n: cst.Del) -> None:
            targets.append(n.target)

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            targets.append(n.target)

    walk(root, _Targets())
    for t in targets:
        if isinstance(t, cst.Name):
            if t.value == name:
                return True
        else:
            walk(t, _Scan())
    return found


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
            if not _taker(callee):
                return
            for a in n.args:
                strong = _hands_over(callee, _code(a.value), ref)
                if strong is not None:
                    found.append((n, strong))

    walk(root, _Scan())
    return found


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_store_executor(tree) -> bool:
    factories = _FACTORIES
    for target, value, fn in tree.assigns:
        if not isinstance(value, ast.Call):
            continue
        stored = (fn is not None and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                  and target.value.id == "self") or (fn is None and isinstance(target, ast.Name))
        if stored and tree.may_call_any(value, factories) and not _surely_released(tree, target, fn) and not (
                fn is None and (id(target) in _class_body_targets(tree)
                                or target.id in _module_level_releases(tree))):
            return True
    return _may_drain(tree)


#: the ``executor_factories`` default, and those of an executor that waits for its queued work
#: (``_may_drain``), as tuples: ``Tree.may_call_any`` reads a tuple of names once per process
_FACTORIES = tuple(ExecutorWithoutShutdown.options["executor_factories"].default)
_DRAINING_FACTORIES = tuple(n for n in _FACTORIES if n not in _TERMINATING_POOLS)


def _class_body_targets(tree) -> set[int]:
    """Ids of the assignment targets in a class body (outside any def): ``_check`` returns for
    those (``enclosing_class`` is not None: a class attribute is not stored here)."""
    got = _MODULE_FACTS.get(tree, {})
    if "class_body" in got:
        return got["class_body"]
    out: set[int] = set()
    for cls in tree.classes:
        for st in nested_statements(cls.body, lambda st: not isinstance(st, (*DEFS, ast.ClassDef))):
            if type(st) is ast.Assign:
                out.update(id(t) for t in st.targets)
            elif type(st) is ast.AnnAssign:
                out.add(id(st.target))
    _MODULE_FACTS.setdefault(tree, {})["class_body"] = out
    return out


#: per tree: what ``_class_body_targets`` and ``_module_level_releases`` found
_MODULE_FACTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _module_level_releases(tree) -> set[str]:
    """Names ``ref`` that ``_released(ref, ..., module_level=True)`` surely finds released: a site
    of ``_release_sites`` in a module-level statement (not a top-level def or class; nested defs
    left out), which ``_released`` accepts whatever it is: ``<ref>.shutdown()`` (a stop method),
    or a callee whose name holds a ``_TAKERS`` word given ``<ref>`` or ``<ref>.<stop method>`` as
    its first argument (``atexit.register(pool.shutdown)``), each written so that its code is
    that text (no parentheses, no spaces: checked on the positions; f-strings are left out)."""
    got = _MODULE_FACTS.get(tree, {})
    if "released" in got:
        return got["released"]
    out: set[str] = set()
    todo = [st for st in tree.module.body if not isinstance(st, (*DEFS, ast.ClassDef))]
    while todo:
        n = todo.pop()
        t = type(n)
        if t in DEFS or t is ast.JoinedStr:
            continue
        todo.extend(ast.iter_child_nodes(n))
        if t is not ast.Call:
            continue
        func = n.func
        if type(func) is ast.Attribute and func.attr in _STOP_METHODS and type(func.value) is ast.Name \
                and func.col_offset == func.value.col_offset:
            out.add(func.value.id)
            continue
        callee = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        if not n.args or not any(w in callee.lower() for w in _TAKERS):
            continue
        a = n.args[0]
        if a.lineno != func.end_lineno or a.col_offset != func.end_col_offset + 1:
            continue  # ``f( x)``, ``f((x))``: not the bare text
        if type(a) is ast.Name:
            out.add(a.id)
        elif type(a) is ast.Attribute and a.attr in _STOP_METHODS and type(a.value) is ast.Name \
                and a.end_lineno == a.lineno and a.end_col_offset - a.col_offset == len(a.value.id) + 1 + len(a.attr):
            out.add(a.value.id)
    _MODULE_FACTS.setdefault(tree, {})["released"] = out
    return out


def _may_drain(tree) -> bool:
    """The second shape (``visit_With``, ``_check_local``): a ``with`` item that may call a factory
    of an executor that waits for its queued work, bound by ``as V``, with ``V.submit``/``V.map``
    called in the block; or, in a function, ``V = <factory>(...)`` with ``V.submit``/``V.map``
    and ``V.shutdown`` called in it; the work queued in bulk as ``_queues`` reads it (a ``map``
    whose iterator the block consumes, a ``submit`` per worker of ``range(W)`` are not). (The
    cancelling paths are left to the rule.)"""
    if not tree.mentions(tuple(_QUEUE_METHODS)):
        return False
    factories = _DRAINING_FACTORIES
    # The factory test comes first: it rules out nearly every with item and assignment, and
    # the walks of ``_queues`` are what cost. ``with`` and assignments are statements: the
    # statement walk finds every one ``ast.walk`` would, without walking the expressions. One
    # walk of every statement (``nested_statements``' blocks) for both shapes, each statement with
    # the innermost def it is in (its owner: ``_check_local`` reads the body of the function the
    # assignment is directly in, its nested defs not entered; a class body passes the owner on)
    With, AsyncWith, Assign, Name, Call = ast.With, ast.AsyncWith, ast.Assign, ast.Name, ast.Call
    blocks_of = STATEMENT_BLOCKS
    todo: list = [(st, None) for st in tree.module.body]
    pop, push = todo.pop, todo.append
    while todo:
        node, owner = pop()
        t = type(node)
        if t is With or t is AsyncWith:
            for item in node.items:
                if (type(item.optional_vars) is Name and type(item.context_expr) is Call
                        and tree.may_call_any(item.context_expr, factories)
                        and _queues(node.body, item.optional_vars.id, item.context_expr, whole_block=True)):
                    return True
        elif t is Assign:
            if owner is not None and type(node.value) is Call and any(type(x) is Name for x in node.targets) \
                    and tree.may_call_any(node.value, factories):
                for x in node.targets:
                    if (type(x) is Name and _queues(owner.body, x.id, node.value)
                            and _calls_method(owner.body, x.id, frozenset({"shutdown"}), own=True)):
                        return True
            continue
        blocks = blocks_of.get(t)
        if blocks is None:
            blocks = statement_blocks(t)
        if not blocks:
            continue
        inner = node if t in DEFS else owner
        for field in blocks:
            for st in getattr(node, field):
                if field == "handlers" or field == "cases":
                    for sub in st.body:
                        push((sub, inner))
                else:
                    push((st, inner))
    return False


#: statement type -> its fields that hold statements (``handlers``/``cases``: their bodies)


_NO_LOOP = object()


def _queues(body: list, name: str, factory: ast.Call, whole_block: bool = False) -> bool:
    """A superset of ``_queues_in_bulk(body, name, factory)``: ``<name>.submit(...)`` whose innermost
    loop or comprehension (nested defs and lambdas left out, as ``_calls_on`` does) is not surely one
    job per worker (``_one_job_per_worker``, decided here only for the exact text ``range(W)`` with
    ``W`` the name given as ``max_workers=W``/``processes=W``); or a ``<name>.map(...)`` whose
    iterator is dropped (an expression statement) or kept in a name (``it = ex.map(...)``). In a
    ``with`` block (``whole_block``: the rule reads all of it) a kept iterator must also be neither
    iterated (``for x in it``) nor handed to a call (``list(it)``) anywhere in the block: the rule
    counts those (and more) as consuming it. Elsewhere the rule reads only up to the shutdown, so
    every kept iterator counts."""
    workers = _workers_name(factory)
    kept: list[str] = []
    todo: list = [(st, _NO_LOOP) for st in reversed(body)]
    while todo:
        node, loop = todo.pop()
        t = type(node)
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.Lambda:
            continue
        if t is ast.Call:
            func = node.func
            if (func.__class__ is ast.Attribute and func.attr == "submit" and func.value.__class__ is ast.Name
                    and func.value.id == name and loop is not _NO_LOOP
                    and not _one_job_per_worker_ast(loop, workers)):
                return True
        elif t is ast.Expr and _is_map_of(node.value, name):
            return True  # the iterator is dropped unstarted
        elif t is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name \
                and _is_map_of(node.value, name):
            kept.append(node.targets[0].id)
        elif t is ast.AnnAssign and type(node.target) is ast.Name and node.value is not None \
                and _is_map_of(node.value, name):
            kept.append(node.target.id)
        inner = loop
        if t is ast.For or t is ast.AsyncFor:
            inner = node.iter
        elif t is ast.While:
            inner = None
        elif t in COMPREHENSIONS:
            inner = node.generators[0].iter
        children = [(c, inner) for c in ast.iter_child_nodes(node)]
        children.reverse()
        todo.extend(children)
    if not kept:
        return False
    if not whole_block:
        return True
    consumed: set[str] = set()  # a subset of what the rule's scan counts (it enters nested defs too)
    for st in body:
        for n in ast.walk(st):
            t = type(n)
            if t is ast.Call:
                for a in n.args:
                    if type(a) is ast.Starred:
                        a = a.value
                    if type(a) is ast.Name:
                        consumed.add(a.id)
                for k in n.keywords:
                    if type(k.value) is ast.Name:
                        consumed.add(k.value.id)
            elif t is ast.For or t is ast.AsyncFor:
                if type(n.iter) is ast.Name:
                    consumed.add(n.iter.id)
            elif t is ast.comprehension:
                if type(n.iter) is ast.Name:
                    consumed.add(n.iter.id)
    return any(v not in consumed for v in kept)



def _is_map_of(expr: ast.AST, name: str) -> bool:
    func = expr.func if type(expr) is ast.Call else None
    return (type(func) is ast.Attribute and func.attr == "map" and type(func.value) is ast.Name
            and func.value.id == name)


def _workers_name(factory: ast.Call) -> Optional[str]:
    """``W`` when ``_workers(factory)`` surely is the code ``W``: the factory has no positional
    argument (the rule would take the first one) and its first ``max_workers=``/``processes=``
    keyword is the bare name ``W``, written with nothing around it (its span is exactly
    ``max_workers=W``: no parentheses, spaces or comments that the rule's text would keep)."""
    if any(type(a) is not ast.Starred for a in factory.args[:1]):
        return None
    for k in factory.keywords:
        if k.arg in ("max_workers", "processes"):
            v = k.value
            if (type(v) is ast.Name and k.lineno == k.end_lineno
                    and k.end_col_offset - k.col_offset == len(k.arg) + 1 + len(v.id)):
                return v.id
            return None
    return None


def _one_job_per_worker_ast(iterable, workers: Optional[str]) -> bool:
    """``_one_job_per_worker`` where it surely holds: the iterable is the exact text ``range(W)``
    (one line, its span exactly that long: no spaces, parentheses or comments)."""
    return (workers is not None and type(iterable) is ast.Call and type(iterable.func) is ast.Name
            and iterable.func.id == "range" and len(iterable.args) == 1 and not iterable.keywords
            and type(iterable.args[0]) is ast.Name and iterable.args[0].id == workers
            and iterable.lineno == iterable.end_lineno
            and iterable.end_col_offset - iterable.col_offset == len(f"range({workers})"))


def _calls_method(body: list, name: str, methods: frozenset, own: bool = False) -> bool:
    """Some ``<name>.<method>(...)`` in ``body`` (nested functions included: a superset; with
    ``own``, not in nested defs and lambdas, as ``_calls_on`` reads a body)."""
    nodes = walk_within(body, stop=(ast.Lambda, *DEFS)) if own else (n for stmt in body for n in ast.walk(stmt))
    for n in nodes:
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in methods
                and isinstance(n.func.value, ast.Name) and n.func.value.id == name):
            return True
    return False


def _surely_released(tree, target, fn) -> bool:
    """``self.<attr> = <executor>`` in a method, and a sibling method whose name is a cleanup
    word calls ``self.<attr>.shutdown()`` (or another stop method) directly: ``_released``
    then finds that release site in a cleanup function, whatever else the module does, so
    the rule cannot report this assignment. Anything less certain stays a candidate."""
    if not (isinstance(target, ast.Attribute) and fn is not None and fn.in_class):
        return False
    siblings = tree.methods.get(id(fn.cls), ())
    ref = f"self.{target.attr}"
    seen: set[str] = set()
    for method in siblings:
        if method.name in seen:
            continue  # the facts know a class's first definition of a name as its method
        seen.add(method.name)
        if mentions(method.name, CLEANUP_WORDS):
            if any(_stops(call, ref) for call, _awaited, _in_lambda in method.calls):
                return True
            continue
        # any method: a release site in a ``finally`` or an ``except`` body of the method itself
        # (``facts.in_cleanup_block``: not in a nested def or lambda) is enough for ``_released``
        for st in nested_statements(method.node.body, lambda st: not isinstance(st, DEFS)):
            if isinstance(st, TRYS):
                blocks = [*st.finalbody, *(x for h in st.handlers for x in h.body)]
                if any(type(n) is ast.Call and _stops(n, ref)
                       for n in walk_within(blocks, stop=(ast.Lambda, *DEFS))):
                    return True
    return False


def _stops(call: ast.Call, ref: str) -> bool:
    """``<ref>.shutdown()`` (or another stop method), ``ref`` being ``self.<attr>`` written as is."""
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr in _STOP_METHODS
            and isinstance(func.value, ast.Attribute) and func.value.attr == ref[5:]
            and isinstance(func.value.value, ast.Name) and func.value.value.id == "self"
            # the rule compares the code as written: `self.pool`, nothing between
            and func.value.lineno == func.value.end_lineno
            and func.value.end_col_offset - func.value.col_offset == len(ref))


# ------------------------------------------------------------------ detection on ast (issue 30)
class _Ast(AstCheck):
    """The rule on Python's ``ast`` (``ast_engine``): the libcst hooks' findings, node for node,
    message for message; the fix is planned (``FixPlan``) exactly where ``_fix``/``_drain_fix``
    build one. libcst's walks are read here as follows: a ``Finally`` is a ``Try``'s
    ``finalbody``; an ``except*`` handler is an ``ExceptHandler`` under a ``TryStar`` (libcst's
    ``ExceptStarHandler``, which ``_cancelled`` does not count); an ``Arg`` is a call's
    argument or a class's base; a node's code (``_code``) is its source with the parentheses
    libcst gives it; "before the shutdown" (``_queues_in_bulk``'s ``until``) is "starts before
    it" (libcst walks in source order)."""

    # ------------------------------------------------------------------ hooks
    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1:
            self._check(node, node.targets[0], node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._check(node, node.target, node.value)

    def visit_With(self, node) -> None:
        draining = _draining(self.config)
        for item in node.items:
            call, alias = item.context_expr, item.optional_vars
            if type(call) is not ast.Call or type(alias) is not ast.Name:
                continue
            if self.facts.call_name(call) not in draining:
                continue
            name = alias.id
            how = self._queues_in_bulk(node.body, name, call)
            if how is None:
                continue
            fn = self.facts.enclosing_function(node)
            if self._cancelled(fn.node if fn is not None else self.facts.module, name):
                continue
            self.report(call, _with_message(self._code(call.func), name, how), fix=self._drain_fix(node, name))

    visit_AsyncWith = visit_With  # libcst's ``With`` is both

    # ------------------------------------------------------------------ logic (as the libcst side's)
    def _check(self, node: ast.stmt, target: ast.expr, value: ast.expr) -> None:
        if type(value) is not ast.Call:
            return
        f = self.facts
        if f.call_name(value) not in set(self.config["executor_factories"]):
            return
        fn = f.enclosing_function(node)
        if type(target) is ast.Name and fn is not None:
            self._check_local(value, target.id, fn)
            return
        cls: Optional[ClassInfo] = None
        if (type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self"
                and fn is not None and fn.cls is not None):
            cls = fn.cls
            ref = f"self.{target.attr}"
            methods = list(cls.methods.values())
            scope_fns = methods + [g for g in f.functions if g.scope in methods]
        elif type(target) is ast.Name and fn is None and f.enclosing_class(node) is None:
            ref = target.id
            scope_fns = list(f.functions)
        else:
            return  # locals and other objects' attributes: not stored here
        sites: list[tuple[ast.AST, Optional[FunctionInfo], bool]] = []
        for g in scope_fns:
            sites += [(n, g, strong) for n, strong in self._release_sites(g.node.body, ref)]
        if cls is None:
            for stmt in f.module.body:
                if not isinstance(stmt, (*DEFS, ast.ClassDef)):
                    sites += [(n, None, True) for n, _ in self._release_sites([stmt], ref)]
        if _released(execution_of(f), sites):
            return
        found, looked = _released_elsewhere(f.project, ref, self.__dict__.setdefault("_elsewhere", {}))
        if found:
            return
        fix = self._fix(cls, ref) if cls is not None else None
        self.report(value, _stored_message(ref, fix is not None, looked), fix=fix)

    def _check_local(self, call: ast.Call, name: str, fn: FunctionInfo) -> None:
        if self.facts.call_name(call) not in _draining(self.config):
            return
        body = fn.node.body
        waits = [c for c in self._calls_on(body, name, _SHUTDOWN) if not _no_wait(arguments(c), self._code)]
        if not waits:
            return
        # libcst's last in its (source) order: nested calls start after the call holding them
        until = max(waits, key=_start)
        how = self._queues_in_bulk(body, name, call, until=until)
        if how is None or self._cancelled(fn.node, name):
            return
        self.report(call, _local_message(name, how))

    def _drain_fix(self, node, name: str) -> Optional[FixPlan]:
        if not self.settings.target_at_least("py39"):
            return None
        if type(node) is ast.AsyncWith or self.facts.body_on_header_line(node.body):
            return None
        if _ast_rebinds(node.body, name):
            return None
        return FixPlan.safe(_drain_fix_message(name))

    def _fix(self, cls: ClassInfo, ref: str) -> Optional[FixPlan]:
        method = _fix_method(cls)
        if method is None or self.facts.body_on_header_line(method.node.body):
            return None
        return FixPlan.safe(_fix_message(ref, method))

    # ------------------------------------------------------------------ libcst's walks, on ast
    def _calls_on(self, roots: list, name: str, methods: frozenset, loops: Optional[list] = None,
                  root_def: Optional[ast.AST] = None) -> list[ast.Call]:
        """``_calls_on``: ``<name>.<method>(...)`` under ``roots``, not in nested defs (but
        ``root_def``) nor lambdas; with ``loops``, only those in a loop or a comprehension, and
        ``loops`` gets what the innermost one iterates (None for a ``while``). Not in source order."""
        found: list[ast.Call] = []
        todo: list = [(n, _NO_LOOP) for n in roots]
        pop, push = todo.pop, todo.append
        while todo:
            node, loop = pop()
            t = type(node)
            if t is ast.Lambda or (t is ast.FunctionDef or t is ast.AsyncFunctionDef) and node is not root_def:
                continue
            if t is ast.Call:
                func = node.func
                if (type(func) is ast.Attribute and func.attr in methods and type(func.value) is ast.Name
                        and func.value.id == name and (loops is None or loop is not _NO_LOOP)):
                    found.append(node)
                    if loops is not None:
                        loops.append(loop)
            elif t is ast.For or t is ast.AsyncFor:
                loop = node.iter
            elif t is ast.While:
                loop = None
            elif t in COMPREHENSIONS:
                loop = node.generators[0].iter
            for c in children(node):
                push((c, loop))
        return found

    def _queues_in_bulk(self, body: list, name: str, factory: ast.Call,
                        until: Optional[ast.Call] = None) -> Optional[str]:
        iterables: list = []
        self._calls_on(body, name, frozenset({"submit"}), loops=iterables)
        workers = self._workers(factory)
        if any(not _one_job_per_worker(it, workers, self._code) for it in iterables):
            return _submit_how(name)
        maps = {id(c) for c in self._calls_on(body, name, frozenset({"map"}))}
        if not maps:
            return None
        kept: list[str] = []
        consumed: set[str] = set()
        stop = None if until is None else _start(until)

        def before(n: ast.AST) -> bool:  # libcst visits it before the shutdown (``until``)
            return stop is None or _start(n) < stop

        def consume(values) -> None:
            for v in values:
                if type(v) is ast.Starred:
                    v = v.value
                if type(v) is ast.Name and before(v):
                    consumed.add(v.id)

        todo = list(body)
        while todo:
            n = todo.pop()
            t = type(n)
            if t is ast.Assign:
                if (len(n.targets) == 1 and type(n.targets[0]) is ast.Name and id(n.value) in maps
                        and before(n)):
                    kept.append(n.targets[0].id)
            elif t is ast.AnnAssign:
                if n.value is not None and id(n.value) in maps and type(n.target) is ast.Name and before(n):
                    kept.append(n.target.id)
            elif t is ast.Expr:
                if id(n.value) in maps and before(n):
                    kept.append("")  # the iterator is dropped unstarted: nothing ever cancels
            elif t is ast.For or t is ast.AsyncFor:
                if type(n.iter) is ast.Name and before(n):
                    consumed.add(n.iter.id)
            elif t is ast.comprehension:  # libcst's ``CompFor`` starts at its ``for``, before the target
                if type(n.iter) is ast.Name and before(n.target):
                    consumed.add(n.iter.id)
            elif t is ast.Call:  # libcst's ``Arg``s
                consume(n.args)
                consume(k.value for k in n.keywords)
            elif t is ast.ClassDef:  # a class's bases are ``Arg``s too
                consume(n.bases)
                consume(k.value for k in n.keywords)
            todo.extend(children(n))
        return _map_how(name, kept, consumed)

    def _workers(self, factory: ast.Call) -> Optional[str]:
        """``_workers``: the code of the first positional argument (written first: a positional
        argument cannot follow a keyword) or else of the first ``max_workers=``/``processes=``."""
        if factory.args and type(factory.args[0]) is not ast.Starred:
            return self._code(factory.args[0])
        for k in factory.keywords:
            if k.arg in ("max_workers", "processes"):
                return self._code(k.value)
        return None

    def _cancelled(self, scope: ast.AST, name: str) -> bool:
        root_def = scope if isinstance(scope, DEFS) else None
        for call in self._calls_on([scope], name, _SHUTDOWN, root_def=root_def):
            if _cancels_futures(arguments(call), self._code):
                return True
        todo: list = [(scope, 0)]  # (node, how many interrupt blocks hold it)
        pop, push = todo.pop, todo.append
        while todo:
            node, blocks = pop()
            t = type(node)
            if (t is ast.FunctionDef or t is ast.AsyncFunctionDef) and node is not scope:
                continue
            if t is ast.Call:
                func = node.func
                callee = _last_name(func)
                if _taker(callee) and any(self._code_is(a.value, name) for a in arguments(node)):
                    return True
                if blocks and (callee == "cancel" or self._code_is(func, "os._exit") or self._code_is(func, "_exit")):
                    return True
            if t is ast.Try or t is TRYS[-1]:
                for st in (*node.body, *node.orelse):
                    push((st, blocks))
                for h in node.handlers:  # libcst counts ``except`` handlers, not ``except*`` ones
                    push((h, blocks + (1 if t is ast.Try and _ast_catches_interrupt(self.facts, h) else 0)))
                for st in node.finalbody:
                    push((st, blocks + 1))
                continue
            for c in children(node):
                push((c, blocks))
        return False

    def _release_sites(self, roots: list, ref: str) -> list[tuple[ast.AST, bool]]:
        found: list[tuple[ast.AST, bool]] = []
        todo = list(roots)
        while todo:
            n = todo.pop()
            t = type(n)
            if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                continue
            if t is ast.withitem:
                if self._code_is(n.context_expr, ref):
                    found.append((n, True))
            elif t is ast.Call:
                func = n.func
                if type(func) is ast.Attribute and func.attr in _STOP_METHODS and self._code_is(func.value, ref):
                    found.append((n, False))
                else:
                    callee = _last_name(func)
                    if _taker(callee):
                        for a in arguments(n):
                            v = a.value
                            if _dotted(v) == ref or (type(v) is ast.Attribute and v.attr in _STOP_METHODS
                                                     and _dotted(v.value) == ref):
                                strong = _hands_over(callee, self._code(v), ref)
                                if strong is not None:
                                    found.append((n, strong))
            todo.extend(children(n))
        return found

    # ------------------------------------------------------------------ text
    def _code_is(self, node: ast.AST, text: str) -> bool:
        """``_code(node) == text`` for ``text`` a dotted name (only such a node can be written so)."""
        return _dotted(node) == text and self._code(node) == text

    def _code(self, node: ast.AST) -> str:
        """libcst's ``code_for_node`` of an expression: its source with the parentheses libcst
        gives it (all those around it, but a call's, a class's or a one-item ``with``'s own)."""
        f = self.facts
        lines = f.lines
        extents = [f.span(node)]
        while True:
            l1, c1, l2, c2 = extents[-1]
            left = self._before(l1, c1)
            if left is None or lines[left[0] - 1][left[1]] != "(":
                break
            right = self._after(l2, c2)
            if right is None or lines[right[0] - 1][right[1]] != ")":
                break
            extents.append((left[0], left[1], right[0], right[1] + 1))
        parent = f.parent(node)
        if _may_own_parentheses(node, parent, f.parent(parent) if type(parent) is ast.withitem else None):
            if type(parent) is ast.Call:  # the call's: its closing one ends the call
                theirs = f.span(parent)[2:] == extents[-1][2:]
            else:  # the class's or the ``with``'s: the header's ``:`` follows
                end = self._after(*extents[-1][2:])
                theirs = end is not None and lines[end[0] - 1][end[1]] == ":"
            if theirs and len(extents) > 1:
                extents.pop()
            elif theirs and type(node) is ast.GeneratorExp:
                # ``f(x for x in y)``: ast's span of the generator takes the call's parentheses (the
                # facts leave them out, and the space and comments inside them)
                return f.code_for_node(node)
        l1, c1, l2, c2 = extents[-1]
        if l1 == l2:
            return lines[l1 - 1][c1:c2]
        # libcst renders the later lines without the indentation of the statement's block (but
        # inside strings and after a backslash): the facts' rendering of a byte range
        return f._lines_of(l1, _byte_column(lines[l1 - 1], c1), l2, _byte_column(lines[l2 - 1], c2), node)

    def _before(self, line: int, col: int) -> Optional[tuple[int, int]]:
        """The last character of code before (line, col): comments, blanks, continuations skipped."""
        text = self.facts.lines[line - 1][:col]
        while True:
            stripped = text.rstrip(" \t\f\\\r\n")
            if stripped:
                return line, len(stripped) - 1
            line -= 1
            if line < 1:
                return None
            text = self._without_comment(line)

    def _after(self, line: int, col: int) -> Optional[tuple[int, int]]:
        """The first character of code at or after (line, col)."""
        lines = self.facts.lines
        text = lines[line - 1]
        while True:
            rest = text[col:]
            stripped = rest.lstrip(" \t\f")
            if stripped and stripped[0] not in "#\\\r\n":
                return line, col + len(rest) - len(stripped)
            line += 1
            if line > len(lines):
                return None
            text, col = lines[line - 1], 0

    def _without_comment(self, line: int) -> str:
        text = self.facts.lines[line - 1]
        if "#" not in text:
            return text
        starts = self.__dict__.get("_comments")
        if starts is None:
            starts = self.__dict__["_comments"] = _comment_starts(self.facts.lines)
        col = starts.get(line)
        return text if col is None else text[:col]


def _byte_column(line: str, col: int) -> int:
    return col if line.isascii() else len(line[:col].encode("utf-8"))


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def _dotted(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for the names and attributes written so, else None."""
    t = type(node)
    if t is ast.Name:
        return node.id  # type: ignore[attr-defined]
    if t is ast.Attribute:
        inner = _dotted(node.value)  # type: ignore[attr-defined]
        return None if inner is None else f"{inner}.{node.attr}"  # type: ignore[attr-defined]
    return None


def _may_own_parentheses(node: ast.AST, parent: Optional[ast.AST], grandparent: Optional[ast.AST]) -> bool:
    """The outermost parentheses around ``node`` may be its parent's syntax, not its own: the sole
    argument of a call (``f(x)``) or base of a class, the sole item of a ``with`` with no ``as``
    (``with (x):``, libcst's parenthesized ``With``)."""
    t = type(parent)
    if t is ast.Call:
        return len(parent.args) == 1 and not parent.keywords and parent.args[0] is node  # type: ignore
    if t is ast.ClassDef:
        return len(parent.bases) == 1 and not parent.keywords and parent.bases[0] is node  # type: ignore
    if t is ast.withitem:
        return (parent.optional_vars is None and type(grandparent) in (ast.With, ast.AsyncWith)  # type: ignore
                and len(grandparent.items) == 1)  # type: ignore[union-attr]
    return False


def _ast_catches_interrupt(facts, handler: ast.ExceptHandler) -> bool:
    """``_catches_interrupt`` on ast: a ``*x`` element (``Starred``) never counts."""
    types = facts.caught_types(handler)
    if types is None:
        return True
    return any(_last_name(t) in _INTERRUPT_TYPES and type(facts.parent(t)) is not ast.Starred for t in types)


def _ast_rebinds(body: list, name: str) -> bool:
    """``_rebinds`` on ast: ``name`` is a target (assigned, deleted, bound by ``for``, ``with``,
    ``except``, ``import ... as``, ``:=``; a comprehension's ``for`` is not) or a name in one
    (``name.x = ...``, ``a[name] = ...``: libcst's ``Name`` nodes, which include an attribute, a
    keyword argument and a lambda parameter)."""
    for n in walk_within(body):
        t = type(n)
        if t is ast.Assign or t is ast.Delete:
            targets = n.targets
        elif t in (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr):
            targets = [n.target]
        elif t is ast.withitem:
            targets = [n.optional_vars] if n.optional_vars is not None else []
        elif t is ast.ExceptHandler or t is ast.alias:
            if (n.name if t is ast.ExceptHandler else n.asname) == name:
                return True
            continue
        else:
            continue
        for target in targets:
            if name in cst_names(target):
                return True
    return False


def _comment_starts(lines: list[str]) -> dict[int, int]:
    """Line -> character column where a comment starts (``lines``: ``ast``'s lines, ends kept;
    each read with a ``\n`` end, so that the tokenizer counts them as ``ast`` does)."""
    out: dict[int, int] = {}
    readline = iter([ln.rstrip("\r\n") + "\n" for ln in lines]).__next__
    try:
        for tok in tokenize.generate_tokens(readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


ExecutorWithoutShutdown.ast_check = _Ast
