from __future__ import annotations

from typing import Optional, Union

import libcst as cst

from shutdown_lint import candidates as C
from shutdown_lint.rule import Fix, Invalid, Option, Replace, Rule

_INTERRUPT_EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for a Ctrl+C'd job

_Handler = Union[cst.ExceptHandler, cst.ExceptStarHandler]


class InterruptExitZero(Rule):
    """
    ## What it does
    Flags an `except KeyboardInterrupt:` handler that ends the process with exit status 0:
    `sys.exit()`, `sys.exit(0)`, `sys.exit(None)`, `exit(0)`, `quit()`, `os._exit(0)`,
    `runtime_guard.hard_exit(0)` or `raise SystemExit` / `raise SystemExit(0)` inside the
    handler (also in a tuple such as `except (KeyboardInterrupt, SystemExit):`).

    Not flagged: exits with a non-zero or computed status, exits inside functions or
    lambdas defined in the handler (they do not run there), and `except Exception:`
    handlers (they never see `KeyboardInterrupt`).

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
    Safe: only the exit status of an interrupted run changes (to the `exit_code`
    option, 130 by default). Comments around the call are kept.

    ## Options
    - `exit_code` (int, default 130): the status the fix writes.

    ## References
    - Flow-Factory #149: graceful shutdown on Ctrl+C (`os._exit(0)` after cleanup)
    - Bash manual, "Exit Status": 128 + N for a command killed by signal N
    - Python docs: `KeyboardInterrupt`, `sys.exit`, `os._exit`
    """

    code = "SHD202"
    name = "interrupt-exit-zero"
    summary = "`except KeyboardInterrupt` exits with status 0, so an interrupted run looks successful"
    triggers = ("KeyboardInterrupt",)
    # tier 1: except KeyboardInterrupt that exits 0
    candidate = C.All(C.Word("KeyboardInterrupt"),
                      C.qualified("sys.exit", "os._exit", "builtins.exit", "builtins.quit", "builtins.SystemExit",
                                  "runtime_guard.hard_exit", "runtime_guard.exit.hard_exit"))
    facts_needed = ("parents", "imports")
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

    _EXITS = frozenset({"sys.exit", "builtins.exit", "builtins.quit", "os._exit", "runtime_guard.hard_exit",
                        "runtime_guard.exit.hard_exit"})

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        name = self.facts.call_name(node)
        if name not in self._EXITS:
            return
        args = [a for a in node.args if a.keyword is None]
        if name == "runtime_guard.hard_exit" and not args:
            return  # hard_exit() defaults to 1
        if len(args) > 1 or (args and not _is_zero(args[0].value)) or (not args and name == "os._exit"):
            return
        if self._interrupt_handler(node) is None:
            return
        new_arg = cst.Arg(cst.Integer(str(self.config["exit_code"])))
        if args:
            new_call = node.with_changes(args=[args[0].with_changes(value=new_arg.value)])
        else:
            new_call = node.with_changes(args=[new_arg])
        callee = cst.Module([]).code_for_node(node.func)
        self.report(
            node,
            f"`{callee}()` in `except KeyboardInterrupt` exits with status 0: schedulers and scripts "
            "record the interrupted run as a success",
            fix=Fix.safe(Replace(node, new_call), message=f"Exit with status {self.config['exit_code']}"),
        )

    def visit_Raise(self, node: cst.Raise) -> None:
        exc = node.exc
        if exc is None:
            return
        target = exc.func if isinstance(exc, cst.Call) else exc
        if self.facts.qualified_name(target, node) != "builtins.SystemExit":
            return
        if isinstance(exc, cst.Call):
            args = [a for a in exc.args if a.keyword is None]
            if len(args) > 1 or (args and not _is_zero(args[0].value)):
                return
        if self._interrupt_handler(node) is None:
            return
        code = cst.Integer(str(self.config["exit_code"]))
        new_exc = cst.Call(func=target, args=[cst.Arg(code)])
        self.report(
            node,
            "`raise SystemExit` in `except KeyboardInterrupt` exits with status 0: schedulers and scripts "
            "record the interrupted run as a success",
            fix=Fix.safe(Replace(exc, new_exc), message=f"Exit with status {self.config['exit_code']}"),
        )

    # ------------------------------------------------------------------ helpers
    def _interrupt_handler(self, node: cst.CSTNode) -> Optional[_Handler]:
        """The innermost `except` handler whose body holds ``node`` (same function), if it
        catches KeyboardInterrupt."""
        child = node
        for anc in self.facts.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)) and child is anc.body:
                return anc if self._catches_interrupt(anc) else None
            child = anc
        return None

    def _catches_interrupt(self, handler: _Handler) -> bool:
        t = handler.type
        if t is None:
            return False  # a bare except: too broad to say the author meant Ctrl+C
        exprs = [el.value for el in t.elements] if isinstance(t, cst.Tuple) else [t]
        return any(self.facts.qualified_name(e, handler) == "builtins.KeyboardInterrupt" for e in exprs)


def _is_zero(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return expr.evaluated_value == 0
    if isinstance(expr, cst.Name):
        return expr.value in ("None", "False", "EXIT_SUCCESS")
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in ("EX_OK", "EXIT_SUCCESS")
    return False
