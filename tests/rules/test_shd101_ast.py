"""SHD101 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
``return_exceptions=False`` (a name in libcst, a constant in ``ast``) and ``**k`` in source order,
``*a`` children, ``None``/``True`` children (names in libcst), bound and appended lists, task makers
with a keyword first, ``finally`` blocks as ``Try.finalbody`` (``try*``, ``match``, nested defs left
out) and the first of them in source order, ``async with`` items, stub bodies (a docstring, ``...``,
a concatenated f-string is one, an f-string alone is not), overrides, reaping through ``for`` loops
and comprehension ``for``s (libcst's ``CompFor`` holds the ``for``s after it, not the element),
the fix's statement shapes (``a; b``, a body on its header's line, a backslash, ``x = y =``,
augmented assignment, lambdas), handlers that make the fix message ask for ``except*`` (bare
``raise`` on the handler's last line, ``except*``), keywords of tqdm's gather, and code text in
messages (parentheses, several lines, CRLF/CR line ends, non-ASCII).

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
FIX = "Rewrite into `asyncio.TaskGroup` (failures arrive as ExceptionGroup)"
STAR = ("Rewrite into `asyncio.TaskGroup` (failures arrive as ExceptionGroup: "
        "the handler around it needs `except*`)")

HEAD = """\
import abc, asyncio
from tqdm.asyncio import tqdm
async def run_trial(c):
    try:
        await c.run()
    finally:
        await c.close()
async def square(x):
    return x * x
