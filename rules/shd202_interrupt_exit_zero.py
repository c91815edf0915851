from __future__ import annotations

import ast
from typing import Optional, Union

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments, positional
from shutdown_lint.ast_engine.exit_paths import _same_line, _shares_its_line, exit_paths_of
from shutdown_lint.ast_engine.facts import blank_or_comment, body_holding
from shutdown_lint.prefilter import words as C
from shutdown_lint.facts import DRIVER, RETURN, STATUS_ZERO, TORCH_WORKER
from shutdown_lint.facts.exit_paths import EXIT_FUNCTIONS, FALL_THROUGH
from shutdown_lint.rule import AddImport, Fix, Invalid, Option, Replace, Rule
from shutdown_lint.traversal import walk
from shutdown_lint.prefilter.ast_tree import (DEFS, TRYS, children, identifiers, is_main_guard, nested_statements, positional_args,
                                     walk_within)
from shutdown_lint.prefilter.ast_tree import walk as ast_walk
from shutdown_lint.prefilter.ast_tree import STATEMENT_BLOCKS, statement_blocks

from ._exits import child_process_reason, raises_system_exit, rule_runs_here
from .shd204_os_exit_skips_cleanup import _child_roots_ast
from ._vocabulary import identifier_words

_INTERRUPT_EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for a Ctrl+C'd job
_TERM_EXIT_CODE = 143  # 128 + SIGTERM
#: Words in a SIGTERM handler's calls that make it a batch job's handler (a preempted run).
_JOB_WORDS = frozenset({"checkpoint", "ckpt", "train", "trainer", "training", "epoch", "preempt", "preempted"})
_CANCELLATION = frozenset({"asyncio.CancelledError", "asyncio.exceptions.CancelledError", "builtins.BaseException"})

_Handler = Union["cst.ExceptHandler", "cst.ExceptStarHandler"]  # strings: libcst is imported on first use (lazy_libcst)


# ------------------------------------------------------------------ candidate tier 1 (words)
#: the signals whose handlers path 2 of ``_may_exit_zero_on_interrupt`` reads
_SIGNALS = ("SIGINT", "SIGTERM")
#: what follows such a signal given as a call's first positional argument, before the next one:
#: a gap, the ``)`` of parentheses around the argument (``f((signal.SIGINT), h)``), a ``,``
_SIGNAL_TAIL = C.gap() + r"(?:\)" + C.gap() + r")*,"


def _tier1(signals: tuple, tail: str, exits: C.Cond) -> C.Cond:
    """SHD202's tier-1 condition, a necessary condition of ``_may_exit_zero_on_interrupt`` (tier 2)
    beside the rule's words (``KeyboardInterrupt``, or a signal and an exit):

    - paths 1, 3 and 4 need a handler whose type's ``Tree.words`` hold ``KeyboardInterrupt``:
      the word is spelled as an identifier (the handler's name or attribute, an import's last
      word, a binding's head);
    - path 2 needs a call whose first positional argument (``*x``, ``**x`` too:
      ``positional_args``) is a Name or an Attribute spelled ``SIGINT``/``SIGTERM``, and a
      second one: that token is followed by ``tail`` (a gap, the ``)`` of parentheses around
      the argument, then the ``,`` before the next argument: ``**x`` comes after every ``*x``
      and positional one). ``os.kill(pid, signal.SIGTERM)``, ``sig == signal.SIGINT`` and
      the words of a sentence have none.

    Read on the whole text (strings count): the code would cost a code view for each file
    holding ``KeyboardInterrupt``, more than the parses it saves (measured on ray+torch)."""
    first = C.AnyOf(*(C.WordThen(w, tail) for w in signals))
    words = C.AnyOf(C.Word("KeyboardInterrupt"), C.All(C.Word(*_SIGNALS), exits))
    return C.AnyOf(C.Word("KeyboardInterrupt"), C.All(first, words))


