from __future__ import annotations

import ast

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import execution_of, positional
from shutdown_lint.ast_engine.facts import same_logical_line
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter import ast_tree as T
from shutdown_lint.facts import FunctionInfo, reachable
from shutdown_lint.rule import Applicability, Fix, InsertBefore, Invalid, Option, Rule
from shutdown_lint.traversal import trivia_types, walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call

_RUNNERS = frozenset({
    "asyncio.run", "asyncio.Runner.run", "asyncio.AbstractEventLoop.run_until_complete",
    "asyncio.AbstractEventLoop.run_forever", "uvloop.run", "anyio.run",
})
#: Words that, in a name or attribute of the code on the path, mean SIGTERM is taken care of. Names
#: only: the word in a comment or a string literal handles nothing.
_HANDLED_WORDS = ("SIGTERM", "sigterm_as_keyboard_interrupt", "setup_worker", "install_distributed_teardown")
_FIX_MESSAGE = "Make SIGTERM cancel the tasks like Ctrl+C"


def _names_handle(nodes) -> bool:
    class _Names(cst.CSTVisitor):
        def __init__(self) -> None:
            self.found = False

        def visit_Name(self, node: cst.Name) -> None:
            if not self.found and any(w in node.value for w in _HANDLED_WORDS):
                self.found = True

        def on_visit(self, node: cst.CSTNode) -> bool:
            return not self.found and super().on_visit(node)

    names = _Names()
    for node in nodes:
        walk(node, names, trivia_types())  # ``node.visit(names)`` without rebuilding every node (no layout holds a Name)
        if names.found:
            return True
    return False


class _Decide:
    """What SHD402 decides, on either tree (``AsyncioRunWithoutSigterm``: libcst; ``_Ast``:
    ``ast``). The tree answers ``_first_positional``, ``_names_handle_in`` (a name of the
    nodes spells a handled word), ``_module_statements`` (what module-level code is searched)
    and ``_report_runner`` (the fix and the runner's text); ``_where`` gives the execution
    queries (``is_process_entrypoint``, ``callers``)."""

    def _check(self, node) -> None:
        name = self.facts.call_name(node)
        if name not in _RUNNERS:
            return
        if self.facts.in_lambda(node) or not self._where.is_process_entrypoint(node):
            return
        if self._sigterm_handled(node):
            return
        fn = self.facts.enclosing_function(node)
        reported = self.__dict__.setdefault("_reported_in", set())
        if fn is not None and fn in reported:
            return  # one finding per function: the fix covers its later runner calls too
        reported.add(fn)
        self._report_runner(node)

    @staticmethod
    def _message(runner: str) -> str:
        return (f"`{runner}()` at a process entrypoint with no SIGTERM handling: SIGTERM (docker stop, "
                "Kubernetes, torchrun, uv) kills the process without cancelling tasks, so no `finally` runs")

    # ------------------------------------------------------------------ path
    def _sigterm_handled(self, call) -> bool:
        f = self.facts
        if self._module_level_handles():
            return True
        fn = f.enclosing_function(call)
        path: set[FunctionInfo] = set()
        if fn is not None:
            path = reachable([fn], self._where.callers)  # who gets us here
            path |= reachable(path, lambda g: {c for _, c in f.callees(g)})  # and what they call
        first = self._first_positional(call)
        if first is not None:
            coro = f.coroutine_target(first, call)
            if coro is not None:
                path |= reachable([coro], lambda g: {c for _, c in f.callees(g)})
            if self._is_call(first) and f.call_name(first) in self._aware():
                return True
        for g in path:
            if self._handles(g):
                return True
        return False

    def _aware(self) -> set[str]:
        return set(self.config["sigterm_aware_calls"])

    def _handles(self, fn: FunctionInfo) -> bool:
        cache = self.__dict__.setdefault("_handles_cache", {})
        if fn not in cache:
            aware = self._aware()
            cache[fn] = self._names_handle([fn.node]) or any(self.facts.call_name(c) in aware for c in fn.calls)
        return cache[fn]

    def _module_level_handles(self) -> bool:
        if "_module_handles" not in self.__dict__:
            self._module_handles = self._spelled() and self._names_handle_in(self._module_statements())
        return self._module_handles

    def _names_handle(self, nodes) -> bool:
        """``_names_handle_in(nodes)``, without walking them when the module's text spells none of
        the words (a name holding one is a piece of the text)."""
        return self._spelled() and self._names_handle_in(nodes)

    def _spelled(self) -> bool:
        return any(self.facts.spells(w) for w in _HANDLED_WORDS)


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD402 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers
    read from ``ast``: every identifier libcst holds in a ``Name`` (``_identifiers_handle``),
    module-level statements grouped into libcst's lines (``a; b``), the fix only where libcst's
    statement is a ``SimpleStatementLine`` (``AstFacts.simple_statement_line``)."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    def _report_runner(self, node: ast.Call) -> None:
        fix = FixPlan(Applicability.UNSAFE, _FIX_MESSAGE) if self.facts.simple_statement_line(node) else None
        self.report(node, self._message(self.facts.code_for_node(node.func)), fix=fix)

    @staticmethod
    def _first_positional(call: ast.Call):
        args = positional(call)
        return args[0] if args else None

    @staticmethod
    def _is_call(expr) -> bool:
        return type(expr) is ast.Call

    @staticmethod
    def _names_handle_in(nodes) -> bool:
        return any(_identifiers_handle(node) for node in nodes)

    def _module_statements(self) -> list[ast.stmt]:
        """Module-level statements but defs, classes and lines of imports only (libcst's
        ``SimpleStatementLine``: the statements of one logical line, ``import a; b()``)."""
        f = self.facts
        body = f.module.body
        out: list[ast.stmt] = []
        i = 0
        while i < len(body):
            j = i
            while j + 1 < len(body) and same_logical_line(f, body[j], body[j + 1]):
                j += 1
            group = body[i:j + 1]
            if not (isinstance(group[0], (*T.DEFS, ast.ClassDef))
                    or all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in group)):
                out.extend(group)
            i = j + 1
        return out

    @property
    def _where(self):
        return execution_of(self.facts)


