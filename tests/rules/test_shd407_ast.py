"""SHD407 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
the thread's arguments as libcst's ``Call.args`` (``target=``, a second positional one, ``*a``/``**k``
counted), ``daemon=True`` (a name in libcst, a constant in ``ast``), a daemon set later through the
one target the call is assigned to (``t.daemon = True``, ``t.setDaemon(True)``, keyword and
starred arguments, the target's text with owned parentheses), what the target runs (a runner, a
loop method, ``functools.partial``, a lambda's calls in source order, functions up to three calls
deep), the thread joined in a ``finally`` of the outermost function (nested defs, classes,
``except*``), the runner's text in the message (parentheses, several lines, non-ASCII), ``a; b``
and bodies on their header's line.

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer. SHD407 has no option that
makes a file a candidate, so the candidate tiers are passed through (the tree is still parsed and
the ast path taken: asserted); the same cases run with the tiers too.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate, key

_SETTINGS = Settings(selected=("SHD407",), target_version="py311")

NO = None  # no finding

HEAD = "import asyncio, functools, threading\nfrom threading import Thread as T\n"

CASES = {
    # ---------------------------------------------------------------- the target runs a loop
    "asyncio.run": ("`asyncio.run`", """
        threading.Thread(target=asyncio.run, args=(main(),), daemon=True).start()
        """),
    "loop.run_forever through an alias of Thread": ("`loop.run_forever`", """
        loop = asyncio.new_event_loop()
        T(target=loop.run_forever, daemon=True).start()
        """),
    "parenthesised target": ("`(loop.run_forever)`", """
        T(target=(loop.run_forever), daemon=True)
        """),
    "target over two lines": ("`self.loop\n    .run_forever`", """
        class W:
            def start(self):
                T(target=self.loop
                    .run_forever, daemon=True)
        """),
    "non-ASCII target": ("`ü.run_forever`", """
        é = "日本"; T(target=ü.run_forever, daemon=True)  # café
        """),
    "second positional argument": ("`loop.run_forever`", """
        T(None, loop.run_forever, daemon=True)
        """),
    "a starred first argument counts": (NO, """
        T(*group, daemon=True)
        """),
    "a starred argument as the target": (NO, """
        T(None, *rest, daemon=True)
        """),
    "**k counts as positional": (NO, """
        T(None, **kw, daemon=True)
        """),
    "a starred second argument names its value": ("`asyncio.run()`", """
        def run():
            asyncio.run(serve())
        T(None, *run, daemon=True)
        """),
    "**k second names its value": ("`asyncio.run()`", """
        def kw():
            asyncio.run(serve())
        T(None, **kw, daemon=True)
        """),
    "repeated target keyword: the first": ("`asyncio.run`", """
        T(target=asyncio.run, target=print, daemon=True)
        """),
    "functools.partial": ("`asyncio.run`", """
        T(target=functools.partial(asyncio.run, main()), daemon=True)
        """),
    "partial with a keyword first": ("`asyncio.run`", """
        T(target=functools.partial(func=asyncio.run), daemon=True)
        """),
    "partial with a starred first": (NO, """
        T(target=functools.partial(*runner), daemon=True)
        """),
    "empty partial": (NO, """
        T(target=functools.partial(), daemon=True)
        """),
    "lambda: the first runner call in source order": ("`loop.run_until_complete()`", """
        T(target=lambda: loop.run_until_complete(asyncio.run(x)), daemon=True)
        """),
    "lambda: tuple of calls": ("`asyncio.run()`", """
        T(target=lambda: (print(1), asyncio.run(a), loop.run_forever()), daemon=True)
        """),
    "lambda: depth first, as written": ("`asyncio.run()`", """
        T(target=lambda: (go(asyncio.run(a)), loop.run_forever()), daemon=True)
        """),
    "lambda in a lambda": ("`asyncio.run()`", """
        T(target=lambda: go(lambda: asyncio.run(a)), daemon=True)
        """),
    "lambda with no runner": (NO, """
        T(target=lambda: print(1), daemon=True)
        """),
    "function running a loop": ("`asyncio.run()`", """
        def run():
            asyncio.run(serve())
        T(target=run, daemon=True)
        """),
    "three calls deep": ("`asyncio.run()` in `c()`", """
        def a():
            b()
        def b():
            c()
        def c():
            asyncio.run(serve())
        def run():
            a()
        T(target=run, daemon=True)
        """),
    "four calls deep: not reported": (NO, """
        def a():
            b()
        def b():
            c()
        def c():
            d()
        def d():
            asyncio.run(serve())
        def run():
            a()
        T(target=run, daemon=True)
        """),
    "method target, runner in a callee": ("`(self.loop).run_until_complete()` in `_serve()`", """
        class Worker:
            def _main(self):
                self._serve()
            def _serve(self):
                (self.loop).run_until_complete(self.main())
            def start(self):
                T(target=self._main, daemon=True).start()
        """),
    "async def target": ("`loop.run_forever()`", """
        async def run():
            loop.run_forever()
        T(target=run, daemon=True)
        """),
    # ---------------------------------------------------------------- daemon?
    "daemon=False": (NO, """
        T(target=asyncio.run, daemon=False)
        """),
    "daemon=1 is not True": (NO, """
        T(target=asyncio.run, daemon=1)
        """),
    "daemon=(True)": ("`asyncio.run`", """
        T(target=asyncio.run, daemon=(True))
        """),
    "no daemon: not reported": (NO, """
        T(target=asyncio.run).start()
        """),
    "t.daemon = True later, a; b": ("`asyncio.run`", """
        def start():
            t = T(target=asyncio.run); t.daemon = True; t.start()
        """),
    "t.daemon = True in another function": (NO, """
        def start():
            t = T(target=asyncio.run)
        def later(t):
            t.daemon = True
        """),
    "module level, set in a function": ("`asyncio.run`", """
        t = T(target=asyncio.run)
        def later():
            t.daemon = True
        """),
    "t.daemon = 1": (NO, """
        t = T(target=asyncio.run)
        t.daemon = 1
        """),
    "t.daemon annotated": (NO, """
        t = T(target=asyncio.run)
        t.daemon: bool = True
        """),
    "two assignment targets": ("`asyncio.run`", """
        t = T(target=asyncio.run)
        u.x = t.daemon = True
        """),
    "the call with two targets": (NO, """
        t = u = T(target=asyncio.run)
        t.daemon = True
        """),
    "annotated holder": (NO, """
        t: T = T(target=asyncio.run)
        t.daemon = True
        """),
    "self.thread.daemon": ("`loop.run_forever`", """
        class E:
            def start(self):
                self.thread = T(target=loop.run_forever)
                self.thread.daemon = True
        """),
    "parenthesised holder is other text": (NO, """
        (t) = T(target=asyncio.run)
        t.daemon = True
        """),
    "parenthesised holder, same text": ("`asyncio.run`", """
        (t) = T(target=asyncio.run)
        (t).daemon = True
        """),
    "setDaemon(True)": ("`asyncio.run`", """
        t = T(target=asyncio.run)
        t.setDaemon(True)
        """),
    "setDaemon(daemonic=True)": ("`asyncio.run`", """
        t = T(target=asyncio.run)
        t.setDaemon(daemonic=True)
        """),
    "setDaemon(False)": (NO, """
        t = T(target=asyncio.run)
        t.setDaemon(False)
        """),
    "setDaemon: the first argument": (NO, """
        t = T(target=asyncio.run)
        t.setDaemon(False, True)
        """),
    "setDaemon(*flags)": (NO, """
        t = T(target=asyncio.run)
        t.setDaemon(*[True])
        """),
    "setDaemon of another thread": (NO, """
        t = T(target=asyncio.run)
        u.setDaemon(True)
        """),
    "one-line body": ("`asyncio.run`", """
        if go: T(target=asyncio.run, daemon=True).start()
        """),
    # ---------------------------------------------------------------- scoped to one call
    "joined in a finally": (NO, """
        def once(coro):
            thread = T(target=loop.run_forever, daemon=True)
            try:
                pass
            finally:
                thread.join()
        """),
    "joined in an except: reported": ("`loop.run_forever`", """
        def once(coro):
            thread = T(target=loop.run_forever, daemon=True)
            try:
                pass
            except BaseException:
                thread.join()
        """),
    "joined in a finally of an except* try": (NO, """
        def once(coro):
            thread = T(target=loop.run_forever, daemon=True)
            try:
                pass
            except* ValueError:
                pass
            finally:
                thread.join()
        """),
    "joined in a lambda in a finally": (NO, """
        def once(coro):
            thread = T(target=loop.run_forever, daemon=True)
            try:
                pass
            finally:
                stop = lambda: thread.join()
        """),
    "joined in a nested def's finally": (NO, """
        async def once(coro):
            thread = T(target=loop.run_forever, daemon=True)
            def close():
                try:
                    pass
                finally:
                    thread.join(timeout=1)
        """),
    "the outermost function's finally": (NO, """
        def outer():
            def inner():
                thread = T(target=loop.run_forever, daemon=True)
            try:
                inner()
            finally:
                thread.join()
        """),
    "a class between: its method is the outermost": ("`loop.run_forever`", """
        def outer():
            class K:
                def start(self):
                    thread = T(target=loop.run_forever, daemon=True)
            try:
                pass
            finally:
                thread.join()
        """),
    "module level: not scoped": ("`loop.run_forever`", """
        thread = T(target=loop.run_forever, daemon=True)
        try:
            pass
        finally:
            thread.join()
        """),
    "another thread joined": ("`loop.run_forever`", """
        def once(coro):
            thread = T(target=loop.run_forever, daemon=True)
            try:
                pass
            finally:
                other.join()
        """),
}


_every_file_a_candidate = every_file_a_candidate
_key = key


def _both_ways(source: bytes, monkeypatch, ast_path: bool = True):
    return both_ways(source, monkeypatch, _SETTINGS, ast_path=ast_path)


def _answer(result):
    """The runner named in the message (None: no finding); every finding has the unsafe fix."""
    assert len(result.diagnostics) <= 1
    if not result.diagnostics:
        return NO
    (d,) = result.diagnostics
    assert d.fix["applicability"] == "unsafe" and d.fix["message"].startswith("Use `runtime_guard.LoopThread`")
    return d.message[len("daemon thread runs an event loop ("):d.message.index("): at interpreter exit")]


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    _every_file_a_candidate(monkeypatch)
    result = _both_ways((HEAD + textwrap.dedent(source)).encode(), monkeypatch)
    assert _answer(result) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _, source = CASES[name]
    _both_ways((HEAD + textwrap.dedent(source)).encode(), monkeypatch, ast_path=False)


def test_columns_on_a_non_ascii_line(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    source = HEAD + 'é = "ü"; T(target=ü.run_forever, daemon=True)  # café\n'
    (d,) = _both_ways(source.encode(), monkeypatch).diagnostics
    assert (d.line, d.column, d.end_column) == (3, 10, 46)  # 1-based characters (12 and 49 in UTF-8 bytes)