class _Decide:
    """What SHD202 decides, on either tree: the tree's answers come from the hooks that the
    libcst rule (``InterruptExitZero``) and the ``ast`` check (``_Ast``) each write."""

    # ------------------------------------------------------------------ the three reports
    def _check_exit_call(self, node) -> None:
        facts = self.facts
        if not self._exits.is_exit(node) or self._exits.exit_status(node) != STATUS_ZERO:
            return
        where = self._where(node)
        if where is None:
            return
        name = facts.call_name(node)
        if name == "runtime_guard.hard_exit" and not self._unnamed(node):
            return  # hard_exit() defaults to 1
        if (name == "os._exit" and self._child_process_reason(node) is None
                and rule_runs_here("SHD204", facts, self.settings)):
            return  # SHD204 reports this statement once, status included
        self.report(
            node,
            f"`{self._code(node.func)}()` in {where[0]} exits with status 0: schedulers and scripts "
            "record the interrupted run as a success",
            fix=self._status_fix(node, where),
        )

    def _check_raise(self, node) -> None:
        if not self._exits.is_exit(node) or self._exits.exit_status(node) != STATUS_ZERO:
            return
        where = self._where(node)
        if where is None:
            return
        if where[0] != "`except KeyboardInterrupt`" and not self._raises_with_arguments(node):
            return  # `raise SystemExit` in a signal handler: the idiom that unwinds `finally` blocks
        self.report(
            node,
            f"`raise SystemExit` in {where[0]} exits with status 0: schedulers and scripts "
            "record the interrupted run as a success",
            fix=self._status_fix(node, where),
        )

    def _check_handler(self, node) -> None:
        """``except KeyboardInterrupt: log(); cleanup()`` that returns or falls through to the
        end of the process entrypoint: the process exits 0 (exit-path facts)."""
        if not self._catches_interrupt(node) or self._raises_interrupt_itself(node) or self._sigint_handled_in(node) \
                or self._runs_until_stopped(node) or self._dispatches_on_type(node):
            return
        entry = self._exits.normal_return_to_entrypoint(node)
        coroutine = entry is not None and "asyncio.run" in entry
        if entry is None:
            # deeper: the handler's function (or method) is reached from the entrypoint through
            # calls after which nothing exits or raises, in any module (the project index)
            fn = self._leaves_function(node) if self._does_something(node) else None
            chain = self.facts.process_tail(fn) if fn is not None else None
            if not chain:
                return
            entry = chain[0] + " (" + ", ".join(f"the last call of {c}" for c in chain[1:]) + ")"
            coroutine = fn.is_async
        what = "`except KeyboardInterrupt`"
        if coroutine:
            # Python 3.11+: Ctrl+C cancels asyncio.run's main task (the KeyboardInterrupt comes out
            # of asyncio.run, never inside the coroutine); only a handler that also catches the
            # cancellation and returns makes asyncio.run return normally (measured: status 0)
            if not self._catches(node, _CANCELLATION):
                return
            what = "`except (KeyboardInterrupt, CancelledError)`"
        self.report(
            node,
            f"{what} returns normally to the end of {entry}, so the process exits "
            "with status 0: schedulers and scripts record the interrupted run as a success",
            fix=self._exit_fix(node) if self._exit_fix_fits(node) else None,
        )

    # ------------------------------------------------------------------ decisions
    def _does_something(self, handler) -> bool:
        """For a handler found through a chain of calls: it does some work (logs, saves, cleans
        up), and it is not a handler for exits too. Measured on site-packages: a bare ``pass``
        deep in a library is the idiom that hides the traceback of a foreground server or mount
        (aiohttp's ``run_app``, fsspec's FUSE ``run``), and ``except (KeyboardInterrupt,
        SystemExit, ...)`` hands the status to a function that exits (virtualenv)."""
        if self._only_pass_or_strings(handler):
            return False
        types = self.facts.caught_types(handler) or ()
        return not any(self._code(e).rsplit(".", 1)[-1].endswith("Exit") for e in types)

    def _dispatches_on_type(self, handler) -> bool:
        """``except (KeyboardInterrupt, JobError) as e:`` whose body tests ``isinstance(e, ...)``
        for other types only: the way out that returns may be another type's (AReaL's
        launchers re-raise the interrupt in the ``else`` branch); not judged."""
        bound = self._bound_name(handler)
        if bound is None:
            return False
        tested = False
        for call in self._calls_in_body(handler):
            if self.facts.call_name(call) != "builtins.isinstance":
                continue
            args = self._argument_values(call)
            if len(args) == 2 and self._name_id(args[0]) == bound:
                if "KeyboardInterrupt" in self._code(args[1]) or "BaseException" in self._code(args[1]):
                    return False
                tested = True
        return tested

    def _leaves_function(self, handler):
        """The function the handler returns from normally (the conditions of the exit-path
        facts' ``normal_return_to_entrypoint``: no loop around it that goes on, a ``finally``
        that only falls through, no later statement that exits, raises or returns)."""
        ex = self._exits
        fn = self.facts.enclosing_function(handler)
        tr = ex._try_of(handler)
        if fn is None or tr is None:
            return None
        paths = ex.exit_paths(handler)
        returns_none = RETURN in paths.ways and ex._returns_only_none(ex._handler_body(handler))
        if not ((FALL_THROUGH in paths.ways and not ex._loop_between(handler, fn)) or returns_none):
            return None
        final = ex._finally_of(tr)
        if final is not None and not ex.exit_paths(final).ways <= {FALL_THROUGH}:
            return None
        if FALL_THROUGH in paths.ways and not returns_none and ex._later_code_exits(tr, fn):
            return None
        return fn

    def _shuts_down(self, handler, exit_node) -> bool:
        """The signal handler does some work besides logging before it exits (it "shuts down")."""
        for call in self.facts.calls:
            if call is exit_node or self._exits.is_exit(call) or not self.facts.is_ancestor(handler, call):
                continue
            name = self.facts.call_name(call) or self._code(call.func)
            if name == "builtins.SystemExit":
                continue
            head = name.split(".")[0].lower()
            if name == "builtins.print" or head in ("logger", "logging", "log", "_logger", "warnings", "sys") \
                    or name.endswith(("info", "debug", "warning", "error", "exception", "flush")):
                continue
            return True
        return False

    def _runs_until_stopped(self, handler) -> bool:
        """The ``try`` body never ends by itself (``while True`` with no way out, a server's
        ``serve_forever()``/``uvicorn.run()``): Ctrl+C is how the program is meant to stop, so
        its status 0 is the normal one (a monitor or a server, not an interrupted run)."""
        tr = self._plain_try(handler)
        if tr is None:
            return False
        for call in self._calls_in_try_body(tr):
            name = self.facts.call_name(call) or self._code(call.func)
            if name in _SERVE_CALLS or name.rsplit(".", 1)[-1] in _SERVE_METHODS:
                return True
        return self._ends_in_endless_loop(tr)

    def _batch_job(self, handler) -> bool:
        """The SIGTERM handler belongs to a job whose status a scheduler reads: the module starts
        torch.distributed or a Ray driver, or the handler saves a checkpoint / stops training."""
        if any(self.facts.contexts(fn) & {TORCH_WORKER, DRIVER} and self._calls_job_setup(fn)
               for fn in self.facts.functions):
            return True
        for call in self.facts.calls:
            if self.facts.is_ancestor(handler, call):
                if set(identifier_words(self._code(call.func))) & _JOB_WORDS:
                    return True
        return False

    def _calls_job_setup(self, fn) -> bool:
        return any(self.facts.call_name(c) in ("ray.init", "torch.distributed.init_process_group") for c in fn.calls)

    def _sigint_handled_in(self, handler) -> bool:
        """The handler's function installs its own SIGINT handler: Ctrl+C never raises
        KeyboardInterrupt there."""
        fn = self.facts.enclosing_function(handler)
        calls = fn.calls if fn is not None else self.facts.module_calls
        for call in calls:
            if self.facts.call_name(call) in ("signal.signal", "asyncio.AbstractEventLoop.add_signal_handler") \
                    or self._attribute_name(call.func) == "add_signal_handler":
                if "SIGINT" in self._code(call) or "for sig" in self._statement_code(call):
                    return True
        return False

    def _raises_interrupt_itself(self, handler) -> bool:
        """The ``try`` body raises ``KeyboardInterrupt`` itself (an idle timeout that shuts a
        server down): the handler is also the normal way out, where status 0 is meant."""
        tr = self._plain_try(handler)
        if tr is None:
            return False
        return any(self.facts.qualified_name(exc, raise_) == "builtins.KeyboardInterrupt"
                   for raise_, exc in self._raised_in_try_body(tr))

    def _where(self, node) -> Optional[tuple[str, str, Optional[str]]]:
        """Where an exit 0 is a hazard, and the status the fix writes: an interrupt handler
        (the ``exit_code`` option) or a SIGINT/SIGTERM handler (130, 143 or ``128 + signum``):
        (where, the status's code, the parameter named in it)."""
        if self._interrupt_handler(node) is not None:
            return "`except KeyboardInterrupt`", str(self.config["exit_code"]), None
        found = self._exits.signal_handler_of(node)
        if found is None:
            return None
        handler, signals = found
        if not self._shuts_down(handler, node):
            return None  # a handler that only exits (an interactive tool's Ctrl+C = quit)
        if "SIGTERM" in signals and not self._batch_job(handler):
            return None  # a service: exit 0 after SIGTERM is its conventional graceful shutdown
        names = " and ".join(sorted(signals))
        what = f"a {names} handler"
        if signals == {"SIGINT"}:
            return what, str(self.config["exit_code"]), None
        if signals == {"SIGTERM"}:
            return what, str(_TERM_EXIT_CODE), None
        param = self._first_parameter(handler)
        if param is not None:
            return what, f"128 + {param}", param
        return None

    def _exit_fix_fits(self, handler) -> bool:
        """``_exit_fix`` builds a fix: a handler on lines of its own whose only normal way out is
        its end or one bare ``return`` that ends it."""
        paths = self._exits.exit_paths(handler)
        if self._body_on_header_line(handler) or (RETURN in paths.ways and self._return_count(handler) != 1):
            return False
        return RETURN not in paths.ways or self._ends_in_bare_return(handler)

    def _interrupt_handler(self, node):
        """The innermost `except` handler whose body holds ``node`` (same function), if it
        catches KeyboardInterrupt."""
        handler = self._handler_around(node)
        return handler if handler is not None and self._catches_interrupt(handler) else None

    def _catches(self, handler, names: frozenset[str]) -> bool:
        return any(self.facts.qualified_name(e, handler) in names for e in self.facts.caught_types(handler) or ())

    def _catches_interrupt(self, handler) -> bool:
        exprs = self.facts.caught_types(handler)
        if exprs is None:
            return False  # a bare except: too broad to say the author meant Ctrl+C
        return any(self.facts.qualified_name(e, handler) == "builtins.KeyboardInterrupt" for e in exprs)


