"""SHD201 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
``try`` blocks with a ``finally`` (``Try``/``TryStar.finalbody``: ast has no ``Finally`` node; an
exit in the ``finally`` itself, in a handler, the body or the ``else``), ``with``/``async with``
(header and block), nested defs and class bodies that stop the climb, the raise's fix only where
libcst's statement is a ``SimpleStatementLine`` (not a body on its header's line, nor after ``:``
and a backslash; ``a; raise`` counts), ``raise SystemExit``/``SystemExit(1)``/``from e``/bare
``raise``, the callee's text as libcst renders it (owned parentheses, several lines, CRLF/CR line
ends, non-ASCII columns), the contexts (task, thread, executor, Ray actor, main coroutine only).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer, once with the candidate
tiers passing every file through (the ast path taken: asserted), once with the tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate, key

NO = None  # no finding
SAFE = "safe"
UNSAFE = "unsafe"
NOFIX = "nofix"  # a finding without a fix

_SETTINGS = Settings(selected=("SHD201",))

CASES = {
    # ---------------------------------------------------------------- contexts
    "coroutine as a task": (UNSAFE, """
        import asyncio, sys
        async def loop():
            sys.exit(1)
        asyncio.create_task(loop())
        """),
    "coroutine, not known how it runs": (UNSAFE, """
        import sys
        async def loop():
            sys.exit()
        """),
    "thread target": (SAFE, """
        import threading, sys
        def pump():
            sys.exit(2)
        threading.Thread(target=pump).start()
        """),
    "executor job": (UNSAFE, """
        import sys
        from concurrent.futures import ThreadPoolExecutor
        def job():
            exit(1)
        ThreadPoolExecutor().submit(job)
        """),
    "thread and executor": (UNSAFE, """
        import sys, threading
        from concurrent.futures import ThreadPoolExecutor
        def job():
            quit()
        ThreadPoolExecutor().submit(job)
        threading.Thread(target=job).start()
        """),
    "ray actor coroutine": (SAFE, """
        import ray, sys
        @ray.remote
        class A:
            async def run(self):
                sys.exit(1)
        """),
    "main coroutine only": (NO, """
        import asyncio, sys
        async def main():
            sys.exit(2)
        asyncio.run(main())
        """),
    "plain function": (NO, "import sys\ndef f():\n    sys.exit(1)\n"),
    "module level": (NO, "import sys\nsys.exit(1)\n"),
    "in a lambda in a coroutine": (NO, """
        import sys
        async def f():
            g = lambda: sys.exit(1)
        """),
    "lambda in a try with finally": (NO, """
        import sys
        async def f():
            try:
                g = lambda: sys.exit(1)
            finally:
                pass
        """),
    "exit shadowed": (NO, """
        def exit(c):
            pass
        async def f():
            exit(1)
        """),
    "os._exit": (NO, "import os\nasync def f():\n    os._exit(1)\n"),
    "from sys import exit as die": (UNSAFE, """
        from sys import exit as die
        async def f():
            die(1)
        """),
    "sys.exit as a value only": (NO, """
        import sys
        async def f():
            g = sys.exit
        """),
    # ---------------------------------------------------------------- own cleanup
    "try without finally": (UNSAFE, """
        import sys
        async def f():
            try:
                await g()
            except Exception:
                sys.exit(1)
        """),
    "try with finally, in the handler": (NOFIX, """
        import sys
        async def f():
            try:
                await g()
            except Exception:
                sys.exit(1)
            finally:
                h()
        """),
    "try with finally, in the body": (NOFIX, """
        import sys
        async def f():
            try:
                sys.exit(1)
            finally:
                h()
        """),
    "try with finally, in the else": (NOFIX, """
        import sys
        async def f():
            try:
                pass
            except Exception:
                pass
            else:
                sys.exit(1)
            finally:
                h()
        """),
    "in the finally itself": (UNSAFE, """
        import sys
        async def f():
            try:
                await g()
            finally:
                sys.exit(1)
        """),
    "in the finally, deeper in an if": (UNSAFE, """
        import sys
        async def f():
            try:
                await g()
            finally:
                if x:
                    sys.exit(1)
        """),
    "in a finally inside an outer try's finally": (UNSAFE, """
        import sys
        async def f():
            try:
                pass
            finally:
                try:
                    pass
                finally:
                    sys.exit(1)
        """),
    "in a finally inside an outer try's body": (NOFIX, """
        import sys
        async def f():
            try:
                try:
                    pass
                finally:
                    sys.exit(1)
            finally:
                pass
        """),
    "try* with finally": (NOFIX, """
        import sys
        async def f():
            try:
                await g()
            except* ValueError:
                sys.exit(1)
            finally:
                h()
        """),
    "try* without finally": (UNSAFE, """
        import sys
        async def f():
            try:
                await g()
            except* ValueError:
                sys.exit(1)
        """),
    "with block": (NOFIX, """
        import sys
        async def f(lock):
            with lock:
                sys.exit(1)
        """),
    "async with block": (NOFIX, """
        import sys
        async def f(pool):
            async with pool:
                sys.exit(1)
        """),
    "with header": (NOFIX, """
        import sys
        async def f():
            with g(sys.exit(1)):
                pass
        """),
    "nested coroutine in a try with finally": (UNSAFE, """
        import sys
        async def outer():
            try:
                async def inner():
                    sys.exit(1)
            finally:
                pass
        """),
    "nested coroutine in a with": (UNSAFE, """
        import sys
        async def outer(lock):
            async with lock:
                async def inner():
                    raise SystemExit(1)
        """),
    "nested def as thread target in a with": (SAFE, """
        import sys, threading
        async def outer(lock):
            with lock:
                def inner():
                    sys.exit(1)
                threading.Thread(target=inner).start()
        """),
    "class body in a coroutine's try": (UNSAFE, """
        import sys
        async def outer():
            try:
                class A:
                    sys.exit(1)
            finally:
                pass
        """),
    "class body in a coroutine's with": (UNSAFE, """
        import sys
        async def outer(lock):
            with lock:
                class A:
                    raise SystemExit(1)
        """),
    "decorator of a coroutine in a with (the coroutine's own)": (UNSAFE, """
        import sys
        async def outer(lock):
            with lock:
                @deco(sys.exit(1))
                async def inner():
                    pass
        """),
    # ---------------------------------------------------------------- raise
    "raise SystemExit": (UNSAFE, "async def f():\n    raise SystemExit\n"),
    "raise SystemExit(1)": (UNSAFE, "async def f():\n    raise SystemExit(1)\n"),
    "raise SystemExit from e": (UNSAFE, "async def f():\n    raise SystemExit(1) from None\n"),
    "bare raise": (NO, "async def f():\n    try:\n        pass\n    except SystemExit:\n        raise\n"),
    "raise another exception": (NO, "async def f():\n    raise KeyboardInterrupt(1)\n"),
    "raise SystemExit shadowed": (NO, "class SystemExit(Exception):\n    pass\nasync def f():\n    raise SystemExit\n"),
    "raise SystemExit()()": (UNSAFE, "async def f():\n    raise SystemExit()()\n"),
    "raise a factory's exception": (NO, "def make():\n    return SystemExit(1)\nasync def f():\n    raise make()\n"),
    "raise SystemExit in a plain function": (NO, "def f():\n    raise SystemExit(1)\n"),
    "raise SystemExit in the main coroutine": (NO, """
        import asyncio
        async def main():
            raise SystemExit(1)
        asyncio.run(main())
        """),
    "raise on the header line": (NOFIX, "async def f(x):\n    if x: raise SystemExit(1)\n"),
    "raise on the def's line": (NOFIX, "async def f(x): raise SystemExit(1)\n"),
    "raise after a backslash after the colon": (NOFIX, "async def f(x):\n    if x: \\\n        raise SystemExit(1)\n"),
    "raise after a semicolon": (UNSAFE, "async def f(x):\n    y = 1; raise SystemExit(1)\n"),
    "raise in a try with finally": (NOFIX, """
        async def f():
            try:
                raise SystemExit(1)
            finally:
                pass
        """),
    "raise in a thread target": (SAFE, """
        import threading
        def pump():
            raise SystemExit
        threading.Timer(1, pump).start()
        """),
    "call on the header line keeps its fix": (UNSAFE, "import sys\nasync def f(x):\n    if x: sys.exit(1)\n"),
    "two exits": ([UNSAFE, NOFIX], """
        import sys
        async def f(lock):
            sys.exit(1)
            with lock:
                raise SystemExit(2)
        """),
}


_every_file_a_candidate = every_file_a_candidate
_key = key


def _both_ways(source: bytes, monkeypatch, ast_path: bool = True):
    return both_ways(source, monkeypatch, _SETTINGS, ast_path=ast_path)


def _answer(result):
    answers = []
    for d in result.diagnostics:
        assert d.code == "SHD201"
        if d.fix:
            assert d.fix["message"] == "Replace with `runtime_guard.hard_exit()`"
        answers.append(d.fix["applicability"] if d.fix else NOFIX)
    if not answers:
        return NO
    return answers[0] if len(answers) == 1 else answers


def _source(name: str) -> bytes:
    return textwrap.dedent(CASES[name][1]).encode()


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    assert _answer(_both_ways(_source(name), monkeypatch)) == CASES[name][0]


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _both_ways(_source(name), monkeypatch, ast_path=False)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_callee_text_and_columns(newline, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    source = ("import sys\nasync def f():\n    é = 'ü'; ( sys.exit )(1)\n"
              "    (sys  # exit\n     .exit)(2)\n    (sys.\\\n exit)(3)\n").replace("\n", newline)
    diags = _both_ways(source.encode(), monkeypatch).diagnostics
    assert [(d.line, d.column) for d in diags] == [(3, 14), (4, 5), (6, 5)]  # 16 in UTF-8 bytes
    assert [d.message.split("()`")[0] for d in diags] == [
        "`( sys.exit )", "`(sys  # exit\n .exit)", "`(sys.\\" + newline + " exit)"]
