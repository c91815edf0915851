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
    # every path (issue 28): a loop that may run no time, one over a non-empty literal, its else
    ("for x in xs:\n    raise", {RERAISE, FALL_THROUGH}),
    ("for x in [1, 2]:\n    raise", {RERAISE}),
    ("for x in (*(), *(1,)):\n    raise", {RERAISE}),
    ("for x in range(3):\n    raise", {RERAISE}),
    ("for x in []:\n    raise", {RERAISE, FALL_THROUGH}),
    ("for x in [1, 2]:\n    if x:\n        continue\n    raise", {RERAISE, FALL_THROUGH}),
    ("while g():\n    pass\nelse:\n    raise", {RERAISE}),
    ("while g():\n    if x:\n        break\n    raise\nelse:\n    raise", {RERAISE, FALL_THROUGH}),
    ("while True:\n    raise", {RERAISE}),
    ("while True:\n    if x:\n        break\n    raise", {RERAISE, FALL_THROUGH}),
    # match: falls when no case is irrefutable or a case falls
    ("match x:\n    case 1:\n        raise", {RERAISE, FALL_THROUGH}),
    ("match x:\n    case 1:\n        raise\n    case _:\n        raise", {RERAISE}),
    ("match x:\n    case 1:\n        raise\n    case y:\n        raise", {RERAISE}),
    ("match x:\n    case _ if g():\n        raise", {RERAISE, FALL_THROUGH}),
    # a nested handler re-raises what it caught: the outer exception only if it catches everything
    ("try:\n    g()\nexcept ValueError as v:\n    raise v\nraise", {RAISE_OTHER, RERAISE}),
    ("try:\n    g()\nexcept ValueError:\n    raise\nraise", {RAISE_OTHER, RERAISE}),
    ("try:\n    g()\nexcept BaseException as b:\n    raise b\nraise", {RERAISE}),
    ("try:\n    g()\nexcept ValueError:\n    raise e\nraise", {RERAISE}),
])
def test_ways_out_of_a_handler(body, ways):
    facts = _facts("import sys\ndef f():\n    while True:\n        try:\n            g()\n        except Exception as e:\n"
                   + textwrap.indent(body, " " * 12) + "\n")
    paths = facts.exit_paths(_handlers(facts)[0])
    assert paths.ways == ways


def test_leaves_yields_and_always_reraises():
    facts = _facts(textwrap.dedent("""
        async def f(xs):
            for x in xs:
                try:
                    await g()
                except BaseException as e:
                    yield 1
                    try:
                        return
                    finally:
                        raise
                except ValueError as e:
                    if x:
                        continue
                    try:
                        raise RuntimeError() from e
                    except RuntimeError:
                        pass
                    raise KeyError()
                except KeyError:
                    raise
    """))
    hs = _handlers(facts)  # in source order: the nested `except RuntimeError` is third
    first, second, third = (facts.exit_paths(hs[i]) for i in (0, 1, 3))
    # the `return` is overridden by the finally's raise: not a way out, not a leaving statement
    assert first.ways == {RERAISE} and first.always_reraises and first.leaves == ()
    assert len(first.yields) == 1
    # the guarded raise (a nested try may catch it) is not listed; the last one is
    kinds = [way for _, way in second.leaves]
    assert kinds == ["continue", RAISE_OTHER] and not second.always_reraises
    assert third.always_reraises


def test_hands_on_ignores_raise_statements():
    facts = _facts("try:\n    g()\nexcept BaseException as e:\n    raise ValueError() from e\n"
                   "try:\n    g()\nexcept BaseException as e:\n    log(e)\n")
    a, b = (facts.exit_paths(h) for h in _handlers(facts))
    assert not a.hands_on and b.hands_on


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
