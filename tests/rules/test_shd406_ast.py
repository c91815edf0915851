"""SHD406 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
positional arguments as libcst's (``*a``, ``**k``), ``wait=False`` (a name in libcst, a constant in
``ast``), string receivers of ``join`` (bytes, f-strings, concatenations), ``async def`` and
``async for``, libcst's statements (an ignore alone on its line: not ``a; b``, not a body on its
header's line; runs of ignores; the hang's statement from the start of its line, in a nested
block or out of the ignore's block), lambdas, awaited calls, the callee's text (parentheses, long,
over lines, CRLF/CR).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer, once with the candidate
tiers passing every file through (the ast path taken: asserted), once with the tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate, key

_SETTINGS = Settings(selected=("SHD406",))
FIX = "fix"
NOFIX = "nofix"
HEAD = "import asyncio, signal, ray, requests\nfrom signal import SIGINT, SIGTERM, SIG_IGN\n"

CASES = {
    "ignore with **k": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN, **k)
            t.join()
        """),
    "loop form, the ignore in a lambda": ([], """
        for sig in (SIGINT,):
            f = lambda: signal.signal(sig, SIG_IGN)
        t.join()
        """),
    "loop form, the ignore in a nested async def": ([], """
        for sig in (SIGINT,):
            async def f(t):
                signal.signal(sig, SIG_IGN)
                t.join()
        """),
    "restored with another module's signal": ([], """
        import foo
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            signal.signal(foo.SIGINT, h)
        """),
    "join with **k": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join(**k)
        """),
    "string joins without arguments": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            f"{a}".join()
            b"".join()
            ("a" "b").join()
            name.join()
        """),
    "two runs": ([FIX, FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            signal.signal(SIGTERM, SIG_IGN)
            log()
            t.join()
        """),
    "loop form of two signals, the hang in the loop": ([NOFIX], """
        def stop(t):
            for sig in (SIGINT, SIGTERM):
                signal.signal(sig, SIG_IGN)
                log()
                t.join()
        """),
    "in an else and a finally": ([FIX, FIX], """
        def stop(t):
            try:
                pass
            except E:
                pass
            else:
                signal.signal(SIGINT, SIG_IGN)
                log()
                t.join()
            finally:
                signal.signal(SIGTERM, SIG_IGN)
                log()
                t.join()
        """),
    "add_signal_handler with SIG_IGN still counts": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            loop.add_signal_handler(SIGINT, SIG_IGN)
        """),
    "basic": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            t.join()
        """),
    "nothing in between": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
        """),
    "module level": ([FIX], """
        signal.signal(SIGTERM, SIG_IGN)
        x = 1
        ray.get(refs)
        """),
    "async def, awaited close": ([FIX], """
        async def stop(c):
            signal.signal(SIGINT, SIG_IGN)
            log()
            await c.aclose()
        """),
    "awaited sleep": ([], """
        async def stop(c):
            signal.signal(SIGINT, SIG_IGN)
            await asyncio.sleep(1)
        """),
    "awaited wait_for": ([], """
        async def stop(c):
            signal.signal(SIGINT, SIG_IGN)
            await asyncio.wait_for(c.close(), 1)
        """),
    "awaited other method": ([], """
        async def stop(c):
            signal.signal(SIGINT, SIG_IGN)
            await c.fetch()
        """),
    "restored later": ([], """
        def stop(t):
            old = signal.signal(SIGINT, SIG_IGN)
            t.join()
            signal.signal(SIGINT, old)
        """),
    "restored by a variable signal": ([], """
        def stop(t, s):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            signal.signal(s, h)
        """),
    "another signal restored": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            signal.signal(signal.SIGHUP, h)
        """),
    "add_signal_handler later": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            loop.add_signal_handler(SIGINT, h)
        """),
    "restore with one argument is not": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            signal.signal(SIGINT)
        """),
    "protected later": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            asyncio.run(main())
        """),
    "protected method later": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join()
            loop.run_forever()
        """),
    "timeout keyword": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            requests.get(u, timeout=3)
        """),
    "ray.get with a positional timeout": ([], """
        def stop(refs):
            signal.signal(SIGINT, SIG_IGN)
            ray.get(refs, 5)
        """),
    "ray.get with *a": ([], """
        def stop(refs):
            signal.signal(SIGINT, SIG_IGN)
            ray.get(refs, *a)
        """),
    "ray.get with **k": ([], """
        def stop(refs):
            signal.signal(SIGINT, SIG_IGN)
            ray.get(refs, **k)
        """),
    "shutdown(wait=False)": ([], """
        def stop(ex):
            signal.signal(SIGINT, SIG_IGN)
            ex.shutdown(wait=False)
        """),
    "shutdown(wait=0)": ([NOFIX], """
        def stop(ex):
            signal.signal(SIGINT, SIG_IGN)
            ex.shutdown(wait=0)
        """),
    "join with a positional timeout": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join(5)
        """),
    "join with *a": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            t.join(*a)
        """),
    "string joins": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            x = "".join(parts)
            y = b"".join(parts)
            z = f"{a}".join(parts)
            w = ("a" "b").join(parts)
        """),
    "join on a name": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            sep.join()
        """),
    "communicate": ([NOFIX], """
        def stop(p):
            signal.signal(SIGINT, SIG_IGN)
            p.communicate()
        """),
    "hang in a lambda": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            f = lambda: t.join()
        """),
    "not a method": ([], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            join()
        """),
    "ignore with a keyword": ([], """
        def stop(t):
            signal.signal(SIGINT, handler=SIG_IGN)
            t.join()
        """),
    "ignore with a star": ([], """
        def stop(t):
            signal.signal(*(SIGINT, SIG_IGN))
            t.join()
        """),
    "another signal ignored": ([], """
        def stop(t):
            signal.signal(signal.SIGHUP, SIG_IGN)
            t.join()
        """),
    "loop form": ([NOFIX], """
        def stop(t):
            for sig in (SIGINT, SIGTERM):
                signal.signal(sig, SIG_IGN)
            log()
            t.join()
        """),
    "loop form, one signal in a list, async for": ([FIX], """
        async def stop(t):
            async for sig in [SIGINT]:
                signal.signal(sig, SIG_IGN)
                log()
                t.join()
        """),
    "loop form, starred": ([NOFIX], """
        def stop(t):
            for sig in (*signal.SIGINT,):
                signal.signal(sig, SIG_IGN)
            t.join()
        """),
    "loop form over a name": ([], """
        def stop(t):
            for sig in SIGS:
                signal.signal(sig, SIG_IGN)
            t.join()
        """),
    "loop form, the ignore in a nested def": ([], """
        for sig in (SIGINT,):
            def f(t):
                signal.signal(sig, SIG_IGN)
                t.join()
        """),
    "loop form, other variable": ([], """
        def stop(t, s):
            for sig in (SIGINT,):
                signal.signal(s, SIG_IGN)
            t.join()
        """),
    "two statements on the ignore's line": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN); x = 1
            log()
            t.join()
        """),
    "a statement before the ignore on its line": ([NOFIX], """
        def stop(t):
            x = 1; signal.signal(SIGINT, SIG_IGN)
            log()
            t.join()
        """),
    "backslash after the ignore's semicolon": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN); \\
                x = 1
            log()
            t.join()
        """),
    "the ignore on a header's line": ([NOFIX], """
        def stop(t):
            if x: signal.signal(SIGINT, SIG_IGN)
            log()
            t.join()
        """),
    "assigned ignore": ([NOFIX], """
        def stop(t):
            old = signal.signal(SIGINT, SIG_IGN)
            log()
            t.join()
        """),
    "a run of two ignores": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            signal.signal(SIGTERM, SIG_IGN)
            log()
            t.join()
        """),
    "a run broken by a; b": ([FIX, NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            signal.signal(SIGTERM, SIG_IGN); y = 2
            log()
            t.join()
        """),
    "a run, the second ignore assigned": ([FIX, NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            old = signal.signal(SIGTERM, SIG_IGN)
            log()
            t.join()
        """),
    "hang in a nested block": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            if x:
                t.join()
        """),
    "hang out of the ignore's block": ([NOFIX], """
        def stop(t):
            if x:
                signal.signal(SIGINT, SIG_IGN)
                log()
            t.join()
        """),
    "hang on a line after a statement": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            x = 1; t.join()
        """),
    "hang on a line after a statement, one line between": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            x = 1; t.join()
        """),
    "hang after a backslash line": ([NOFIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            x = 1; \\
                t.join()
        """),
    "callee text": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            ( self.worker_threads_by_name[name] ).join()
        """),
    "callee over lines": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            (self.pool
                 .executor).shutdown()
        """),
    "long callee": ([FIX], """
        def stop(t):
            signal.signal(SIGINT, SIG_IGN)
            log()
            self.a_rather_long_attribute_name.another_long_attribute.join()
        """),
    "in a signal handler": ([NOFIX], """
        import sys
        def on_term(signum, frame):
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, signal.SIG_IGN)
            server.wait()
            sys.exit(0)
        """),
}


_every_file_a_candidate = every_file_a_candidate
_key = key


def _both_ways(source: bytes, monkeypatch, ast_path: bool = True):
    return both_ways(source, monkeypatch, _SETTINGS, ast_path=ast_path)


def _answer(result) -> list:
    out = []
    for d in result.diagnostics:
        assert d.code == "SHD406"
        out.append(FIX if d.fix else NOFIX)
    return out


def _source(name: str, newline: str = "\n") -> bytes:
    return (HEAD + textwrap.dedent(CASES[name][1])).replace("\n", newline).encode()


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    assert _answer(_both_ways(_source(name), monkeypatch)) == CASES[name][0]


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    _both_ways(_source(name), monkeypatch, ast_path=False)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["callee over lines", "backslash after the ignore's semicolon",
                                  "hang after a backslash line", "a run of two ignores"])
def test_line_ends(name, newline, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    assert _answer(_both_ways(_source(name, newline), monkeypatch)) == CASES[name][0]


def test_messages(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    (d,) = _both_ways(_source("a run of two ignores"), monkeypatch).diagnostics
    assert d.message.startswith("SIGINT and SIGTERM ignored and never restored before `t.join()`")
    (d,) = _both_ways(_source("callee text"), monkeypatch).diagnostics
    assert "before `( self.worker_threads_by_name[name] ).join()`" in d.message
    (d,) = _both_ways(_source("long callee"), monkeypatch).diagnostics
    assert "before `self.a_rather_long_attribute_name.another_long_...()`" in d.message
    (d,) = _both_ways(_source("callee over lines", "\r\n"), monkeypatch).diagnostics
    assert "before `(self.pool\n     .executor).shutdown()`" in d.message
