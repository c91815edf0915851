"""SHD204 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
``except`` bodies and ``finally`` blocks (``ast`` has no ``Finally`` node; a body is a list of
statements, not a block node), ``except*`` handlers, the handler's type (a tuple, a starred
element), signal handlers (functions, lambdas, ``add_signal_handler``, the arguments in libcst's
order), ``threading.Timer`` deadlines, fork and ``multiprocessing`` children (``_child_roots`` on
``ast``), the zero status SHD202 would change (``0``, ``(0)``, ``0,``, ``os.EX_OK``; not
``False``, ``*a``, a keyword), main guards, ``a; b``, one-line bodies, lambdas, nested defs and
non-ASCII lines (character columns).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer. The candidate tiers
are passed through so that both engines see every case (the ast path is asserted); a few cases
run with the tiers too.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, key

_SETTINGS = Settings(selected=("SHD204",))
_WITH_202 = Settings(selected=("SHD202", "SHD204"))

NO = None  # no finding
EXCEPT = "in an `except` handler"
FINALLY = "in a `finally` block"
CTRL_C = "on Ctrl+C (`except KeyboardInterrupt`)"
SIGNAL = "in a signal handler"

CASES = {
    # ---------------------------------------------------------------- cleanup blocks
    "except body": (EXCEPT, """
        import os
        def main():
            try:
                run()
            except Exception:
                os._exit(1)
        """),
    "finally block": (FINALLY, """
        import os
        def main():
            try:
                run()
            finally:
                os._exit(1)
        """),
    "except inside finally": (FINALLY, """
        import os
        def main():
            try:
                run()
            finally:
                try:
                    stop()
                except OSError:
                    os._exit(1)
        """),
    "finally inside except": (FINALLY, """
        import os
        def main():
            try:
                run()
            except OSError:
                try:
                    stop()
                finally:
                    os._exit(1)
        """),
    "except in the body of a try with a finally": (EXCEPT, """
        import os
        def main():
            try:
                try:
                    run()
                except OSError:
                    os._exit(1)
            finally:
                pass
        """),
    "except type expression: not a cleanup block": (NO, """
        import os
        def main():
            try:
                run()
            except (os._exit(1) or OSError):
                pass
        """),
    "except type expression inside a finally": (FINALLY, """
        import os
        def main():
            try:
                run()
            finally:
                try:
                    stop()
                except (os._exit(1) or OSError):
                    pass
        """),
    "try body, else: not cleanup": (NO, """
        import os
        def main():
            try:
                os._exit(1)
            except OSError:
                pass
            else:
                os._exit(2)
        """),
    "except* body": (EXCEPT, """
        import os
        def main():
            try:
                run()
            except* OSError:
                os._exit(1)
        """),
    "except* KeyboardInterrupt": (CTRL_C, """
        import os
        def main():
            try:
                run()
            except* KeyboardInterrupt:
                os._exit(1)
        """),
    "module level except, one-line body": (EXCEPT, """
        import os
        try:
            run()
        except Exception: os._exit(1)
        """),
    "one-line try statement, finally on one line": (FINALLY, """
        import os
        try: run()
        finally: cleanup(); os._exit(1)
        """),
    "a; b in an except body": (EXCEPT, """
        import os
        def main():
            try:
                run()
            except Exception:
                log(); os._exit(1)
        """),
    "class body in an except body": (EXCEPT, """
        import os
        try:
            run()
        except Exception:
            class Stop:
                os._exit(1)
        """),
    "nested def in an except body: not cleanup": (NO, """
        import os
        def main():
            try:
                run()
            except Exception:
                def die():
                    os._exit(1)
                return die
        """),
    "lambda in an except body: not cleanup": (NO, """
        import os
        def main():
            try:
                run()
            except Exception:
                die = lambda: os._exit(1)
        """),
    # ---------------------------------------------------------------- KeyboardInterrupt
    "except KeyboardInterrupt": (CTRL_C, """
        import os
        if __name__ == "__main__":
            try:
                main()
            except KeyboardInterrupt:
                os._exit(130)
        """),
    "KeyboardInterrupt in a tuple": (CTRL_C, """
        import os
        def main():
            try:
                run()
            except (SystemExit, KeyboardInterrupt):
                os._exit(1)
        """),
    "KeyboardInterrupt after a starred element": (CTRL_C, """
        import os
        def main():
            try:
                run()
            except (*ERRORS, KeyboardInterrupt):
                os._exit(1)
        """),
    "a starred KeyboardInterrupt (libcst names the starred value)": (CTRL_C, """
        import os
        def main():
            try:
                run()
            except (*KeyboardInterrupt,):
                os._exit(1)
        """),
    "a shadowed KeyboardInterrupt": (EXCEPT, """
        import os
        class KeyboardInterrupt(Exception):
            pass
        def main():
            try:
                run()
            except KeyboardInterrupt:
                os._exit(1)
        """),
    "bare except": (EXCEPT, """
        import os
        def main():
            try:
                run()
            except:
                os._exit(1)
        """),
    "KeyboardInterrupt handler, exit in a finally inside it": (CTRL_C, """
        import os
        def main():
            try:
                run()
            except KeyboardInterrupt:
                try:
                    stop()
                finally:
                    os._exit(1)
        """),
    # ---------------------------------------------------------------- signal handlers
    "signal handler function and what it calls": ([SIGNAL, SIGNAL], """
        import os, signal
        def stop():
            os._exit(1)
        def die(signum, frame):
            os._exit(2)
            stop()
        signal.signal(signal.SIGTERM, die)
        """),
    "signal handler lambda": (SIGNAL, """
        import os, signal
        signal.signal(signal.SIGTERM, lambda *a: os._exit(1))
        """),
    "nested lambda in a handler lambda": (SIGNAL, """
        import os, signal
        signal.signal(signal.SIGTERM, lambda *a: (lambda: os._exit(1))())
        """),
    "add_signal_handler on any loop": (SIGNAL, """
        import os
        def die():
            os._exit(1)
        def serve(loop):
            loop.add_signal_handler(15, die)
        """),
    "handler as a keyword argument: not known": (NO, """
        import os, signal
        def die(signum, frame):
            os._exit(1)
        signal.signal(signal.SIGTERM, handler=die)
        """),
    "handler through functools.partial": (SIGNAL, """
        import functools, os, signal
        def die(code, signum, frame):
            os._exit(code)
        signal.signal(signal.SIGTERM, functools.partial(die, 1))
        """),
    "handler method through self": (SIGNAL, """
        import os, signal
        class Server:
            def install(self):
                signal.signal(signal.SIGTERM, self.die)
            def die(self, signum, frame):
                os._exit(1)
        """),
    "lambda inside the handler function: not the handler": (NO, """
        import os, signal
        def die(signum, frame):
            later = lambda: os._exit(1)
        signal.signal(signal.SIGTERM, die)
        """),
    "nested def of the handler: not called": (NO, """
        import os, signal
        def die(signum, frame):
            def inner():
                os._exit(1)
        signal.signal(signal.SIGTERM, die)
        """),
    # ---------------------------------------------------------------- deadlines, children
    "threading.Timer deadline": (NO, """
        import os, threading
        def deadline():
            try:
                dump()
            finally:
                os._exit(1)
        threading.Timer(5, deadline).start()
        """),
    "threading.Thread target: not a deadline": (FINALLY, """
        import os, threading
        def deadline():
            try:
                dump()
            finally:
                os._exit(1)
        threading.Thread(target=deadline).start()
        """),
    "forked child": (NO, """
        import os
        def run():
            if os.fork() == 0:
                try:
                    work()
                finally:
                    os._exit(0)
        """),
    "nested handler in a forking function": (NO, """
        import os
        def run():
            pid = os.fork()
            def child():
                try:
                    work()
                finally:
                    os._exit(0)
            child()
        """),
    "module-level fork": (NO, """
        import os
        os.fork()
        try:
            work()
        finally:
            os._exit(0)
        """),
    "multiprocessing target": (NO, """
        import multiprocessing, os
        def child():
            try:
                work()
            finally:
                os._exit(0)
        multiprocessing.Process(target=child).start()
        """),
    "Process imported by name, target as keyword after *args": (NO, """
        import os
        from multiprocessing import Process
        def child():
            try:
                work()
            finally:
                os._exit(0)
        Process(*a, target=child)
        """),
    "a context's Process": (NO, """
        import os
        def child():
            try:
                work()
            finally:
                os._exit(0)
        ctx = get_context()
        ctx.Process(target=child)
        """),
    "pool initializer and what it calls": (NO, """
        import os
        import multiprocessing as mp
        def close():
            try:
                work()
            finally:
                os._exit(0)
        def init():
            close()
        mp.Pool(initializer=init)
        """),
    "torch.multiprocessing.spawn": (NO, """
        import os
        import torch.multiprocessing as tmp
        def worker(rank):
            try:
                work()
            finally:
                os._exit(0)
        tmp.spawn(worker, nprocs=2)
        """),
    "Process subclass run": (NO, """
        import multiprocessing, os
        class Worker(multiprocessing.Process):
            def run(self):
                try:
                    work()
                finally:
                    os._exit(0)
        """),
    "a starred base names no Process": (FINALLY, """
        import multiprocessing, os
        class Worker(*[multiprocessing.Process]):
            def run(self):
                try:
                    work()
                finally:
                    os._exit(0)
        """),
    "a spawn that is not multiprocessing": (FINALLY, """
        import os
        def worker(rank):
            try:
                work()
            finally:
                os._exit(0)
        pool.spawn(worker)
        """),
    # ---------------------------------------------------------------- aliases, non-ASCII
    "from os import _exit": (EXCEPT, """
        from os import _exit
        def main():
            try:
                run()
            except Exception:
                _exit(1)
        """),
    "non-ASCII before the call": (EXCEPT, """
        import os
        def main():
            try:
                run()
            except Exception:
                é = "日本"; os._exit(1)  # café
        """),
}


_key = key


def _without_tiers(monkeypatch, drop: tuple[str, ...] = ()):
    """Tiers 1 and 2 keep every rule but those of ``drop`` (as where their tiers rule them out)."""
    stage = analyzer.candidate_stage
    monkeypatch.setattr(stage, "filter_rules", lambda source, rules, settings, present=None: [r for r in rules if r.code not in drop])
    monkeypatch.setattr(stage, "filter_rules_by_tree",
                        lambda tree, rules, settings, project=None: [r for r in rules if r.code not in drop])


def _both_ways(source: bytes, path: str, monkeypatch, settings: Settings = _SETTINGS, ast_path: bool = True):
    return both_ways(source, monkeypatch, settings, path, ast_path=ast_path)


def _answer(result):
    answers = []
    for d in result.diagnostics:
        assert d.fix is not None and d.fix["applicability"] == "safe"
        answers.append(next(p for p in (EXCEPT, FINALLY, CTRL_C, SIGNAL) if p in d.message))
    if not answers:
        return NO
    return answers[0] if len(answers) == 1 else answers


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    _without_tiers(monkeypatch)
    result = _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch)
    assert _answer(result) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _, source = CASES[name]
    _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch, ast_path=False)


STATUS = {
    "0": True, "(0)": True, "0,": True, "0x0": True, "os.EX_OK": True, "os.EXIT_SUCCESS": True,
    "1": False, "False": False, "0.0": False, "*a": False, "**k": False, "code=0": False, "0, 1": False,
}


@pytest.mark.parametrize("args", list(STATUS))
def test_zero_status_note_when_shd202_runs(args, monkeypatch):
    """SHD202 selected but ruled out for the file (its tiers): the file takes the ast path, and
    the message names SHD202's status change exactly where libcst's does."""
    source = f"import os\ndef main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        os._exit({args})\n"
    _without_tiers(monkeypatch, drop=("SHD202",))
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch, _WITH_202).diagnostics
    assert ("SHD202: exit 130" in d.message) is STATUS[args]
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics  # SHD202 not selected: no note
    assert "SHD202" not in d.message


def test_column_is_characters(monkeypatch):
    source = 'import os\ntry:\n    run()\nexcept Exception:\n    é = "ü"; os._exit(1)\n'
    _without_tiers(monkeypatch)
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics
    assert (d.line, d.column) == (5, 14)  # 16 in UTF-8 bytes
