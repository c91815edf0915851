from __future__ import annotations

import ast
import keyword
from typing import Optional, Sequence

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.ast_tree import head
from shutdown_lint import facts as F
from shutdown_lint.rule import Fix, Invalid, Replace, Rule

from ._exits import raises_system_exit
from ._fixes import IMPORT_RUNTIME_GUARD, guard_call, strip_trailing_comma
from .shd101_gather_without_taskgroup import _Ast as _GatherAst

_EXIT_CALLS = frozenset({"sys.exit", "builtins.exit", "builtins.quit"})
_FIX_MESSAGE = "Replace with `runtime_guard.hard_exit()`"


# ------------------------------------------------------------------ candidate tier 1 (words)
#: keywords (soft ones of every Python libcst reads too): the only words code may put right
#: before or after a name on its line
_KEYWORDS = frozenset(w.encode() for w in (*keyword.kwlist, *keyword.softkwlist, "match", "case", "_", "type"))
#: byte value -> 1 for a byte of an identifier: ``_ 0-9 A-Z a-z`` and every non-ASCII byte
#: (outside strings and comments Python has non-ASCII bytes only in identifiers)
_NAME_BYTES = bytes((b == 95 or 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b >= 128) for b in range(256))


def _not_a_name(src: bytes, p: int, q: int) -> bool:
    """The word at ``src[p:q]`` is no name tier 2 can read: a ``.`` follows it (spaces between:
    the value of an attribute, whose ``Tree.words`` are the attribute's), or a word that is no
    keyword (a name, a number) follows or precedes it on its line with only spaces between
    (``Failed to exit actor``, ``node exit.``: prose, in a docstring or in a formatted string's
    text, which the code view keeps). Two names in a row are no Python: one is a keyword."""
    end = len(src)
    k = q
    while k < end and src[k] in b" \t\f":
        k += 1
    if k < end:
        c = src[k]
        if c == 46:  # "."
            return True
        if _NAME_BYTES[c]:
            j = k
            while j < end and _NAME_BYTES[src[j]]:
                j += 1
            if src[k:j] not in _KEYWORDS:
                return True
    k = p - 1
    while k >= 0 and src[k] in b" \t\f":
        k -= 1
    if 0 <= k < p - 1 and _NAME_BYTES[src[k]]:  # a space between: ``iter_positions`` reads no
        j = k                                      # boundary at a non-ASCII byte (a BOM)
        while j >= 0 and _NAME_BYTES[src[j]]:
            j -= 1
        if src[j + 1:k + 1] not in _KEYWORDS:
            return True
    return False


class _ReadAsName(C.Cond):
    """One of ``names`` occurs (a whole word, outside comments) where it may be a name tier 2
    reads (``_not_a_name`` does not rule it out)."""

    def __init__(self, *names: str) -> None:
        self.names = tuple(sorted({n.encode() for n in names}))
        self.key = ("SHD201._ReadAsName", self.names)

    def holds(self, text: C.FileText) -> bool:
        has_word = text.has_word
        for n in self.names:
            if has_word(n):
                return text.memo(self.key, self._scan)
        return False

    def _scan(self, text: C.FileText) -> bool:
        src = text.source
        for name in self.names:
            for p in text.iter_positions(name):
                if not _not_a_name(src, p, p + len(name)):
                    return True
        return False

    def __repr__(self) -> str:
        return f"_ReadAsName({', '.join(n.decode() for n in self.names)})"