class AsyncioRunWithoutSigterm(_Decide, Rule):
    """
    ## What it does
    Flags `asyncio.run(...)` (also `asyncio.Runner().run`, `loop.run_until_complete`,
    `loop.run_forever`, `uvloop.run`, `anyio.run`) at a process entrypoint - module-level
    script code, the `if __name__ == "__main__":` block, `main()` and the functions it
    calls, a click/typer command, an argparse `set_defaults(func=...)` handler - when
    nothing on the path to it handles SIGTERM.

    SIGTERM counts as handled when `SIGTERM` is named in the code (`signal.signal(SIGTERM, ...)`,
    `loop.add_signal_handler(SIGTERM, ...)`, a `for sig in (SIGINT, SIGTERM)` loop; the word in
    a comment, docstring or string literal does not count) or
    `runtime_guard.sigterm_as_keyboard_interrupt()`, `runtime_guard.ray.setup_worker()` or
    `runtime_guard.torch.install_distributed_teardown()` is called: in module-level code,
    in the function holding the call, in its callers, in what those call, or in the
    coroutine that is run and the same-module coroutines it reaches. Servers that install
    their own handlers (`sigterm_aware_calls`, e.g. `uvicorn.Server.serve`) count too.

    One finding per function (later runner calls, e.g. `loop.shutdown_asyncgens()`, are
    covered by the same fix). Not flagged: inside Ray tasks and actors (Ray installs its own SIGTERM handler), in
    threads, executors and tasks, and in library functions not reached from an entrypoint.

    ## Why is this bad?
    `docker stop`, Kubernetes eviction, SLURM preemption, torchrun and launchers such as
    `uv run` stop a process with SIGTERM. Python's default action for SIGTERM is to die on
    the spot: `asyncio.run` never cancels its tasks, so no `finally` block, `async with`
    exit or shutdown hook runs - sandboxes, leases, temp dirs and child processes leak.
    Ctrl+C (SIGINT) is handled by `asyncio.run`; SIGTERM is not.

    ## Example
    ```python
    import asyncio

    async def main():
        async with open_sandboxes(20) as boxes:
            await run_trials(boxes)

    if __name__ == "__main__":
        asyncio.run(main())  # SIGTERM: boxes are never closed
    ```

    ## Use instead
    ```python
    import asyncio
    import runtime_guard

    if __name__ == "__main__":
        runtime_guard.sigterm_as_keyboard_interrupt()
        asyncio.run(main())  # SIGTERM now cancels the tasks like Ctrl+C
    ```

    ## Fix safety
    The fix inserts `runtime_guard.sigterm_as_keyboard_interrupt()` on the line before the
    statement that runs the loop (and `import runtime_guard`, which the project must then
    depend on). No fix when the call sits on the same line as a compound statement
    (`if ...: asyncio.run(...)`).

    Unsafe (under docs/fix-safety.md: a safe fix changes nothing where the hazard does not
    occur). The hazard's path is SIGTERM to this process while its event loop runs: there
    the loop's tasks are cancelled and their cleanup runs, as on Ctrl+C, and the process
    exits by the KeyboardInterrupt (status 130 / -2, with its traceback) unless the program
    catches it. What stays the same (measured in
    tests/behaviour/test_shd402_asyncio_run_without_sigterm.py and
    tests/runtime_guard/test_sigterm_as_keyboard_interrupt_owns_nothing.py): a normal run and
    Ctrl+C (same output and status); SIGTERM before the loop starts or after it has ended
    (the process still dies of it, -15, no `finally`); a child forked afterwards (it gets
    the default action back and dies of SIGTERM, -15); a program that ignores SIGTERM or has
    its own handler, installed before the fix's line (the helper leaves it in place: chaining
    would follow a graceful stop with a KeyboardInterrupt) or later (it replaces ours). Why
    it is still unsafe: where SIGTERM had its default action the helper installs a Python
    handler for the rest of the process's life. A Python handler runs only when the main
    thread runs Python code, so SIGTERM that finds the main thread blocked in a C call that
    does not return on a signal (a collective, a C++ wait), after the loop has ended, ends
    the process when the call returns, not at once (never, if it never returns); and
    `signal.getsignal(SIGTERM)` no longer returns `SIG_DFL` (code that installs its own
    handler only over the default acts differently). Where the helper leaves a handler in
    place it logs one DEBUG record (`runtime_guard.signals`). See docs/fix-safety.md.

    ## Options
    - `sigterm_aware_calls` (list of qualified names): calls that install their own
      SIGTERM handling (default: uvicorn and aiohttp servers).

    ## References
    - Python docs: `signal` ("SIGTERM ... default action"), `asyncio.Runner`, `loop.add_signal_handler`
    - SkyRL #1160 (SIGTERM from `uv` when it dies), SkyRL #1688 (Kubernetes eviction)
    """

    code = "SHD402"
    name = "asyncio-run-without-sigterm"
    summary = "`asyncio.run` at a process entrypoint with no SIGTERM handling: SIGTERM skips all cleanup"
    triggers = ("run(", "run_until_complete", "run_forever")
    # tier 1: asyncio.run / Runner.run / run_until_complete / run_forever
    candidate = C.AnyOf(C.qualified("asyncio.run", "uvloop.run", "anyio.run"), C.All(C.Word("Runner"), C.Word("run")),
                        C.Word("run_until_complete", "run_forever"))
    # tier 2: a runner call (not in a lambda) at module level or in a function that may be
    # a process entrypoint (driver roots, click/typer commands, argparse handlers)
    candidate_tree = staticmethod(lambda tree: _may_run_at_entrypoint(tree))
    facts_needed = ("functions", "calls", "execution")
    options = {
        "sigterm_aware_calls": Option(
            ["uvicorn.Server.serve", "uvicorn.run", "uvicorn.main.Server.serve", "aiohttp.web.run_app",
             "aiohttp.web._run_app"],
            list, "qualified names of calls that install their own SIGTERM handling", item_kind=str),
    }

    valid = [
        # SIGTERM handler installed before
        """
        import asyncio, signal
        def main():
            signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
            asyncio.run(serve())
        """,
        # add_signal_handler inside the coroutine that is run (loop over signals)
        """
        import asyncio
        from signal import SIGINT, SIGTERM
        async def serve():
            loop = asyncio.get_running_loop()
            for sig in (SIGINT, SIGTERM):
                loop.add_signal_handler(sig, stop.set)
            await stop.wait()
        if __name__ == "__main__":
            asyncio.run(serve())
        """,
        # inside a Ray task: Ray installs its own handler
        """
        import asyncio, ray
        @ray.remote
        def rollout():
            return asyncio.run(generate())
        """,
        # a library function, not an entrypoint
        """
        import asyncio
        def fetch_all(urls):
            return asyncio.run(gather_urls(urls))
        """,
        # runtime_guard already installed
        """
        import asyncio as aio
        import runtime_guard
        if __name__ == "__main__":
            runtime_guard.sigterm_as_keyboard_interrupt()
            aio.run(main())
        """,
        # uvicorn installs its own handlers
        """
        import asyncio, uvicorn
        def main():
            server = uvicorn.Server(config)
            asyncio.run(server.serve())
        """,
        # run in a thread: the main thread's entrypoint handles signals
        """
        import asyncio, threading
        def loop_thread():
            asyncio.run(pump())
        def main():
            threading.Thread(target=loop_thread).start()
        """,
    ]
    invalid = [
        Invalid(
            """
            import asyncio

            async def main():
                async with open_sandboxes(20) as boxes:
                    await run_trials(boxes)

            if __name__ == "__main__":
                # run the trials
                asyncio.run(main())  # blocks until done
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def main():
                async with open_sandboxes(20) as boxes:
                    await run_trials(boxes)

            if __name__ == "__main__":
                # run the trials
                runtime_guard.sigterm_as_keyboard_interrupt()
                asyncio.run(main())  # blocks until done
            """,
            message_contains="SIGTERM",
        ),
        Invalid(
            """
            import asyncio as aio

            def main():
                cfg = load()
                return aio.run(serve(cfg))
            """,
            fixed="""
            import asyncio as aio
            import runtime_guard

            def main():
                cfg = load()
                runtime_guard.sigterm_as_keyboard_interrupt()
                return aio.run(serve(cfg))
            """,
        ),
        Invalid(
            """
            from asyncio import run
            import click

            @click.command()
            def train():
                run(train_loop())
            """,
            fixed="""
            from asyncio import run
            import click
            import runtime_guard

            @click.command()
            def train():
                runtime_guard.sigterm_as_keyboard_interrupt()
                run(train_loop())
            """,
        ),
        Invalid(
            """
            import asyncio

            def main():
                loop = asyncio.new_event_loop()
                try:
                    loop.run_until_complete(serve())
                finally:
                    loop.close()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            def main():
                loop = asyncio.new_event_loop()
                try:
                    runtime_guard.sigterm_as_keyboard_interrupt()
                    loop.run_until_complete(serve())
                finally:
                    loop.close()
            """,
        ),
        Invalid(
            """
            import asyncio, signal

            def launch():
                asyncio.run(worker())

            def main():
                signal.signal(signal.SIGINT, on_int)
                launch()
            """,
            fixed="""
            import asyncio, signal
            import runtime_guard

            def launch():
                runtime_guard.sigterm_as_keyboard_interrupt()
                asyncio.run(worker())

            def main():
                signal.signal(signal.SIGINT, on_int)
                launch()
            """,
        ),
        Invalid(
            """
            import asyncio
            import uvloop
            if __name__ == "__main__": uvloop.run(main())
            """,
            fixed=None,
        ),
        # "SIGTERM" in a comment, a docstring or a log message handles nothing
        Invalid(
            """
            import asyncio, logging

            def main():
                \"\"\"Run the server until SIGTERM.\"\"\"
                # TODO: handle SIGTERM (docker stop)
                logging.info("stop with SIGTERM or sigterm_as_keyboard_interrupt")
                asyncio.run(serve())
            """,
            fixed="""
            import asyncio, logging
            import runtime_guard

            def main():
                \"\"\"Run the server until SIGTERM.\"\"\"
                # TODO: handle SIGTERM (docker stop)
                logging.info("stop with SIGTERM or sigterm_as_keyboard_interrupt")
                runtime_guard.sigterm_as_keyboard_interrupt()
                asyncio.run(serve())
            """,
        ),
        Invalid(
            """
            import asyncio

            # SIGTERM: see the launcher
            if __name__ == "__main__":
                print("SIGTERM stops this")
                asyncio.run(main())
            """,
            fixed="""
            import asyncio
            import runtime_guard

            # SIGTERM: see the launcher
            if __name__ == "__main__":
                print("SIGTERM stops this")
                runtime_guard.sigterm_as_keyboard_interrupt()
                asyncio.run(main())
            """,
        ),
    ]

    ast_check = _Ast

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    def _report_runner(self, node: cst.Call) -> None:
        stmt = self.facts.enclosing_statement(node)
        fix = None
        if isinstance(stmt, cst.SimpleStatementLine):
            line = cst.SimpleStatementLine([cst.Expr(guard_call("sigterm_as_keyboard_interrupt"))])
            # Unsafe (docs/fix-safety.md): the helper's Python handler stays for the rest of the
            # process (a main thread blocked in C after the loop dies late; getsignal changes).
            fix = Fix.unsafe(InsertBefore(stmt, (line,)), IMPORT_RUNTIME_GUARD, message=_FIX_MESSAGE)
        self.report(node, self._message(cst.Module([]).code_for_node(node.func)), fix=fix)

    @staticmethod
    def _first_positional(call: cst.Call):
        args = [a for a in call.args if a.keyword is None]
        return args[0].value if args else None

    @staticmethod
    def _is_call(expr) -> bool:
        return isinstance(expr, cst.Call)

    @staticmethod
    def _names_handle_in(nodes) -> bool:
        return _names_handle(nodes)

    def _module_statements(self) -> list:
        return [s for s in self.facts.module.body if not _is_def_or_import(s)]

    @property
    def _where(self):
        return self.facts


