from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional, Sequence

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import positional
from shutdown_lint.ast_engine.facts import same_logical_line as _same_logical_line
from shutdown_lint.ast_engine.walk import source_order
from shutdown_lint.prefilter import words as C
from shutdown_lint.facts import names_in
from shutdown_lint.rule import Fix, InsertBefore, Invalid, Option, Replace, Rule, Valid
from shutdown_lint.traversal import walk

from ._vocabulary import identifier_words
from .shd402_asyncio_run_without_sigterm import _IDENTIFIER_FIELDS, _IDENTIFIER_LISTS

_WATCHED = {"signal.SIGINT": "SIGINT", "signal.SIGTERM": "SIGTERM"}
_IGNORE = "signal.SIG_IGN"
#: Calls whose run a SIG_IGN is meant to protect (qualified names); ``protected-calls``
#: adds more. Methods ``run_until_complete``/``run_forever`` on any receiver and
#: ``<something>runner.run()`` count too.
PROTECTED_CALLS = (
    "asyncio.run", "asyncio.Runner.run", "asyncio.AbstractEventLoop.run_until_complete",
    "asyncio.AbstractEventLoop.run_forever", "uvloop.run", "anyio.run", "ray.cancel",
)
_PROTECTED_METHODS = frozenset({"run_until_complete", "run_forever"})
#: Calls that take no noticeable time: they do not make the ignore window "work".
QUICK_CALLS = (
    "asyncio.new_event_loop", "asyncio.get_event_loop", "asyncio.set_event_loop", "asyncio.get_running_loop",
    "asyncio.Runner", "asyncio.Event", "asyncio.AbstractEventLoop.set_debug",
    "asyncio.AbstractEventLoop.set_exception_handler", "uvloop.new_event_loop", "uvloop.install",
    "builtins.print", "builtins.len", "builtins.str", "builtins.int", "builtins.float", "builtins.bool",
    "builtins.dict", "builtins.list", "builtins.tuple", "builtins.set", "builtins.isinstance",
    "builtins.getattr", "builtins.setattr", "builtins.hasattr", "builtins.object",
    "os.getpid", "os.getenv", "os.environ.get", "time.time", "time.monotonic", "time.perf_counter",
    "threading.Event", "functools.partial",
)
#: Calls that start child processes: children inherit the ignored disposition, so moving
#: the SIG_IGN after them changes their behaviour (the fix becomes unsafe).
_SPAWN_PREFIXES = ("subprocess.", "multiprocessing.", "torch.multiprocessing.", "os.fork", "os.posix_spawn",
                   "os.spawn", "concurrent.futures.ProcessPoolExecutor", "ray.init")


@dataclass
class _Window:
    ignores: list[cst.BaseStatement] = field(default_factory=list)
    work: list[cst.BaseStatement] = field(default_factory=list)
    protected: Optional[cst.BaseStatement] = None
    protected_name: str = ""


class _Decide:
    """What SHD401 decides, on either tree (``EarlySignalIgnore``: libcst; ``_Ast``: ``ast``):
    the windows of a block (an ignore, setup work, the protected call) and the message. A
    statement is libcst's: on ``ast`` a list of the statements of one libcst line (``a; b``)
    or a compound statement alone. The tree answers ``_ignored``, ``_restores``,
    ``_protected_call``, ``_is_work``, ``_first_line``, ``_fix`` and ``_report_at``."""

    def _scan(self, body: Sequence) -> None:
        i = 0
        while i < len(body):
            ignored = self._ignored(body[i])
            if not ignored:
                i += 1
                continue
            window = _Window(ignores=[body[i]])
            j = i + 1
            guarded = False
            while j < len(body):
                stmt = body[j]
                name = self._protected_call(stmt)
                if name is not None:
                    window.protected, window.protected_name = stmt, name
                    break
                if self._restores(stmt, ignored):
                    guarded = True
                    break
                more = self._ignored(stmt)
                if more:
                    ignored |= more
                    window.ignores.append(stmt)
                else:
                    window.work.append(stmt)
                j += 1
            if window.protected is not None and not guarded:
                work = [w for w in window.work if self._is_work(w)]
                if work:
                    self._report(window, ignored, work)
            i = j + 1 if window.protected is not None or guarded else i + 1

    def _report(self, window: _Window, ignored: set[str], work: list) -> None:
        sigs = " and ".join(sorted(ignored))
        first = self._first_line(work[0])
        more = f" and {len(work) - 1} more statement(s)" if len(work) > 1 else ""
        message = (f"{sigs} ignored before setup work (`{first}`{more}) that runs ahead of "
                   f"`{window.protected_name}()`: Ctrl+C/SIGTERM cannot stop the program during it")
        self._report_at(window.ignores[0], message, self._fix(window))