class _Decide:
    """What SHD201 decides, on either tree (``SysExitInTask``: libcst; ``_Ast``: ``ast``): where
    the exit runs (``_reason``) and whether the fix is safe (``_never_main``). The tree answers
    ``_unwinds_own_cleanup`` and the callee's text."""

    def _never_main(self, node) -> bool:
        """The exit can never end the process as written (a thread target, a coroutine whose
        loop runs in another thread): every run that reaches it is the hazard's run, so the fix
        is safe; else (a task whose loop may be the main thread's, an executor job whose future
        may be awaited there) ``SystemExit`` unwinds the program, its ``finally`` blocks run, and
        ``hard_exit`` would skip them (docs/fix-safety.md)."""
        fn = self.facts.enclosing_function(node)
        ctx = self.facts.contexts(fn) if fn is not None else set()
        if fn is not None and fn.is_async:
            return bool(ctx & {F.RAY_ASYNC_ACTOR, F.RAY_REMOTE, F.LOOP_THREAD})
        return F.THREAD in ctx and F.EXECUTOR not in ctx

    def _reason(self, node) -> Optional[str]:
        if self.facts.in_lambda(node):
            return None
        fn = self.facts.enclosing_function(node)
        if fn is None:
            return None
        ctx = self.facts.contexts(fn)
        if fn.is_async:
            if F.RAY_ASYNC_ACTOR in ctx or F.RAY_REMOTE in ctx:
                return ("in a Ray actor coroutine: the actor's event loop runs in another thread, so "
                        "SystemExit ends only that task and the actor process lives on")
            if F.LOOP_THREAD in ctx:
                return ("in a coroutine whose event loop runs in another thread: SystemExit ends only "
                        "the task and the process lives on")
            if self.facts.only_main_task(fn):
                return None
            if F.TASK in ctx:
                return ("in a coroutine run as a task: SystemExit is stored on the task and ends the "
                        "process only if its loop runs in the main thread")
            return ("in a coroutine: if it runs as a task on a loop in another thread, SystemExit ends "
                    "only that task and the process lives on")
        if F.THREAD in ctx:
            return "in a thread target: `threading` swallows SystemExit and only this thread ends"
        if F.EXECUTOR in ctx:
            return ("in a function run in an executor: SystemExit is stored in the future and the "
                    "process goes on")
        return None


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD201 on ``ast`` (``ast_engine``): the same decisions (``_Decide``); the tree's answers
    read from ``ast``: ``try`` blocks with a ``finally`` (``Try``/``TryStar.finalbody``, no
    ``Finally`` node), ``with``/``async with``, the raise's fix only where libcst's statement is a
    ``SimpleStatementLine``, the callee's text as ``cst.Module([]).code_for_node`` renders it."""

    def visit_Call(self, node: ast.Call) -> None:
        if self.facts.call_name(node) not in _EXIT_CALLS:
            return
        reason = self._reason(node)
        if reason is None:
            return
        fix = None if self._unwinds_own_cleanup(node) else self._plan(node)
        self.report(node, f"`{_GatherAst._code(self, node.func)}()` {reason}", fix=fix)

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is None:
            return
        target = exc.func if type(exc) is ast.Call else exc
        if self.facts.qualified_name(target, node) != "builtins.SystemExit":
            return
        reason = self._reason(node)
        if reason is None:
            return
        fix = None
        if self.facts.simple_statement_line(node) and not self._unwinds_own_cleanup(node):
            fix = self._plan(node)
        self.report(node, f"`raise SystemExit` {reason}", fix=fix)

    def _plan(self, node: ast.AST) -> FixPlan:
        return (FixPlan.safe if self._never_main(node) else FixPlan.unsafe)(_FIX_MESSAGE)

    def _unwinds_own_cleanup(self, node: ast.AST) -> bool:
        """As ``SysExitInTask._unwinds_own_cleanup``: a ``try``'s ``finally`` is its
        ``finalbody`` (its statements are the children met on the way up). The enclosing
        function is the first def met; a lambda is never met (an exit in one is not reported)."""
        child = node
        for anc in self.facts.ancestors(node):
            t = type(anc)
            if t in _AST_STOPS:
                return False
            if t in _AST_TRYS and anc.finalbody and not any(s is child for s in anc.finalbody):
                return True
            if t in _AST_WITHS:
                return True
            child = anc
        return False


_AST_STOPS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef})
_AST_TRYS = frozenset({ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ())})
_AST_WITHS = frozenset({ast.With, ast.AsyncWith})