def _is_def_or_import(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return True
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


# ------------------------------------------------------------------ the ast tree's answers
#: ``ast`` fields holding an identifier (or a dotted name) that libcst holds in ``Name`` nodes
_IDENTIFIER_FIELDS = {
    ast.Name: ("id",), ast.Attribute: ("attr",), ast.FunctionDef: ("name",), ast.AsyncFunctionDef: ("name",),
    ast.ClassDef: ("name",), ast.arg: ("arg",), ast.keyword: ("arg",), ast.alias: ("name", "asname"),
    ast.ImportFrom: ("module",), ast.ExceptHandler: ("name",),
    **({ast.MatchAs: ("name",), ast.MatchStar: ("name",), ast.MatchMapping: ("rest",)}
       if hasattr(ast, "MatchAs") else {}),
}
_IDENTIFIER_LISTS = {ast.Global: "names", ast.Nonlocal: "names",
                     **({ast.MatchClass: "kwd_attrs"} if hasattr(ast, "MatchClass") else {})}


def _identifiers_handle(node: ast.AST) -> bool:
    """libcst's ``_names_handle([node])``: an identifier under ``node`` that libcst holds in a
    ``Name`` (a name, an attribute, a def's, a class's, a parameter's, a keyword argument's,
    an import's, an ``except ... as``'s, a ``global``'s, a pattern's) contains a handled word
    (a dotted import name: the words have no dot, so a part holds one when the whole does)."""
    for n in T.walk(node):
        t = type(n)
        fields = _IDENTIFIER_FIELDS.get(t)
        if fields is not None:
            for field in fields:
                ident = getattr(n, field)
                if ident and any(w in ident for w in _HANDLED_WORDS):
                    return True
        listed = _IDENTIFIER_LISTS.get(t)
        if listed is not None and any(w in ident for ident in getattr(n, listed) for w in _HANDLED_WORDS):
            return True
    return False


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_run_at_entrypoint(tree) -> bool:
    # every name and attribute of the module is in ``Tree.mentioned``: when none of those holds a
    # handled word, no ``_spells_handled`` walk can find one
    spelled = "\0".join(tree.mentioned)
    handled = any(w in spelled for w in _HANDLED_WORDS)
    if handled and _module_level_names_handle(tree):
        return False  # ``_module_level_handles``: every runner call is handled
    if any(not lam and _may_run(tree, c) and not (handled and _coroutine_handles(tree, c))
           for c, _, lam in tree.module_calls):
        return True
    holders = {fn.name for fn in tree.functions if any(
        not lam and _may_run(tree, c) and not (handled and _coroutine_handles(tree, c)) for c, _, lam in fn.calls)
        and not (handled and _spells_handled(fn.node))}  # the walk of the whole function last: few functions call a runner
    if not holders:
        return False
    cli = {fn.name for fn in tree.functions
           if any(tree.words(d) & {"command", "group"} for d in fn.node.decorator_list)}
    cli.add("main")  # a root of ``driver_names`` (and so among the names it gives)
    if not holders.isdisjoint(cli):
        return True
    cli |= tree.argument_names  # set_defaults(func=handler)
    return not holders.isdisjoint(cli) or bool(holders & T.driver_names(tree, cli))


#: ``_RUNNERS`` as a tuple (``Tree.may_call_any`` reads a tuple of names once per process), and
#: their last words
_RUNNER_NAMES = tuple(sorted(_RUNNERS))
_RUNNER_LASTS = frozenset(n.rsplit(".", 1)[-1] for n in _RUNNERS)


def _may_run(tree, call: ast.Call) -> bool:
    """``tree.may_call_any(call, _RUNNERS)``: for a name callee exactly its words meeting the last
    words; an attribute callee spelled otherwise and bound to none of them answers False."""
    func = call.func
    t = type(func)
    if t is ast.Name:
        return not tree.words(func).isdisjoint(_RUNNER_LASTS)
    if t is ast.Attribute and func.attr not in _RUNNER_LASTS and tree.aliases_of_attr(func.attr).isdisjoint(_RUNNER_LASTS):
        return False
    return tree.may_call_any(call, _RUNNER_NAMES)


def _spells_handled(node) -> bool:
    """``_names_handle([node])`` surely holds: a name or an attribute under ``node`` holds one of
    ``_HANDLED_WORDS`` (libcst has a ``Name`` for each)."""
    for n in T.walk(node):  # ``ast.walk``'s nodes and order, without its generators
        t = type(n)
        ident = n.id if t is ast.Name else n.attr if t is ast.Attribute else None
        if ident is not None and any(w in ident for w in _HANDLED_WORDS):
            return True
    return False


def _module_level_names_handle(tree) -> bool:
    """``_module_level_handles`` surely holds: a module-level statement other than a def, a class
    or an import spells a handled word (``_spells_handled``)."""
    return any(_spells_handled(st) for st in tree.module.body
               if not isinstance(st, (*T.DEFS, ast.ClassDef, ast.Import, ast.ImportFrom)))


def _coroutine_handles(tree, call: ast.Call) -> bool:
    """The runner's first positional argument is ``f(...)``, ``f`` a module-level ``def`` and bound
    nowhere else in the module (``coroutine_target`` finds it from any scope) whose node spells a
    handled word: ``_sigterm_handled`` puts it on the path, and ``_handles`` holds for it."""
    if not call.args or type(call.args[0]) is not ast.Call or type(call.args[0].func) is not ast.Name:
        return False
    name = call.args[0].func.id
    defs = [st for st in tree.module.body if isinstance(st, T.DEFS) and st.name == name]
    return len(defs) == 1 and _spells_handled(defs[0]) and tree.binding_count(name) == 1  # the module's walk last
