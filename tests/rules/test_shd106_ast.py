"""SHD106 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
identifiers that libcst holds in ``Name`` nodes and ``ast`` as strings (defs, classes, keyword
arguments, imports and their dotted parts, ``except ... as``, ``except* ... as``, ``global``,
``nonlocal``, patterns), parameters (libcst's ``Param``: names, annotations and defaults, not
read), assignment targets (a one-name target is no read, an attribute's or subscript's value is),
attribute names, libcst's first ``Arg`` (a keyword first, ``*a``), the awaits of the coroutine's
own body (nested defs left out, f-strings in), ``asyncio.sleep`` by alias, parentheses, bodies on
their header's line, ``a; b``, CRLF/CR line ends and non-ASCII lines (character columns); and the
rule's own shapes: discarded, bound to a name never read, kept, SHD102's coroutines, ``TaskGroup``,
loop receivers, coroutines that only sleep.

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated findings (line, where), once with
the candidate tiers passing every file through (the ast path taken: asserted), once with the tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate

_SETTINGS = Settings(selected=("SHD106",))

#: coroutines the cases spawn: ``quiet`` handles its own errors, ``fails`` does not (SHD102's),
#: ``napper`` only sleeps (held by the loop's timer), ``watcher`` only waits (cannot fail)
HEAD = """\
import asyncio
async def quiet(x=None):
    try:
        await x.get()
    except Exception:
        pass
async def fails():
    await asyncio.sleep(1)
    raise RuntimeError()
async def napper():
    try:
        await asyncio.sleep(1)
    except Exception:
        pass
async def watcher(ts):
    await asyncio.gather(*ts, return_exceptions=True)
