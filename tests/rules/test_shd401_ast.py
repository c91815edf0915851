"""SHD401 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
libcst's statements (``a; b`` and a backslash between them: one ``SimpleStatementLine``, its
span over the line), libcst's blocks (every indented body: defs, classes, ``if``/``elif``/``else``,
loops and their ``else``, ``try``/``except``/``else``/``finally``, ``try*``, ``with``, ``match``
cases; not a body on its header's line), the loop form of the ignore (``for``/``async for`` over a
tuple or list, ``*`` elements), calls in libcst's order but in defs, classes and lambdas (the first
protected call names the message), positional arguments (``*a``, ``**k``), the statement's first
line in the message (comments, backslashes, long lines, non-ASCII), work (imports, loops, quick
and logger calls), the fix's presence (signal calls in the window, saved handlers used, a line of
several statements, a spawn in the window).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer, once with the candidate
tiers passing every file through (the ast path taken: asserted), once with the tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate, key

_SETTINGS = Settings(selected=("SHD401",))
NOFIX = "nofix"
MOVE = "Move the SIG_IGN just before the call it protects"
SPAWN = MOVE + " (child processes started in between no longer inherit it)"

HEAD = "import asyncio, signal, subprocess, logging\nfrom signal import SIGINT, SIGTERM, SIG_IGN\nlog = logging.getLogger()\n"

CASES = {
    "basic": ([MOVE], """
        def main():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "module level": ([MOVE], """
        signal.signal(SIGINT, SIG_IGN)
        load()
        asyncio.run(serve())
        """),
    "two statements on the ignore's line": ([NOFIX], """
        def main():
            signal.signal(SIGINT, SIG_IGN); x = 1  # c
            load()
            asyncio.run(serve())
        """),
    "backslash between the ignore and the next": ([NOFIX], """
        def main():
            signal.signal(SIGINT, SIG_IGN); \\
                load()
            x()
            asyncio.run(serve())
        """),
    "work and the protected call on one line": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load(); asyncio.run(serve())
        """),
    "ignore and work on one line": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN); load()
            asyncio.run(serve())
        """),
    "saved handler used in the window": ([NOFIX], """
        def main():
            old = signal.signal(SIGINT, SIG_IGN)
            load(old)
            asyncio.run(serve())
        """),
    "saved handler as an attribute": ([NOFIX], """
        def main():
            self.old = signal.signal(SIGINT, SIG_IGN)
            self.load()
            asyncio.run(serve())
        """),
    "saved handler, name as a keyword in the window": ([NOFIX], """
        def main():
            old = signal.signal(SIGINT, SIG_IGN)
            load(old=1)
            asyncio.run(serve())
        """),
    "saved handler, name as an import in the window": ([NOFIX], """
        def main():
            old = signal.signal(SIGINT, SIG_IGN)
            import a.old
            asyncio.run(serve())
        """),
    "saved handler, name as a def in the window": ([], """
        def main():
            old = signal.signal(SIGINT, SIG_IGN)
            def old():
                pass
            asyncio.run(serve())
        """),
    "saved handler, name in a string": ([MOVE], """
        def main():
            old = signal.signal(SIGINT, SIG_IGN)
            load("old")
            asyncio.run(serve())
        """),
    "saved, annotated assignment": ([], """
        def main():
            old: int = signal.signal(SIGINT, SIG_IGN)
            load(old)
            asyncio.run(serve())
        """),
    "two targets": ([NOFIX], """
        def main():
            a = b = signal.signal(SIGINT, SIG_IGN)
            load(b)
            asyncio.run(serve())
        """),
    "signal call in the window": ([NOFIX], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            signal.alarm(3)
            asyncio.run(serve())
        """),
    "add_signal_handler in the window": ([NOFIX], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            loop.add_signal_handler(SIGTERM, stop)
            asyncio.run(serve())
        """),
    "spawn in the window": ([SPAWN], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            subprocess.Popen(["x"])
            asyncio.run(serve())
        """),
    "restored in between": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            signal.signal(SIGINT, handler)
            asyncio.run(serve())
        """),
    "restored, another signal": ([NOFIX], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            signal.signal(SIGTERM, handler)
            asyncio.run(serve())
        """),
    "restored in a lambda: not a restore": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            f = lambda: signal.signal(SIGINT, handler)
            asyncio.run(serve())
        """),
    "two ignores": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            signal.signal(SIGTERM, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "ignore with a keyword": ([], """
        def main():
            signal.signal(SIGINT, handler=SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "ignore with a star": ([], """
        def main():
            signal.signal(*(SIGINT, SIG_IGN))
            load()
            asyncio.run(serve())
        """),
    "ignore as an expression in a statement": ([], """
        def main():
            print(signal.signal(SIGINT, SIG_IGN))
            load()
            asyncio.run(serve())
        """),
    "only quick work": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            loop = asyncio.new_event_loop()
            print("x")
            log.info("y")
            logging.warning("z")
            self.logger.debug("w")
            loop.run_until_complete(serve())
        """),
    "logger-like but not": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            catalog.info("y")
            asyncio.run(serve())
        """),
    "an import is work": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            import torch
            asyncio.run(serve())
        """),
    "a def and a class are no work": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            def f():
                load()
            class A:
                load()
            asyncio.run(serve())
        """),
    "a loop is work": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            while x:
                pass
            asyncio.run(serve())
        """),
    "loop form": ([MOVE], """
        def main():
            for s in (SIGINT, SIGTERM):
                signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form, list, starred": ([MOVE], """
        def main():
            for s in [*SIGS, signal.SIGTERM]:
                signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form, async for": ([MOVE], """
        async def main():
            async for s in (SIGINT, SIGTERM):
                signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form with an else": ([], """
        def main():
            for s in (SIGINT, SIGTERM):
                signal.signal(s, SIG_IGN)
            else:
                pass
            load()
            asyncio.run(serve())
        """),
    "loop form over a name": ([], """
        def main():
            for s in SIGS:
                signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form, the call in a nested def": ([], """
        def main():
            for s in (SIGINT,):
                def f():
                    signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "protected: run_until_complete method": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            self.loop.run_until_complete(serve())
        """),
    "in a try* body": ([MOVE], """
        try:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        except* E:
            pass
        """),
    "protected call in a nested class or async def is not": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            class A:
                asyncio.run(serve())
            async def g():
                asyncio.run(serve())
        """),
    "ignore with **k": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN, **k)
            load()
            asyncio.run(serve())
        """),
    "loop form, another signal in the body": ([MOVE], """
        def main():
            for s in (SIGINT,):
                signal.signal(signal.SIGTERM, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form, tuple target over signals": ([], """
        def main():
            for s, t in (SIGINT, SIGTERM):
                signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form, a starred signal": ([MOVE], """
        def main():
            for s in (*signal.SIGTERM,):
                signal.signal(s, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "loop form over no signal, an ignore in the body": ([], """
        def main():
            for s in (x,):
                signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "restore with three arguments is not": ([NOFIX], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            signal.signal(SIGINT, handler, x)
            asyncio.run(serve())
        """),
    "x.run is not protected": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            server.run(serve())
        """),
    "an import after a statement on its line": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            x = 1; import torch
            asyncio.run(serve())
        """),
    "saved handler, a global in a nested def": ([NOFIX], """
        def main():
            old = signal.signal(SIGINT, SIG_IGN)
            load()
            def g():
                global old
            asyncio.run(serve())
        """),
    "saved into a subscript by None": ([NOFIX], """
        def main():
            x[None] = signal.signal(SIGINT, SIG_IGN)
            load(None)
            asyncio.run(serve())
        """),
    "the same signal ignored twice": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            signal.signal(SIGINT, SIG_IGN)
            asyncio.run(serve())
        """),
    "protected: a typed loop's run_until_complete": ([MOVE], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGINT, SIG_IGN)
            load()
            loop.run_until_complete(serve())
        """),
    "logging calls are quick": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            logging.basicConfig(level=1)
            asyncio.run(serve())
        """),
    "a signal handler function imported by name": ([NOFIX], """
        from helpers import add_signal_handler
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            add_signal_handler(SIGTERM, stop)
            asyncio.run(serve())
        """),
    "protected: a runner": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            my_runner.run(serve())
        """),
    "protected call in a nested def is not": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            def f():
                asyncio.run(serve())
        """),
    "protected call in a decorator is not": ([], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            @deco(asyncio.run(serve()))
            def f():
                pass
        """),
    "protected call names: the outer first": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            loop.run_forever(asyncio.run(x))
        """),
    "protected call in an if": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            load()
            if x:
                asyncio.run(serve())
        """),
    "in an if block": ([MOVE], """
        if x:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "in an elif and an else": ([MOVE, MOVE], """
        if x:
            pass
        elif y:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        else:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "in try, except, else, finally": ([MOVE, MOVE, MOVE, MOVE], """
        try:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        except E:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        else:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        finally:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "in try*": ([MOVE], """
        try:
            pass
        except* E:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        """),
    "in a with, a while's else, a class, a match case": ([MOVE, MOVE, MOVE, MOVE], """
        with x:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        while x:
            pass
        else:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        class A:
            signal.signal(SIGINT, SIG_IGN)
            load()
            asyncio.run(serve())
        match x:
            case 1:
                signal.signal(SIGINT, SIG_IGN)
                load()
                asyncio.run(serve())
        """),
    "a body on the header's line": ([], """
        if x: signal.signal(SIGINT, SIG_IGN); load(); asyncio.run(serve())
        """),
    "a body after a backslash on the header's line": ([], """
        if x: \\
            signal.signal(SIGINT, SIG_IGN); load(); asyncio.run(serve())
        """),
    "first line: a comment and a long line": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            # comment
            load_the_model_weights_from_the_checkpoint_directory(path, device, dtype)  # why
            asyncio.run(serve())
        """),
    "first line: a statement over lines": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            x = load(
                1)
            y = 2 + \\
                load()
            asyncio.run(serve())
        """),
    "first line: two statements": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            a = 1; load()  # c
            asyncio.run(serve())
        """),
    "first line: a compound statement": ([MOVE], """
        def main():
            signal.signal(SIGINT, SIG_IGN)
            with open(p) as f:  # c
                pass
            asyncio.run(serve())
        """),
    "non-ASCII": ([NOFIX], """
        def main():
            é = 1; signal.signal(SIGINT, SIG_IGN)
            charger("é")
            asyncio.run(serve())
        """),
}


