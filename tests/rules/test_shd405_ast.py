"""SHD405 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
positional arguments as libcst's (``*a``, ``**k``), handlers (lambdas and the lambdas in them,
``functools.partial`` with a keyword first, methods, ``async def``), ``None``/``True``/``False``
(names in libcst: a signal, a receiver, a rebound name), libcst's statements (``a; b`` and a
backslash: one line; a body on its header's line; ``elif``, ``else``, ``except``, ``finally``,
``match``, ``with`` blocks), the names libcst rebinds and where it meets them (``with ... as``,
``except ... as``, ``import ... as``, ``:=``, attribute and subscript targets, ``async for``),
nested definitions after the registration, the touching call's text (long, over lines, CRLF/CR).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated findings (line in the case,
fix offered or not), once with the candidate tiers passing every file through (the ast path
taken: asserted), once with the tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate

_SETTINGS = Settings(selected=("SHD405",))
FIX = "fix"
NOFIX = "nofix"
HEAD = "import asyncio, functools, signal\nfrom signal import SIGINT, SIGTERM\nstop = asyncio.Event()\n"
_OFFSET = HEAD.count("\n")

#: name -> ([(line in the case, FIX/NOFIX)], the case's source)
CASES = {
    # ------------------------------------------------------------------ the registration's arguments
    "basic, no loop at hand": ([(3, NOFIX)], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, on_term)
        """),
    "from-import alias": ([(4, NOFIX)], """
        from signal import signal as sig
        def on_term(signum, frame):
            stop.set()
        sig(SIGTERM, on_term)
        """),
    "**k counts as a positional argument": ([], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, on_term, **k)
        """),
    "*a alone is one": ([], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(*a)
        """),
    "starred handler": ([(4, NOFIX)], """
        def on_term(signum, frame):
            stop.set()
        async def main():
            signal.signal(SIGTERM, *on_term)
        """),
    "**k as the handler": ([(4, NOFIX)], """
        def on_term(signum, frame):
            stop.set()
        async def main():
            signal.signal(SIGTERM, **on_term)
        """),
    "handler as a keyword": ([], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, handler=on_term)
        """),
    "three positional": ([], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, on_term, 1)
        """),
    "another module's signal()": ([], """
        import foo
        def on_term(signum, frame):
            stop.set()
        foo.signal(SIGTERM, on_term)
        """),
    # ------------------------------------------------------------------ handlers
    "partial": ([(3, NOFIX)], """
        def on_term(n, signum, frame):
            stop.set()
        signal.signal(SIGTERM, functools.partial(on_term, 1))
        """),
    "partial with the function as a keyword": ([(3, NOFIX)], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, functools.partial(func=on_term))
        """),
    "partial with a keyword before the function": ([], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, functools.partial(*(), x=1))
        """),
    "partial with a starred function": ([(3, NOFIX)], """
        def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, functools.partial(*on_term))
        """),
    "method through self": ([(4, NOFIX), (8, NOFIX)], """
        class W:
            def __init__(self):
                self.q = asyncio.Queue()
                signal.signal(SIGTERM, self.on_term)
            def on_term(self, signum, frame):
                self.q.put_nowait(None)
        w = W()
        signal.signal(SIGINT, W.on_term)
        """),
    "async def handler is not followed": ([], """
        async def on_term(signum, frame):
            stop.set()
        signal.signal(SIGTERM, on_term)
        """),
    "lambda": ([(2, FIX)], """
        async def main():
            signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    "lambda in a lambda runs later": ([], """
        async def main():
            loop = asyncio.get_running_loop()
            signal.signal(SIGTERM, lambda s, f: loop.call_soon_threadsafe(lambda: stop.set()))
        """),
    "lambda returning a lambda": ([], """
        signal.signal(SIGTERM, lambda *_: lambda: stop.set())
        """),
    "lambda calling a function that touches": ([(3, NOFIX)], """
        def teardown():
            stop.set()
        signal.signal(SIGTERM, lambda *_: teardown())
        """),
    "lambda calling a coroutine function": ([], """
        async def teardown():
            stop.set()
        signal.signal(SIGTERM, lambda *_: teardown())
        """),
    "lambda with a comprehension": ([(1, NOFIX)], """
        signal.signal(SIGTERM, lambda *_: [t.cancel() for t in asyncio.all_tasks()])
        """),
    "cancel without all_tasks": ([], """
        signal.signal(SIGTERM, lambda *_: [t.cancel() for t in tasks])
        """),
    "cancel as a name, with all_tasks": ([], """
        from foo import cancel
        signal.signal(SIGTERM, lambda *_: [cancel(t) for t in asyncio.all_tasks()])
        """),
    "current_task cancelled": ([(1, NOFIX)], """
        signal.signal(SIGTERM, lambda *_: (asyncio.current_task(), x.cancel()))
        """),
    "a callee's lambda runs later": ([], """
        def teardown():
            loop.call_soon_threadsafe(lambda: stop.set())
        def on_term(signum, frame):
            teardown()
        signal.signal(SIGTERM, on_term)
        """),
    "through two callees": ([(8, NOFIX)], """
        def b():
            loop = asyncio.get_event_loop()
            loop.stop()
        def a():
            b()
        def on_term(signum, frame):
            a()
        signal.signal(SIGTERM, on_term)
        """),
    "safe loop methods": ([], """
        loop = asyncio.get_event_loop()
        def on_term(signum, frame):
            if loop.is_running() and not loop.is_closed():
                loop.call_soon_threadsafe(stop.set)
        signal.signal(SIGTERM, on_term)
        """),
    "a loop's method of a method": ([], """
        loop = asyncio.get_event_loop()
        def on_term(signum, frame):
            loop.stop.x()
        signal.signal(SIGTERM, on_term)
        """),
    "a threading.Event": ([], """
        import threading
        ev = threading.Event()
        signal.signal(SIGTERM, lambda *_: ev.set())
        """),
    "create_task and a future": ([(4, NOFIX)], """
        fut = asyncio.Future()
        def on_term(signum, frame):
            fut.set_result(None)
        signal.signal(SIGTERM, on_term)
        """),
    # ------------------------------------------------------------------ the fix: in a coroutine
    "coroutine, signal attribute": ([(3, FIX)], """
        async def main():
            def on_term(s, f): stop.set()
            signal.signal(signal.SIGTERM, on_term)
        """),
    "coroutine, signal None (a name in libcst)": ([(2, FIX)], """
        async def main():
            signal.signal(None, lambda s, f: stop.set())
        """),
    "coroutine, signal True": ([(2, FIX)], """
        async def main():
            signal.signal(True, lambda s, f: stop.set())
        """),
    "coroutine, signal a number": ([(2, NOFIX)], """
        async def main():
            signal.signal(15, lambda s, f: stop.set())
        """),
    "coroutine, signal a subscript": ([(2, NOFIX)], """
        async def main():
            signal.signal(sigs[0], lambda s, f: stop.set())
        """),
    "coroutine, signal a call": ([(2, NOFIX)], """
        async def main():
            signal.signal(signal.Signals(15), lambda s, f: stop.set())
        """),
    "coroutine, signal a string": ([(2, NOFIX)], """
        async def main():
            signal.signal("SIGTERM", lambda s, f: stop.set())
        """),
    "coroutine, previous handler kept": ([(2, NOFIX)], """
        async def main():
            prev = signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    "coroutine, parenthesised statement": ([(2, FIX)], """
        async def main():
            (signal.signal(SIGTERM, lambda s, f: stop.set()))
        """),
    "coroutine, awaited": ([(2, NOFIX)], """
        async def main():
            await signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    "coroutine, a; b": ([(2, FIX), (2, FIX)], """
        async def main():
            signal.signal(SIGTERM, lambda s, f: stop.set()); signal.signal(SIGINT, lambda s, f: stop.set())
        """),
    "coroutine, in a class body": ([(3, FIX)], """
        async def main():
            class C:
                signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    "coroutine, keyword too": ([(2, NOFIX)], """
        async def main():
            signal.signal(SIGTERM, lambda s, f: stop.set(), x=1)
        """),
    "sync def in a coroutine": ([(3, NOFIX)], """
        async def main():
            def install():
                signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    # ------------------------------------------------------------------ the fix: a loop run after
    "sync, run after": ([(4, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            def on_term(s, f): stop.set()
            signal.signal(SIGTERM, on_term)
            loop.run_until_complete(serve())
        """),
    "sync, get_event_loop, run_forever": ([(3, FIX)], """
        def main():
            loop = asyncio.get_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, no run after": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            asyncio.run(serve())
        """),
    "sync, run before only": ([(4, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            loop.run_until_complete(setup())
            signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    "sync, run on the same line": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set()); loop.run_forever()
        """),
    "sync, run on the same line, then another": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set()); x = 1
            loop.run_forever()
        """),
    "sync, run after a backslash": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set()); \\
                loop.run_forever()
        """),
    "sync, statement before on the line": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            x = 1; signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, on its if's line, run on the line": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            if x: signal.signal(SIGTERM, lambda s, f: stop.set()); loop.run_forever()
        """),
    "sync, on its if's line, run after": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            if x: signal.signal(SIGTERM, lambda s, f: stop.set()); y = 1
            loop.run_forever()
        """),
    "sync, in an else on its line, run in the if": ([(5, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            if x:
                loop.run_forever()
            else: signal.signal(SIGTERM, lambda s, f: stop.set())
        """),
    "sync, in an if, run after it": ([(4, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            if x:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, in an elif, run after it": ([(6, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            if x:
                pass
            elif y:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            else:
                pass
            loop.run_forever()
        """),
    "sync, in an elif, run in the else": ([(6, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            if x:
                pass
            elif y:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            else:
                loop.run_forever()
        """),
    "sync, in a try, run in its except": ([(4, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            try:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            except ValueError:
                loop.run_forever()
        """),
    "sync, in an except, run after the try": ([(6, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            try:
                pass
            except ValueError:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, in a finally, run in a try after": ([(6, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            try:
                pass
            finally:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                loop.run_forever()
            finally:
                loop.close()
        """),
    "sync, in a for, run in its else": ([(4, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            for s in sigs:
                signal.signal(s, lambda s, f: stop.set())
            else:
                loop.run_forever()
        """),
    "sync, in a while's else, run after": ([(6, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            while x:
                pass
            else:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, in a with, run after": ([(4, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            with lock:
                signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, in a match case, run after": ([(5, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            match x:
                case 1:
                    signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "sync, in a match case, run in the next case": ([(5, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            match x:
                case 1:
                    signal.signal(SIGTERM, lambda s, f: stop.set())
                case _:
                    loop.run_forever()
        """),
    "sync, the run in a nested def": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            if x:
                def later():
                    loop.run_forever()
        """),
    "sync, the run in a def right after (libcst walks it)": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            def later():
                loop.run_forever()
        """),
    "sync, the run in a decorator of a def right after": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            @deco(loop.run_forever())
            def later():
                pass
        """),
    "sync, the run in a lambda": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            f = lambda: loop.run_forever()
            loop.run_until_complete(serve())
        """),
    "sync, the run in a nested class": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            if x:
                class C:
                    loop.run_forever()
        """),
    "sync, the run after the function": ([(3, NOFIX)], """
        loop = asyncio.new_event_loop()
        def main():
            signal.signal(SIGTERM, lambda s, f: stop.set())
        loop.run_forever()
        """),
    "module, run after": ([(2, FIX)], """
        loop = asyncio.new_event_loop()
        signal.signal(SIGTERM, lambda s, f: stop.set())
        loop.run_forever()
        """),
    "module, under the main guard": ([(3, FIX)], """
        loop = asyncio.new_event_loop()
        if __name__ == "__main__":
            signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.run_forever()
        """),
    "module, in a class body, run after the class": ([(3, NOFIX)], """
        loop = asyncio.new_event_loop()
        class C:
            signal.signal(SIGTERM, lambda s, f: stop.set())
        loop.run_forever()
        """),
    "module, a class after with the run": ([(2, FIX)], """
        loop = asyncio.new_event_loop()
        signal.signal(SIGTERM, lambda s, f: stop.set())
        class C:
            loop.run_forever()
        """),
    "the first run decides: not a loop": ([(4, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            other = Thing()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            other.run_forever()
            loop.run_forever()
        """),
    "the run on an attribute": ([(3, NOFIX)], """
        def main(self):
            self.loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            self.loop.run_forever()
        """),
    "the run on a call": ([(2, NOFIX)], """
        def main():
            signal.signal(SIGTERM, lambda s, f: stop.set())
            asyncio.new_event_loop().run_forever()
        """),
    "the run on None": ([(2, NOFIX)], """
        def main():
            signal.signal(SIGTERM, lambda s, f: stop.set())
            None.run_forever()
        """),
    "the run on a parenthesised name": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            (loop).run_forever()
        """),
    "the run in an argument": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            print(x, loop.run_until_complete(serve()), *y)
        """),
    # ------------------------------------------------------------------ rebinding between
    "rebound by an assignment": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            loop = asyncio.new_event_loop()
            loop.run_forever()
        """),
    "rebound, the second target": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            a = loop = asyncio.new_event_loop()
            loop.run_forever()
        """),
    "rebound by a tuple target": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            a, *self.loop = x
            loop.run_forever()
        """),
    "an attribute target spells the name": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            self.loop = loop
            loop.run_forever()
        """),
    "a subscript target's index": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            loops[loop] = 1
            loop.run_forever()
        """),
    "a keyword name in a target": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            d[f(loop=1)] = 1
            loop.run_forever()
        """),
    "a lambda in a target": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            d[lambda: loop] = 1
            loop.run_forever()
        """),
    "None in a target": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            d[None] = 1
            loop.run_forever()
        """),
    "read, not rebound": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            other = loop
            loop.run_forever()
        """),
    "rebound by +=": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            self.loop += 0
            loop.run_forever()
        """),
    "rebound by an annotation alone": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            self.loop: asyncio.AbstractEventLoop
            loop.run_forever()
        """),
    "rebound by :=": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            if (loop := asyncio.new_event_loop()):
                loop.run_forever()
        """),
    "rebound by a for": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            for self.loop in loops:
                pass
            loop.run_forever()
        """),
    "a comprehension's variable: its binding hides the loop": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            xs = [loop for loop in loops]
            loop.run_forever()
        """),
    "rebound by an async for": ([(2, NOFIX)], """
        loop = asyncio.new_event_loop()
        signal.signal(SIGTERM, lambda s, f: stop.set())
        async for x.loop in loops:
            pass
        loop.run_forever()
        """),
    "rebound by with ... as": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            with make() as self.loop:
                pass
            loop.run_forever()
        """),
    "rebound by async with ... as, a tuple": ([(2, NOFIX)], """
        loop = asyncio.new_event_loop()
        signal.signal(SIGTERM, lambda s, f: stop.set())
        async with make() as (a, x.loop):
            pass
        loop.run_forever()
        """),
    "with ... as: the context expression runs first": ([(3, FIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            with loop.run_until_complete(serve()) as self.loop:
                pass
        """),
    "with, the second item's expression after the first's name": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            with a as self.loop, loop.run_until_complete(serve()):
                pass
        """),
    "rebound by except ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except ValueError as loop:
                pass
            loop.run_forever()
        """),
    "except ... as, the run first in its body": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except ValueError as loop:
                loop.run_forever()
        """),
    "except ... as another name": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except ValueError as e:
                loop.run_forever()
        """),
    "except ... as: the type first (its binding hides the loop)": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except loop.run_until_complete(serve()) as loop:
                pass
        """),
    "rebound by import ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            import foo as loop
            loop.run_forever()
        """),
    "rebound by from-import ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            from foo import bar as loop
            loop.run_forever()
        """),
    "a plain import: its binding hides the loop": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            import loop
            loop.run_forever()
        """),
    "match ... as is not": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            match x:
                case [*loop] | {**loop} as loop:
                    pass
            loop.run_forever()
        """),
    "rebound in a nested def is not": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            if x:
                def f():
                    loop = 1
            loop.run_forever()
        """),
    "del is not": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            del x
            loop.run_forever()
        """),
    # the binding a lambda's := makes last (lookup's answer: a loop again) unmasks the names rebound before it
    "unmasked: the lambda's := rebinds nothing": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: import ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            import foo as loop
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: from-import ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            from foo import bar as loop
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: a plain import": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            import loop
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: a dotted import as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            import a.b as loop
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: except ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as loop:
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: except ... as, the run first in its body": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as loop:
                loop.run_forever()
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
        """),
    "unmasked: except ... as another name": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as e:
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: except ... as, the run in the type": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except loop.run_until_complete(serve()) as loop:
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
        """),
    "unmasked: except* ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except* E as loop:
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: for": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            for loop in x:
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: a comprehension's for": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            xs = [loop for loop in x]
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: with ... as": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            with x as loop:
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: :=": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            if (loop := x):
                pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: a match's as": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            match x:
                case [*loop] | {**loop} as loop:
                    pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: a nested def's parameter": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            if x:
                def g(loop=1):
                    pass
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: except ... as, the run second in its body": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as loop:
                pass
                loop.run_forever()
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
        """),
    "unmasked: except ... as, an assignment first in its body": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as loop:
                x = 1
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: except ... as, an import as first in its body": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as loop:
                import foo as y
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: except ... as, an augmented assignment first in its body": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            try:
                pass
            except E as loop:
                x += 1
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "unmasked: with ... as, the body's first statement an assignment": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            with x as loop:
                y = 1
            f = lambda: (loop := asyncio.new_event_loop())  # binds loop last, rebinds nothing (in a lambda)
            loop.run_forever()
        """),
    "rebound, the second target an attribute": ([(3, NOFIX)], """
        def main(self):
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            a = self.loop = x
            loop.run_forever()
        """),
    "a method call before the run": ([(3, FIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            log.info('serving')
            loop.set_debug(True)
            loop.run_forever()
        """),
    "the loop closed, never run": ([(3, NOFIX)], """
        def main():
            loop = asyncio.new_event_loop()
            signal.signal(SIGTERM, lambda s, f: stop.set())
            loop.close()
        """),
    "the run on self's loop attribute": ([(5, NOFIX)], """
        class W:
            def __init__(self):
                self.loop = asyncio.new_event_loop()
            def main(self):
                signal.signal(SIGTERM, lambda s, f: stop.set())
                self.loop.run_forever()
        """),
    # ------------------------------------------------------------------ the message's text
    "long call": ([(4, NOFIX)], """
        q = asyncio.Queue()
        def on_term(signum, frame):
            q.put_nowait({"reason": "terminated", "signal": signum, "frame": None})
        signal.signal(SIGTERM, on_term)
        """),
    "call over lines": ([(5, NOFIX)], """
        q = asyncio.Queue()
        def on_term(signum, frame):
            q.put_nowait(
                None)
        signal.signal(SIGTERM, on_term)
        """),
    "parenthesised callee": ([(3, NOFIX)], """
        def on_term(signum, frame):
            ( stop ).set()
        signal.signal(SIGTERM, on_term)
        """),
    "non-ASCII before the registration and in the call": ([(4, NOFIX)], """
        q = asyncio.Queue()
        def on_term(signum, frame):
            q.put_nowait("arrêt")
        é = 1; signal.signal(SIGTERM, on_term)
        """),
    "f-string and concatenated strings in the call": ([(5, NOFIX)], """
        q = asyncio.Queue()
        def on_term(signum, frame):
            q.put_nowait((f"{signum!r:>4}" "x"
                          'y'))
        signal.signal(SIGTERM, on_term)
        """),
}