"""
_OFFSET = HEAD.count("\n")

D = "discarded"

#: name -> (findings: [(line in the case's source, "discarded" or the bound name)], source)
CASES = {
    # ---------------------------------------------------------------- discarded
    "discarded": ([(2, D)], """
        async def main():
            asyncio.create_task(quiet())
        """),
    "ensure_future": ([(2, D)], """
        async def main():
            asyncio.ensure_future(quiet())
        """),
    "ensure_future imported": ([(3, D)], """
        from asyncio import ensure_future
        def main():
            ensure_future(quiet())
        """),
    "loop parameter": ([(2, D)], """
        def main(loop):
            loop.create_task(quiet())
        """),
    "self._loop": ([(3, D)], """
        class A:
            def start(self):
                self._loop.create_task(quiet())
        """),
    "event loop from get_event_loop": ([(2, D)], """
        def main():
            asyncio.get_event_loop().create_task(quiet())
        """),
    "some other receiver": ([], """
        def main(pool):
            pool.create_task(quiet())
        """),
    "TaskGroup": ([], """
        async def main():
            async with asyncio.TaskGroup() as tg:
                tg.create_task(quiet())
        """),
    "the coroutine can fail: SHD102's": ([], """
        async def main():
            asyncio.create_task(fails())
        """),
    "the coroutine only sleeps": ([], """
        async def main():
            asyncio.create_task(napper())
        """),
    "the coroutine only waits": ([(2, D)], """
        async def main(ts):
            asyncio.create_task(watcher(ts))
        """),
    "a library coroutine": ([], """
        async def main():
            asyncio.create_task(asyncio.sleep(1))
        """),
    "not a coroutine call": ([], """
        async def main(c):
            asyncio.create_task(c)
        """),
    "at module level": ([(1, D)], """
        asyncio.ensure_future(quiet())
        """),
    "in a class body": ([(2, D)], """
        class A:
            asyncio.ensure_future(quiet())
        """),
    "in parentheses": ([(2, D)], """
        async def main():
            (asyncio.create_task(quiet()))
        """),
    "over several lines with a comment": ([(2, D)], """
        async def main():
            asyncio.create_task(  # start it
                quiet(),
            )
        """),
    "a backslash": ([(2, D)], """
        async def main():
            asyncio.create_task \\
                (quiet())
        """),
    "a body on its header's line": ([(2, D)], """
        async def main(x):
            if x: asyncio.create_task(quiet())
        """),
    "a; b": ([(2, D), (2, D)], """
        async def main():
            asyncio.create_task(quiet()); asyncio.create_task(quiet(1))
        """),
    "in an elif": ([(5, D)], """
        async def main(x):
            if x:
                pass
            elif x + 1:
                asyncio.create_task(quiet())
        """),
    "in with, try, finally": ([(3, D), (5, D)], """
        async def main(lock):
            async with lock:
                asyncio.create_task(quiet())
            try:
                asyncio.create_task(quiet())
            finally:
                pass
        """),
    "awaited": ([], """
        async def main():
            await asyncio.create_task(quiet())
        """),
    "returned": ([], """
        def main():
            return asyncio.create_task(quiet())
        """),
    "in a list": ([], """
        def main():
            x = [asyncio.create_task(quiet())]
        """),
    "in a lambda": ([], """
        def main():
            return lambda: asyncio.create_task(quiet())
        """),
    "in a comprehension": ([], """
        def main():
            [asyncio.create_task(quiet(i)) for i in range(3)]
        """),
    "handed to a call": ([], """
        def main(keep):
            keep(asyncio.create_task(quiet()))
        """),
    "yielded": ([], """
        def main():
            yield asyncio.create_task(quiet())
        """),
    "a keyword first (libcst's first Arg)": ([(2, D)], """
        async def main():
            asyncio.create_task(coro=quiet())
        """),
    "a keyword first, the coroutine second": ([], """
        async def main():
            asyncio.create_task(name="n", coro=quiet())
        """),
    "a name keyword after it": ([(2, D)], """
        async def main():
            asyncio.create_task(quiet(), name="n")
        """),
    "*a first": ([], """
        async def main(a):
            asyncio.create_task(*a)
        """),
    "no argument": ([], """
        async def main():
            asyncio.create_task()
        """),
    "a trailing comma": ([(2, D)], """
        async def main():
            asyncio.create_task(quiet(),)
        """),
    # ---------------------------------------------------------------- bound to a name
    "bound, never read": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
        """),
    "bound in parentheses": ([(2, "t")], """
        async def main():
            (t) = asyncio.create_task(quiet())
        """),
    "bound, awaited": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            await t
        """),
    "bound, cancelled (a read)": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            t.cancel()
        """),
    "bound twice": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            t = asyncio.create_task(quiet())
        """),
    "bound, at module level": ([], """
        t = asyncio.ensure_future(quiet())
        """),
    "two targets": ([], """
        async def main():
            t = u = asyncio.create_task(quiet())
        """),
    "a tuple target": ([], """
        async def main():
            a, b = asyncio.create_task(quiet())
        """),
    "an attribute target": ([], """
        async def main(o):
            o.t = asyncio.create_task(quiet())
        """),
    "an annotated target": ([], """
        async def main():
            t: asyncio.Task = asyncio.create_task(quiet())
        """),
    "a walrus": ([], """
        async def main():
            (t := asyncio.create_task(quiet()))
        """),
    "a tuple value": ([], """
        async def main():
            t = asyncio.create_task(quiet()), 1
        """),
    "bound, on a line with another statement": ([(2, "t")], """
        async def main():
            x = 1; t = asyncio.create_task(quiet()); x += 1
        """),
    "bound in a nested def, read in the outer one": ([(3, "t")], """
        async def main():
            def inner():
                t = asyncio.create_task(quiet())
            return t
        """),
    "bound in a class body in a def": ([(3, "t")], """
        async def main():
            class A:
                t = asyncio.create_task(quiet())
        """),
    "bound in a class body in a def, a read": ([], """
        async def main():
            class A:
                t = asyncio.create_task(quiet())
            print(t)
        """),
    "bound, read in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                return t
        """),
    "bound, read in an f-string": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            print(f"{t!r:>{w}}")
        """),
    "bound, read in a comprehension": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            return [x for x in t]
        """),
    "bound, deleted": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            del t
        """),
    "bound, an attribute of it assigned": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            t.x = 1
        """),
    "bound, an item of it assigned": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            t[0] = 1
        """),
    "bound, the target of a tuple assignment": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            t, u = 1, 2
        """),
    "bound, the target of another one-name assignment": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            t = None
        """),
    "bound, assigned from itself elsewhere": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            u = t
        """),
    "bound, only an attribute spelled like it": ([(2, "t")], """
        async def main(o):
            t = asyncio.create_task(quiet())
            o.t = o.t + 1
        """),
    "bound, only a method spelled like it": ([(2, "t")], """
        async def main(o):
            t = asyncio.create_task(quiet())
            o.t()
        """),
    "bound, a keyword argument spelled like it": ([], """
        async def main(o):
            t = asyncio.create_task(quiet())
            o.report(t=1)
        """),
    "bound, a class keyword spelled like it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            class A(t=1):
                pass
        """),
    "bound, **kwargs only": ([(2, "t")], """
        async def main(o, kw):
            t = asyncio.create_task(quiet())
            o.report(**kw)
        """),
    "bound, a nested def spelled like it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def t():
                pass
        """),
    "bound, a nested class spelled like it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            class t:
                pass
        """),
    "bound, a class in a nested def spelled like it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                class t:
                    pass
        """),
    "bound, a def in a nested class spelled like it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            class A:
                def t(self):
                    pass
        """),
    "bound, the function spelled like it": ([], """
        async def t():
            t = asyncio.create_task(quiet())
        """),
    "bound, a nested async def spelled like it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            async def t():
                pass
        """),
    "bound, a parameter of a nested def spelled like it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(t, *a, u=1, **k):
                pass
        """),
    "bound, a *args of a nested def spelled like it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(*t, **u):
                pass
        """),
    "bound, a nested def's default reads it (a Param's)": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x=t, *, y=t):
                pass
        """),
    "bound, a nested def's annotation reads it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x: t, *a: t, **k: t):
                pass
        """),
    "bound, a nested def's return annotation reads it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner() -> t:
                pass
        """),
    "bound, a nested def's decorator reads it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            @t.add
            def inner():
                pass
        """),
    "bound, a nested class's base reads it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            class A(t):
                pass
        """),
    "bound, a lambda's parameter spelled like it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            f = lambda t=1: 0
        """),
    "bound, a lambda's default reads it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            f = lambda x=t: x
        """),
    "bound, a lambda's body reads it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            f = lambda: t
        """),
    "bound, the function's own default spelled like it": ([(2, "t")], """
        async def main(x=t):
            t = asyncio.create_task(quiet())
        """),
    "bound, the function's decorator reads it": ([], """
        @t
        async def main():
            t = asyncio.create_task(quiet())
        """),
    "bound, the function's return annotation": ([], """
        async def main() -> t:
            t = asyncio.create_task(quiet())
        """),
    "bound, a global in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                global t
        """),
    "bound, a nonlocal in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                nonlocal t
        """),
    "bound, global in the function itself": ([], """
        async def main():
            global t
            t = asyncio.create_task(quiet())
        """),
    "bound, except as in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                try:
                    pass
                except OSError as t:
                    pass
        """),
    "bound, except* as in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                try:
                    pass
                except* OSError as t:
                    pass
        """),
    "bound, except* as in the function": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            try:
                pass
            except* OSError as t:
                pass
        """),
    "bound, a bare except and one with another name": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            try:
                pass
            except:
                pass
            try:
                pass
            except OSError as u:
                pass
        """),
    "bound, import from its module": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            from t import x
        """),
    "bound, import from a dotted module starting with it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            from t.a import x
        """),
    "bound, import from a dotted module ending with it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            from a.t import x
        """),
    "bound, relative import from it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            from .t import x
        """),
    "bound, relative import of it renamed": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            from . import t as u
        """),
    "bound, import of it renamed": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            from m import t as u
        """),
    "bound, import of a dotted module ending with it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            import a.t
        """),
    "bound, import of a dotted module ending with it, renamed": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            import a.t as u
        """),
    "bound, an import renamed to it in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                import m as t
        """),
    "bound, an import of a dotted module starting with it in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                import t.a
        """),
    "bound, an import of it in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                import t
        """),
    "bound, star import": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                pass
        from m import *
        """),
    "bound, a capture pattern in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                match x:
                    case t:
                        pass
        """),
    "bound, a star pattern in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                match x:
                    case [1, *t]:
                        pass
        """),
    "bound, a mapping rest in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                match x:
                    case {1: _, **t}:
                        pass
        """),
    "bound, a class pattern's keyword in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                match x:
                    case P(t=1):
                        pass
        """),
    "bound, an as pattern in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                match x:
                    case [1] as t:
                        pass
        """),
    "bound, a value pattern reads it": ([], """
        async def main(x):
            t = asyncio.create_task(quiet())
            match x:
                case t.state:
                    pass
        """),
    "bound, a class pattern's class": ([], """
        async def main(x):
            t = asyncio.create_task(quiet())
            match x:
                case t():
                    pass
        """),
    "bound, patterns with other names": ([(2, "t")], """
        async def main(x):
            t = asyncio.create_task(quiet())
            match x:
                case P(u=1) | [*_] | {**v} | w:
                    pass
        """),
    "bound, a capture pattern in the function": ([], """
        async def main(x):
            t = asyncio.create_task(quiet())
            match x:
                case [t]:
                    pass
        """),
    "bound, a for target": ([], """
        async def main(xs):
            t = asyncio.create_task(quiet())
            for t in xs:
                pass
        """),
    "bound, a with target in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                with open("f") as t:
                    pass
        """),
    "bound, a comprehension target in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(xs):
                return [1 for t in xs]
        """),
    "bound, an augmented target in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(u):
                t += 1
        """),
    "bound, an annotated target in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                t: int
        """),
    "bound, a one-name target in a nested def": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                t = 1
        """),
    "bound, a two-name target in a nested def": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                t = u = 1
        """),
    "bound, a tuple target in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                t, u = 1, 2
        """),
    "bound, a starred target in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                *t, = x
        """),
    "bound, a one-name target's value reads it": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner():
                u = t
        """),
    "bound, a walrus in a nested def": ([], """
        async def main():
            t = asyncio.create_task(quiet())
            def inner(x):
                return (t := x)
        """),
    "bound, a string spelling it": ([(2, "t")], """
        async def main():
            t = asyncio.create_task(quiet())
            print("t", f"t{1}")
        """),
    "bound, a non-ASCII name never read": ([(2, "tâche")], """
        async def main():
            tâche = asyncio.create_task(quiet())
        """),
    # ---------------------------------------------------------------- the coroutine
    "a method of the class, through self": ([(9, D)], """
        class A:
            async def _pump(self):
                try:
                    await self.reader.read()
                except Exception:
                    self.log()

            def start(self):
                asyncio.create_task(self._pump())
        """),
    "a method that only sleeps, through self": ([], """
        class A:
            async def _tick(self):
                while True:
                    try:
                        await asyncio.sleep(10)
                    except Exception:
                        pass

            def start(self):
                self._event_loop.create_task(self._tick())
        """),
    "a method through the class": ([(9, D)], """
        class A:
            async def run(x):
                try:
                    await x.get()
                except BaseException:
                    pass

        def start():
            asyncio.ensure_future(A.run(1))
        """),
    "a nested coroutine": ([(7, D)], """
        async def main():
            async def pump():
                try:
                    await q.get()
                except Exception:
                    pass
            asyncio.create_task(pump())
        """),
    "a coroutine through functools.partial": ([(3, D)], """
        import functools
        async def main():
            asyncio.create_task(functools.partial(quiet)())
        """),
    "only sleeps, its own body; a nested def awaits more": ([], """
        async def nap():
            try:
                await asyncio.sleep(1)
                async def inner():
                    await q.get()
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "only sleeps, a nested class's method awaits more": ([], """
        async def nap():
            try:
                await asyncio.sleep(1)
                class A:
                    async def m(self):
                        await q.get()
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "an await in an f-string": ([(7, D)], """
        async def pump():
            try:
                x = f"{await q.get()}"
            except Exception:
                pass
        async def main():
            asyncio.create_task(pump())
        """),
    "an await in a comprehension": ([(7, D)], """
        async def pump():
            try:
                x = [await q.get() for _ in range(2)]
            except Exception:
                pass
        async def main():
            asyncio.create_task(pump())
        """),
    "sleep imported from asyncio": ([], """
        from asyncio import sleep
        async def nap():
            try:
                await sleep(1)
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "asyncio imported under another name": ([], """
        import asyncio as aio
        async def nap():
            try:
                await aio.sleep(1)
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "a sleep of our own": ([(9, D)], """
        async def sleep(n):
            pass
        async def nap():
            try:
                await sleep(1)
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "another module's sleep": ([(7, D)], """
        async def nap(trio):
            try:
                await trio.sleep(1)
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap(1))
        """),
    "a sleep in parentheses": ([], """
        async def nap():
            try:
                await (asyncio.sleep(1))
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "a sleep not called": ([(7, D)], """
        async def nap():
            try:
                await asyncio.sleep
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "a sleep and another await": ([(8, D)], """
        async def nap():
            try:
                await asyncio.sleep(1)
                await asyncio.wait_for(q.get(), 1)
            except Exception:
                pass
        async def main():
            asyncio.create_task(nap())
        """),
    "no await at all": ([], """
        async def idle():
            try:
                pass
            except Exception:
                pass
        async def main():
            asyncio.create_task(idle())
        """),
    "a body on the def's line": ([], """
        async def pump(): await q.get()
        async def main():
            asyncio.create_task(pump())
        """),
    "a try whose handler re-raises": ([], """
        async def pump():
            try:
                await q.get()
            except Exception:
                raise
        async def main():
            asyncio.create_task(pump())
        """),
    "a dotted broad handler": ([(7, D)], """
        async def pump():
            try:
                await q.get()
            except builtins.Exception:
                pass
        async def main():
            asyncio.create_task(pump())
        """),
    "a loop around the try, bookkeeping before it": ([(10, D)], """
        async def pump():
            \"\"\"Doc.\"\"\"
            n = 0
            while True:
                try:
                    await q.get()
                except Exception:
                    n += 1
        async def main():
            asyncio.create_task(pump())
        """),
    "a decorated coroutine": ([(8, D)], """
        @trace
        async def pump():
            try:
                await q.get()
            except Exception:
                pass
        async def main():
            asyncio.create_task(pump())
        """),
    "a sync def": ([], """
        def pump():
            try:
                q.get()
            except Exception:
                pass
        async def main():
            asyncio.create_task(pump())
        """),
    "non-ASCII line": ([(2, D)], """
        async def main():
            é = "日本"; asyncio.create_task(quiet())  # café
        """),
}


def _source(name: str, newline: str = "\n") -> tuple[list, bytes]:
    expected, source = CASES[name]
    return expected, (HEAD + textwrap.dedent(source).lstrip("\n")).replace("\n", newline).encode()


def _findings(result) -> list:
    out = []
    for d in result.diagnostics:
        assert d.code == "SHD106"
        assert d.fix is not None and d.fix["applicability"] == "safe"
        assert d.fix["message"] == 'Keep a reference: `runtime_guard.supervise(..., on_error="log")`'
        head = d.message.split(":")[0]
        where = D if head == "task is discarded" else head.removeprefix("task is bound to `").split("`")[0]
        assert head in ("task is discarded", f"task is bound to `{where}`, which is never read"), d.message
        out.append((d.line - _OFFSET, where))
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = _source(name)
    every_file_a_candidate(monkeypatch)
    assert _findings(both_ways(source, monkeypatch, _SETTINGS)) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _, source = _source(name)
    both_ways(source, monkeypatch, _SETTINGS, ast_path=False)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_other_line_ends(newline, monkeypatch):
    every_file_a_candidate(monkeypatch)
    for name in CASES:
        expected, source = _source(name, newline)
        assert _findings(both_ways(source, monkeypatch, _SETTINGS)) == expected, name


def test_columns_and_spans(monkeypatch):
    every_file_a_candidate(monkeypatch)
    _, source = _source("non-ASCII line")
    (d,) = both_ways(source, monkeypatch, _SETTINGS).diagnostics
    assert (d.column, d.end_column) == (15, 43)  # 1-based characters (17 and 45 in UTF-8 bytes)
    _, source = _source("over several lines with a comment")
    (d,) = both_ways(source, monkeypatch, _SETTINGS).diagnostics
    assert (d.line - _OFFSET, d.column, d.end_line - _OFFSET, d.end_column) == (2, 5, 4, 6)


def test_with_shd102_each_call_once(monkeypatch):
    """Both task rules selected: the split holds on either engine (SHD102 takes the failing one)."""
    every_file_a_candidate(monkeypatch)
    source = (HEAD + "async def main():\n    asyncio.create_task(quiet())\n    asyncio.create_task(fails())\n").encode()
    result = both_ways(source, monkeypatch, Settings(selected=("SHD102", "SHD106")))
    assert [(d.code, d.line - _OFFSET) for d in result.diagnostics] == [("SHD106", 2), ("SHD102", 3)]
