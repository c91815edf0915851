"""SHD402 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
identifiers that libcst holds in ``Name`` nodes (parameters, keyword arguments, def and class
names, imports, ``except ... as``, ``global``, patterns; not strings or comments), module-level
statements grouped into libcst's lines (``import a; b``, a backslash between them), the fix only
where libcst's statement is a ``SimpleStatementLine`` (not a body on its header's line, nor one
after ``:`` and a backslash), the runner's text with the parentheses it owns, main guards, entry
points, lambdas, nested defs and non-ASCII lines (character columns).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer. ``sigterm_aware_calls``
is set (to its default) so that the candidate tiers do not rule a file out before either engine
sees it; the ast path is still taken (asserted). A few cases run with the tiers too.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.rules.shd402_asyncio_run_without_sigterm import AsyncioRunWithoutSigterm
from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, key

_AWARE = {"SHD402": {"sigterm_aware_calls": AsyncioRunWithoutSigterm.options["sigterm_aware_calls"].default}}
_SETTINGS = Settings(selected=("SHD402",), rule_options=_AWARE)
_TIERS = Settings(selected=("SHD402",))

NO = None  # no finding
UNSAFE = "unsafe"  # a finding with the (unsafe) fix
NOFIX = "nofix"  # a finding without a fix

CASES = {
    # ---------------------------------------------------------------- main guards
    "main guard block": (UNSAFE, """
        import asyncio
        if __name__ == "__main__":
            asyncio.run(main())
        """),
    "main guard reversed, else branch": (UNSAFE, """
        import asyncio
        if "__main__" == __name__:
            pass
        else:
            asyncio.run(main())
        """),
    "main guard on one line: no fix": (NOFIX, """
        import asyncio
        if __name__ == "__main__": asyncio.run(main())
        """),
    "main guard, two statements on the header line: no fix": (NOFIX, """
        import asyncio
        if __name__ == "__main__": print(1); asyncio.run(main())
        """),
    "else on one line: no fix": (NOFIX, """
        import asyncio
        if __name__ != "__main__":
            pass
        else: asyncio.run(main())
        """),
    "backslash after the header's colon: no fix": (NOFIX, """
        import asyncio
        if __name__ == "__main__": \\
            asyncio.run(main())
        """),
    "backslash inside a statement of a block: fix": (UNSAFE, """
        import asyncio
        if __name__ == "__main__":
            x = 1 + \\
                2
            asyncio.run(main())
        """),
    "a comment ending in a backslash before the block": (UNSAFE, """
        import asyncio
        if __name__ == "__main__":  # see a\\
            asyncio.run(main())
        """),
    "in a while header: no fix": (NOFIX, """
        import asyncio
        while asyncio.run(step()):
            pass
        """),
    "in a with item: no fix": (NOFIX, """
        import asyncio
        with asyncio.run(main()) as x:
            pass
        """),
    "in a try body and in an except body (module level: each)": ([UNSAFE, UNSAFE], """
        import asyncio
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            asyncio.run(cleanup())
        """),
    # ---------------------------------------------------------------- entry points
    "main() and what it calls": (UNSAFE, """
        import asyncio
        def launch():
            asyncio.run(worker())
        def main():
            launch()
        """),
    "a library function: not reported": (NO, """
        import asyncio
        def fetch(urls):
            return asyncio.run(get(urls))
        """),
    "click command": (UNSAFE, """
        import asyncio, click
        @click.command()
        def train():
            asyncio.run(loop())
        """),
    "argparse set_defaults handler": (UNSAFE, """
        import asyncio, argparse
        def serve(args):
            asyncio.run(run(args))
        def cli():
            p = argparse.ArgumentParser()
            p.set_defaults(func=serve)
        """),
    "thread target: not reported": (NO, """
        import asyncio, threading
        def pump():
            asyncio.run(loop())
        def main():
            threading.Thread(target=pump).start()
        """),
    "ray task: not reported": (NO, """
        import asyncio, ray
        @ray.remote
        def main():
            asyncio.run(gen())
        """),
    "in a class body at module level: not reported": (NO, """
        import asyncio
        class C:
            asyncio.run(main())
        """),
    "two runners in main: one finding": (UNSAFE, """
        import asyncio
        def main():
            loop = asyncio.new_event_loop()
            loop.run_until_complete(serve())
            loop.run_until_complete(loop.shutdown_asyncgens())
        """),
    "two runners at module level: two findings": ([UNSAFE, UNSAFE], """
        import asyncio
        asyncio.run(a())
        asyncio.run(b())
        """),
    "nested def called by main": (UNSAFE, """
        import asyncio
        def main():
            def inner():
                asyncio.run(serve())
            inner()
        """),
    "nested def never called: not reported": (NO, """
        import asyncio
        def make():
            def inner():
                asyncio.run(serve())
            return inner
        """),
    "nested def whose name handles": (NO, """
        import asyncio
        def main():
            def on_SIGTERM():
                pass
            asyncio.run(serve())
        """),
    "runner in a default of main: no fix": (NOFIX, """
        import asyncio
        def main(x=asyncio.run(serve())):
            pass
        """),
    "runner in a decorator of main: no fix": (NOFIX, """
        import asyncio
        @wrap(asyncio.run(setup()))
        def main():
            pass
        """),
    "one-line def body: no fix": (NOFIX, """
        import asyncio
        def main(): asyncio.run(serve())
        """),
    # ---------------------------------------------------------------- lambdas
    "in a lambda: not reported": (NO, """
        import asyncio
        def main():
            go = lambda: asyncio.run(serve())
            go()
        """),
    "lambda default: not reported": (NO, """
        import asyncio
        def main():
            go = lambda x=asyncio.run(serve()): x
        """),
    "a lambda naming SIGTERM in main handles": (NO, """
        import asyncio
        def main():
            h = lambda SIGTERM: None
            asyncio.run(serve())
        """),
    # ---------------------------------------------------------------- a; b
    "a; runner in main: fix": (UNSAFE, """
        import asyncio
        def main():
            cfg = load(); asyncio.run(serve(cfg))
        """),
    "module level: an import of SIGTERM on one line with other code handles": (NO, """
        import asyncio
        from signal import SIGTERM; x = 1
        asyncio.run(main())
        """),
    "module level: the same with a backslash between": (NO, """
        import asyncio
        from signal import SIGTERM; \\
        x = 1
        asyncio.run(main())
        """),
    "module level: an import of SIGTERM alone on its line does not": (UNSAFE, """
        import asyncio
        from signal import SIGTERM
        asyncio.run(main())
        """),
    "module level: imports only on one line do not": (UNSAFE, """
        import asyncio
        from signal import SIGTERM; import os
        asyncio.run(main())
        """),
    "module level: a def named for SIGTERM does not": (UNSAFE, """
        import asyncio
        def on_SIGTERM(): pass
        asyncio.run(main())
        """),
    "module level: a call naming SIGTERM handles": (NO, """
        import asyncio, signal
        signal.signal(signal.SIGTERM, stop)
        asyncio.run(main())
        """),
    # ---------------------------------------------------------------- names on the path
    "string and comment do not handle": (UNSAFE, """
        import asyncio
        def main():
            # SIGTERM
            log("SIGTERM sigterm_as_keyboard_interrupt")
            asyncio.run(serve())
        """),
    "f-string expression names SIGTERM": (NO, """
        import asyncio
        def main():
            log(f"{signal.SIGTERM}")
            asyncio.run(serve())
        """),
    "parameter named SIGTERM": (NO, """
        import asyncio
        def main(SIGTERM=15):
            asyncio.run(serve())
        """),
    "keyword argument named setup_worker": (NO, """
        import asyncio
        def main():
            asyncio.run(serve(setup_worker=True))
        """),
    "import alias inside main": (NO, """
        import asyncio
        def main():
            from runtime_guard import sigterm_as_keyboard_interrupt as s
            asyncio.run(serve())
        """),
    "dotted import inside main": (NO, """
        import asyncio
        def main():
            import x.install_distributed_teardown_mod
            asyncio.run(serve())
        """),
    "global name": (NO, """
        import asyncio
        def main():
            global SIGTERM_SEEN
            asyncio.run(serve())
        """),
    "except as name": (NO, """
        import asyncio
        def main():
            try:
                pass
            except E as SIGTERM_err:
                pass
            asyncio.run(serve())
        """),
    "match capture name": (NO, """
        import asyncio
        def main(x):
            match x:
                case [*SIGTERM_rest]:
                    pass
            asyncio.run(serve())
        """),
    "match keyword pattern": (NO, """
        import asyncio
        def main(x):
            match x:
                case P(SIGTERM=1):
                    pass
            asyncio.run(serve())
        """),
    "decorator of main names SIGTERM": (NO, """
        import asyncio
        @on(SIGTERM)
        def main():
            asyncio.run(serve())
        """),
    "class named for SIGTERM in main": (NO, """
        import asyncio
        def main():
            class SIGTERMGuard: pass
            asyncio.run(serve())
        """),
    "the coroutine run handles": (NO, """
        import asyncio, signal
        async def serve():
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        def main():
            asyncio.run(serve())
        """),
    "the coroutine as a keyword argument is not the coroutine run, but a callee": (NO, """
        import asyncio, signal
        async def serve():
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        def main():
            asyncio.run(main=serve())
        """),
    "the coroutine as a keyword argument at module level is not followed": (UNSAFE, """
        import asyncio, signal
        async def serve():
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        asyncio.run(main=serve())
        """),
    "the coroutine run at module level is followed": (NO, """
        import asyncio, signal
        async def serve():
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        asyncio.run(serve())
        """),
    "starred first argument": (UNSAFE, """
        import asyncio
        def main():
            asyncio.run(*coros)
        """),
    "uvicorn server": (NO, """
        import asyncio, uvicorn
        def main():
            asyncio.run(uvicorn.Server(cfg).serve())
        """),
    # ---------------------------------------------------------------- runner text
    "parenthesised runner": (UNSAFE, """
        import asyncio
        def main():
            ( asyncio.run )(serve())  # run(
        """),
    "runner over two lines": (UNSAFE, """
        import asyncio
        def main():
            asyncio.get_event_loop(
            ).run_until_complete(serve())
        """),
    "runner through an alias": (UNSAFE, """
        from asyncio import run as go
        def main():
            go(serve())  # run(
        """),
    # ---------------------------------------------------------------- non-ASCII
    "non-ASCII before the call": (UNSAFE, """
        import asyncio
        def main():
            é = "日本"; asyncio.run(serve())  # café
        """),
    "non-ASCII name handles": (NO, """
        import asyncio
        def main():
            café_SIGTERM = 1
            asyncio.run(serve())
        """),
}


_key = key


def _both_ways(source: bytes, path: str, monkeypatch, settings: Settings = _SETTINGS, ast_path: bool = True):
    return both_ways(source, monkeypatch, settings, path, ast_path=ast_path)


def _answer(result):
    answers = [(d.fix["applicability"] if d.fix else NOFIX) for d in result.diagnostics]
    if not answers:
        return NO
    return answers[0] if len(answers) == 1 else answers


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    result = _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch)
    assert _answer(result) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _, source = CASES[name]
    _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch, _TIERS, ast_path=False)


def test_columns_and_runner_text(monkeypatch):
    source = 'import asyncio\ndef main():\n    é = "ü"; ( asyncio.run )(serve())  # run(\n'
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics
    assert (d.line, d.column) == (3, 14)  # 16 in UTF-8 bytes
    assert d.message.startswith("`( asyncio.run )()`")
    source = "import asyncio\ndef main():\n    asyncio.get_event_loop(\n    ).run_until_complete(serve())\n"
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics
    assert d.message.startswith("`asyncio.get_event_loop(\n).run_until_complete()`")