"""

TRIAL = "`run_trial(...)` (`run_trial` has a `finally` block)"

#: name -> (what the message says of the first owner, or NO; the fix message, or None; source)
CASES = {
    # ---------------------------------------------------------------- return_exceptions, arguments
    "return_exceptions=False": (TRIAL, FIX, """
        async def main(cs):
            await asyncio.gather(*[run_trial(c) for c in cs], return_exceptions=False)
        """),
    "return_exceptions=True": (NO, None, """
        async def main(cs):
            await asyncio.gather(*[run_trial(c) for c in cs], return_exceptions=True)
        """),
    "return_exceptions=0 may return": (NO, None, """
        async def main(cs):
            await asyncio.gather(run_trial(1), run_trial(2), return_exceptions=0)
        """),
    "return_exceptions=(False)": (TRIAL, FIX, """
        async def main(cs):
            await asyncio.gather(run_trial(1), run_trial(2), return_exceptions=(False))
        """),
    "**k before return_exceptions=False": (NO, None, """
        async def main(k):
            await asyncio.gather(run_trial(1), run_trial(2), **k, return_exceptions=False)
        """),
    "**k after return_exceptions=False": (TRIAL, FIX, """
        async def main(k):
            await asyncio.gather(run_trial(1), run_trial(2), return_exceptions=False, **k)
        """),
    "one child": (NO, None, """
        async def main():
            await asyncio.gather(run_trial(1))
        """),
    "one starred child": (TRIAL, FIX, """
        async def main(cs):
            await asyncio.gather(*(run_trial(c) for c in cs))
        """),
    "a keyword only": (NO, None, """
        async def main(cs):
            await asyncio.gather(loop=None)
        """),
    "tqdm, one child": ("tqdm's `gather` over " + TRIAL, FIX, """
        async def main():
            await tqdm.gather(run_trial(1), desc="x")
        """),
    "tqdm timeout: no fix": ("tqdm's `gather` over " + TRIAL, None, """
        async def main():
            return await tqdm.gather(run_trial(1), run_trial(2), timeout=3)
        """),
    "asyncio keyword: no fix": (TRIAL, None, """
        async def main():
            return await asyncio.gather(run_trial(1), run_trial(2), loop=None)
        """),
    # ---------------------------------------------------------------- children
    "None and True children are names": ("`None` (its name mentions `none`)", None, """
        async def main():
            await asyncio.gather(None, True, run_trial(1))
        """, {"extra-resource-words": ["none"]}),
    "a bound coroutine": (TRIAL, FIX, """
        async def main():
            a = run_trial(1)
            await asyncio.gather(a, square(2))
        """),
    "a bound comprehension": (TRIAL, None, """
        async def main(cs):
            coros = [run_trial(c) for c in cs]
            await asyncio.gather(*coros)
        """),
    "an empty bound list, then appended": (TRIAL, None, """
        async def main(cs):
            coros = []
            for c in cs:
                coros.append(run_trial(c))
            await asyncio.gather(*coros)
        """),
    "appended with a keyword": (TRIAL, None, """
        async def main(cs):
            coros = set()
            coros.add(x=run_trial(1))
            await asyncio.gather(*coros, square(1))
        """, {"extra-resource-words": ["coro"]}),
    "appended starred": ("`open_sandbox_list` (its name mentions `sandbox`)", None, """
        async def main(cs):
            jobs = []
            jobs.append(*open_sandbox_list)
            await asyncio.gather(*jobs)
        """),
    "an opaque iterable": ("`*self.sandbox_coros` (its name mentions `sandbox`)", None, """
        async def main(self):
            await asyncio.gather(*self.sandbox_coros)
        """),
    "a starred list and tuple inside": (TRIAL, FIX, """
        async def main():
            await asyncio.gather(*[square(1), *(run_trial(2),)])
        """),
    "a set is opaque": (NO, None, """
        async def main():
            await asyncio.gather(*{run_trial(1), square(2)})
        """, {"extra-resource-words": ["x"]}),
    "a task maker with a keyword first": (TRIAL, None, """
        async def main():
            await asyncio.gather(asyncio.create_task(coro=run_trial(1)), square(2))
        """),
    "a task maker without arguments": ("`asyncio.ensure_future(...)`", FIX, """
        async def main():
            await asyncio.gather(asyncio.ensure_future(), square(2))
        """, {"extra-resource-words": ["future"]}),
    "a long non-call child is cut": ("`self.sandbox_pool_with_a_very_long_name_` (", None, """
        async def main(self):
            await asyncio.gather(self.sandbox_pool_with_a_very_long_name_here[index], square(2))
        """),
    "a lifecycle verb on a resource": ("`self.env.reset(...)` (`self.env.reset` manages a resource)", FIX, """
        async def main(self):
            await asyncio.gather(self.env.reset(), square(2))
        """),
    # ---------------------------------------------------------------- owning
    "async with a lock: not owning": (NO, None, """
        async def step(lock):
            async with lock:
                return 1
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "async with a lock, then a resource": ("`step` has `async with make()`", FIX, """
        async def step(lock):
            async with lock, make():
                return 1
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "async with before a finally": ("`step` has `async with (pool.conn())`", FIX, """
        async def step():
            async with (pool.conn()) as c:
                try:
                    pass
                finally:
                    pass
        async def main():
            await asyncio.gather(step(), step())
        """),
    "a finally in a match case, after an async with in an else": ("`step` has a `finally` block", FIX, """
        async def step(x):
            match x:
                case 1:
                    try:
                        pass
                    finally:
                        pass
            if x:
                pass
            else:
                async with pool.conn():
                    pass
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "a finally of try*": ("`step` has a `finally` block", FIX, """
        async def step(x):
            try:
                pass
            except* ValueError:
                pass
            finally:
                pass
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "a finally in an except handler": ("`step` has a `finally` block", FIX, """
        async def step(x):
            try:
                pass
            except ValueError:
                try:
                    pass
                finally:
                    pass
            else:
                async with pool.conn():
                    pass
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "an async with in a try's else": ("`step` has `async with pool.conn()`", FIX, """
        async def step(x):
            try:
                pass
            except ValueError:
                pass
            else:
                async with pool.conn():
                    pass
            while x:
                try:
                    pass
                finally:
                    pass
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "a nested def's finally does not count": (NO, None, """
        async def step(x):
            def inner():
                try:
                    pass
                finally:
                    pass
            class K:
                async def m(self):
                    async with pool.conn():
                        pass
            return inner
        async def main():
            await asyncio.gather(step(1), step(2))
        """),
    "an async with over several lines": ("`step` has `async with pool.conn(\n    1,\n)`", FIX, """
        async def step():
            if True:
                async with pool.conn(
                    1,
                ):
                    pass
        async def main():
            await asyncio.gather(step(), step())
        """),
    "a helper two calls deep": ("`inner` has a `finally` block", FIX, """
        async def inner():
            try:
                pass
            finally:
                pass
        async def middle():
            await inner()
        async def outer():
            await middle()
        async def main():
            await asyncio.gather(outer(), square(1))
        """),
    "too deep": (NO, None, """
        async def inner():
            try:
                pass
            finally:
                pass
        async def a():
            await inner()
        async def b():
            await a()
        async def c():
            await b()
        async def main():
            await asyncio.gather(c(), square(1))
        """),
    "calls a resource": ("`step` calls `self.open_sandbox`", FIX, """
        class R:
            async def step(self):
                await self.open_sandbox()
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        """),
    # ---------------------------------------------------------------- stubs and overrides
    "an abstract method, its override owns": ("`Base.step` is abstract here; its override `step` has a `finally`", FIX, """
        class Base:
            @abc.abstractmethod
            async def step(self):
                return await self.other()
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                try:
                    pass
                finally:
                    pass
        """),
    "a docstring stub": ("`Base.step` is abstract here", FIX, """
        class Base:
            async def step(self):
                "doc"
                raise NotImplementedError()
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(*[Base], Base):
            pass
        class Sub2(Sub):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    "an f-string alone is no stub": (NO, None, """
        class Base:
            async def step(self):
                f"doc"
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    "a concatenated f-string is a stub": ("`Base.step` is abstract here", FIX, """
        class Base:
            async def step(self):
                (f"doc"
                 "more")
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    "bytes, ellipsis and pass; a stub override is left out": ("`Base.step` is abstract here", FIX, """
        class Base:
            async def step(self):
                b"doc"; ...; pass
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                ...
        class Sub2(Base):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    "None is no docstring": (NO, None, """
        class Base:
            async def step(self):
                None
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    "raise ValueError is no stub": (NO, None, """
        class Base:
            async def step(self):
                raise ValueError
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    "a stub override is left out, its own overrides are not": ("`Base.step` is abstract here; its override `step` has a", FIX, """
        class Base:
            async def step(self):
                pass
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                pass
        class Sub3(Sub):
            async def step(self):
                try:
                    pass
                finally:
                    pass
        """),
    "raise NotImplementedError from": ("`Base.step` is abstract here", FIX, """
        class Base:
            async def step(self):
                raise NotImplementedError from None
            async def main(self):
                await asyncio.gather(self.step(), self.step())
        class Sub(Base):
            async def step(self):
                async with pool.conn():
                    pass
        """),
    # ---------------------------------------------------------------- reaping
    "reap after a for loop": (NO, None, """
        async def main(sandbox_tasks):
            for t in sandbox_tasks:
                t.cancel()
            await asyncio.gather(*sandbox_tasks)
        """),
    "no reap: the element of a comprehension": ("`*sandbox_tasks` (its name mentions `sandbox`)", None, """
        async def main(sandbox_tasks):
            [t.cancel() for t in sandbox_tasks]
            await asyncio.gather(*sandbox_tasks, *[run_trial(1)])
        """),
    "reap: a cancel in a comprehension's condition": (NO, None, """
        async def main(sandbox_tasks):
            [0 for t in sandbox_tasks if t.cancel()]
            await asyncio.gather(*sandbox_tasks)
        """),
    "reap: a cancel in a later for's iterable": (NO, None, """
        async def main(sandbox_tasks):
            [0 for t in sandbox_tasks for _ in [t.cancel()]]
            await asyncio.gather(*list(sandbox_tasks), *sandbox_tasks.values())
        """),
    "no reap: an earlier for's target only": ("`*sandbox_tasks` (its name mentions `sandbox`)", None, """
        async def main(sandbox_tasks, groups):
            [0 for ts in groups for t in ts if t.cancel()]
            await asyncio.gather(*groups, *sandbox_tasks)
        """),
    "reap: an earlier for's target": (NO, None, """
        async def main(sandbox_tasks, groups):
            [0 for ts in sandbox_tasks for t in [ts.cancel()]]
            await asyncio.gather(*sandbox_tasks)
        """),
    "reap through a parenthesised receiver": (NO, None, """
        async def main(sandbox_tasks):
            async for (t) in sandbox_tasks:
                (t).cancel()
            await asyncio.gather(*sandbox_tasks)
        """),
    "a loop outside the function does not reap": ("`*sandbox_tasks` (its name", None, """
        for t in sandbox_tasks:
            async def main():
                t.cancel()
                await asyncio.gather(*sandbox_tasks)
        """),
    "a cancel after the gather does not reap": ("`*sandbox_tasks` (its name mentions `sandbox`)", None, """
        async def main(sandbox_tasks):
            await asyncio.gather(*sandbox_tasks, run_trial(1))
            for t in sandbox_tasks:
                t.cancel()
        """),
    "a lambda's cancel in the function counts": (NO, None, """
        async def main(sandbox_tasks):
            f = lambda: [t.cancel() for t in sandbox_tasks]
            for t in sandbox_tasks:
                g = lambda: t.cancel()
            await asyncio.gather(*sandbox_tasks)
        """),
    # ---------------------------------------------------------------- the fix's statement
    "assigned": (TRIAL, FIX, """
        async def main():
            x = await asyncio.gather(run_trial(1), square(2))
        """),
    "annotated": (TRIAL, FIX, """
        async def main():
            x: list = await asyncio.gather(run_trial(1), square(2))
        """),
    "two targets": (TRIAL, FIX, """
        async def main():
            x = y = await asyncio.gather(run_trial(1), square(2))
        """),
    "augmented: no fix": (TRIAL, None, """
        async def main():
            x += await asyncio.gather(run_trial(1), square(2))
        """),
    "returned": (TRIAL, FIX, """
        async def main():
            return await asyncio.gather(run_trial(1), square(2))
        """),
    "inside a larger expression: no fix": (TRIAL, None, """
        async def main():
            return [await asyncio.gather(run_trial(1), square(2))]
        """),
    "an attribute of the gather: no fix": (TRIAL, None, """
        async def main():
            x = asyncio.gather(run_trial(1), square(2)).result
        """),
    "not awaited: no fix": (TRIAL, None, """
        async def main():
            return asyncio.gather(run_trial(1), square(2))
        """),
    "parenthesised await": (TRIAL, FIX, """
        async def main():
            (await asyncio.gather(run_trial(1), square(2)))
        """),
    "a; b: no fix": (TRIAL, None, """
        async def main():
            a = 1; await asyncio.gather(run_trial(1), square(2))
        """),
    "b; a: no fix": (TRIAL, None, """
        async def main():
            await asyncio.gather(run_trial(1), square(2)); a = 1
        """),
    "a backslash between a; b: no fix": (TRIAL, None, """
        async def main():
            a = 1 \\
              ; await asyncio.gather(run_trial(1), square(2))
        """),
    "a trailing semicolon": (TRIAL, FIX, """
        async def main():
            await asyncio.gather(run_trial(1), square(2));
            a = 1
        """),
    "on its header line: no fix": (TRIAL, None, """
        async def main(x):
            if x: await asyncio.gather(run_trial(1), square(2))
        """),
    "after a header's backslash: no fix": (TRIAL, None, """
        async def main(x):
            if x: \\
                await asyncio.gather(run_trial(1), square(2))
        """),
    "in a plain def: no fix": (TRIAL, None, """
        def main(loop):
            loop.run_until_complete(asyncio.gather(run_trial(1), square(2)))
        """),
    "in a lambda: no fix": (TRIAL, None, """
        async def main():
            f = lambda: asyncio.gather(run_trial(1), square(2))
        """),
    "at module level: no fix": (TRIAL, None, """
        x = asyncio.gather(run_trial(1), square(2))
        """),
    # ---------------------------------------------------------------- handlers around it
    "except ValueError asks for except*": (TRIAL, STAR, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except ValueError:
                pass
        """),
    "except CancelledError is neutral": (TRIAL, FIX, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except (asyncio.CancelledError, KeyboardInterrupt):
                pass
        """),
    "except Exception re-raising is neutral": (TRIAL, FIX, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except Exception:
                log()
                log(); raise
        """),
    "a bare raise before the last line": (TRIAL, STAR, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except Exception:
                raise
                log()
        """),
    "a bare raise first on the last line": (TRIAL, FIX, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except BaseException:
                raise; log()
        """),
    "a bare raise on the except line": (TRIAL, FIX, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except: log(); raise
        """),
    "raising something else": (TRIAL, STAR, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except Exception as e:
                raise e
        """),
    "a compound last statement": (TRIAL, STAR, """
        async def main(x):
            try:
                await asyncio.gather(run_trial(1), square(2))
            except Exception:
                if x:
                    raise
        """),
    "a starred handler tuple": (TRIAL, STAR, """
        async def main(errs):
            try:
                await asyncio.gather(run_trial(1), square(2))
            except (*errs, KeyboardInterrupt):
                pass
        """),
    "a starred handler tuple of a neutral name": (TRIAL, FIX, """
        from asyncio import CancelledError as C
        async def main(errs):
            try:
                await asyncio.gather(run_trial(1), square(2))
            except (*C,):
                pass
        """),
    "an empty handler tuple, re-raising": (TRIAL, FIX, """
        async def main(errs):
            try:
                await asyncio.gather(run_trial(1), square(2))
            except ():
                raise
        """),
    "except* is already written for groups": (TRIAL, FIX, """
        async def main():
            try:
                await asyncio.gather(run_trial(1), square(2))
            except* ValueError:
                pass
        """),
    "the gather in a handler": (TRIAL, FIX, """
        async def main():
            try:
                pass
            except ValueError:
                await asyncio.gather(run_trial(1), square(2))
        """),
    "a try outside the function": (TRIAL, FIX, """
        try:
            async def main():
                await asyncio.gather(run_trial(1), square(2))
        except ValueError:
            pass
        """),
    # ---------------------------------------------------------------- code text
    "a callee over several lines": ("`self.sandbox\n    .start(...)` (`self.sandbox\n    .start` manages a resource)", FIX, """
        class R:
            async def main(self):
                await asyncio.gather(self.sandbox
                    .start(), square(1))
        """),
    "a parenthesised callee": ("`(open_sandbox)(...)`", FIX, """
        async def main():
            await asyncio.gather((open_sandbox)(), square(1))
        """),
    "a comment in the callee": ("`open_sandbox(...)` (its name mentions `sandbox`)", None, """
        async def main():
            await asyncio.gather(*[open_sandbox  # c
                (1)], square(1), x=1)
        """),
    "a backslash in the callee": ("`self.sandbox \\\n    .start(...)` (`self.sandbox", FIX, """
        class R:
            async def main(self):
                await asyncio.gather(self.sandbox \\
            .start(), square(1))
        """),
    "non-ASCII": ("`ü.open_sandbox(...)`", None, """
        async def main():
            é = "日本"; await asyncio.gather(ü.open_sandbox(), square(1))
        """),
}


_every_file_a_candidate = every_file_a_candidate


_key = key


def _settings(options: dict, target: str = "py312") -> Settings:
    return Settings(selected=("SHD101",), target_version=target,
                    rule_options={"SHD101": options} if options else {})


def _both_ways(source: bytes, monkeypatch, settings: Settings, ast_path: bool = True):
    return both_ways(source, monkeypatch, settings, ast_path=ast_path)


def _case(name: str, newline: str = "\n"):
    expected, fix, source, *options = CASES[name]
    text = (HEAD + textwrap.dedent(source)).replace("\n", newline)
    return expected, fix, text.encode(), (options[0] if options else {})


def _answer(result):
    """(the message's text after 'over ', the fix message or None); (NO, None) without a finding."""
    if not result.diagnostics:
        return NO, None
    d = result.diagnostics[-1]
    assert d.code == "SHD101"
    return d.message, (d.fix["message"] if d.fix else None)


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, fix, source, options = _case(name)
    _every_file_a_candidate(monkeypatch)
    message, fixed = _answer(_both_ways(source, monkeypatch, _settings(options)))
    if expected is NO:
        assert message is NO
    else:
        assert message is not NO and expected in message, message
        assert fixed == fix


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _, _, source, options = _case(name)
    _both_ways(source, monkeypatch, _settings(options), ast_path=False)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["a callee over several lines", "a comment in the callee", "a backslash in the callee",
                                  "an async with over several lines", "a bare raise on the except line",
                                  "a; b: no fix", "a backslash between a; b: no fix", "after a header's backslash: no fix",
                                  "reap: a cancel in a later for's iterable"])
def test_other_line_ends(name, newline, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    _, _, source, options = _case(name, newline)
    _both_ways(source, monkeypatch, _settings(options))


def test_no_fix_below_py311_on_either_engine(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    _, _, source, options = _case("returned")
    result = _both_ways(source, monkeypatch, _settings(options, "py310"))
    assert result.diagnostics and result.diagnostics[0].fix is None


def test_columns_on_a_non_ascii_line(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    _, _, source, options = _case("non-ASCII")
    (d,) = _both_ways(source, monkeypatch, _settings(options)).diagnostics
    assert (d.column, d.end_column) == (21, 64)  # 1-based characters (26 and 69 in UTF-8 bytes)