_STOPS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
             *((ast.Match,) if hasattr(ast, "Match") else ()))
_BLOCK_FIELDS = ("body", "orelse", "finalbody")


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD401 on ``ast`` (``ast_engine``): the same decisions (``_Decide``); the tree's answers
    read from ``ast``: libcst's blocks (``IndentedBlock``: not a body on its header's line), its
    statements (``a; b`` and a backslash between them: one ``SimpleStatementLine``), calls in
    libcst's order but in defs, classes and lambdas, positional arguments as libcst's (``*a``,
    ``**k``), ``async for`` as libcst's ``For``, the statement's first line, libcst's ``Name``
    identifiers for the fix's saved names, the anchor's span over a whole line."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._protected = {*PROTECTED_CALLS, *self.config["protected-calls"]}
        self._quick = {*QUICK_CALLS, *self.config["quick-calls"]}

    def visit_Module(self, node: ast.Module) -> None:
        self._scan(self._lines(node.body))

    def _visit_blocks(self, node: ast.AST) -> None:
        for name in _BLOCK_FIELDS:
            body = getattr(node, name, None)
            if body:
                self._block(body)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_If = _visit_blocks
    visit_For = visit_AsyncFor = visit_While = visit_With = visit_AsyncWith = _visit_blocks
    visit_Try = visit_ExceptHandler = visit_match_case = _visit_blocks
    if hasattr(ast, "TryStar"):
        visit_TryStar = _visit_blocks

    def _block(self, body: list) -> None:
        # (a body on its header's line is libcst's SimpleStatementSuite, no IndentedBlock: its
        # statements are one line here, and one statement never makes a window)
        self._scan(self._lines(body))

    def _lines(self, body: list) -> list[list]:
        out: list[list] = []
        for stmt in body:
            if out and _same_logical_line(self.facts, out[-1][-1], stmt):  # ``a; b``: simple ones
                out[-1].append(stmt)
            else:
                out.append([stmt])
        return out

    def _report_at(self, line: list, message: str, fix) -> None:
        first, last = self.facts.span(line[0]), self.facts.span(line[-1])
        self.report(line[0], message, fix=fix, span=(first[0], first[1], last[2], last[3]))

    def _first_line(self, line: list) -> str:
        stmt = line[0]
        text = self.facts.lines[stmt.lineno - 1].encode("utf-8")[stmt.col_offset:].decode("utf-8", "replace")
        first = text.strip().splitlines()[0] if text.strip() else ""
        return first if len(first) <= 60 else first[:57] + "..."

    # ------------------------------------------------------------------ recognisers (ast)
    @staticmethod
    def _calls(nodes) -> list[ast.Call]:
        return [n for n in source_order(nodes, _STOPS) if type(n) is ast.Call]

    def _signal_name(self, expr: ast.AST, at: ast.AST) -> Optional[str]:
        q = self.facts.qualified_name(expr, at)
        if q is None:
            return None
        return q.replace("signal.Signals.", "signal.").replace("signal.Handlers.", "signal.")

    def _ignore_call(self, call: ast.Call, loop_signals: Optional[dict[str, set[str]]] = None) -> set[str]:
        if self.facts.call_name(call) != "signal.signal":
            return set()
        args = positional(call)
        if len(args) != 2 or self._signal_name(args[1], call) != _IGNORE:
            return set()
        if loop_signals and type(args[0]) is ast.Name and args[0].id in loop_signals:
            return set(loop_signals[args[0].id])
        sig = self._signal_name(args[0], call)
        return {_WATCHED[sig]} if sig in _WATCHED else set()

    def _ignored(self, line: list) -> set[str]:
        stmt = line[0]
        t = type(stmt)
        if t not in _COMPOUND:
            out: set[str] = set()
            for small in line:
                value = small.value if type(small) in (ast.Expr, ast.Assign) else None
                if type(value) is ast.Call:
                    out |= self._ignore_call(value)
            return out
        if t in (ast.For, ast.AsyncFor) and type(stmt.target) is ast.Name and not stmt.orelse:
            if type(stmt.iter) not in (ast.Tuple, ast.List):
                return set()
            sigs = {self._signal_name(el.value if type(el) is ast.Starred else el, stmt) for el in stmt.iter.elts}
            watched = {_WATCHED[s] for s in sigs if s in _WATCHED}
            if not watched:
                return set()
            loop = {stmt.target.id: watched}
            out = set()
            for call in self._calls(stmt.body):
                out |= self._ignore_call(call, loop)
            return out
        return set()

    def _restores(self, line: list, ignored: set[str]) -> bool:
        for call in self._calls(line):
            if self.facts.call_name(call) != "signal.signal":
                continue
            args = positional(call)
            if len(args) != 2:
                continue
            sig = self._signal_name(args[0], call)
            if _WATCHED.get(sig or "") in ignored and self._signal_name(args[1], call) != _IGNORE:
                return True
        return False

    def _protected_call(self, line: list) -> Optional[str]:
        for call in self._calls(line):
            q = self.facts.call_name(call)
            if q in self._protected:
                return q.rsplit(".", 1)[-1] if q.startswith("asyncio.AbstractEventLoop.") else q
            func = call.func
            if type(func) is ast.Attribute:
                attr = func.attr
                if attr in _PROTECTED_METHODS:
                    return attr
                if attr == "run" and type(func.value) is ast.Name and "runner" in identifier_words(func.value.id):
                    return f"{func.value.id}.run"
        return None

    def _is_work(self, line: list) -> bool:
        t = type(line[0])
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            return False
        if t in (ast.For, ast.AsyncFor, ast.While):
            return True
        if t not in _COMPOUND and any(type(s) in (ast.Import, ast.ImportFrom) for s in line):
            return True
        for call in self._calls(line):
            q = self.facts.call_name(call)
            if q is not None and (q in self._quick or q.startswith("signal.") or q.startswith("logging.")):
                continue
            if _ast_logger_call(call):
                continue
            return True
        return False

    def _touches_signals(self, line: list) -> bool:
        for call in self._calls(line):
            q = self.facts.call_name(call) or ""
            if q.startswith("signal.") or q.endswith(".add_signal_handler") or q.endswith(".remove_signal_handler"):
                return True
            if type(call.func) is ast.Attribute and call.func.attr in ("add_signal_handler", "remove_signal_handler"):
                return True
        return False

    def _spawns(self, line: list) -> bool:
        return any((self.facts.call_name(call) or "").startswith(_SPAWN_PREFIXES) for call in self._calls(line))

    def _fix(self, window: _Window) -> Optional[FixPlan]:
        if any(self._touches_signals(w) for w in window.work):
            return None
        saved: set[str] = set()
        for ig in window.ignores:
            if type(ig[0]) in _COMPOUND:
                continue
            if len(ig) != 1:
                return None
            if type(ig[0]) is ast.Assign:
                saved |= _ast_names(ig[0].targets)
        if saved and any(saved & _ast_names(w) for w in window.work):
            return None
        message = "Move the SIG_IGN just before the call it protects"
        if any(self._spawns(w) for w in window.work):
            return FixPlan.unsafe(message + " (child processes started in between no longer inherit it)")
        return FixPlan.unsafe(message)