class SysExitInTask(_Decide, Rule):
    """
    ## What it does
    Flags `sys.exit()`, `exit()`, `quit()` and `raise SystemExit` inside a coroutine
    function, or inside a function that is run as a task, submitted to an executor or
    `asyncio.to_thread`, or used as a `threading.Thread` target.

    Not flagged: plain synchronous code, nested synchronous helpers that are not run in
    a task, executor or thread, and a coroutine that the module only ever runs as the
    main coroutine of `asyncio.run()` (or awaits from one), where `SystemExit` does
    reach the caller of `asyncio.run()`.

    ## Why is this bad?
    `SystemExit` is an exception like any other until it reaches the top of the main
    thread. Raised in a task, it is stored on the task and re-raised out of the event
    loop only if that loop runs in the main thread. When the loop runs in another thread
    (every Ray async actor, vLLM's engine loop, any `loop.run_forever()` in a thread)
    it ends only that thread and the process lives on, hung. In a `threading.Thread`
    target, `threading` swallows `SystemExit` silently; in an executor it is stored in
    the future and surfaces only if someone awaits it.

    This is how a fire-and-forget generation loop that called `sys.exit(1)` after an
    engine failure left 128 GPUs idle for five days (SkyRL #1691).

    ## Example
    ```python
    import asyncio, sys

    async def generate_loop(engine):
        try:
            await engine.generate()
        except EngineDeadError:
            sys.exit(1)  # ends this task only

    asyncio.create_task(generate_loop(engine))
    ```

    ## Use instead
    ```python
    import asyncio
    import runtime_guard

    async def generate_loop(engine):
        try:
            await engine.generate()
        except EngineDeadError:
            runtime_guard.hard_exit(1)  # flushes stdio and logging, runs the atexit handlers, then os._exit(1)
    ```

    ## Fix safety
    The fix replaces the exit with `runtime_guard.hard_exit(code)` (same status; a message
    argument is printed to stderr and gives status 1, as with `sys.exit`), which flushes
    stdio and logging, runs the `atexit` handlers (bounded, 5 s) and ends the process from
    any thread. The fix adds `import runtime_guard` (see docs/fix-safety.md).

    Safe in a `threading.Thread`/`Timer` target, a Ray actor or remote coroutine, and a
    coroutine whose loop runs in another thread: there `SystemExit` can never end the
    process, so every run that reaches the exit is the hazard's run, and a run that does
    not reach it is unchanged.

    Unsafe in a coroutine run as a task (or not known to be), and in a function run in an
    executor: when the loop runs in the main thread, or the future is awaited there,
    `SystemExit` does end the process and unwinds it first (other tasks' `finally` blocks,
    the main coroutine's `finally`); `hard_exit` skips that unwinding (measured in
    tests/behaviour/test_shd201_sys_exit.py).

    No fix when the exit sits in a `try` that has a `finally` (in its body, a handler or its
    `else`), or in a `with`/`async with` block, of the exit's own function: `SystemExit` runs
    that `finally` or the context manager's exit on its way out of the function in every
    context (task, thread, executor job), and `hard_exit` would end the process before it,
    e.g. a decorator whose `finally` destroys the process group after `sys.exit(1)`. Move the
    cleanup before the exit, or call `hard_exit` after the `try`/`with` yourself. An exit in
    the `finally` itself is fixed (measured in tests/behaviour/test_shd201_sys_exit.py).

    ## References
    - SkyRL #1691: process hang when vLLM engine dies during async generation
    - Python docs: `sys.exit`, `os._exit`, `threading.excepthook`
    """

    code = "SHD201"
    name = "sys-exit-in-task"
    summary = "`sys.exit()` in a task, executor or thread ends only that task or thread"
    triggers = ("exit", "quit", "SystemExit")
    # tier 1: SystemExit where it ends only a task or thread
    # (every one of these words the facts read only in code: ``C.InCode``). ``_reason`` reports
    # in a coroutine (``async``: a task's coroutine too, so no task words) or in a sync function
    # with the THREAD or EXECUTOR context (a thread target, an executor job)
    # Beside it, a necessary condition of tier 2 (``_may_exit_in_task``): ``_exits`` needs a call
    # whose callee's ``Tree.words`` hold ``exit``/``quit`` (a name or an attribute spelled so, or
    # one bound to a value, imported or assigned, whose head is), or a ``raise`` whose exception's
    # words hold ``SystemExit``: each word is spelled where a name is read, never right before a
    # ``.`` nor next to another non-keyword word (``_ReadAsName``)
    candidate = C.All(C.InCode(C.All(C.AnyOf(C.qualified("sys.exit"), C.builtin("exit", "quit", "SystemExit")),
                                     C.AnyOf(C.context("coroutine"), C.context("executor"), C.context("thread")))),
                      C.InCode(_ReadAsName("exit", "quit", "SystemExit")))
    # tier 2: an exit in a coroutine, or in a sync function handed to a thread or executor
    candidate_tree = staticmethod(lambda tree: _may_exit_in_task(tree))
    facts_needed = ("functions", "execution")
    ast_check = _Ast

    valid = [
        # plain synchronous code
        "import sys\ndef main():\n    sys.exit(1)\n",
        # the main coroutine of asyncio.run: SystemExit reaches the caller
        """
        import asyncio, sys
        async def main():
            sys.exit(2)
        if __name__ == "__main__":
            asyncio.run(main())
        """,
        # awaited only from the main coroutine
        """
        import asyncio, sys
        async def check():
            raise SystemExit(3)
        async def main():
            await check()
        asyncio.run(main())
        """,
        # a nested synchronous helper used as a signal handler is not run in the task
        """
        import asyncio, signal, sys
        async def serve():
            def on_term():
                sys.exit(0)
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_term)
        """,
        # exit shadowed by a local definition
        """
        def exit(code):
            print(code)
        async def work():
            exit(1)
        """,
        # os._exit is the remedy, not the hazard
        "import os\nasync def work():\n    os._exit(1)\n",
    ]
    invalid = [
        Invalid(
            """
            import asyncio
            import sys

            async def generate_loop():
                try:
                    await step()
                except RuntimeError:
                    # engine is dead
                    sys.exit(1)

            def start():
                asyncio.create_task(generate_loop())
            """,
            fixed="""
            import asyncio
            import sys
            import runtime_guard

            async def generate_loop():
                try:
                    await step()
                except RuntimeError:
                    # engine is dead
                    runtime_guard.hard_exit(1)

            def start():
                asyncio.create_task(generate_loop())
            """,
            message_contains="task",
        ),
        Invalid(
            """
            import threading
            from sys import exit as die

            def pump():
                die(3)

            threading.Thread(target=pump, daemon=True).start()
            """,
            fixed="""
            import threading
            from sys import exit as die
            import runtime_guard

            def pump():
                runtime_guard.hard_exit(3)

            threading.Thread(target=pump, daemon=True).start()
            """,
            message_contains="thread",
        ),
        Invalid(
            """
            import ray

            @ray.remote
            class Generator:
                async def run(self):
                    raise SystemExit(1)
            """,
            fixed="""
            import ray
            import runtime_guard

            @ray.remote
            class Generator:
                async def run(self):
                    runtime_guard.hard_exit(1)
            """,
            message_contains="actor",
        ),
        Invalid(
            """
            import asyncio as aio

            def save(path):
                quit()

            async def main():
                await aio.to_thread(save, "x")
            """,
            fixed="""
            import asyncio as aio
            import runtime_guard

            def save(path):
                runtime_guard.hard_exit(0)

            async def main():
                await aio.to_thread(save, "x")
            """,
        ),
        Invalid(
            """
            import sys
            async def handler(request):
                sys.exit()  # keep this comment
            """,
            fixed="""
            import sys
            import runtime_guard

            async def handler(request):
                runtime_guard.hard_exit(0)  # keep this comment
            """,
            count=1,
        ),
        # in a `try` with a `finally` of the same function (prime-rl's clean_exit: the finally
        # tears the process group down): SystemExit runs it, hard_exit would not: no fix
        Invalid(
            """
            import functools
            import sys

            def clean_exit(func):
                @functools.wraps(func)
                async def wrapper(*args, **kwargs):
                    try:
                        return await func(*args, **kwargs)
                    except Exception:
                        sys.exit(1)
                    finally:
                        teardown()
                return wrapper
            """,
            fixed=None,
        ),
        # in a `with` / `async with` block: SystemExit runs `__exit__`/`__aexit__`: no fix
        Invalid(
            """
            import threading

            def pump(lock):
                with lock:
                    raise SystemExit(2)

            threading.Thread(target=pump, args=(threading.Lock(),)).start()
            """,
            fixed=None,
        ),
        Invalid(
            """
            import sys

            async def serve(pool):
                async with pool.connection() as conn:
                    if not await conn.ping():
                        sys.exit(3)
            """,
            fixed=None,
        ),
        # in the `finally` itself, with no cleanup around it: nothing of the function is skipped
        Invalid(
            """
            import sys

            async def run(job):
                try:
                    await job()
                finally:
                    sys.exit(1)
            """,
            fixed="""
            import sys
            import runtime_guard

            async def run(job):
                try:
                    await job()
                finally:
                    runtime_guard.hard_exit(1)
            """,
        ),
    ]

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        if self.facts.call_name(node) not in _EXIT_CALLS:
            return
        reason = self._reason(node)
        if reason is None:
            return
        fix = None if self._unwinds_own_cleanup(node) else self._fix_of(node)(
            Replace(node, guard_call("hard_exit", _exit_args(node.args))),
            _imp(),
            message=_FIX_MESSAGE,
        )
        self.report(node, f"`{_callee_text(node)}()` {reason}", fix=fix)

    def visit_Raise(self, node: cst.Raise) -> None:
        exc = node.exc
        if exc is None:
            return
        target = exc.func if isinstance(exc, cst.Call) else exc
        if self.facts.qualified_name(target, node) != "builtins.SystemExit":
            return
        reason = self._reason(node)
        if reason is None:
            return
        args = _exit_args(exc.args if isinstance(exc, cst.Call) else [])
        fix = None
        parent = self.facts.parent(node)
        if isinstance(parent, cst.SimpleStatementLine) and not self._unwinds_own_cleanup(node):
            fix = self._fix_of(node)(
                Replace(node, cst.Expr(guard_call("hard_exit", args))),
                _imp(),
                message=_FIX_MESSAGE,
            )
        self.report(node, f"`raise SystemExit` {reason}", fix=fix)

    # ------------------------------------------------------------------ context
    def _unwinds_own_cleanup(self, node: cst.CSTNode) -> bool:
        """The exit sits in the body, a handler or the ``else`` of a ``try`` with a ``finally``,
        or in a ``with``/``async with`` block, of its own function: ``SystemExit`` runs that
        ``finally`` or ``__exit__`` on its way out of the function (in a task, a thread or an
        executor job alike), and ``hard_exit`` would end the process before it."""
        fn = self.facts.enclosing_function(node)
        stop = fn.node if fn is not None else None
        child = node
        for anc in self.facts.ancestors(node):
            if anc is stop or isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return False
            if isinstance(anc, (cst.Try, cst.TryStar)) and anc.finalbody is not None and child is not anc.finalbody:
                return True
            if isinstance(anc, cst.With):
                return True
            child = anc
        return False

    def _fix_of(self, node: cst.CSTNode):
        """``Fix.safe`` where the exit can never end the process as written, else ``Fix.unsafe``
        (``_Decide._never_main``)."""
        return Fix.safe if self._never_main(node) else Fix.unsafe


