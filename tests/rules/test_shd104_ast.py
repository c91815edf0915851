"""SHD104 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
``except*`` handlers (``TryStar``), bare ``except:``, ``except BaseException``, tuples (over
lines: the anchor is the element; starred elements; parenthesised types), re-raise forms
(``raise``, ``raise e``, ``raise e from x``, a different exception, one named "cancel"), loops
with ``break``/``continue`` (the fix climbs out of them: ``while True``, ``else`` blocks),
``match`` statements, ``finally`` blocks that ``return``, ``elif`` against ``else: if``, ``with``
blocks, bodies on their header's line and ``a; b`` lines, nested defs, lambdas and classes,
the cancel-then-await idiom, bookkeeping, an exception handed on or raised later, ``yield``, and
non-ASCII lines (character columns).

Each case runs through ``lint_source`` with the engine switch on and off (target py311, so the
fixes are planned too, and py310 where none is) and must give the same result (diagnostics
without edits, deps, warnings) and the stated number of findings. The candidate tiers stay on
(the ast path needs them): a case they rule out takes neither engine, which is asserted.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, STAGE_TEXT, STAGE_TREE, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import key

_PY311 = Settings(selected=("SHD104",), target_version="py311")
_PY310 = Settings(selected=("SHD104",))

#: name -> (findings (with the fix: "+"; without: "-"; the tier rules the file out: "tier"), body)
#: the body is a coroutine's code; ``H`` marks nothing: cases are whole modules
CASES = {
    # ---------------------------------------------------------------- the handler's types
    "cancelled, pass": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                pass
        """),
    "bare except": ("+", """
        async def f():
            try:
                await g()
            except:
                log()
        """),
    "base exception": ("+", """
        async def f():
            try:
                await g()
            except BaseException:
                log()
        """),
    "parenthesised type": ("+", """
        async def f():
            try:
                await g()
            except (BaseException):
                log()
        """),
    "tuple on one line": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except (asyncio.CancelledError, KeyboardInterrupt):
                log()
        """),
    "tuple over lines: the element is the anchor": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except (ValueError,
                    asyncio.CancelledError):
                log()
        """),
    "tuple with a starred element": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except (ValueError, *extra, BaseException):
                log()
        """),
    "one-element tuple": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except (asyncio.CancelledError,):
                pass
        """),
    "except Exception: not flagged": ("tier", """
        async def f():
            try:
                await g()
            except Exception:
                pass
        """),
    "an earlier handler catches it": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                pass
            except:
                pass
        """),
    "an earlier handler named cancel": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except anyio.get_cancelled_exc_class():
                pass
            except BaseException:
                pass
        """),
    "except star": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except* asyncio.CancelledError:
                pass
        """),
    "except star, tuple": ("tier", """
        import asyncio
        async def f():
            try:
                await g()
            except* (ValueError, asyncio.CancelledError) as eg:
                log(eg)
        """),
    "not in a coroutine": ("tier", """
        import asyncio
        def f():
            try:
                g()
            except asyncio.CancelledError:
                pass
        """),
    "nothing awaited in the try": ("tier", """
        import asyncio
        async def f():
            try:
                g()
            except asyncio.CancelledError:
                pass
        """),
    "async for and async with suspend": ("- +", """
        import asyncio
        async def f():
            try:
                async for x in g():
                    pass
            except asyncio.CancelledError:
                pass
            try:
                async with g():
                    pass
            except asyncio.CancelledError:
                pass
        """),
    "async comprehension suspends, the awaited lambda does not": ("+", """
        import asyncio
        async def f():
            try:
                xs = [x async for x in g()]
                h = lambda: g()
            except asyncio.CancelledError:
                pass
        """),
    "await only in a nested def": ("tier", """
        import asyncio
        async def f():
            try:
                async def inner():
                    await g()
            except asyncio.CancelledError:
                pass
        """),
    # ---------------------------------------------------------------- re-raise forms
    "bare raise": ("tier", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                log()
                raise
        """),
    "raise e from None": ("tier", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError as e:
                raise e from None
        """),
    "raise a different exception": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError as e:
                raise RuntimeError("stopped") from e
        """),
    "raise a cancellation-named exception": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                raise RequestCancelledError()
        """),
    "raise on some paths": ("- -", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError:
                if x:
                    raise
                return 1
        """),
    "nested handler raises its own": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                try:
                    h()
                except ValueError as v:
                    raise v
                raise
        """),
    "nested broad handler re-raises": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                try:
                    h()
                except BaseException as b:
                    raise b
                raise
        """),
    "sys.exit in the handler": ("", """
        import asyncio, sys
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                sys.exit(1)
        """),
    "raise SystemExit": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                log()
                raise SystemExit(3)
        """),
    # ---------------------------------------------------------------- loops
    "break out of the loop": ("+", """
        import asyncio
        async def f(xs):
            for x in xs:
                try:
                    await g(x)
                except asyncio.CancelledError:
                    break
        """),
    "continue in the loop": ("+", """
        import asyncio
        async def f(xs):
            for x in xs:
                try:
                    await g(x)
                except asyncio.CancelledError:
                    continue
        """),
    "continue in while True": ("+", """
        import asyncio
        async def f():
            while True:
                try:
                    await g()
                except asyncio.CancelledError:
                    continue
        """),
    "break, then code after the loop": ("-", """
        import asyncio
        async def f(xs):
            for x in xs:
                try:
                    await g(x)
                except asyncio.CancelledError:
                    break
            done()
        """),
    "continue in a loop with an else": ("-", """
        import asyncio
        async def f(xs):
            for x in xs:
                try:
                    await g(x)
                except asyncio.CancelledError:
                    continue
            else:
                done()
        """),
    "break in a while True with its own break": ("+", """
        import asyncio
        async def f():
            while True:
                try:
                    await g()
                except asyncio.CancelledError:
                    break
                if h():
                    break
        """),
    "raise inside a loop that may not run": ("-", """
        import asyncio
        async def f(xs):
            try:
                await g()
            except asyncio.CancelledError:
                for x in xs:
                    raise
        """),
    "raise inside a loop over a literal": ("", """
        import asyncio
        async def f(xs):
            try:
                await g()
            except asyncio.CancelledError:
                for x in [1]:
                    raise
        """),
    "raise inside a loop over a string": ("", """
        import asyncio
        async def f(xs):
            try:
                await g()
            except asyncio.CancelledError:
                for x in "ab":
                    raise
        """),
    "raise inside a loop over concatenated strings": ("-", """
        import asyncio
        async def f(xs):
            try:
                await g()
            except asyncio.CancelledError:
                for x in "a" "b":
                    raise
        """),
    "raise inside a loop over range(2)": ("", """
        import asyncio
        async def f(xs):
            try:
                await g()
            except asyncio.CancelledError:
                for x in range(2):
                    raise
        """),
    "break before the raise": ("- - -", """
        import asyncio
        async def f(xs):
            for y in xs:
                try:
                    await g()
                except asyncio.CancelledError:
                    if y:
                        break
                    elif h():
                        continue
                    raise
        """),
    "endless loop in the handler": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                while True:
                    await asyncio.sleep(1)
        """),
    "while 1 with a raise": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                while 1:
                    raise
        """),
    # ---------------------------------------------------------------- match
    "match with an irrefutable case": ("", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError:
                match x:
                    case 1:
                        raise
                    case _:
                        raise
        """),
    "match without one": ("-", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError:
                match x:
                    case 1:
                        raise
                    case y if y:
                        raise
        """),
    "match case returns": ("- -", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError:
                match x:
                    case 1:
                        return
                    case _:
                        raise
        """),
    "handler in a match case": ("-", """
        import asyncio
        async def f(x):
            match x:
                case 1:
                    try:
                        await g()
                    except asyncio.CancelledError:
                        pass
        """),
    # ---------------------------------------------------------------- finally
    "finally returns over the raise": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                try:
                    raise
                finally:
                    return
        """),
    "finally of the try runs cleanup": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                pass
            finally:
                cleanup()
        """),
    "finally raises": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                pass
            finally:
                raise RuntimeError()
        """),
    "falls into the outer handler's raise": ("", """
        import asyncio
        async def f():
            try:
                await g()
            except BaseException:
                try:
                    await h()
                except asyncio.CancelledError:
                    pass
                raise
        """),
    "falls into a raise after an if block": ("", """
        import asyncio
        async def f(x):
            if x:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            elif x is None:
                pass
            else:
                pass
            raise Stop()
        """),
    "falls into a raise after an elif block": ("", """
        import asyncio
        async def f(x):
            if x:
                pass
            elif x is None:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            raise Stop()
        """),
    "falls into a raise after an else: if block": ("", """
        import asyncio
        async def f(x):
            if x:
                pass
            else:
                if x is None:
                    try:
                        await g()
                    except asyncio.CancelledError:
                        pass
                raise Stop()
        """),
    "falls into a raise after a with block": ("", """
        import asyncio
        async def f(x):
            async with lock:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            raise Stop()
        """),
    "falls into the loop's next round": ("-", """
        import asyncio
        async def f(xs):
            for x in xs:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            raise Stop()
        """),
    # ---------------------------------------------------------------- the fix climbs
    "fix: in an if, then the function ends": ("+", """
        import asyncio
        async def f(x):
            if x:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
        """),
    "fix: in an elif": ("+", """
        import asyncio
        async def f(x):
            if x:
                pass
            elif x is None:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            else:
                pass
        """),
    "no fix: code after the else: if": ("-", """
        import asyncio
        async def f(x):
            if x:
                pass
            else:
                if x is None:
                    try:
                        await g()
                    except asyncio.CancelledError:
                        pass
                log()
        """),
    "fix: more code in the loop after the handler": ("+", """
        import asyncio
        async def f(xs):
            for x in xs:
                try:
                    await g(x)
                except asyncio.CancelledError:
                    pass
                log(x)
        """),
    "no fix: more code in the elif after the handler": ("-", """
        import asyncio
        async def f(x):
            if x:
                pass
            elif x is None:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
                log(x)
        """),
    "no fix: an outer try catches it": ("-", """
        import asyncio
        async def f():
            try:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            except BaseException:
                raise
        """),
    "fix: an outer try catching other things": ("+", """
        import asyncio
        async def f():
            try:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            except ValueError:
                raise
        """),
    "no fix: an outer try with an else": ("-", """
        import asyncio
        async def f():
            try:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            except ValueError:
                raise
            else:
                log()
        """),
    "fix: in an outer handler": ("+", """
        import asyncio
        async def f():
            try:
                await h()
            except ValueError:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
        """),
    "no fix: in a finally": ("-", """
        import asyncio
        async def f():
            try:
                pass
            finally:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
        """),
    "fix: in a try's else": ("+", """
        import asyncio
        async def f():
            try:
                pass
            except ValueError:
                return
            else:
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
        """),
    "return of a value in a cancelled handler: no fix": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                return 1
        """),
    "return None: no fix (libcst's return of a value)": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                return None
        """),
    "return of a value in a broad handler: fix": ("+", """
        async def f():
            try:
                await g()
            except BaseException:
                return 1
        """),
    "a; return on one line": ("+", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                log(); return
        """),
    "handler body on its header line": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError: log(); return 2
        """),
    "handler body on its header line, return": ("+", """
        import asyncio as aio
        async def f():
            try:
                await g()
            except aio.CancelledError: return
        """),
    "module-level try: no coroutine": ("tier", """
        import asyncio
        try:
            asyncio.run(g())
        except asyncio.CancelledError:
            pass
        """),
    # ---------------------------------------------------------------- cancel, then await
    "cancel then await, CancelledError": ("tier", """
        import asyncio
        async def stop(self):
            self.task.cancel()
            try:
                await self.task
            except asyncio.CancelledError:
                pass
        """),
    "cancel then await, BaseException: narrow fix": ("+", """
        import asyncio
        async def stop(self):
            self.task.cancel()
            try:
                await self.task
            except BaseException:
                pass
        """),
    "cancel then await gather, bare": ("+", """
        import asyncio
        async def stop(tasks):
            for t in tasks:
                t.cancel()
            try:
                await asyncio.gather(*tasks)
            except:
                pass
        """),
    "cancel then await gather, tuple: no fix": ("-", """
        import asyncio
        async def stop(tasks):
            tasks[0].cancel()
            try:
                await asyncio.gather(tasks[0], return_exceptions=True)
            except (asyncio.CancelledError, BaseException):
                pass
        """),
    "cancel then await a fresh call": ("+", """
        import asyncio
        async def stop(t):
            t.cancel()
            try:
                await asyncio.gather(g())
            except BaseException:
                pass
        """),
    # ---------------------------------------------------------------- bookkeeping, hand-on
    "uncancel bookkeeping": ("tier", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                asyncio.current_task().uncancel()
        """),
    "bookkeeping only in a nested def": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                def later():
                    asyncio.current_task().uncancel()
                return later
        """),
    "broad handler hands the exception on": ("tier", """
        async def f(errors):
            try:
                await g()
            except BaseException as e:
                errors.append(e)
        """),
    "broad handler uses e only as a keyword's name: handed on (libcst's Name)": ("", """
        async def f(errors):
            try:
                await g()
            except BaseException as e:
                log(e=1)
        """),
    "broad handler, e in an f-string": ("tier", """
        async def f(errors):
            try:
                await g()
            except BaseException as e:
                log(f"{e}")
        """),
    "saved and raised later": ("", """
        import asyncio
        async def f(self):
            try:
                await g()
            except asyncio.CancelledError as e:
                self.err = e
            if self.err:
                raise (self.err)
        """),
    "saved in a list, raised later in a group": ("", """
        import asyncio
        async def f(errors):
            try:
                await g()
            except asyncio.CancelledError as e:
                errors.append(e)
            raise ExceptionGroup("x", errors)
        """),
    "saved, raised only in a nested def": ("-", """
        import asyncio
        async def f(errors):
            try:
                await g()
            except asyncio.CancelledError as e:
                saved = e
            def later():
                raise saved
        """),
    # ---------------------------------------------------------------- yield
    "yield in a re-raising handler": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                yield 1
                raise
        """),
    "yield in a nested lambda or def": ("tier", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                h = lambda: (yield)
                class K:
                    def m(self):
                        yield 2
                raise
        """),
    # ---------------------------------------------------------------- several ways out
    "two returns": ("- - -", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError:
                if x:
                    return 1
                return 2
        """),
    "return on the handler's line": ("+", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError: return
        """),
    "nested def in the coroutine": ("+", """
        import asyncio
        def outer():
            async def f():
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
            return f
        """),
    "method of a class": ("+", """
        import asyncio
        class K:
            async def f(self):
                try:
                    await g()
                except asyncio.CancelledError:
                    pass
        """),
    "lambda in the try body": ("+", """
        import asyncio
        async def f():
            try:
                await g(lambda: 1)
            except asyncio.CancelledError:
                pass
        """),
    # ---------------------------------------------------------------- non-ASCII lines
    "non-ASCII before the handler's anchor": ("+", """
        import asyncio
        async def f():
            try:
                await g("é")
            except (ValueError,
                    "日本", asyncio.CancelledError):  # café
                pass
        """),
    "non-ASCII before a return": ("- - -", """
        import asyncio
        async def f(x):
            try:
                await g()
            except asyncio.CancelledError:
                if x: é = 1; return
                ü = "日本"; return 2
        """),
    "non-ASCII before a raise": ("-", """
        import asyncio
        async def f():
            try:
                await g()
            except asyncio.CancelledError:
                é = "日本"; raise ValueError("ü")
        """),
}


_key = key


def _both_ways(source: bytes, monkeypatch, settings: Settings):
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(source, "m.py", settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(source, "m.py", settings, fix_edits=False)
    assert _key(on) == _key(off)
    return on, off


def _answer(result) -> str:
    return " ".join("+" if d.fix else "-" for d in result.diagnostics)


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    source = textwrap.dedent(source).encode()
    on, off = _both_ways(source, monkeypatch, _PY311)
    if expected == "tier":
        assert on.stage == off.stage and on.stage in (STAGE_TEXT, STAGE_TREE)
        return
    assert on.stage == STAGE_AST and off.stage != STAGE_AST
    assert _answer(on) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_without_fixes_before_311(name, monkeypatch):
    _, source = CASES[name]
    on, _ = _both_ways(textwrap.dedent(source).encode(), monkeypatch, _PY310)
    assert not any(d.fix for d in on.diagnostics)


def _column(source: str, line: int, text: str) -> int:
    """The 1-based character column of ``text`` on ``line`` (UTF-8 bytes would give more)."""
    return source.splitlines()[line - 1].index(text) + 1


def test_columns_and_anchors(monkeypatch):
    source = textwrap.dedent(CASES["non-ASCII before the handler's anchor"][1])
    (d,) = _both_ways(source.encode(), monkeypatch, _PY311)[0].diagnostics
    assert (d.line, d.column) == (7, _column(source, 7, "asyncio.CancelledError"))  # the element on its line
    source = textwrap.dedent(CASES["non-ASCII before a return"][1])
    rows = [(d.line, d.column) for d in _both_ways(source.encode(), monkeypatch, _PY311)[0].diagnostics]
    assert rows == [(6, 5), (7, _column(source, 7, "return")), (8, _column(source, 8, "return 2"))]
    source = textwrap.dedent(CASES["tuple with a starred element"][1])
    (d,) = _both_ways(source.encode(), monkeypatch, _PY311)[0].diagnostics
    assert d.message.startswith("`except (ValueError, extra, BaseException)` in a coroutine")