_MESSAGES = {
    "basic, no loop at hand": "signal handler sets an asyncio.Event (`stop.set()`)",
    "through two callees": "signal handler calls the event loop's `stop()` (`loop.stop()`)",
    "lambda with a comprehension": "signal handler cancels the tasks of `asyncio.all_tasks()` (`t.cancel()`)",
    "create_task and a future": "signal handler completes a future (`fut.set_result(None)`)",
    "method through self": "signal handler puts into an asyncio.Queue (`self.q.put_nowait(None)`)",
    "long call": "(`q.put_nowait({\"reason\": \"terminated\", \"signal\":...`)",
    "call over lines": "(`q.put_nowait(\n    None)`)",
    "parenthesised callee": "(`( stop ).set()`)",
    "non-ASCII before the registration and in the call": "(`q.put_nowait(\"arrêt\")`)",
    "f-string and concatenated strings in the call": "(`q.put_nowait((f\"{signum!r:>4}\" \"x\"\n            ...`)",
}


def _answer(result) -> list:
    out = []
    for d in result.diagnostics:
        assert d.code == "SHD405"
        out.append((d.line - _OFFSET, FIX if d.fix else NOFIX))
        if d.fix:
            assert d.fix["message"] == "Install the handler with `loop.add_signal_handler()`"
            assert d.fix["applicability"] == "unsafe"
    return out


def _source(name: str, newline: str = "\n") -> bytes:
    return (HEAD + textwrap.dedent(CASES[name][1]).lstrip("\n")).replace("\n", newline).encode()


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    every_file_a_candidate(monkeypatch)
    assert _answer(both_ways(_source(name), monkeypatch, _SETTINGS)) == CASES[name][0]


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    both_ways(_source(name), monkeypatch, _SETTINGS, ast_path=False)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["call over lines", "f-string and concatenated strings in the call", "sync, run after a backslash", "sync, on its if's line, run after",
                                  "except ... as another name"])
def test_line_ends(name, newline, monkeypatch):
    every_file_a_candidate(monkeypatch)
    assert _answer(both_ways(_source(name, newline), monkeypatch, _SETTINGS)) == CASES[name][0]


@pytest.mark.parametrize("name", list(_MESSAGES))
def test_messages(name, monkeypatch):
    every_file_a_candidate(monkeypatch)
    d = both_ways(_source(name), monkeypatch, _SETTINGS).diagnostics[0]
    assert _MESSAGES[name] in d.message