def _exit_args(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """``sys.exit()`` exits 0 but ``hard_exit()`` defaults to 1: spell the 0 out."""
    if not args:
        return [cst.Arg(cst.Integer("0"))]
    return strip_trailing_comma(args)


def _callee_text(node: cst.Call) -> str:
    return cst.Module([]).code_for_node(node.func)


def _imp():
    return IMPORT_RUNTIME_GUARD


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _exits(tree, fn, aliased: tuple[bool, bool]) -> bool:
    """``fn`` makes a call that may be an exit (``may_call_any(c, _EXIT_CALLS)``, not in a lambda)
    or raises ``SystemExit`` (``raises_system_exit``). ``aliased``: whether some alias may hold
    ``exit``/``quit``, ``SystemExit`` (``Tree.may_alias``); where none may, a name or an
    attribute is one only when spelled so, and the module's aliases are not read for it."""
    names, lasts = _EXIT_CALL_NAMES, _EXIT_LASTS
    calls_aliased, raise_aliased = aliased
    Name, Attribute = ast.Name, ast.Attribute
    for c, _, lam in fn.calls:
        if lam:
            continue
        # ``may_call_any``'s answer without its general reading for the commonest callees: for a
        # name it is exactly this; for an attribute, a spelling other than these and no
        # ``x.attr = exit`` binding answer False
        func = c.func
        t = type(func)
        if t is Name:
            if func.id in lasts or (calls_aliased and not tree.words(func).isdisjoint(lasts)):
                return True
            continue
        if t is Attribute and func.attr not in lasts and (
                not calls_aliased or tree.aliases_of_attr(func.attr).isdisjoint(lasts)):
            continue
        if tree.may_call_any(c, names):
            return True
    if raise_aliased:
        return any(raises_system_exit(tree, r) for r in fn.raises)
    for r in fn.raises:  # ``raises_system_exit``: ``SystemExit`` in ``tree.words(exc)``, its head here
        exc = r.exc.func if type(r.exc) is ast.Call else r.exc
        if exc is not None and head(exc) == "SystemExit":
            return True
    return False


#: ``_EXIT_CALLS`` as a tuple: ``Tree.may_call_any`` reads a tuple of names once per process
_EXIT_CALL_NAMES = tuple(sorted(_EXIT_CALLS))
#: their last words (``exit``, ``quit``)
_EXIT_LASTS = frozenset(n.rsplit(".", 1)[-1] for n in _EXIT_CALLS)
_SYSTEM_EXIT = frozenset({"SystemExit"})

#: calls that make a sync function a thread target or an executor job (facts' THREAD and
#: EXECUTOR contexts are given only to the function such a call is handed)
_HANDED_TO = (*F.EXECUTOR_SUBMITTERS, "threading.Thread", "threading.Timer")


def _may_exit_in_task(tree) -> bool:
    """``_reason`` reports an exit in a coroutine, or in a sync function with the THREAD or
    EXECUTOR context: the facts give those only to the function that ``resolve_function``
    finds in the arguments of a ``threading.Thread``/``Timer`` call or an executor
    submission (``f``, ``self.m``, ``Cls.m``, ``partial(f, ...)``), so its name is spelled
    in the arguments of a call that may be one of those."""
    handed: Optional[set[str]] = None
    aliased = (tree.may_alias(_EXIT_LASTS), tree.may_alias(_SYSTEM_EXIT))
    # ``handed`` is a subset of ``Tree.argument_names`` (the identifiers of every call's
    # arguments), itself a subset of ``Tree.mentioned``: the first test is the free one
    mentioned = tree.mentioned
    for fn in tree.functions:
        if fn.is_async:
            if _exits(tree, fn, aliased):
                return True
        elif fn.name in mentioned and _exits(tree, fn, aliased):
            if handed is None:
                handed = tree.names_handed_to(_HANDED_TO)
            if fn.name in handed:
                return True
    return False