_every_file_a_candidate = every_file_a_candidate


_key = key


def _both_ways(source: bytes, monkeypatch, ast_path: bool = True, settings: Settings = _SETTINGS):
    return both_ways(source, monkeypatch, settings, ast_path=ast_path)


def _answer(result) -> list:
    out = []
    for d in result.diagnostics:
        assert d.code == "SHD401"
        out.append(d.fix["message"] if d.fix else NOFIX)
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
@pytest.mark.parametrize("name", ["backslash between the ignore and the next", "first line: a statement over lines",
                                  "a body after a backslash on the header's line", "two statements on the ignore's line"])
def test_line_ends(name, newline, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    assert _answer(_both_ways(_source(name, newline), monkeypatch)) == CASES[name][0]


def test_messages_and_spans(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    source = _source("two statements on the ignore's line")
    (d,) = _both_ways(source, monkeypatch).diagnostics
    assert (d.line, d.column, d.end_line, d.end_column) == (6, 5, 6, 42) and "(`load()`)" in d.message
    (d,) = _both_ways(_source("first line: a comment and a long line"), monkeypatch).diagnostics
    assert "(`load_the_model_weights_from_the_checkpoint_directory(path...`)" in d.message
    (d,) = _both_ways(_source("first line: a statement over lines"), monkeypatch).diagnostics
    assert "(`x = load(` and 1 more statement(s))" in d.message
    (d,) = _both_ways(_source("protected: a typed loop's run_until_complete"), monkeypatch).diagnostics
    assert "ahead of `run_until_complete()`" in d.message
    (d,) = _both_ways(_source("non-ASCII"), monkeypatch).diagnostics
    assert (d.line, d.column, d.end_line, d.end_column) == (6, 5, 6, 42)  # character columns


def test_options(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    settings = Settings(selected=("SHD401",), rule_options={"SHD401": {"protected-calls": ["m.serve"],
                                                                        "quick-calls": ["m.load"]}})
    source = (HEAD + "import m\ndef f():\n    signal.signal(SIGINT, SIG_IGN)\n    m.load()\n    x()\n"
              "    m.serve()\n").encode()
    assert _answer(_both_ways(source, monkeypatch, settings=settings)) == [MOVE]
