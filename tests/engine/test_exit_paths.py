"""Exit-path facts: how control leaves a handler, entrypoints that end normally, exit statuses."""
from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from shutdown_lint.facts import (
    BREAK, EXIT, FALL_THROUGH, RAISE_OTHER, RERAISE, RETURN, STATUS_NONZERO, STATUS_ZERO, ModuleFacts,
)


def _facts(code: str) -> ModuleFacts:
    return ModuleFacts.build(cst.parse_module(textwrap.dedent(code)))


def _handlers(facts: ModuleFacts) -> list[cst.ExceptHandler]:
    found: list[cst.ExceptHandler] = []

    class V(cst.CSTVisitor):
        def visit_ExceptHandler(self, n: cst.ExceptHandler) -> None:
            found.append(n)

    facts.module.visit(V())
    return found


@pytest.mark.parametrize("body, ways", [
    ("raise", {RERAISE}),
    ("raise e", {RERAISE}),
    ("raise ValueError() from e", {RAISE_OTHER}),
    ("log(e)", {FALL_THROUGH}),
    ("return None", {RETURN}),
    ("if e.args:\n    raise\nlog(e)", {RERAISE, FALL_THROUGH}),
    ("sys.exit(1)", {EXIT}),
    ("for x in xs:\n    break\nraise", {RERAISE}),
    # a return in a nested finally swallows the raise before it
    ("try:\n    raise\nfinally:\n    return", {RETURN}),
])
def test_ways_out_of_a_handler(body, ways):
    facts = _facts("import sys\ndef f():\n    while True:\n        try:\n            g()\n        except Exception as e:\n"
                   + textwrap.indent(body, " " * 12) + "\n")
    paths = facts.exit_paths(_handlers(facts)[0])
    assert paths.ways == ways


def test_break_in_handler_leaves_the_enclosing_loop():
    facts = _facts("while True:\n    try:\n        g()\n    except E:\n        break\n")
    assert facts.exit_paths(_handlers(facts)[0]).ways == {BREAK}


def test_swallowing_finally_is_named():
    facts = _facts("try:\n    g()\nexcept E:\n    try:\n        raise\n    finally:\n        return 1\n")
    paths = facts.exit_paths(_handlers(facts)[0])
    assert paths.swallowing_finally is not None and not paths.propagates


def test_recorded_and_raised_later():
    facts = _facts("""
        async def stop(task):
            err = None
            try:
                await task
            except BaseException as e:
                err = e
            if err is not None:
                raise err
    """)
    paths = facts.exit_paths(_handlers(facts)[0])
    assert paths.ways == {FALL_THROUGH} and paths.reraised_later and paths.hands_on


def test_interrupt_handler_returning_to_main():
    facts = _facts("""
        import sys
        def main():
            try:
                train()
            except KeyboardInterrupt:
                print("bye")
                return
        def other():
            try:
                train()
            except KeyboardInterrupt:
                pass
            sys.exit(1)
        if __name__ == "__main__":
            main()
            other()
    """)
    main_h, other_h = _handlers(facts)
    assert facts.normal_return_to_entrypoint(main_h) == "`main()`"
    assert facts.normal_return_to_entrypoint(other_h) is None  # exits 1 after the handler


def test_asyncio_run_coroutine_is_an_entrypoint():
    facts = _facts("""
        import asyncio
        async def amain():
            try:
                await serve()
            except KeyboardInterrupt:
                pass
        def main():
            asyncio.run(amain())
        if __name__ == "__main__":
            main()
    """)
    assert "asyncio.run" in facts.normal_return_to_entrypoint(_handlers(facts)[0])


def test_sys_exit_of_main_with_nonzero_return_is_not_zero():
    facts = _facts("""
        import sys
        def main():
            try:
                train()
            except KeyboardInterrupt:
                return 1
        if __name__ == "__main__":
            sys.exit(main())
    """)
    assert facts.normal_return_to_entrypoint(_handlers(facts)[0]) is None


def test_exit_status_and_signal_handlers():
    facts = _facts("""
        import os, signal, sys
        def on_term(signum, frame):
            sys.exit(0)
        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, lambda s, f: os._exit(128 + s))
        sys.exit("failed")
    """)
    calls = {cst.Module([]).code_for_node(c): c for c in facts.calls}
    assert facts.exit_status(calls["sys.exit(0)"]) == STATUS_ZERO
    assert facts.exit_status(calls["os._exit(128 + s)"]) == STATUS_NONZERO
    assert facts.exit_status(calls['sys.exit("failed")']) == STATUS_NONZERO
    handler, sigs = facts.signal_handler_of(calls["sys.exit(0)"])
    assert sigs == {"SIGTERM"} and isinstance(handler, cst.FunctionDef)
    assert facts.signal_handler_of(calls["os._exit(128 + s)"])[1] == {"SIGINT"}
