"""SHD202 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
``except*`` handlers (not visited as handlers, but an exit in one is in a handler), a handler's
type against its body, starred and parenthesised types, a lone string literal against an implicit
concatenation, arguments as libcst's ``Call.args`` (keywords, ``*a``), ``True`` and int constants
of ``while``, a body on its header's line (no fix), ``a; b`` lines (the bare ``return``, ``for sig``
read on the whole line), signal handlers (lambdas, positional-only parameters) and non-ASCII lines.

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer: once with the candidate
tiers passing every file through (the ast path asserted), once as an ordinary run.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import every_file_a_candidate, key

_SETTINGS = Settings(selected=("SHD202",))
_WITH_204 = Settings(selected=("SHD202", "SHD204"))

NO = None  # no finding
SAFE = "safe"
UNSAFE = "unsafe"
NOFIX = "nofix"

CASES = {
    # ---------------------------------------------------------------- exits in an interrupt handler
    "sys.exit(0)": (SAFE, """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            sys.exit(0)
        """),
    "sys.exit() keyword status": (SAFE, """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            sys.exit(code=1)
        """),
    "exit in the handler's type is not in its body": (NO, """
        import sys
        try:
            run()
        except (KeyboardInterrupt, sys.exit(0)):
            pass
        """),
    "exit in an except* handler": (SAFE, """
        import sys
        try:
            run()
        except* KeyboardInterrupt:
            sys.exit(0)
        """),
    "starred type": (SAFE, """
        import sys
        try:
            run()
        except (*errs, KeyboardInterrupt):
            sys.exit(0)
        """),
    "starred interrupt": (SAFE, """
        import sys
        try:
            run()
        except (*KeyboardInterrupt,):
            sys.exit(0)
        """),
    "parenthesised type": (SAFE, """
        import sys
        try:
            run()
        except (KeyboardInterrupt):
            sys.exit(0)
        """),
    "exit in a nested def": (NO, """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            def later():
                sys.exit(0)
        """),
    "exit in a class in the handler": (NO, """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            class A:
                sys.exit(0)
        """),
    "raise SystemExit": (SAFE, """
        try:
            run()
        except KeyboardInterrupt:
            raise SystemExit
        """),
    "raise SystemExit(0)": (SAFE, """
        try:
            run()
        except KeyboardInterrupt:
            raise SystemExit(0)
        """),
    "hard_exit() without status": (NO, """
        import runtime_guard
        try:
            run()
        except KeyboardInterrupt:
            runtime_guard.hard_exit()
        """),
    "hard_exit(0)": (SAFE, """
        import runtime_guard
        try:
            run()
        except KeyboardInterrupt:
            runtime_guard.hard_exit(0)
        """),
    "os._exit(0)": (SAFE, """
        import os
        try:
            run()
        except KeyboardInterrupt:
            os._exit(0)
        """),
    "os._exit(0) after fork": (SAFE, """
        import os
        def child():
            os.fork()
            try:
                run()
            except KeyboardInterrupt:
                os._exit(0)
        """),
    "callee over lines": (SAFE, """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            (sys
             .exit)(0)
        """),
    "non-ASCII line": (SAFE, """
        import sys
        try:
            run()
        except KeyboardInterrupt:
            é = "ü"; sys.exit(0)  # café
        """),
    # ---------------------------------------------------------------- signal handlers
    "SIGINT handler that shuts down": (SAFE, """
        import signal, sys
        def handler(signum, frame):
            pool.close()
            sys.exit(0)
        signal.signal(signal.SIGINT, handler)
        """),
    "SIGINT handler that only exits": (NO, """
        import signal, sys
        def handler(signum, frame):
            print("bye")
            logger.info("x")
            sys.exit(0)
        signal.signal(signal.SIGINT, handler)
        """),
    "SIGTERM handler of a service": (NO, """
        import signal, sys
        def handler(signum, frame):
            pool.close()
            sys.exit(0)
        signal.signal(signal.SIGTERM, handler)
        """),
    "SIGTERM handler that saves a checkpoint": (SAFE, """
        import signal, sys
        def handler(signum, frame):
            save_checkpoint()
            sys.exit(0)
        signal.signal(signal.SIGTERM, handler)
        """),
    "SIGTERM handler in a Ray driver": (SAFE, """
        import signal, sys, ray
        def main():
            ray.init()
        def handler(signum, frame):
            pool.close()
            sys.exit(0)
        signal.signal(signal.SIGTERM, handler)
        if __name__ == "__main__":
            main()
        """),
    "both signals": (SAFE, """
        import signal, sys
        def handler(signum, frame):
            save_checkpoint()
            sys.exit(0)
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
        """),
    "both signals, positional-only parameters": (NO, """
        import signal, sys
        def handler(signum, frame, /):
            save_checkpoint()
            sys.exit(0)
        signal.signal(signal.SIGINT, handler)
        signal.signal(signal.SIGTERM, handler)
        """),
    "lambda handler": (SAFE, """
        import signal, sys
        signal.signal(signal.SIGINT, lambda s, f: (pool.close(), sys.exit(0)))
        """),
    "bare raise SystemExit in a signal handler": (NO, """
        import signal
        def handler(signum, frame):
            pool.close()
            raise SystemExit
        signal.signal(signal.SIGINT, handler)
        """),
    "raise SystemExit(code=0) in a signal handler": (SAFE, """
        import signal
        def handler(signum, frame):
            pool.close()
            raise SystemExit(code=0)
        signal.signal(signal.SIGINT, handler)
        """),
    "callee without a name in a signal handler": (SAFE, """
        import signal, sys
        def handler(signum, frame):
            hooks[0]()
            sys.exit(0)
        signal.signal(signal.SIGINT, handler)
        """),
    # ---------------------------------------------------------------- handlers returning to the entrypoint
    "falls through in main": (UNSAFE, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                log("stopped")
        if __name__ == "__main__":
            main()
        """),
    "ends in pass": (UNSAFE, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                log("stopped")
                pass
        if __name__ == "__main__":
            main()
        """),
    "bare return": (UNSAFE, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                log("stopped")
                return
        if __name__ == "__main__":
            main()
        """),
    "bare return sharing its line": (NOFIX, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                log("stopped"); return
        if __name__ == "__main__":
            main()
        """),
    "two returns": (NOFIX, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                if x:
                    return
                log("stopped")
                return
        if __name__ == "__main__":
            main()
        """),
    "return in a nested def and a lambda": (UNSAFE, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                def f():
                    return 1
                g = lambda: 2
                return
        if __name__ == "__main__":
            main()
        """),
    "body on the header line": (NOFIX, """
        def main():
            try:
                run()
            except KeyboardInterrupt: log("stopped")
        if __name__ == "__main__":
            main()
        """),
    "body after a backslash": (NOFIX, """
        def main():
            try:
                run()
            except KeyboardInterrupt: \\
                log("stopped")
        if __name__ == "__main__":
            main()
        """),
    "in the main block": (UNSAFE, """
        if __name__ == "__main__":
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        """),
    "except* handler at the entrypoint": (NO, """
        if __name__ == "__main__":
            try:
                run()
            except* KeyboardInterrupt:
                print("bye")
        """),
    "sys.exit(main())": (UNSAFE, """
        import sys
        def main():
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            sys.exit(main())
        """),
    "coroutine without the cancellation": (NO, """
        import asyncio
        async def main():
            try:
                await run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            asyncio.run(main())
        """),
    "coroutine with the cancellation": (UNSAFE, """
        import asyncio
        async def main():
            try:
                await run()
            except (KeyboardInterrupt, asyncio.CancelledError):
                print("bye")
        if __name__ == "__main__":
            asyncio.run(main())
        """),
    "serve_forever": (NO, """
        def main():
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "serve_forever in a nested def of the try": (NO, """
        def main():
            try:
                def f():
                    server.serve_forever()
                f()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "serve call without a name": (NO, """
        def main():
            try:
                servers[0].serve_forever()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while True": (NO, """
        def main():
            try:
                while True:
                    step()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while 1": (NO, """
        def main():
            try:
                while 1:
                    step()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while 0x10 with a nested loop's break": (NO, """
        def main():
            try:
                while 0x10:
                    for x in y:
                        break
                    while z:
                        break
                    def f():
                        return
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while 0": (UNSAFE, """
        def main():
            try:
                while 0:
                    step()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while 1.0": (UNSAFE, """
        def main():
            try:
                while 1.0:
                    step()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while True with a break": (UNSAFE, """
        def main():
            try:
                while True:
                    if done():
                        break
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while True with a return in its else": (UNSAFE, """
        def main():
            try:
                while True:
                    step()
                else:
                    return
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while True with a return in a match": (UNSAFE, """
        def main():
            try:
                while True:
                    match x:
                        case 1:
                            return
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while True in a try*": (NO, """
        def main():
            try:
                while True:
                    step()
            except* KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "raises KeyboardInterrupt itself": (NO, """
        def main():
            try:
                if idle():
                    raise KeyboardInterrupt()
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "raises KeyboardInterrupt in a nested def": (NO, """
        def main():
            try:
                def f():
                    raise KeyboardInterrupt
                run(f)
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "installs its own SIGINT handler": (NO, """
        import signal
        def main():
            signal.signal(signal.SIGINT, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "add_signal_handler in a for sig loop": (NO, """
        def main():
            for sig in sigs: loop.add_signal_handler(sig, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig on the a; b line": (NO, """
        def main():
            x = [s for sig in sigs]; loop.add_signal_handler(s, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig in a comment above": (NO, """
        def main():
            # for sig in the loop's signals
            loop.add_signal_handler(s, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig in a trailing comment": (NO, """
        def main():
            loop.add_signal_handler(s, stop)  # for sig
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "add_signal_handler for SIGTERM": (UNSAFE, """
        def main():
            loop.add_signal_handler(SIGTERM, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig in a comment above an a; b line": (NO, """
        def main():
            x = 1
            # for sig in the loop's signals

            y = 2; loop.add_signal_handler(s, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig in a comment under a block, above an a; b line": (UNSAFE, """
        def main():
            if x:
                pass
                # for sig in the loop's signals
            y = 2; loop.add_signal_handler(s, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig in a comment above a first a; b line of a block": (NO, """
        def main():
            # for sig in the loop's signals
            y = 2; loop.add_signal_handler(s, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig in a comment above a first a; b line of the module": (UNSAFE, """
        # for sig in the loop's signals
        y = 2; loop.add_signal_handler(s, stop)
        if __name__ == "__main__":
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        """),
    "for sig in a trailing comment of an a; b line": (NO, """
        def main():
            y = 2; loop.add_signal_handler(s, stop)  # for sig
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig before a backslash of an a; b line": (NO, """
        def main():
            x = [s for sig in sigs]; \\
                loop.add_signal_handler(s, stop)
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "for sig after a backslash of an a; b line": (NO, """
        def main():
            loop.add_signal_handler(s, stop); \\
                x = [s for sig in sigs]
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "while True then a call": (UNSAFE, """
        def main():
            try:
                while True:
                    step()
                cleanup()
            except KeyboardInterrupt:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "return None": (NOFIX, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
                return None
        if __name__ == "__main__":
            main()
        """),
    "exit in a lambda in the handler": (NO, """
        import atexit, sys
        try:
            run()
        except KeyboardInterrupt:
            atexit.register(lambda: sys.exit(0))
        """),
    "while True with an async for's break": (NO, """
        import asyncio
        async def main():
            try:
                while True:
                    async for x in y:
                        break
            except (KeyboardInterrupt, asyncio.CancelledError):
                print("bye")
        if __name__ == "__main__":
            asyncio.run(main())
        """),
    "isinstance for another type": (NO, """
        def main():
            try:
                run()
            except (KeyboardInterrupt, JobError) as e:
                if isinstance(e, JobError):
                    raise
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "isinstance for the interrupt": (UNSAFE, """
        def main():
            try:
                run()
            except (KeyboardInterrupt, JobError) as e:
                if isinstance(e, (KeyboardInterrupt,)):
                    print("bye")
                elif isinstance(e, JobError):
                    pass
        if __name__ == "__main__":
            main()
        """),
    "isinstance with a keyword": (NO, """
        def main():
            try:
                run()
            except (KeyboardInterrupt, JobError) as e:
                isinstance(e, cls=JobError)
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "isinstance of another name": (UNSAFE, """
        def main():
            try:
                run()
            except (KeyboardInterrupt, JobError) as e:
                isinstance(f, JobError)
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "a later exit": (NO, """
        import sys
        def main():
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
            sys.exit(1)
        if __name__ == "__main__":
            main()
        """),
    "in a loop": (NO, """
        def main():
            while True:
                try:
                    run()
                except KeyboardInterrupt:
                    print("bye")
        if __name__ == "__main__":
            main()
        """),
    "finally that raises": (NO, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                print("bye")
            finally:
                raise SystemExit(1)
        if __name__ == "__main__":
            main()
        """),
    "bare except": (NO, """
        def main():
            try:
                run()
            except:
                print("bye")
        if __name__ == "__main__":
            main()
        """),
    "docstring-only handler at the entrypoint": (UNSAFE, """
        def main():
            try:
                run()
            except KeyboardInterrupt:
                "stopped"
        if __name__ == "__main__":
            main()
        """),
}


_every_file_a_candidate = every_file_a_candidate


_key = key


def _both(source: str, monkeypatch, settings: Settings = _SETTINGS, newline: str = "\n"):
    data = textwrap.dedent(source).replace("\n", newline).encode()
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(data, "m.py", settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(data, "m.py", settings, fix_edits=False)
    assert _key(on) == _key(off)
    return on, off


def _answer(result):
    answers = [(d.fix["applicability"] if d.fix else NOFIX) for d in result.diagnostics]
    if not answers:
        return NO
    return answers[0] if len(answers) == 1 else answers


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    _every_file_a_candidate(monkeypatch)
    on, off = _both(source, monkeypatch)
    assert on.stage == STAGE_AST and off.stage != STAGE_AST
    assert _answer(on) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The ordinary run: where the tiers admit the rule the check runs on ast, else neither runs."""
    on, _ = _both(CASES[name][1], monkeypatch)
    if on.diagnostics:
        assert on.stage == STAGE_AST


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["callee over lines", "body after a backslash", "for sig on the a; b line",
                                  "bare return sharing its line", "for sig in a comment above"])
def test_other_line_ends(name, newline, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, _ = _both(CASES[name][1], monkeypatch, newline=newline)
    assert on.stage == STAGE_AST


@pytest.mark.parametrize("name", ["os._exit(0)", "os._exit(0) after fork"])
def test_os_exit_left_to_shd204(name, monkeypatch):
    """With SHD204 selected, an ``os._exit(0)`` outside a child process is SHD204's."""
    _every_file_a_candidate(monkeypatch)
    on, _ = _both(CASES[name][1], monkeypatch, settings=_WITH_204)
    assert on.stage == STAGE_AST
    assert [d.code for d in on.diagnostics].count("SHD202") == (name == "os._exit(0) after fork")


def test_messages_and_columns(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, _ = _both(CASES["non-ASCII line"][1], monkeypatch)
    (d,) = on.diagnostics
    assert (d.line, d.column) == (6, 14)  # 16 in UTF-8 bytes
    assert d.message.startswith("`sys.exit()` in `except KeyboardInterrupt`")
    assert d.fix["message"] == "Exit with status 130"
    on, _ = _both(CASES["both signals"][1], monkeypatch)
    (d,) = on.diagnostics
    assert d.message.startswith("`sys.exit()` in a SIGINT and SIGTERM handler")
    assert d.fix["message"] == "Exit with status 128 + signum"
    on, _ = _both(CASES["callee over lines"][1], monkeypatch, newline="\r\n")
    (d,) = on.diagnostics
    assert d.message.startswith("`(sys\n .exit)()`")


PROJECT_CASES = {
    "logs": (1, """
        log("stopped")
        """),
    "pass only": (0, """
        pass
        """),
    "a string and an ellipsis": (0, """
        "stopped"
        ...
        """),
    "a bytes literal": (0, """
        b"stopped"
        """),
    "a parenthesised string": (0, """
        ("stopped")
        """),
    "an implicit concatenation": (1, """
        "stopped" " here"
        """),
    "a concatenation over lines": (1, """
        ("stopped"
         " here")
        """),
    "an f-string": (1, """
        f"stopped {x}"
        """),
}


@pytest.mark.parametrize("name", list(PROJECT_CASES))
@pytest.mark.parametrize("types", ["KeyboardInterrupt", "(KeyboardInterrupt, SystemExit)",
                                   "(KeyboardInterrupt, (SystemExit))", "(KeyboardInterrupt, *errors.Exit)"])
def test_process_tail_in_another_module(name, types, tmp_path, monkeypatch):
    """A handler found through the project index (``process_tail``): the chain and the deps it
    records are the same on both engines, and so is what the handler does (``_does_something``)."""
    from shutdown_lint.index.project import ProjectIndex, current, set_current

    count, body = PROJECT_CASES[name]
    if "Exit" in types and "(SystemExit)" not in types:
        count = 0
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "main.py").write_text("from pkg.cli import run\nif __name__ == '__main__':\n    run()\n")
    cli = pkg / "cli.py"
    handler = textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8)
    cli.write_text(f"def run():\n    try:\n        serve()\n    except {types}:\n{handler}\n")
    _every_file_a_candidate(monkeypatch)
    before = current()
    set_current(ProjectIndex([str(tmp_path)]))
    try:
        monkeypatch.setattr(analyzer, "AST_MODE", "on")
        on = lint_source(cli.read_bytes(), str(cli), _SETTINGS, fix_edits=False)
        monkeypatch.setattr(analyzer, "AST_MODE", "off")
        off = lint_source(cli.read_bytes(), str(cli), _SETTINGS, fix_edits=False)
    finally:
        set_current(before)
    assert on.stage == STAGE_AST and off.stage != STAGE_AST
    assert _key(on) == _key(off)
    assert len(on.diagnostics) == count
    assert all("main.py" in d.message for d in on.diagnostics)
