"""SHD501 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
libcst's ``SimpleStatementLine`` (``a; b`` and backslash-joined lines are one line there: a wait
anywhere on a later line stops the search before a ``raise`` earlier on it, a ``raise`` on the
cancel's own line is not after it, the fix needs the cancel alone on its line), bodies on their
header's line, libcst's ``Else``/``Finally`` nodes (``else`` of ``if``/``elif`` chains, loops, ``try``
and ``try``/``except*``, whose climb stops), ``except*`` handlers, handlers and ``finally`` blocks up
to a def or a class body, waits in the ``finally`` of a handler's ``try`` and in a loop's body, waits
in nested defs, lambdas, decorators and comprehensions, ``match`` cases and class bodies, the ``raise``
an enclosing broad handler catches (tuples, ``*`` elements, ``except*``), the ``force=`` keyword
(``False`` is a ``Name`` in libcst), ``*refs``/``**kw`` as refs, the exit calls (aliases, builtins,
parentheses), Ray tasks and actors (the remote method an error leaves through, calls inside a
``try``), entry functions, the end of the driver, and the fix's shapes (``for`` loops over names,
attributes, ``enumerate``, ``.items()``, starred targets, lists, other options).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings), take the ast path, and give the stated answer:
the cancels reported are the lines marked ``# !``, each with what follows it (``raise``,
``return``, the exit call, ``end`` of the driver; ``@name`` the remote method) and its fix (``R``:
``cancel_and_wait``, ``W``: ``wait_for_cleanup``, ``-``: none). The same cases run with the
candidate tiers on (default options) and must give the same answer.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate

_SETTINGS = Settings(selected=("SHD501",), target_version="py311")
HEAD = "import os\nimport sys\nimport ray\n"
_FIXES = {"Replace with `runtime_guard.ray.cancel_and_wait()`": "R",
          "Wait for the cancelled work with `runtime_guard.ray.wait_for_cleanup()`": "W"}
_WHAT = re.compile(r"followed by (.+?) (?:out of the Ray remote method `(\w+)\(\)` )?without waiting")

CASES = {
    # ---------------------------------------------------------------- one logical line, several statements
    "cancel; raise on one line: the raise is not after it": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r); raise
        """),
    "cancel; raise on one line in main(): the end of the driver": (["end -"], """
        def main():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r); raise  # !
        """),
    "x = 1; cancel, raise below: no fix": (["raise -"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                x = 1; ray.cancel(r)  # !
                raise
        """),
    "raise; wait on a later line: the wait stops it": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                raise; ray.wait([r], timeout=5)
        """),
    "exit; get on a later line: the get stops it": ([], """
        def stop():
            ray.cancel(r)
            sys.exit(1); ray.get(r, timeout=5)
        """),
    "print; exit on a later line": (["sys.exit() R"], """
        def stop():
            ray.cancel(r)  # !
            print("bye"); sys.exit(1)
        """),
    "wait; backslash; raise: one line": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                print(1); \\
                raise
        """.replace("print(1)", "ray.wait([r], timeout=1)")),
    "print; backslash; raise: one line, raise on it": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                print(1); \\
                raise
        """),
    "raise; backslash; wait: one line, the wait stops it": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                raise; \\
                ray.wait([r], timeout=1)
        """),
    "x = 1; backslash; cancel: one line, no fix": (["raise -"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                x = 1; \\
                ray.cancel(r)  # !
                raise
        """),
    "cancel; backslash; raise: one line": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r); \\
                raise
        """),
    "backslash without a semicolon: two lines": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                x = \\
                    1
                raise
        """),
    "semicolon at the end of the cancel's line": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r);  # !
                raise
        """),
    "cancel first of two on its line: no fix": (["raise -"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r); print("x")  # !
                raise
        """),
    "raise then wait on separate lines: the raise comes first": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                raise
                ray.wait([r], timeout=5)
        """),
    # ---------------------------------------------------------------- bodies on their header's line
    "one-line handler": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt: ray.cancel(r); raise
        """),
    "one-line if, raise below": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                if r: ray.cancel(r)
                raise
        """),
    "one-line else": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                if not r:
                    pass
                else: ray.cancel(r)
                raise
        """),
    "one-line main guard with ray.init": ([], """
        ray.init()
        if __name__ == "__main__": ray.cancel(r)
        """),
    "backslash after the handler's colon": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt: \\
                ray.cancel(r)
            raise
        """),
    # ---------------------------------------------------------------- the cancel and its arguments
    "force=True": ([], """
        def main():
            ray.cancel(ref, force=True)
            sys.exit(1)
        """),
    "force=False": (["sys.exit() R"], """
        def main():
            ray.cancel(ref, force=False)  # !
            sys.exit(1)
        """),
    "force=(False)": (["sys.exit() R"], """
        def main():
            ray.cancel(ref, force=(False))  # !
            sys.exit(1)
        """),
    "force=0 counts as forced": ([], """
        def main():
            ray.cancel(ref, force=0)
            sys.exit(1)
        """),
    "force=None counts as forced": ([], """
        def main():
            ray.cancel(ref, force=None)
            sys.exit(1)
        """),
    "force=flag counts as forced": ([], """
        def main():
            ray.cancel(ref, force=flag)
            sys.exit(1)
        """),
    "force in **kw is not seen": (["sys.exit() R"], """
        def main():
            ray.cancel(ref, **{"force": True})  # !
            sys.exit(1)
        """),
    "recursive=True: a wait after it": (["sys.exit() W"], """
        def main():
            ray.cancel(ref, recursive=True)  # !
            sys.exit(1)
        """),
    "force=False, recursive=False: a wait after it": (["sys.exit() W"], """
        def main():
            ray.cancel(ref, force=False, recursive=False)  # !
            sys.exit(1)
        """),
    "*refs": (["sys.exit() R"], """
        def main():
            ray.cancel(*refs)  # !
            sys.exit(1)
        """),
    "**kw alone is the ref": (["sys.exit() R"], """
        def main():
            ray.cancel(**kw)  # !
            sys.exit(1)
        """),
    "keyword before *refs": (["sys.exit() W"], """
        def main():
            ray.cancel(recursive=True, *refs)  # !
            sys.exit(1)
        """),
    "no ref": ([], """
        def main():
            ray.cancel()
            ray.cancel(force=False)
            sys.exit(1)
        """),
    "cancel in a lambda": ([], """
        def main():
            stop = lambda: ray.cancel(r)
            sys.exit(1)
        """),
    "cancel's value used: no fix": (["sys.exit() -"], """
        def main():
            x = ray.cancel(r)  # !
            sys.exit(1)
        """),
    "cancel in parentheses": (["sys.exit() R"], """
        def main():
            (ray.cancel(r))  # !
            sys.exit(1)
        """),
    "awaited cancel: no fix": (["sys.exit() -"], """
        async def main():
            await ray.cancel(r)  # !
            sys.exit(1)
        """),
    "cancel on several lines": (["sys.exit() R"], """
        def main():
            ray.cancel(  # !
                r,
            )
            sys.exit(1)
        """),
    "aliases": (["sys.exit() R", "sys.exit() R"], """
        from ray import cancel as stop_it
        import ray as r
        def main():
            stop_it(a)  # !
            r.cancel(b)  # !
            sys.exit(1)
        """),
    "asyncio cancel is not ray.cancel": ([], """
        def main(task):
            task.cancel()
            sys.exit(1)
        """),
    "a subscript ref": (["sys.exit() R"], """
        def main():
            ray.cancel(refs[0])  # !
            sys.exit(1)
        """),
    "cancel in a comprehension: no fix": (["raise -"], """
        def main():
            [ray.cancel(r) for r in pending()]  # !
            raise SystemExit(1)
        """),
    # ---------------------------------------------------------------- the exits
    "exit() and quit()": (["exit() R", "quit() R"], """
        def a():
            ray.cancel(r)  # !
            exit(1)
        def b():
            ray.cancel(r)  # !
            quit()
        """),
    "os._exit": (["os._exit() R"], """
        def a():
            ray.cancel(r)  # !
            os._exit(1)
        """),
    "hard_exit": (["runtime_guard.hard_exit() R"], """
        import runtime_guard
        def a():
            ray.cancel(r)  # !
            runtime_guard.hard_exit(1)
        """),
    "sys.exit by another name": (["sys.exit() R"], """
        from sys import exit as bye
        def a():
            ray.cancel(r)  # !
            bye(1)
        """),
    "exit in parentheses": (["sys.exit() R"], """
        def a():
            ray.cancel(r)  # !
            (sys.exit(1))
        """),
    "exit's value used": ([], """
        def a():
            ray.cancel(r)
            x = sys.exit(1)
        """),
    "an awaited exit call is no exit call": ([], """
        async def main():
            ray.cancel(r)
            await sys.exit(1)
        """),
    "exit inside an if": ([], """
        def a():
            ray.cancel(r)
            if x:
                sys.exit(1)
        """),
    "raise SystemExit in a library function outside a handler": ([], """
        def a():
            ray.cancel(r)
            raise SystemExit(1)
        """),
    "return outside a handler": ([], """
        def main():
            ray.cancel(r)
            return 1
        """),
    "a shadowed exit": ([], """
        def exit(code):
            pass
        def a():
            ray.cancel(r)
            exit(1)
        """),
    # ---------------------------------------------------------------- handlers, finally, interrupt paths
    "library function, KeyboardInterrupt handler": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                raise
        """),
    "library function, ValueError handler": ([], """
        def stop():
            try:
                work()
            except ValueError:
                ray.cancel(r)
                raise
        """),
    "library function, a tuple with KeyboardInterrupt": (["raise R"], """
        def stop():
            try:
                work()
            except (ValueError, KeyboardInterrupt):
                ray.cancel(r)  # !
                raise
        """),
    "library function, a tuple with a starred element": (["raise R"], """
        def stop():
            try:
                work()
            except (*others, BaseException):
                ray.cancel(r)  # !
                raise
        """),
    "library function, bare except, return": (["return R"], """
        def stop():
            try:
                work()
            except:
                ray.cancel(r)  # !
                return None
        """),
    "library function, finally, return": (["return R"], """
        def stop():
            try:
                work()
            finally:
                ray.cancel(r)  # !
                return None
        """),
    "library function, except* KeyboardInterrupt": (["raise R"], """
        def stop():
            try:
                work()
            except* KeyboardInterrupt:
                ray.cancel(r)  # !
                raise
        """),
    "library function, except* ValueError": ([], """
        def stop():
            try:
                work()
            except* ValueError:
                ray.cancel(r)
                raise
        """),
    "an outer KeyboardInterrupt handler around a ValueError one": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                try:
                    more()
                except ValueError:
                    ray.cancel(r)  # !
                    raise
        """),
    "library function, the try's else": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                pass
            else:
                ray.cancel(r)
                raise
        """),
    "library function, the try's body": ([], """
        def stop():
            try:
                ray.cancel(r)
                raise
            finally:
                pass
        """),
    "return in a non-interrupt handler of a library function": ([], """
        def stop():
            try:
                work()
            except ValueError:
                ray.cancel(r)
                return None
        """),
    "handler, then a class body: the class stops the handler": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                class Later:
                    ray.cancel(r)
                    raise
        """),
    "handler, then a class body with an exit": (["sys.exit() R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                class Later:
                    ray.cancel(r)  # !
                    sys.exit(1)
        """),
    "handler, then a nested def": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                def later():
                    ray.cancel(r)
                    raise
        """),
    "a nested def in the handler with a raise after the cancel outside it": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                def later():
                    ray.wait([r], timeout=5)
                raise
        """),
    # ---------------------------------------------------------------- climbing out of blocks
    "if inside a handler, raise after it": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                if r:
                    ray.cancel(r)  # !
                raise
        """),
    "elif, raise after the chain": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                if a:
                    pass
                elif r:
                    ray.cancel(r)  # !
                else:
                    pass
                raise
        """),
    "else holding an if, wait after it in the else": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                if a:
                    pass
                else:
                    if r:
                        ray.cancel(r)
                    ray.wait([r], timeout=5)
                raise
        """),
    "else holding only an if, raise after the chain": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                if a:
                    pass
                else:
                    if r:
                        ray.cancel(r)  # !
                raise
        """),
    "with and async with": (["raise R", "raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                with lock:
                    ray.cancel(r)  # !
                raise
        async def astop():
            try:
                work()
            except KeyboardInterrupt:
                async with lock:
                    ray.cancel(r)  # !
                raise
        """),
    "a loop whose body waits": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                for x in xs:
                    ray.wait(xs, timeout=1)
                    ray.cancel(x)
                raise
        """),
    "a loop whose body does not wait": (["raise W"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                for x in xs:
                    ray.cancel(x)  # !
                raise
        """),
    "a loop's else, its body waits: no loop check": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                for x in xs:
                    ray.wait(xs, timeout=1)
                else:
                    ray.cancel(x)  # !
                raise
        """),
    "a while loop whose body waits": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                while pending:
                    ray.cancel(pending)
                    done, pending = ray.wait(pending, timeout=1)
                raise
        """),
    "a while loop's else": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                while pending:
                    done, pending = ray.wait(pending, timeout=1)
                else:
                    ray.cancel(r)  # !
                raise
        """),
    "an async for whose body waits": ([], """
        async def stop():
            try:
                work()
            except KeyboardInterrupt:
                async for x in xs:
                    ray.cancel(x)
                    ray.get(x, timeout=1)
                raise
        """),
    "a loop header's wait is not its body's (a subscript's refs: no fix)": (["raise -"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                for x in ray.wait(xs, timeout=1)[0]:
                    ray.cancel(x)  # !
                raise
        """),
    "a handler whose try's finally waits": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
            finally:
                ray.wait([r], timeout=5)
            raise RuntimeError
        """),
    "a handler whose try's finally waits in a nested def only": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
            finally:
                def later():
                    ray.wait([r], timeout=5)
            raise RuntimeError
        """),
    "an except* handler whose try's finally waits": ([], """
        def stop():
            try:
                work()
            except* KeyboardInterrupt:
                ray.cancel(r)
            finally:
                ray.wait([r], timeout=5)
            raise RuntimeError
        """),
    "a finally: its own waits are not asked again": (["raise R"], """
        def stop():
            try:
                work()
            finally:
                ray.cancel(r)  # !
            raise RuntimeError
        """),
    "a finally with a wait before the cancel": (["raise R"], """
        def stop():
            try:
                work()
            finally:
                ray.wait([r], timeout=5)
                ray.cancel(r)  # !
            raise RuntimeError
        """),
    "driver: the try's else, exit after the try": (["sys.exit() R"], """
        def main():
            try:
                work()
            except ValueError:
                pass
            else:
                ray.cancel(r)  # !
            sys.exit(1)
        """),
    "driver: the else of a try/except*, exit after the try": ([], """
        def main():
            try:
                work()
            except* ValueError:
                pass
            else:
                ray.cancel(r)
            sys.exit(1)
        """),
    "driver: the else of a try/except*, exit in the else": (["sys.exit() R"], """
        def main():
            try:
                work()
            except* ValueError:
                pass
            else:
                ray.cancel(r)  # !
                sys.exit(1)
        """),
    "driver: the body of a try/except*, exit after it": (["sys.exit() R"], """
        def main():
            try:
                ray.cancel(r)  # !
            except* ValueError:
                pass
            sys.exit(1)
        """),
    "driver: raise in main's try body": (["raise R"], """
        def main():
            try:
                ray.cancel(r)  # !
                raise RuntimeError
            except ValueError:
                pass
        """),
    "match case, exit after the match": ([], """
        def main():
            match x:
                case 1:
                    ray.cancel(r)
            sys.exit(1)
        """),
    "match case, exit in the case": (["sys.exit() R"], """
        def main():
            match x:
                case 1:
                    ray.cancel(r)  # !
                    sys.exit(1)
        """),
    "module-level class body": (["sys.exit() R"], """
        class Stopper:
            ray.cancel(r)  # !
            sys.exit(1)
        """),
    "module-level class body, exit after the class": ([], """
        class Stopper:
            ray.cancel(r)
        sys.exit(1)
        """),
    # ---------------------------------------------------------------- waits between
    "a lambda that waits": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                later = lambda: ray.wait([r], timeout=1)
                raise
        """),
    "a comprehension that waits": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                [ray.get(x, timeout=1) for x in [r]]
                raise
        """),
    "a decorated def whose decorator waits": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                @keep(ray.get(r, timeout=1))
                def later():
                    pass
                raise
        """),
    "a decorated class whose decorator waits": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                @keep(ray.get(r, timeout=1))
                class Later:
                    pass
                raise
        """),
    "an if that waits": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                if r:
                    ray.wait([r], timeout=1)
                raise
        """),
    "the helper waits": ([], """
        import runtime_guard
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                runtime_guard.ray.wait_for_cleanup(r, timeout=1)
                raise
        """),
    "a get with no timeout counts as a wait": ([], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                ray.get(r)
                raise
        """),
    "comments and blank lines between": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !  ray.wait([r], timeout=1)

                # ray.wait([r], timeout=1)
                raise
        """),
    # ---------------------------------------------------------------- broad handlers catching the raise
    "an outer except Exception catches the raise": ([], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)
                    raise
            except Exception:
                pass
        """),
    "an outer bare except": ([], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)
                    raise
            except:
                pass
        """),
    "an outer tuple with Exception": ([], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)
                    raise
            except (ValueError, Exception):
                pass
        """),
    "an outer tuple with a starred list: no qualified name": (["raise R"], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)  # !
                    raise
            except (ValueError, *[BaseException]):
                pass
        """),
    "an outer tuple with a starred Exception": ([], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)
                    raise
            except (ValueError, *Exception):
                pass
        """),
    "an outer except* Exception": ([], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)
                    raise
            except* Exception:
                pass
        """),
    "an outer except ValueError does not": (["raise R"], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)  # !
                    raise
            except ValueError:
                pass
        """),
    "the raise in the outer handler itself": (["raise R"], """
        def stop():
            try:
                work()
            except Exception:
                pass
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                raise
        """),
    "an outer except Exception in another function": (["raise R"], """
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
                raise
        def outer():
            try:
                stop()
            except Exception:
                pass
        """),
    "an exit is not caught": (["sys.exit() R"], """
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)  # !
                    sys.exit(1)
            except Exception:
                pass
        """),
    "Exception by another name": ([], """
        import builtins
        def stop():
            try:
                try:
                    work()
                except KeyboardInterrupt:
                    ray.cancel(r)
                    raise
            except builtins.Exception:
                pass
        """),
    # ---------------------------------------------------------------- driver, entry functions, the end of the driver
    "main(): a handler at its end": (["end R"], """
        def main():
            try:
                ray.get(r)
            except KeyboardInterrupt:
                print("stopping")
                ray.cancel(r)  # !
        """),
    "async main(): a handler at its end": (["end R"], """
        async def main():
            try:
                await work()
            except KeyboardInterrupt:
                ray.cancel(r)  # !
        """),
    "main(): the try body at its end": ([], """
        def main():
            try:
                ray.cancel(r)
            except KeyboardInterrupt:
                pass
        """),
    "a function the main guard calls": (["end R"], """
        def run():
            try:
                ray.get(r)
            except KeyboardInterrupt:
                ray.cancel(r)  # !
        if __name__ == "__main__":
            run()
        """),
    "a function the main guard's else calls": (["end R"], """
        def run():
            try:
                ray.get(r)
            except KeyboardInterrupt:
                ray.cancel(r)  # !
        if __name__ == "__main__":
            pass
        else:
            run()
        """),
    "a function handed to asyncio.run": ([], """
        import asyncio
        async def amain():
            try:
                ray.get(r)
            except KeyboardInterrupt:
                ray.cancel(r)
        if __name__ == "__main__":
            asyncio.run(amain())
        """),
    "a method named main": ([], """
        class App:
            def main(self):
                try:
                    ray.get(r)
                except KeyboardInterrupt:
                    ray.cancel(r)
        """),
    "a nested def named main": ([], """
        def outer():
            def main():
                try:
                    ray.get(r)
                except KeyboardInterrupt:
                    ray.cancel(r)
            return main
        """),
    "a driver function's raise outside a handler": (["raise R"], """
        def main():
            ray.init()
            ray.cancel(r)  # !
            raise RuntimeError("stop")
        """),
    "a driver helper's return in a ValueError handler": (["return R"], """
        def helper():
            try:
                work()
            except ValueError:
                ray.cancel(r)  # !
                return None
        def main():
            ray.init()
            helper()
        if __name__ == "__main__":
            main()
        """),
    "module level after ray.init: the end of the driver": (["end R"], """
        ray.init()
        ref = job.remote()
        ray.cancel(ref)  # !
        """),
    "module level without ray.init": ([], """
        ref = job.remote()
        ray.cancel(ref)
        """),
    "main guard: the end of the driver": (["end R"], """
        if __name__ == "__main__":
            try:
                ray.get(r)
            except KeyboardInterrupt:
                ray.cancel(r)  # !
        """),
    "main guard written the other way round, a; b": (["end -"], """
        if "__main__" == __name__:
            x = 1; ray.cancel(r)  # !
        """),
    "main guard's else": (["end R"], """
        if __name__ == "__main__":
            pass
        else:
            ray.cancel(r)  # !
        """),
    "main guard, a class body inside it": ([], """
        if __name__ == "__main__":
            class Stopper:
                ray.cancel(r)
        """),
    "a server coroutine re-raising its cancellation": ([], """
        import asyncio
        async def serve(ref):
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                ray.cancel(ref)
                raise
        """),
    # ---------------------------------------------------------------- Ray tasks and actors
    "actor: raise out of the remote method through a helper": (["raise W@run"], """
        @ray.remote(num_cpus=1)
        class TaskRunner:
            def run(self):
                self._loop()

            def _loop(self):
                futures = [a.remote(), b.remote()]
                try:
                    ray.get(futures)
                except Exception as e:
                    for f in futures:
                        ray.cancel(f)  # !
                    raise e
        """),
    "actor: the helper called inside a try": (["raise W@_loop"], """
        @ray.remote
        class TaskRunner:
            def run(self):
                try:
                    self._loop()
                except ValueError:
                    pass

            def _loop(self):
                try:
                    ray.get(self.futures)
                except Exception:
                    for f in self.futures:
                        ray.cancel(f)  # !
                    raise
        """),
    "actor: the helper called inside a try with only a finally": (["raise W@run"], """
        @ray.remote
        class TaskRunner:
            def run(self):
                try:
                    self._loop()
                finally:
                    pass

            def _loop(self):
                try:
                    ray.get(self.futures)
                except Exception:
                    for f in self.futures:
                        ray.cancel(f)  # !
                    raise
        """),
    "actor: return after the cancel": ([], """
        @ray.remote
        class Runner:
            def stop(self):
                try:
                    pass
                finally:
                    ray.cancel(self.ref)
                    return None
        """),
    "actor: exit after the cancel": ([], """
        @ray.remote
        class Runner:
            def stop(self):
                ray.cancel(self.ref)
                sys.exit(1)
        """),
    "actor: the end of the method": ([], """
        @ray.remote
        class Runner:
            def stop(self):
                try:
                    pass
                except KeyboardInterrupt:
                    ray.cancel(self.ref)
        """),
    "actor: the raise caught by the method's own broad handler": ([], """
        @ray.remote
        class Runner:
            def run(self):
                try:
                    try:
                        ray.get(self.futures)
                    except ValueError as e:
                        ray.cancel(self.futures)
                        raise e
                except Exception:
                    self.report_failure()
        """),
    "remote function": (["raise R@job"], """
        @ray.remote
        def job(ref):
            ray.cancel(ref)  # !
            raise RuntimeError
        """),
    "remote through ray.remote(Cls)": (["raise R@run"], """
        class Worker:
            def run(self, ref):
                ray.cancel(ref)  # !
                raise RuntimeError
        Actor = ray.remote(Worker)
        """),
    "async actor method": (["raise R@run"], """
        @ray.remote
        class Worker:
            async def run(self, ref):
                ray.cancel(ref)  # !
                raise RuntimeError
        """),
    "actor: a raise on the cancel's line": ([], """
        @ray.remote
        class Worker:
            def run(self, ref):
                ray.cancel(ref); raise RuntimeError
        """),
    # ---------------------------------------------------------------- the fix's shapes
    "for ref in refs": (["sys.exit() W"], """
        def stop(refs):
            for ref in refs:
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for ref in self.refs": (["sys.exit() W"], """
        class A:
            def stop(self):
                for ref in self.refs:
                    ray.cancel(ref)  # !
                sys.exit(1)
        """),
    "for ref in a call: no fix": (["sys.exit() -"], """
        def stop():
            for ref in pending():
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for ref in (refs)": (["sys.exit() W"], """
        def stop(refs):
            for (ref) in (refs):
                ray.cancel((ref))  # !
            sys.exit(1)
        """),
    "async for ref in refs": (["sys.exit() W"], """
        async def stop(refs):
            async for ref in refs:
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "enumerate(refs)": (["sys.exit() W"], """
        def stop(refs):
            for i, ref in enumerate(refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "enumerate(refs, 1): no fix": (["sys.exit() -"], """
        def stop(refs):
            for i, ref in enumerate(refs, 1):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "enumerate(*refs)": (["sys.exit() W"], """
        def stop(refs):
            for i, ref in enumerate(*refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "enumerate(iterable=refs)": (["sys.exit() W"], """
        def stop(refs):
            for i, ref in enumerate(iterable=refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "enumerate(**kw)": (["sys.exit() W"], """
        def stop(kw):
            for i, ref in enumerate(**kw):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "enumerate(self.refs)": (["sys.exit() W"], """
        class A:
            def stop(self):
                for i, ref in enumerate(self.refs):
                    ray.cancel(ref)  # !
                sys.exit(1)
        """),
    "enumerate(f()): no fix": (["sys.exit() -"], """
        def stop():
            for i, ref in enumerate(f()):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "d.items()": (["sys.exit() W"], """
        def stop(d):
            for k, ref in d.items():
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "self.d.items()": (["sys.exit() W"], """
        class A:
            def stop(self):
                for k, ref in self.d.items():
                    ray.cancel(ref)  # !
                sys.exit(1)
        """),
    "d.items(x): no fix": (["sys.exit() -"], """
        def stop(d):
            for k, ref in d.items(x):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "get().items(): no fix": (["sys.exit() -"], """
        def stop():
            for k, ref in get().items():
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "zip(a, b): no fix": (["sys.exit() -"], """
        def stop(a, b):
            for k, ref in zip(a, b):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for (i, ref) in enumerate(refs)": (["sys.exit() W"], """
        def stop(refs):
            for (i, ref) in enumerate(refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for i, *ref in enumerate(refs)": (["sys.exit() W"], """
        def stop(refs):
            for i, *ref in enumerate(refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for *i, ref in enumerate(refs)": (["sys.exit() W"], """
        def stop(refs):
            for *i, ref in enumerate(refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for [i, ref] in enumerate(refs): a list, not the loop's shape": (["sys.exit() R"], """
        def stop(refs):
            for [i, ref] in enumerate(refs):
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for i, j, ref in x: three": (["sys.exit() R"], """
        def stop(x):
            for i, j, ref in x:
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "for i, ref in refs: not a call": (["sys.exit() R"], """
        def stop(refs):
            for i, ref in refs:
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "the loop binds another name": (["sys.exit() R"], """
        def stop(refs, other):
            for ref in refs:
                ray.cancel(other)  # !
            sys.exit(1)
        """),
    "the cancel of an attribute in a loop": (["sys.exit() R"], """
        def stop(refs):
            for ref in refs:
                ray.cancel(ref.x)  # !
            sys.exit(1)
        """),
    "in a loop, deeper in an if": (["sys.exit() R"], """
        def stop(refs):
            for ref in refs:
                if ref:
                    ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "in a loop, two statements on the cancel's line": (["sys.exit() W"], """
        def stop(refs):
            for ref in refs:
                print(ref); ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "in a loop's else": (["sys.exit() R"], """
        def stop(refs):
            for ref in refs:
                pass
            else:
                ray.cancel(ref)  # !
            sys.exit(1)
        """),
    "in a loop with other options": (["sys.exit() W"], """
        def stop(refs):
            for ref in refs:
                ray.cancel(ref, recursive=True)  # !
            sys.exit(1)
        """),
    "in a loop over a call with other options: no fix": (["sys.exit() -"], """
        def stop():
            for ref in pending():
                ray.cancel(ref, recursive=True)  # !
            sys.exit(1)
        """),
    "in a loop, the end of the driver": (["end W"], """
        def main(refs):
            try:
                ray.get(refs)
            except KeyboardInterrupt:
                for ref in refs:
                    ray.cancel(ref)  # !
        """),
    # ---------------------------------------------------------------- non-ASCII
    "non-ASCII before the cancel": (["sys.exit() -"], """
        def main():
            é = "日本"; ray.cancel(réf)  # ! café
            sys.exit(1)
        """),
    "non-ASCII names": (["sys.exit() W"], """
        def main(réfs):
            for réf in réfs:
                ray.cancel(réf)  # !
            sys.exit("ü")
        """),
}


def _source(body: str) -> bytes:
    return (HEAD + textwrap.dedent(body)).encode()


def _marked(source: bytes) -> list[int]:
    return [i for i, line in enumerate(source.decode().splitlines(), 1) if "# !" in line]


def _answer(result) -> list[str]:
    out = []
    for d in result.diagnostics:
        found = _WHAT.search(d.message)
        assert found, d.message
        what, entry = found.groups()
        what = "end" if what == "the end of the driver" else what.strip("`")
        fix = _FIXES[d.fix["message"]] if d.fix else "-"
        out.append(f"{what} {fix}{'@' + entry if entry else ''}")
    return out


def _both_ways(source: bytes, monkeypatch, settings: Settings = _SETTINGS, ast_path: bool = True):
    return both_ways(source, monkeypatch, settings, "m.py", ast_path=ast_path)


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, body = CASES[name]
    source = _source(body)
    every_file_a_candidate(monkeypatch)
    result = _both_ways(source, monkeypatch)
    assert _answer(result) == expected
    assert [d.line for d in result.diagnostics] == _marked(source)


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on: a file they rule out takes neither engine, and
    they rule out none that reports."""
    expected, body = CASES[name]
    source = _source(body)
    result = _both_ways(source, monkeypatch, ast_path=False)
    assert _answer(result) == expected
    assert [d.line for d in result.diagnostics] == _marked(source)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_ends(newline, monkeypatch):
    """``a; b`` and backslash-joined lines read the same whatever the line ends."""
    every_file_a_candidate(monkeypatch)
    body = textwrap.dedent("""\
        def stop():
            try:
                work()
            except KeyboardInterrupt:
                ray.cancel(r)
                print(1); \\
                ray.wait([r], timeout=1); raise
                raise
        def stop2():
            try:
                work()
            except KeyboardInterrupt:
                x = 1; ray.cancel(r)
                print(1); \\
                raise
        """)
    source = (HEAD + body).replace("\n", newline).encode()
    result = _both_ways(source, monkeypatch)
    assert [(d.line, _answer(result)[i]) for i, d in enumerate(result.diagnostics)] == [(16, "raise -")]


def test_columns_and_messages(monkeypatch):
    every_file_a_candidate(monkeypatch)
    source = 'import ray, sys\ndef main():\n    é = "ü"; ray.cancel(réf)  # café\n    sys.exit(1)\n'
    (d,) = _both_ways(source.encode(), monkeypatch).diagnostics
    assert (d.line, d.column, d.end_column) == (3, 14, 29)  # 1-based characters (16 and 32 in UTF-8 bytes)
    assert d.message.startswith("`ray.cancel()` is followed by `sys.exit()` without waiting: the driver exits")
    assert d.fix is None


def test_cleanup_timeout_does_not_change_the_plan(monkeypatch):
    every_file_a_candidate(monkeypatch)
    settings = Settings(selected=("SHD501",), target_version="py311", rule_options={"SHD501": {"cleanup_timeout": 2.5}})
    (d,) = _both_ways(_source("""
        def main():
            ray.cancel(r)
            sys.exit(1)
        """), monkeypatch, settings).diagnostics
    assert d.fix["message"] == "Replace with `runtime_guard.ray.cancel_and_wait()`"


def test_fix_edits_still_come_from_libcst(monkeypatch):
    """A run that wants edits takes the libcst path and gets them."""
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    result = lint_source(_source(CASES["for ref in refs"][1]), "m.py", _SETTINGS, fix_edits=True)
    assert result.stage != STAGE_AST
    (d,) = result.diagnostics
    assert d.fix["edits"]