def _ast_logger_call(call: ast.Call) -> bool:
    func = call.func
    if type(func) is not ast.Attribute or func.attr not in (
            "debug", "info", "warning", "warn", "error", "exception", "critical", "log"):
        return False
    recv = func.value
    name = recv.attr if type(recv) is ast.Attribute else recv.id if type(recv) is ast.Name else ""
    return any(w in ("log", "logger", "logging") for w in identifier_words(name))


def _ast_names(nodes) -> set[str]:
    """libcst's ``names_in``: the identifiers it holds in ``Name`` nodes (``True``/``False``/
    ``None`` too; a dotted import name's parts)."""
    found: set[str] = set()
    for root in nodes:
        for n in ast.walk(root):
            t = type(n)
            fields = _IDENTIFIER_FIELDS.get(t)
            if fields is not None:
                for name in fields:
                    ident = getattr(n, name)
                    if ident:
                        found.update(ident.split(".") if t in (ast.alias, ast.ImportFrom) else (ident,))
            listed = _IDENTIFIER_LISTS.get(t)
            if listed is not None:
                found.update(getattr(n, listed))
            if t is ast.Constant and (n.value is None or n.value is True or n.value is False):
                found.add(repr(n.value))
    return found


class EarlySignalIgnore(_Decide, Rule):
    """
    ## What it does
    Flags `signal.signal(SIGINT or SIGTERM, SIG_IGN)` that is followed, in the same
    block, by other work before the call it protects (`asyncio.run()`,
    `loop.run_until_complete()`, `loop.run_forever()`, `runner.run()`, `ray.cancel()`,
    more with `protected-calls`): model loading, `ray.init()`, imports, loops, any call
    that is not in the quick-call vocabulary (event-loop creation, `print`, logging,
    other signal calls).

    The analysis is statement by statement within one block (a function body, the
    module, an `if __name__ == "__main__":` block). Signals are recognised through
    aliases (`from signal import signal, SIGINT, SIG_IGN`, `signal.Signals.SIGINT`,
    `signal.Handlers.SIG_IGN`) and in a `for sig in (SIGINT, SIGTERM):` loop.

    Not flagged: a guarded window that restores the handler in the same block
    (`old = signal.signal(SIGINT, SIG_IGN)`, brief work, `signal.signal(SIGINT, old)`,
    e.g. in a `finally`), which is the usual way to start worker pools that should not
    see Ctrl+C; SIG_IGN with no protected call after it in the same block (a worker
    initializer, a daemon that never wants the signal); SIG_IGN right before the
    protected call.

    SHD406 (signal-ignored-until-exit) is the other half: an ignore set *for a shutdown*
    (no protected run after it) and never restored before a close, join or wait that can
    hang. This rule is about an ignore set *before setup*, too early for the run it
    protects; an ignore followed by a protected call is left to this rule.

    ## Why is this bad?
    From the SIG_IGN on, Ctrl+C and `kill <pid>` do nothing. Meant to protect a short
    critical call, an early SIG_IGN also covers the whole setup in front of it: loading
    a model or starting a Ray cluster can take minutes during which the user cannot
    interrupt the program, and a supervisor's SIGTERM is lost until it escalates to
    SIGKILL, so no cleanup runs at all.

    ## Example
    ```python
    import asyncio, signal

    def main():
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C ignored from here on
        model = load_model()                          # minutes
        ray.init()
        asyncio.run(serve(model))
    ```

    ## Use instead
    ```python
    import asyncio, signal

    def main():
        model = load_model()
        ray.init()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        asyncio.run(serve(model))
    ```

    ## Fix safety
    The fix moves the SIG_IGN statement(s), with the comments above them, to just before
    the statement that holds the protected call. No fix is offered when the statements in
    between call signal functions, use the saved old handler, or when the SIG_IGN shares
    its line with other statements.

    Unsafe. In this process only the reaction to Ctrl+C/SIGTERM during the setup changes
    (the hazard's path), and a run that gets no signal is unchanged. But a process started
    in between (`subprocess`, `multiprocessing`, `ray.init()`, or any helper the rule
    cannot see into) no longer inherits the ignore: its fate under Ctrl+C (sent to the
    whole process group) or SIGTERM changes for the rest of its life, long after the
    setup. The fix's message says so when such a start is visible. See
    docs/fix-safety.md.

    ## Options
    - `protected-calls` (list of str): more qualified names of calls a SIG_IGN protects.
    - `quick-calls` (list of str): more qualified names of calls that do not count as
      work in the window.

    ## References
    - Python docs: `signal.signal`, "Note on SIGPIPE" and signal handlers and
      exceptions; `asyncio.Runner` (3.11+) handles SIGINT itself
    - SkyRL/vLLM launchers: SIG_IGN set before engine start-up hides Ctrl+C for minutes
    - SHD406 (signal-ignored-until-exit)
    """

    code = "SHD401"
    name = "early-signal-ignore"
    summary = "SIGINT/SIGTERM ignored long before the call it protects: setup cannot be interrupted"
    triggers = ("SIG_IGN",)
    # tier 1: SIG_IGN before long work
    candidate = C.All(C.Word("SIG_IGN"), C.Word("signal"))
    facts_needed = ("imports", "parents")
    ast_check = _Ast
    options = {
        "protected-calls": Option((), (list, tuple), "Qualified names of calls a SIG_IGN protects", item_kind=str),
        "quick-calls": Option((), (list, tuple), "Qualified names of calls that are not setup work",
                              item_kind=str),
    }

    valid = [
        # right before the protected call
        """
        import asyncio, signal
        def main():
            model = load_model()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            asyncio.run(serve(model))
        """,
        # guarded window: restored in finally
        """
        import signal, multiprocessing
        def start_pool(n):
            old = signal.signal(signal.SIGINT, signal.SIG_IGN)
            try:
                pool = multiprocessing.Pool(n)
            finally:
                signal.signal(signal.SIGINT, old)
            return pool
        """,
        # no protected call after it: a worker initializer
        """
        from signal import signal, SIGINT, SIG_IGN
        def init_worker():
            signal(SIGINT, SIG_IGN)
            setup_logging()
        """,
        # only quick calls in between
        """
        import asyncio as aio, signal, logging
        log = logging.getLogger(__name__)
        def main():
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            loop = aio.new_event_loop()
            aio.set_event_loop(loop)
            log.info("serving")
            loop.run_until_complete(serve())
        """,
        # SIGHUP is not a stop signal this rule watches; SIG_DFL is not an ignore
        """
        import asyncio, signal
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        load()
        asyncio.run(main())
        """,
        # the work is in a different block than the protected call
        """
        import asyncio, signal
        def setup():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            load()
        def main():
            asyncio.run(serve())
        """,
        Valid(
            """
            import asyncio, signal, myapp
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            myapp.configure()
            asyncio.run(myapp.main())
            """,
            options={"quick-calls": ["myapp.configure"]},
        ),
    ]
    invalid = [
        Invalid(
            """
            import asyncio
            import signal

            def main():
                # the engine must not see Ctrl+C
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # keep
                model = load_model()
                warm_up(model)
                asyncio.run(serve(model))
            """,
            fixed="""
            import asyncio
            import signal

            def main():
                model = load_model()
                warm_up(model)
                # the engine must not see Ctrl+C
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # keep
                asyncio.run(serve(model))
            """,
            message_contains="SIGINT",
        ),
        # aliases, both signals, module level under a main guard, protected call in a try
        Invalid(
            """
            from signal import signal, SIGINT, SIGTERM, SIG_IGN
            import asyncio as aio

            if __name__ == "__main__":
                signal(SIGINT, SIG_IGN)
                signal(SIGTERM, SIG_IGN)
                import torch
                weights = torch.load("w.pt")
                try:
                    aio.run(main(weights))
                finally:
                    print("bye")
            """,
            fixed="""
            from signal import signal, SIGINT, SIGTERM, SIG_IGN
            import asyncio as aio

            if __name__ == "__main__":
                import torch
                weights = torch.load("w.pt")
                signal(SIGINT, SIG_IGN)
                signal(SIGTERM, SIG_IGN)
                try:
                    aio.run(main(weights))
                finally:
                    print("bye")
            """,
            count=1,
        ),
        # ray.init in between starts processes: the fix is offered but unsafe
        Invalid(
            """
            import ray, signal

            def cancel_all(refs):
                signal.signal(signal.Signals.SIGINT, signal.Handlers.SIG_IGN)
                ray.init(address="auto")
                for r in refs:
                    ray.cancel(r)
            """,
            fixed="""
            import ray, signal

            def cancel_all(refs):
                ray.init(address="auto")
                signal.signal(signal.Signals.SIGINT, signal.Handlers.SIG_IGN)
                for r in refs:
                    ray.cancel(r)
            """,
        ),
        # a loop over both signals; untyped runner.run()
        Invalid(
            """
            import signal

            def launch(runner, cfg):
                for sig in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(sig, signal.SIG_IGN)
                engine = build_engine(cfg)
                runner.run(engine.loop())
            """,
            fixed="""
            import signal

            def launch(runner, cfg):
                engine = build_engine(cfg)
                for sig in (signal.SIGINT, signal.SIGTERM):
                    signal.signal(sig, signal.SIG_IGN)
                runner.run(engine.loop())
            """,
        ),
        # the window touches signals: flagged, no fix
        Invalid(
            """
            import asyncio, signal

            def main():
                old = signal.signal(signal.SIGTERM, signal.SIG_IGN)
                prepare(old)
                signal.signal(signal.SIGUSR1, dump)
                asyncio.get_event_loop().run_until_complete(serve())
            """,
        ),
        # a method; the setup is a loop
        Invalid(
            """
            import asyncio, signal, time

            class Server:
                def start(self):
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                    while not self.ready():
                        time.sleep(1)
                    with asyncio.Runner() as runner:
                        runner.run(self.serve())
            """,
            fixed="""
            import asyncio, signal, time

            class Server:
                def start(self):
                    while not self.ready():
                        time.sleep(1)
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                    with asyncio.Runner() as runner:
                        runner.run(self.serve())
            """,
        ),
    ]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._protected = {*PROTECTED_CALLS, *self.config["protected-calls"]}
        self._quick = {*QUICK_CALLS, *self.config["quick-calls"]}

    # ------------------------------------------------------------------ visitors
    def visit_Module(self, node: cst.Module) -> None:
        self._scan(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._scan(node.body)

    def _report_at(self, anchor: cst.CSTNode, message: str, fix: Optional[Fix]) -> None:
        self.report(anchor, message, fix=fix)

    @staticmethod
    def _first_line(stmt: cst.BaseStatement) -> str:
        return _first_line(stmt)

    # ------------------------------------------------------------------ recognisers
    def _calls(self, node: cst.CSTNode) -> list[cst.Call]:
        found: list[cst.Call] = []

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, n: cst.Call) -> None:
                found.append(n)

            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return False  # a def's body does not run here

            def visit_ClassDef(self, n: cst.ClassDef) -> bool:
                return False

            def visit_Lambda(self, n: cst.Lambda) -> bool:
                return False

        walk(node, _Calls())
        return found

    def _signal_name(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[str]:
        q = self.facts.qualified_name(expr, at)
        if q is None:
            return None
        return q.replace("signal.Signals.", "signal.").replace("signal.Handlers.", "signal.")

    def _ignore_call(self, call: cst.Call, loop_signals: Optional[dict[str, set[str]]] = None) -> set[str]:
        """Signals (SIGINT/SIGTERM) that ``signal.signal(sig, SIG_IGN)`` ignores."""
        if self.facts.call_name(call) != "signal.signal":
            return set()
        args = [a.value for a in call.args if a.keyword is None]
        if len(args) != 2 or self._signal_name(args[1], call) != _IGNORE:
            return set()
        if loop_signals and isinstance(args[0], cst.Name) and args[0].value in loop_signals:
            return set(loop_signals[args[0].value])
        sig = self._signal_name(args[0], call)
        return {_WATCHED[sig]} if sig in _WATCHED else set()

    def _ignored(self, stmt: cst.BaseStatement) -> set[str]:
        """Signals that ``stmt`` sets to SIG_IGN when that is all it does."""
        if isinstance(stmt, cst.SimpleStatementLine):
            out: set[str] = set()
            for small in stmt.body:
                value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
                if isinstance(value, cst.Call):
                    out |= self._ignore_call(value)
            return out
        if isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and not stmt.orelse:
            if not isinstance(stmt.iter, (cst.Tuple, cst.List)):
                return set()
            sigs = {self._signal_name(el.value, stmt) for el in stmt.iter.elements}
            watched = {_WATCHED[s] for s in sigs if s in _WATCHED}
            if not watched:
                return set()
            loop = {stmt.target.value: watched}
            out = set()
            for call in self._calls(stmt.body):
                out |= self._ignore_call(call, loop)
            return out
        return set()

    def _restores(self, stmt: cst.BaseStatement, ignored: set[str]) -> bool:
        """``stmt`` sets a handler other than SIG_IGN for one of ``ignored``."""
        for call in self._calls(stmt):
            if self.facts.call_name(call) != "signal.signal":
                continue
            args = [a.value for a in call.args if a.keyword is None]
            if len(args) != 2:
                continue
            sig = self._signal_name(args[0], call)
            if _WATCHED.get(sig or "") in ignored and self._signal_name(args[1], call) != _IGNORE:
                return True
        return False

    def _protected_call(self, stmt: cst.BaseStatement) -> Optional[str]:
        for call in self._calls(stmt):
            q = self.facts.call_name(call)
            if q in self._protected:
                return q.rsplit(".", 1)[-1] if q.startswith("asyncio.AbstractEventLoop.") else q
            func = call.func
            if isinstance(func, cst.Attribute):
                attr = func.attr.value
                if attr in _PROTECTED_METHODS:
                    return attr
                if attr == "run" and isinstance(func.value, cst.Name) and "runner" in identifier_words(
                        func.value.value):
                    return f"{func.value.value}.run"
        return None

    def _is_work(self, stmt: cst.BaseStatement) -> bool:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return False  # defining is cheap
        if isinstance(stmt, (cst.For, cst.While)):
            return True
        if isinstance(stmt, cst.SimpleStatementLine):
            if any(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body):
                return True  # imports of torch/vllm take seconds to minutes
        for call in self._calls(stmt):
            q = self.facts.call_name(call)
            if q is not None and (q in self._quick or q.startswith("signal.") or q.startswith("logging.")):
                continue
            if _is_logger_call(call):
                continue
            return True
        return False

    def _touches_signals(self, stmt: cst.BaseStatement) -> bool:
        for call in self._calls(stmt):
            q = self.facts.call_name(call) or ""
            if q.startswith("signal.") or q.endswith(".add_signal_handler") or q.endswith(".remove_signal_handler"):
                return True
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
                    "add_signal_handler", "remove_signal_handler"):
                return True
        return False

    def _spawns(self, stmt: cst.BaseStatement) -> bool:
        for call in self._calls(stmt):
            q = self.facts.call_name(call) or ""
            if q.startswith(_SPAWN_PREFIXES):
                return True
        return False

    # ------------------------------------------------------------------ fix
    def _fix(self, window: _Window) -> Optional[Fix]:
        if any(self._touches_signals(w) for w in window.work):
            return None
        saved: set[str] = set()
        for ig in window.ignores:
            if not isinstance(ig, cst.SimpleStatementLine):
                continue
            if len(ig.body) != 1:
                return None
            small = ig.body[0]
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    saved |= names_in(t.target)
        if saved and any(saved & names_in(w) for w in window.work):
            return None
        moved = [_without_blank_lines(ig) for ig in window.ignores]
        edits = [Replace(ig, cst.RemovalSentinel.REMOVE) for ig in window.ignores]
        edits.append(InsertBefore(window.protected, tuple(moved)))  # type: ignore[arg-type]
        message = "Move the SIG_IGN just before the call it protects"
        if any(self._spawns(w) for w in window.work):
            return Fix.unsafe(*edits, message=message + " (child processes started in between no longer inherit it)")
        # Unsafe too (docs/fix-safety.md): a helper called in between may start a process the
        # rule cannot see; it would no longer inherit the ignore and would die on the Ctrl+C
        # or SIGTERM it used to survive (children's fate under signals is part of the contract).
        return Fix.unsafe(*edits, message=message)


def _is_logger_call(call: cst.Call) -> bool:
    """``log.info(...)``, ``self.logger.warning(...)``: logging is quick."""
    func = call.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in (
            "debug", "info", "warning", "warn", "error", "exception", "critical", "log"):
        return False
    recv = func.value
    name = recv.attr.value if isinstance(recv, cst.Attribute) else recv.value if isinstance(recv, cst.Name) else ""
    return any(w in ("log", "logger", "logging") for w in identifier_words(name))


def _without_blank_lines(stmt: cst.BaseStatement) -> cst.BaseStatement:
    """Keep the comments above a moved statement, drop its blank lines."""
    lines = [ln for ln in stmt.leading_lines if ln.comment is not None]
    return stmt.with_changes(leading_lines=lines)


def _first_line(stmt: cst.BaseStatement) -> str:
    code = cst.Module([]).code_for_node(stmt.with_changes(leading_lines=()) if hasattr(stmt, "leading_lines")
                                        else stmt)
    first = code.strip().splitlines()[0] if code.strip() else ""
    return first if len(first) <= 60 else first[:57] + "..."