class _Ast(_Decide, AstCheck):
    """SHD202 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers
    read from ``ast``: the exit-path facts of ``ast_engine.exit_paths``; a handler of ``except*``
    (``TryStar``) is not visited (libcst's ``ExceptStarHandler``) but holds an exit; a handler's
    body holds what is not its type; arguments as libcst's ``Call.args``; ``True`` and ints as
    constants, a lone string literal by its tokens; a body on its header's line; the text of
    libcst's ``SimpleStatementLine`` (``a; b``: the whole line) for ``for sig``."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check_exit_call(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        self._check_raise(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if type(self.facts.parent(node)) is ast.Try:
            self._check_handler(node)

    @property
    def _exits(self):
        return exit_paths_of(self.facts)

    def _code(self, node: ast.AST) -> str:
        return self.facts.code_without_module(node)

    @staticmethod
    def _unnamed(call: ast.Call) -> list:
        return positional(call)

    def _child_process_reason(self, node: ast.Call) -> Optional[str]:
        return child_process_reason(self.facts, node, _child_roots_ast)

    @staticmethod
    def _raises_with_arguments(node: ast.Raise) -> bool:
        return type(node.exc) is ast.Call and bool(node.exc.args or node.exc.keywords)

    @staticmethod
    def _status_fix(node, where) -> FixPlan:
        return FixPlan.safe(f"Exit with status {where[1]}")

    def _exit_fix(self, handler: ast.ExceptHandler) -> FixPlan:
        return FixPlan.unsafe(f"End the handler with `sys.exit({self.config['exit_code']})`")

    def _only_pass_or_strings(self, handler: ast.ExceptHandler) -> bool:
        return all(type(st) is ast.Pass or (type(st) is ast.Expr and type(st.value) is ast.Constant and (
            st.value.value is Ellipsis or (type(st.value.value) in (str, bytes) and self.facts.string_tokens(st.value) == 1)))
            for st in handler.body)

    @staticmethod
    def _bound_name(handler: ast.ExceptHandler) -> Optional[str]:
        return handler.name

    def _calls_in_body(self, handler: ast.ExceptHandler) -> list:
        inside = {id(n) for st in handler.body for n in ast_walk(st)}
        return [c for c in self.facts.calls if id(c) in inside]

    @staticmethod
    def _argument_values(call: ast.Call) -> list:
        return [a.value for a in arguments(call)]

    @staticmethod
    def _name_id(expr: ast.AST) -> Optional[str]:
        return expr.id if type(expr) is ast.Name else None

    def _plain_try(self, handler: ast.ExceptHandler) -> ast.Try:
        return self.facts.parent(handler)  # visit_ExceptHandler: a ``Try``'s handlers only

    def _calls_in_try_body(self, tr: ast.Try) -> list:
        inside = {id(n) for st in tr.body for n in ast_walk(st)}
        return [c for c in self.facts.calls if id(c) in inside]

    @staticmethod
    def _ends_in_endless_loop(tr: ast.Try) -> bool:
        last = tr.body[-1]
        return type(last) is ast.While and _ast_endless(last)

    @staticmethod
    def _raised_in_try_body(tr: ast.Try) -> list:
        out = []
        for st in tr.body:
            for n in ast_walk(st):
                if type(n) is ast.Raise:
                    exc = n.exc.func if type(n.exc) is ast.Call else n.exc
                    if exc is not None:
                        out.append((n, exc))
        return out

    @staticmethod
    def _attribute_name(func: ast.AST) -> Optional[str]:
        return func.attr if type(func) is ast.Attribute else None

    def _statement_code(self, call: ast.Call) -> str:
        """libcst's ``code_for_node(enclosing_statement(call) or call)``; a statement that shares
        its line (``a; b``, a backslash between) is one ``SimpleStatementLine`` there: the run's
        lines with the comment and blank lines above it that libcst files under it (read here
        for ``for sig``, which no indentation can split)."""
        facts = self.facts
        stmt = facts.enclosing_statement(call)
        if stmt is None:
            return self._code(call)
        if not _shares_its_line(facts, stmt):
            return self._code(stmt)
        parent = facts.parent(stmt)
        body = body_holding(parent, stmt)[0]
        first = last = next(k for k, s in enumerate(body) if s is stmt)
        while first > 0 and _same_line(facts, body[first - 1], body[first]):
            first -= 1
        while last + 1 < len(body) and _same_line(facts, body[last], body[last + 1]):
            last += 1
        lines = facts.lines
        top = body[first].lineno - 1
        floor = facts._claimed_end(body[first - 1]) if first > 0 else top if type(parent) is ast.Module else 0
        while top > floor and blank_or_comment(lines[top - 1]):
            top -= 1
        return "".join(lines[top:body[last].end_lineno])

    def _first_parameter(self, handler: ast.AST) -> Optional[str]:
        params = handler.args.args
        return params[0].arg if params else None

    def _body_on_header_line(self, handler: ast.ExceptHandler) -> bool:
        first = handler.body[0]
        return self.facts.enclosing_statement(first) is not first

    @staticmethod
    def _return_count(handler: ast.ExceptHandler) -> int:
        return sum(type(n) is ast.Return for st in handler.body
                   for n in walk_within([st], stop=(*DEFS, ast.Lambda)))

    def _ends_in_bare_return(self, handler: ast.ExceptHandler) -> bool:
        last = handler.body[-1]
        return type(last) is ast.Return and last.value is None and not _shares_its_line(self.facts, last)

    def _handler_around(self, node: ast.AST):
        child = node
        for anc in self.facts.ancestors(node):
            if type(anc) in (*DEFS, ast.Lambda, ast.ClassDef):
                return None
            if type(anc) is ast.ExceptHandler and child is not anc.type:
                return anc
            child = anc
        return None


class InterruptExitZero(_Decide, Rule):
    """
    ## What it does
    Flags an `except KeyboardInterrupt:` handler that ends the process with exit status 0:
    `sys.exit()`, `sys.exit(0)`, `sys.exit(None)`, `exit(0)`, `quit()`, `os._exit(0)`,
    `runtime_guard.hard_exit(0)` or `raise SystemExit` / `raise SystemExit(0)` inside the
    handler (also in a tuple such as `except (KeyboardInterrupt, SystemExit):`).

    Also flagged, from the shared exit-path facts:
    - an `except KeyboardInterrupt:` handler that logs, cleans up and then returns (`return`,
      `return None`) or falls through, when that normal exit ends the process entrypoint: the
      handler's function is `main()` (or another function) called as a statement from the
      `__main__` block (or as `sys.exit(main())`), or the handler sits in the `__main__` block
      itself; in the coroutine `asyncio.run` runs from there, a handler that also catches
      `CancelledError` (or `BaseException`): since Python 3.11 Ctrl+C cancels the main task
      instead of raising `KeyboardInterrupt` in it, so a plain `except KeyboardInterrupt:` there
      never runs (measured: status 130), while one that swallows the cancellation and returns
      makes `asyncio.run` return normally (measured: status 0);
    - the same handler in any function or method (this module or another one of the project)
      that is the last thing the process does: reached from the `__main__` block, a console
      script of the project's `pyproject.toml`, `sys.exit(f())` or `asyncio.run(f())` through
      calls after which nothing exits, raises or returns a value, at any depth (`main()` ->
      `Trainer(cfg).fit()` -> `self._loop()`, a helper called last in `main()`'s `finally`).
      Methods are followed through local instances, `self.m()` and base classes in other
      modules (the project index; the message names the chain);
    - `sys.exit(0)` (or any exit call with status 0, or `raise SystemExit(0)`) in a SIGINT or
      SIGTERM handler installed with `signal.signal` or `loop.add_signal_handler` (a function or
      a lambda) that shuts something down first (a call other than logging). A SIGTERM
      handler counts only in a batch job (the module starts torch.distributed or a Ray driver,
      or the handler saves a checkpoint or stops training): for a service, exit 0 after
      SIGTERM is the conventional graceful shutdown. A handler that only exits (an
      interactive tool's Ctrl+C means "quit") and a bare `raise SystemExit` (the idiom that
      makes a signal unwind `finally` blocks) are left alone.

    An `os._exit(0)` in the handler is reported by SHD204 (os-exit-skips-cleanup) when
    that rule is selected, once for both problems: its fix writes
    `runtime_guard.hard_exit(130)`. SHD202 is about the exit *status* of an interrupted
    run; SHD204 about the cleanup `os._exit` skips (`atexit` handlers, buffered writes).

    Not flagged: exits with a non-zero or computed status, exits inside functions or
    lambdas defined in the handler (they do not run there), `except Exception:` handlers
    (they never see `KeyboardInterrupt`), a handler inside a loop that goes on (a REPL), a
    handler followed by code that exits or raises, a handler for several types that tests
    `isinstance(e, ...)` for the others only (its normal way out may be theirs), and, when
    the handler is found through a chain of calls, one whose body is only `pass` (the idiom that
    hides a foreground server's traceback) or that also catches an `...Exit` exception, `return 1` under `sys.exit(main())`, a
    `try` that never ends by itself (`while True` with no way out, `serve_forever()`,
    `uvicorn.run()`: Ctrl+C is how a monitor or a server is meant to stop), a
    handler whose `try` raises `KeyboardInterrupt` itself (an idle shutdown) or whose function
    installs its own SIGINT handler (Ctrl+C never raises there), and bare `except:` (too broad
    to say the author meant Ctrl+C).

    ## Why is this bad?
    Status 0 means "finished successfully". SLURM, Kubernetes Jobs, `make`, shell scripts
    and CI runners all read the exit status: a training run that was interrupted half
    way, exiting 0, is marked completed, its dependent jobs start on a partial
    checkpoint, and retries never happen. The convention for a process ended by Ctrl+C
    is 130 (128 + SIGINT), which is what the shell itself reports when Python dies of an
    unhandled `KeyboardInterrupt`.

    Flow-Factory's graceful Ctrl+C handler (`cleanup(); os._exit(0)`) is an example:
    the cleanup is right, the exit status is not.

    ## Example
    ```python
    import sys

    def main():
        try:
            trainer.start()
        except KeyboardInterrupt:
            trainer.cleanup()
            sys.exit(0)  # the scheduler records success
    ```

    ## Use instead
    ```python
    import sys

    def main():
        try:
            trainer.start()
        except KeyboardInterrupt:
            trainer.cleanup()
            sys.exit(130)  # 128 + SIGINT: an interrupted run
    ```

    ## Fix safety
    Safe when the fix changes the status of an exit call or `raise SystemExit` that is
    already there (to the `exit_code` option, 130 by default; 143 in a SIGTERM handler;
    `128 + signum` in a handler installed for both signals): the exit runs where it ran,
    only its status on the interrupt's path changes; a run that is not interrupted is
    unchanged. Comments around the call are kept.

    Unsafe when a handler that falls through or ends in a bare `return` gets `sys.exit(130)`
    as its last statement (replacing a trailing `pass`/`return`; `import sys` is added if
    needed): after Ctrl+C the original went on with the code after the handler (the rest of
    the function and of its callers up to the end of the entrypoint), which the exit now
    skips. Move that code into a `finally` if it must run. No fix when the handler returns
    from several places. See docs/fix-safety.md.

    ## Options
    - `exit_code` (int, default 130): the status the fix writes.

    ## References
    - Flow-Factory #149: graceful shutdown on Ctrl+C (`os._exit(0)` after cleanup)
    - Bash manual, "Exit Status": 128 + N for a command killed by signal N
    - Python docs: `KeyboardInterrupt`, `sys.exit`, `os._exit`
    - SHD204 (`os._exit` skips `finally`, `atexit` and buffered writes)
    """

    code = "SHD202"
    name = "interrupt-exit-zero"
    summary = "`except KeyboardInterrupt` exits with status 0, so an interrupted run looks successful"
    triggers = ("KeyboardInterrupt", "SIGINT", "SIGTERM")
    # tier 1: except KeyboardInterrupt that exits 0 or returns to the __main__ block (or to
    # the coroutine given to asyncio.run); a SIGINT/SIGTERM handler that exits 0
    _EXITS = C.qualified("sys.exit", "os._exit", "builtins.exit", "builtins.quit", "builtins.SystemExit",
                         "runtime_guard.hard_exit", "runtime_guard.exit.hard_exit")
    # (without an exit or a `__main__` block: the entrypoint may be in another module);
    # a signal needs to be a call's first argument, as tier 2 does (``_tier1``)
    candidate = _tier1(_SIGNALS, _SIGNAL_TAIL, _EXITS)
    # tier 2: an `except KeyboardInterrupt` with an exit in it, or one that may return normally
    # (to the `__main__` block, or from a function another module's entrypoint may call last);
    # or a SIGINT/SIGTERM handler installed in a module that exits somewhere
    candidate_tree = staticmethod(lambda tree: _may_exit_zero_on_interrupt(tree))
    facts_needed = ("parents", "imports", "functions", "calls", "execution")
    options = {
        "exit_code": Option(_INTERRUPT_EXIT_CODE, int, "exit status the fix writes for an interrupted run"),
    }

    valid = [
        # non-zero status: the interruption is visible to the caller
        """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            sys.exit(130)
        """,
        # not an interrupt handler
        """
        import sys
        try:
            run()
        except Exception:
            sys.exit(0)
        """,
        # exit in a callback defined inside the handler does not run there
        """
        import atexit, sys
        try:
            run()
        except KeyboardInterrupt:
            atexit.register(lambda: sys.exit(0))
            def later():
                sys.exit(0)
            raise
        """,
        # computed status: we cannot tell it is 0
        """
        import os as operating_system
        def main():
            try:
                serve()
            except KeyboardInterrupt:
                operating_system._exit(status)
        """,
        # a user-defined exit() is not the builtin
        """
        def exit(code=0):
            print("bye", code)
        try:
            run()
        except KeyboardInterrupt:
            exit()
        """,
        # a REPL: the handler goes back to the loop, not to the end of the process
        """
        def main():
            while True:
                try:
                    line = input("> ")
                except KeyboardInterrupt:
                    print("^C")
                    continue
                run(line)

        if __name__ == "__main__":
            main()
        """,
        # in the coroutine asyncio.run runs, Ctrl+C cancels the main task (Python 3.11+): this
        # handler never runs and asyncio.run raises KeyboardInterrupt (status 130)
        """
        import asyncio
        async def amain():
            try:
                await serve()
            except KeyboardInterrupt:
                return
        if __name__ == "__main__":
            asyncio.run(amain())
        """,
        # the try body raises KeyboardInterrupt itself as its idle shutdown: status 0 is meant
        """
        import time
        def main():
            try:
                while True:
                    time.sleep(1)
                    if idle():
                        raise KeyboardInterrupt()
            except KeyboardInterrupt:
                server.stop(0)

        if __name__ == "__main__":
            main()
        """,
        # a monitor that runs until Ctrl+C, and a server: Ctrl+C is their normal stop
        """
        import time
        def main():
            try:
                while True:
                    check_memory()
                    time.sleep(1)
            except KeyboardInterrupt:
                log.info("stopped by user")

        if __name__ == "__main__":
            main()
        """,
        """
        import uvicorn
        def main():
            try:
                uvicorn.run(app)
            except KeyboardInterrupt:
                log.info("shutting down")
            finally:
                cleanup()

        if __name__ == "__main__":
            main()
        """,
        # a service's SIGTERM handler: exit 0 is its conventional graceful shutdown
        """
        import signal, sys
        class Launcher:
            def __init__(self):
                signal.signal(signal.SIGTERM, self._on_signal)
            def _on_signal(self, signum, frame):
                self._stop_servers()
                sys.exit(0)
        """,
        # the handler's function is not the process entrypoint
        """
        def run_step():
            try:
                step()
            except KeyboardInterrupt:
                cleanup()
                return
        """,
        # sys.exit(main()) with a non-zero return from the handler
        """
        import sys
        def main():
            try:
                train()
            except KeyboardInterrupt:
                return 130
            return 0

        if __name__ == "__main__":
            sys.exit(main())
        """,
        # a Ctrl+C handler that only quits an interactive tool; `raise SystemExit` that unwinds a server
        """
        import signal, sys
        def on_int(sig, frame):
            sys.exit(0)
        def on_term(sig, frame):
            log.info("stopping")
            server.should_exit = True
            raise SystemExit
        signal.signal(signal.SIGINT, on_int)
        signal.signal(signal.SIGTERM, on_term)
        """,
        # a SIGTERM handler that exits non-zero
        """
        import signal, sys
        def on_term(signum, frame):
            shutdown()
            sys.exit(128 + signum)
        signal.signal(signal.SIGTERM, on_term)
        """,
        # re-raising keeps the default status (130 from the shell)
        """
        try:
            run()
        except KeyboardInterrupt:
            print("interrupted")
            raise
        """,
    ]
    invalid = [
        Invalid(
            """
            import os

            def main():
                try:
                    trainer.start()
                except KeyboardInterrupt:
                    trainer.cleanup()
                    # bypass NCCL heartbeat noise
                    os._exit(0)  # fast exit
            """,
            fixed="""
            import os

            def main():
                try:
                    trainer.start()
                except KeyboardInterrupt:
                    trainer.cleanup()
                    # bypass NCCL heartbeat noise
                    os._exit(130)  # fast exit
            """,
            message_contains="status 0",
        ),
        Invalid(
            """
            import sys as system
            try:
                main()
            except (KeyboardInterrupt, SystemExit):
                system.exit()
            """,
            fixed="""
            import sys as system
            try:
                main()
            except (KeyboardInterrupt, SystemExit):
                system.exit(130)
            """,
        ),
        Invalid(
            """
            from sys import exit as leave
            class Cli:
                def run(self):
                    try:
                        self.loop()
                    except KeyboardInterrupt:
                        if self.verbose:
                            print("bye")
                        leave(None)
            """,
            fixed="""
            from sys import exit as leave
            class Cli:
                def run(self):
                    try:
                        self.loop()
                    except KeyboardInterrupt:
                        if self.verbose:
                            print("bye")
                        leave(130)
            """,
        ),
        Invalid(
            """
            try:
                serve()
            except KeyboardInterrupt:
                raise SystemExit
            """,
            fixed="""
            try:
                serve()
            except KeyboardInterrupt:
                raise SystemExit(130)
            """,
        ),
        Invalid(
            """
            import runtime_guard
            try:
                serve()
            except KeyboardInterrupt:
                quit(0)
            finally:
                runtime_guard.hard_exit(0)
            """,
            fixed="""
            import runtime_guard
            try:
                serve()
            except KeyboardInterrupt:
                quit(130)
            finally:
                runtime_guard.hard_exit(0)
            """,
            count=1,
        ),
        # falls through to the end of main(), called from __main__: exit status 0
        Invalid(
            """
            import logging

            def main():
                try:
                    train()
                except KeyboardInterrupt:
                    logging.info("interrupted")
                    cleanup()  # save what we have

            if __name__ == "__main__":
                main()
            """,
            fixed="""
            import logging
            import sys

            def main():
                try:
                    train()
                except KeyboardInterrupt:
                    logging.info("interrupted")
                    cleanup()  # save what we have
                    sys.exit(130)

            if __name__ == "__main__":
                main()
            """,
            message_contains="`main()`",
        ),
        # the coroutine asyncio.run runs returns normally
        Invalid(
            """
            import asyncio
            import sys as system

            async def amain():
                try:
                    await serve()
                except (KeyboardInterrupt, asyncio.CancelledError):
                    await shutdown()
                    return  # done

            if __name__ == "__main__":
                asyncio.run(amain())
            """,
            fixed="""
            import asyncio
            import sys as system

            async def amain():
                try:
                    await serve()
                except (KeyboardInterrupt, asyncio.CancelledError):
                    await shutdown()
                    system.exit(130)  # done

            if __name__ == "__main__":
                asyncio.run(amain())
            """,
            message_contains="asyncio.run",
        ),
        # several returns: flagged, no mechanical fix
        Invalid(
            """
            def main():
                try:
                    train()
                except KeyboardInterrupt:
                    if not saved():
                        return
                    report()

            if __name__ == "__main__":
                main()
            """,
            fixed=None,
        ),
        # SIGTERM handler exiting 0: the preempted job is recorded as done
        Invalid(
            """
            import signal, sys

            def on_sigterm(signum, frame):
                trainer.save_checkpoint()
                sys.exit(0)

            signal.signal(signal.SIGTERM, on_sigterm)
            """,
            fixed="""
            import signal, sys

            def on_sigterm(signum, frame):
                trainer.save_checkpoint()
                sys.exit(143)

            signal.signal(signal.SIGTERM, on_sigterm)
            """,
            message_contains="SIGTERM handler",
        ),
        # one handler for both signals: 128 + the signal number
        Invalid(
            """
            import signal, sys

            def stop(sig, frame):
                trainer.save_checkpoint()
                sys.exit()

            signal.signal(signal.SIGINT, stop)
            signal.signal(signal.SIGTERM, stop)
            """,
            fixed="""
            import signal, sys

            def stop(sig, frame):
                trainer.save_checkpoint()
                sys.exit(128 + sig)

            signal.signal(signal.SIGINT, stop)
            signal.signal(signal.SIGTERM, stop)
            """,
        ),
        Invalid(
            """
            import sys
            try:
                serve()
            except KeyboardInterrupt:
                sys.exit(0)
            """,
            fixed="""
            import sys
            try:
                serve()
            except KeyboardInterrupt:
                sys.exit(42)
            """,
            options={"exit_code": 42},
        ),
    ]

    ast_check = _Ast

    # ------------------------------------------------------------------ visitors (decisions: _Decide)
    def visit_Call(self, node: cst.Call) -> None:
        self._check_exit_call(node)

    def visit_Raise(self, node: cst.Raise) -> None:
        self._check_raise(node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._check_handler(node)

    # ------------------------------------------------------------------ libcst's answers
    @property
    def _exits(self):
        return self.facts

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return _code(node)

    @staticmethod
    def _unnamed(call: cst.Call) -> list:
        return [a for a in call.args if a.keyword is None]

    def _child_process_reason(self, node: cst.Call) -> Optional[str]:
        return child_process_reason(self.facts, node)

    @staticmethod
    def _raises_with_arguments(node: cst.Raise) -> bool:
        return isinstance(node.exc, cst.Call) and bool(node.exc.args)

    @staticmethod
    def _status_fix(node: Union[cst.Call, cst.Raise], where: tuple[str, str, Optional[str]]) -> Fix:
        status: cst.BaseExpression = cst.Integer(where[1]) if where[2] is None else \
            cst.BinaryOperation(cst.Integer("128"), cst.Add(), cst.Name(where[2]))
        if isinstance(node, cst.Call):
            args = [a for a in node.args if a.keyword is None]
            if args:
                new_call = node.with_changes(args=[args[0].with_changes(value=status)])
            else:
                new_call = node.with_changes(args=[cst.Arg(status)])
            return Fix.safe(Replace(node, new_call), message=f"Exit with status {_code(status)}")
        exc = node.exc
        target = exc.func if isinstance(exc, cst.Call) else exc
        return Fix.safe(Replace(exc, cst.Call(func=target, args=[cst.Arg(status)])),
                        message=f"Exit with status {_code(status)}")

    def _exit_fix(self, handler: cst.ExceptHandler) -> Fix:
        """End the handler with ``sys.exit(<exit_code>)`` (replacing a trailing ``pass`` or bare
        ``return``) when that is its only normal way out (``_exit_fix_fits``)."""
        body = handler.body
        stmts = list(body.body)
        last = stmts[-1]
        last_small = last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 else None
        alias = self.facts.module_alias("sys")
        exit_call = cst.parse_statement(f"{alias or 'sys'}.exit({self.config['exit_code']})")
        edits: list = []
        if isinstance(last_small, (cst.Pass, cst.Return)):
            stmts[-1] = last.with_changes(body=[exit_call.body[0]])  # keeps the line's comment
        else:
            stmts.append(exit_call)
        edits.append(Replace(body, body.with_changes(body=stmts)))
        if alias is None:
            edits.append(AddImport("sys"))
        # Unsafe: the code after the handler (the rest of the function, its callers up to the
        # entrypoint) ran after Ctrl+C and no longer does (docs/fix-safety.md).
        return Fix.unsafe(*edits, message=f"End the handler with `sys.exit({self.config['exit_code']})`")

    @staticmethod
    def _only_pass_or_strings(handler: cst.ExceptHandler) -> bool:
        body = handler.body
        stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
        smalls: list = []
        for st in stmts:
            if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                smalls += st.body
            else:
                smalls.append(st)  # a compound statement does something
        return all(isinstance(sm, cst.Pass) or (isinstance(sm, cst.Expr) and isinstance(sm.value, (cst.SimpleString, cst.Ellipsis)))
                   for sm in smalls)

    @staticmethod
    def _bound_name(handler: cst.ExceptHandler) -> Optional[str]:
        if handler.name is None or not isinstance(handler.name.name, cst.Name):
            return None
        return handler.name.name.value

    def _calls_in_body(self, handler: cst.ExceptHandler) -> list:
        return [c for c in self.facts.calls if self.facts.is_ancestor(handler.body, c)]

    @staticmethod
    def _argument_values(call: cst.Call) -> list:
        return [a.value for a in call.args]

    @staticmethod
    def _name_id(expr: cst.CSTNode) -> Optional[str]:
        return expr.value if isinstance(expr, cst.Name) else None

    def _plain_try(self, handler: cst.ExceptHandler) -> Optional[cst.Try]:
        tr = self.facts.parent(handler)
        return tr if isinstance(tr, cst.Try) else None

    def _calls_in_try_body(self, tr: cst.Try) -> list:
        return [c for c in self.facts.calls if self.facts.is_ancestor(tr.body, c)]

    @staticmethod
    def _ends_in_endless_loop(tr: cst.Try) -> bool:
        stmts = tr.body.body if isinstance(tr.body, cst.IndentedBlock) else []
        return bool(stmts) and isinstance(stmts[-1], cst.While) and _endless(stmts[-1])

    @staticmethod
    def _raised_in_try_body(tr: cst.Try) -> list:
        found: list = []

        class _Scan(cst.CSTVisitor):
            def visit_Raise(self, n: cst.Raise) -> None:
                exc = n.exc.func if isinstance(n.exc, cst.Call) else n.exc
                if exc is not None:
                    found.append((n, exc))

        walk(tr.body, _Scan())  # read-only: libcst's visit would rebuild every node
        return found

    @staticmethod
    def _attribute_name(func: cst.CSTNode) -> Optional[str]:
        return func.attr.value if isinstance(func, cst.Attribute) else None

    def _statement_code(self, call: cst.Call) -> str:
        return _code(self.facts.enclosing_statement(call) or call)

    @staticmethod
    def _first_parameter(handler: Union[cst.FunctionDef, cst.Lambda]) -> Optional[str]:
        params = handler.params.params
        return params[0].name.value if params else None

    @staticmethod
    def _body_on_header_line(handler: cst.ExceptHandler) -> bool:
        return not isinstance(handler.body, cst.IndentedBlock)

    @staticmethod
    def _return_count(handler: cst.ExceptHandler) -> int:
        return _returns(handler.body)

    @staticmethod
    def _ends_in_bare_return(handler: cst.ExceptHandler) -> bool:
        last = handler.body.body[-1]
        last_small = last.body[0] if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 else None
        return isinstance(last_small, cst.Return) and last_small.value is None

    def _handler_around(self, node: cst.CSTNode) -> Optional[_Handler]:
        child = node
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)) and child is anc.body:
                return anc
            child = anc
        return None


_SERVE_CALLS = frozenset({"uvicorn.run", "aiohttp.web.run_app", "asyncio.AbstractEventLoop.run_forever"})
_SERVE_METHODS = frozenset({"serve_forever", "run_forever", "wait_for_termination"})


def _ast_endless(loop: ast.While) -> bool:
    """``_endless`` on ``ast``: ``True`` and a non-zero int are constants."""
    test = loop.test
    if not (type(test) is ast.Constant and (test.value is True or (type(test.value) is int and test.value != 0))):
        return False
    todo: list = [*loop.body, *loop.orelse]
    while todo:
        n = todo.pop()
        t = type(n)
        if t in (ast.Break, ast.Return):
            return False
        if t in (ast.For, ast.AsyncFor, ast.While, *DEFS):
            continue
        todo.extend(children(n))
    return True


def _endless(loop: cst.While) -> bool:
    """``while True:`` whose body has no ``break`` or ``return`` of its own."""
    test = loop.test
    if not ((isinstance(test, cst.Name) and test.value == "True") or
            (isinstance(test, cst.Integer) and test.evaluated_value != 0)):
        return False
    found = [False]

    class _Scan(cst.CSTVisitor):
        def visit_For(self, n: cst.For) -> bool:
            return False

        def visit_While(self, n: cst.While) -> bool:
            return n is loop

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Break(self, n: cst.Break) -> None:
            found[0] = True

        def visit_Return(self, n: cst.Return) -> None:
            found[0] = True

    walk(loop, _Scan())
    return not found[0]


def _returns(body: cst.CSTNode) -> int:
    n = [0]

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Return(self, node: cst.Return) -> None:
            n[0] += 1

    walk(body, _Scan())
    return n[0]


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


# ------------------------------------------------------------------ candidate tier 2 (ast)


def _may_exit_zero_on_interrupt(tree) -> bool:
    """True unless no report path of SHD202 can fire. The three paths to ``self.report``:

    1. ``visit_Call``/``visit_Raise`` with ``_interrupt_handler``: an exit (call or ``raise
       SystemExit``) whose status may be 0 (``_zero_status``: ``exit_status`` reads only
       literals) in the body of an ``except`` naming ``KeyboardInterrupt``, not inside a
       def/lambda/class nested in that body (``_interrupt_handler`` stops there).
    2. ``visit_Call``/``visit_Raise`` with ``signal_handler_of``: an exit with status maybe 0 in
       the own body of a function (not in a lambda in it) whose name is spelled in the arguments
       of a ``signal``/``add_signal_handler`` call for ``SIGINT``/``SIGTERM``
       (``resolve_function``: a name, ``self.m``/``Cls.m``, ``partial(f)``), or in a lambda given
       there; a ``raise SystemExit`` there needs call arguments (``visit_Raise``); and the
       handler makes some other call (``_shuts_down``: a call other than the exit itself).
    3. ``visit_ExceptHandler``: a ``KeyboardInterrupt`` handler whose normal exit ends the
       entrypoint (``normal_return_to_entrypoint``): it sits at module level inside a
       ``__name__ == ...`` block, or in a non-method function reached by name from calls in such
       a block (``_entrypoint_of``: called there, or its coroutine run by ``asyncio.run`` in a
       function that is itself such an entrypoint).
    4. ``visit_ExceptHandler`` through ``process_tail``: a ``KeyboardInterrupt`` handler that
       may leave any function or method normally (the index decides, from other modules, whether
       it is the last thing the process does; a coroutine's handler must catch the cancellation).
    """
    # no handler can name ``KeyboardInterrupt`` when the module never spells it (every word
    # ``Tree.words`` gives is a spelled identifier or a factory's result type, never this one)
    interrupts = [h for h in tree.handlers if h.type is not None and _names_interrupt(tree, h.type)] \
        if tree.handlers and tree.mentions(_INTERRUPT_WORD) else []
    # path 1
    for h in interrupts:
        for node in walk_within(h.body, stop=(*DEFS, ast.Lambda, ast.ClassDef)):
            if _zero_exit(tree, node, in_signal_handler=False):
                return True
    # path 2
    if _signal_handler_exits(tree):
        return True
    # path 3
    if interrupts and tree.has_main_guard and _interrupt_at_entrypoint(tree, interrupts):
        return True
    # path 4: ``process_tail`` (the project index) may make any top-level function or method of a
    # top-level class a process tail, whatever this module holds (it answers None for a def nested
    # in a def, or in a class nested in a def or a class): a handler directly in one that may leave
    # it normally (a coroutine's must also catch the cancellation) and does something
    # (``_does_something``: a body of ``pass``/``...`` only does not)
    if interrupts:
        # only a def with such a handler in a ``try`` of its own (``Function.trys``: the ``try``
        # statements that ``_handler_may_return_to_entry`` meets in its body) can answer True
        holding = _holding(tree, interrupts)
        if not holding:
            return False
        ctx = _Context(tree)
        tails = _tail_candidates(tree)
        return any(_handler_may_return_to_entry(ctx, fn.node.body, needs_cancellation=type(fn.node) is ast.AsyncFunctionDef,
                                                doing=True)
                   for fn in holding if id(fn.node) in tails)
    return False


_INTERRUPT_WORD = ("KeyboardInterrupt",)


def _holding(tree, handlers: list) -> list:
    """The functions (in ``Tree.functions`` order) with one of ``handlers`` in one of their own
    ``try`` statements."""
    ids = {id(h) for h in handlers}
    return [fn for fn in tree.functions if fn.trys and any(id(h) in ids for tr in fn.trys for h in tr.handlers)]


def _tail_candidates(tree) -> set[int]:
    """Ids of the defs ``process_tail`` may answer for (``fn.scope`` None; for a method, its class
    at top level, not nested in a def or a class): the defs outside any def or class, and the
    methods (``Tree.methods``) of the classes outside any def or class."""
    out: set[int] = set()
    for st in nested_statements(tree.module.body, enter=lambda st: not isinstance(st, (*DEFS, ast.ClassDef))):
        if isinstance(st, DEFS):
            out.add(id(st))
        elif type(st) is ast.ClassDef:
            out.update(id(m.node) for m in tree.methods.get(id(st), ()))
    return out


def _does_nothing(h: ast.ExceptHandler) -> bool:
    """``not _does_something(h)`` for sure: every statement of the body is ``pass`` or ``...``
    (a string statement is left to the rule: libcst counts only a plain string literal as nothing,
    and the ``ast`` cannot tell it from an implicit concatenation)."""
    return all(type(st) is ast.Pass or (type(st) is ast.Expr and type(st.value) is ast.Constant
                                        and st.value.value is Ellipsis) for st in h.body)


# ------------------------------------------------------------------ exits with status 0
def _zero_exit(tree, node: ast.AST, in_signal_handler: bool) -> bool:
    """``node`` may be an exit the facts give status 0 (``exit_status``)."""
    t = type(node)
    if t is ast.Call:
        return _zero_status(node) and tree.may_call_any(node, EXIT_FUNCTIONS)
    if t is ast.Raise and node.exc is not None and raises_system_exit(tree, node):
        exc = node.exc
        if type(exc) is not ast.Call:
            return not in_signal_handler  # bare `raise SystemExit` in a signal handler: never reported
        if in_signal_handler and not (exc.args or exc.keywords):
            return False
        return _zero_status(exc)
    return False


def _zero_status(call: ast.Call) -> bool:
    """``_status_of_args`` may give 0: no positional argument (the default; ``hard_exit()`` and
    ``os._exit()`` are not 0 but kept), or one that ``literal_status`` reads as 0."""
    args = positional_args(call)
    if not args:
        return True
    if len(args) > 1:
        return False  # STATUS_UNKNOWN
    return _zero_literal(args[0])


def _zero_literal(e: ast.AST) -> bool:
    """``literal_status(e) == 0``: an integer literal 0, ``None``/``False``/``EXIT_SUCCESS``,
    ``x.EX_OK``/``x.EXIT_SUCCESS``."""
    t = type(e)
    if t is ast.Constant:
        v = e.value
        return v is None or v is False or (type(v) is int and v == 0)
    if t is ast.Name:
        return e.id in ("None", "False", "EXIT_SUCCESS")
    if t is ast.Attribute:
        return e.attr in ("EX_OK", "EXIT_SUCCESS")
    return False


# ------------------------------------------------------------------ path 1
def _names_interrupt(tree, t: ast.AST) -> bool:
    elts = t.elts if type(t) is ast.Tuple else [t]
    return any("KeyboardInterrupt" in tree.words(e.value if type(e) is ast.Starred else e) for e in elts)


# ------------------------------------------------------------------ path 2
def _signal_handler_exits(tree) -> bool:
    if not tree.mentions(_SIGNAL_WORDS):
        return False  # no install can name the signal (``spelled`` below is a spelled identifier)
    names: set[str] = set()
    lambdas: list[ast.Lambda] = []
    Starred, Attribute, Name = ast.Starred, ast.Attribute, ast.Name
    # ``Tree.signal_handler_installs`` with its tests in another order: the first positional
    # argument's spelling first (most calls have none of these), the callee last
    for call in tree.all_calls():
        a = call.args
        if a:
            first = a[0]
            if type(first) is Starred:
                first = first.value
        else:
            first = next((k.value for k in call.keywords if k.arg is None), None)
        t = type(first)
        spelled = first.attr if t is Attribute else first.id if t is Name else None
        if spelled != "SIGINT" and spelled != "SIGTERM":
            continue
        args = positional_args(call)
        if len(args) < 2 or not (tree.may_call(call, "signal") or tree.may_call(call, "add_signal_handler")):
            continue
        handler = args[1]
        if type(handler) is ast.Lambda:
            lambdas.append(handler)
            continue
        names |= identifiers(handler)
    for lam in lambdas:
        body = list(walk_within(ast.iter_child_nodes(lam), stop=(ast.Lambda,)))  # defaults too
        if any(_zero_exit(tree, n, True) and _other_call(lam, n) for n in body):
            return True
    if not names:
        return False
    for fn in tree.functions:
        if fn.name not in names:
            continue
        for c, _, in_lambda in fn.calls:
            if not in_lambda and _zero_exit(tree, c, True) and _other_call(fn.node, c):
                return True
        for r in fn.raises:
            if _zero_exit(tree, r, True) and _other_call(fn.node, r.exc):
                return True
    return False


_SIGNAL_WORDS = ("SIGINT", "SIGTERM")


def _other_call(handler: ast.AST, exit_node: ast.AST) -> bool:
    """``_shuts_down`` needs a call in the handler other than the exit (``raise SystemExit(0)``'s
    own ``SystemExit(0)`` is skipped there as ``builtins.SystemExit``)."""
    return any(type(n) is ast.Call and n is not exit_node for n in ast.walk(handler))


# ------------------------------------------------------------------ path 3
def _interrupt_at_entrypoint(tree, interrupts: list) -> bool:
    guards, top_defs = _module_level(tree.module)
    direct: set[str] = set()  # callees spelled in the __main__ block ("call" references)
    for g in guards:
        for n in ast.walk(g):
            if type(n) is ast.Call:
                direct |= identifiers(n.func)
    # coroutines run by a runner (``asyncio.run(f())``: the first argument is a call) in an
    # entrypoint ("main" references, ``_entrypoint_of``'s recursion); a superset by name
    entries = direct | {fn.name for fn in tree.reached_by_name(direct, _runs_coroutines_of)}
    ctx = _Context(tree)
    for g in guards:  # a handler at module level in the __main__ block
        if _handler_may_return_to_entry(ctx, [g], needs_cancellation=False):
            return True
    for fn in _holding(tree, interrupts):
        if id(fn.node) in top_defs and fn.name in entries and _handler_may_return_to_entry(
                ctx, fn.node.body, needs_cancellation=fn.name not in direct):
            return True
    return False


def _runs_coroutines_of(fn) -> set[str]:
    """Names spelled in the callees of calls handed to a call as its first argument
    (``asyncio.run(amain())``)."""
    out: set[str] = set()
    for c, _, _ in fn.calls:
        args = positional_args(c)
        if args and type(args[0]) is ast.Call:
            out |= identifiers(args[0].func)
    return out


class _Context:
    def __init__(self, tree) -> None:
        self.tree = tree
        self._bound = None

    def interrupt_bound(self) -> bool:
        """Some binding of the name ``KeyboardInterrupt`` in the module (the collector's
        bindings: defs, classes, imports, assignment/for/with/walrus targets, ``except ... as``):
        without one, ``KeyboardInterrupt`` is ``builtins.KeyboardInterrupt`` everywhere."""
        if self._bound is None:
            self._bound = _binds(self.tree.module, "KeyboardInterrupt")
        return self._bound


def _binds(module: ast.Module, name: str) -> bool:
    for n in ast_walk(module):  # ``ast.walk``'s nodes and order, without its generators
        t = type(n)
        if t is ast.Name:
            if n.id == name and type(n.ctx) is not ast.Load:
                return True
        elif t in DEFS or t is ast.ClassDef:
            if n.name == name:
                return True
        elif t is ast.alias:
            if name in (n.asname, n.name, n.name.split(".")[0], n.name.rsplit(".", 1)[-1]):
                return True
        elif t is ast.ExceptHandler:
            if n.name == name:
                return True
        elif t is ast.arg:
            if n.arg == name:
                return True
        elif t in (ast.Global, ast.Nonlocal):
            if name in n.names:
                return True
        elif t in _MATCH_BINDERS:
            if name in (getattr(n, "name", None), getattr(n, "rest", None)):
                return True
    return False


_MATCH_BINDERS = tuple(getattr(ast, k) for k in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, k))


def _handler_may_return_to_entry(ctx, stmts, needs_cancellation: bool, doing: bool = False) -> bool:
    """Some ``except`` naming ``KeyboardInterrupt`` in ``stmts`` (not in nested defs) may leave
    normally (``normal_return_to_entrypoint``'s ``leaves``) and is not excluded for sure (with
    ``doing``, it must also do something: ``_does_nothing``)."""
    tree = ctx.tree
    # statements only: a ``try`` is one, and no expression holds a statement. ``in_loop``: under a
    # loop (its body or ``else``) of the same class body; a handler or ``case`` passes it on
    todo = [(s, False) for s in stmts if type(s) not in DEFS]  # a nested def's handlers are its own
    while todo:
        node, in_loop = todo.pop()
        t = type(node)
        if t in TRYS:
            for h in node.handlers:
                if h.type is not None and _names_interrupt(tree, h.type) and not (doing and _does_nothing(h)) \
                        and _may_leave(ctx, node, h, in_loop, needs_cancellation):
                    return True
        blocks = STATEMENT_BLOCKS.get(t)
        if blocks is None:
            blocks = statement_blocks(t)
        if not blocks:
            continue
        child_loop = (in_loop or t in _LOOPS) and t is not ast.ClassDef
        for field in blocks:
            for st in getattr(node, field):
                if field == "handlers" or field == "cases":
                    todo += [(s, child_loop) for s in st.body if type(s) not in DEFS]
                elif type(st) not in DEFS:
                    todo.append((st, child_loop))
    return False


#: statement type -> its fields that hold statements (``handlers``/``cases``: their bodies)


def _may_leave(ctx, tr, h: ast.ExceptHandler, in_loop: bool, needs_cancellation: bool) -> bool:
    tree = ctx.tree
    rets = [n for n in walk_within(h.body, stop=(*DEFS, ast.ClassDef, ast.Lambda)) if type(n) is ast.Return]
    # ``_leaves_function``: a RETURN way counts only when every ``return`` returns None
    # (``_returns_only_none``); otherwise only FALL_THROUGH can leave
    returns_none = bool(rets) and all(r.value is None or (type(r.value) is ast.Constant and r.value.value is None)
                                      for r in rets)
    if not returns_none:
        if in_loop:
            return False  # FALL_THROUGH does not count inside a loop
        if _never_falls(h.body):
            return False  # never falls through (the walker stops at the last statement at the latest)
    if needs_cancellation:
        # only a "main" reference (asyncio.run) can make this function an entrypoint: the
        # handler must also catch CancelledError or BaseException (``_CANCELLATION``)
        elts = h.type.elts if type(h.type) is ast.Tuple else [h.type]
        if not any(tree.words(e.value if type(e) is ast.Starred else e) & {"CancelledError", "BaseException"}
                   for e in elts):
            return False
    # ``_raises_interrupt_itself``: the try body raises builtins.KeyboardInterrupt (a name no
    # binding in the module shadows: the whole module's walk, asked only after the body's)
    for n in walk_within(tr.body, stop=()):
        if type(n) is ast.Raise and n.exc is not None:
            exc = n.exc.func if type(n.exc) is ast.Call else n.exc
            if type(exc) is ast.Name and exc.id == "KeyboardInterrupt":
                return ctx.interrupt_bound()
    return True


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _never_falls(stmts: list) -> bool:
    """The exit-path walker surely finds no FALL_THROUGH for ``stmts``: the last statement is a
    ``raise`` or a ``return``, or an ``if`` with an ``else`` (``elif`` chains too) whose every
    branch is such a block (the walker stops at the first statement that does not fall through)."""
    last = stmts[-1]
    if type(last) is ast.Raise or type(last) is ast.Return:
        return True
    return type(last) is ast.If and bool(last.orelse) and _never_falls(last.body) and _never_falls(last.orelse)


def _module_level(module: ast.Module) -> tuple[list[ast.If], set[int]]:
    """The ``if __name__ == ...`` statements outside any def or class (a superset of the facts'
    ``main_guards``), and the ids of the defs outside any def or class (``scope``/``cls`` None)."""
    guards, defs = [], set()
    for st in nested_statements(module.body, enter=lambda st: not isinstance(st, (*DEFS, ast.ClassDef))):
        if isinstance(st, DEFS):
            defs.add(id(st))
        elif type(st) is ast.If and is_main_guard(st.test):
            guards.append(st)
    return guards, defs
