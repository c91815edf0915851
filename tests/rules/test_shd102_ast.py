"""SHD102 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
identifiers that libcst holds in ``Name`` nodes (parameters, keyword arguments, defs, imports and
their dotted parts, ``except ... as``, ``global``), libcst's ``Arg`` (positional, ``*a``, a
keyword's value), ``Element`` (display items, ``del a, b``), parameter defaults, the regions of
nested comprehension ``for``s, bodies on their header's line, code text with owned parentheses,
f-strings next to strings, ``except*`` handlers, and the asyncio shapes the rule reads:
``asyncio.wait`` (result discarded, unpacked, ``FIRST_COMPLETED``, builtin copies,
``run_until_complete``), done callbacks (forgetting, logging, storing), tasks kept in names,
sets, dicts and attributes, ``gather(..., return_exceptions=True)``, ``TaskGroup``, lambdas,
nested defs and non-ASCII lines (character columns).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer. An ``on-error`` option
is set (to its default) so that the candidate tiers do not rule a file out before either engine
sees it; the ast path is still taken (asserted). The cases run with the tiers too.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, key

_SETTINGS = Settings(selected=("SHD102",), rule_options={"SHD102": {"on-error": "log"}})
_UNSAFE_SETTINGS = Settings(selected=("SHD102",), rule_options={"SHD102": {"on-error": "cancel-main"}})
_TIERS = Settings(selected=("SHD102",))

NO = None  # no finding
SAFE = "safe"  # a finding with the (safe) fix
NOFIX = "nofix"  # a finding without a fix

CASES = {
    # ---------------------------------------------------------------- discarded, stored, handed over
    "discarded": (SAFE, """
        import asyncio
        async def main():
            asyncio.create_task(work())
        """),
    "loop.create_task by the receiver's name": (SAFE, """
        def start(loop):
            loop.create_task(work())
        """),
    "TaskGroup.create_task": (NO, """
        import asyncio
        async def main():
            async with asyncio.TaskGroup() as tg:
                tg.create_task(work())
        """),
    "awaited later": (NO, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            await t
        """),
    "handed to a keyword argument": (NO, """
        import asyncio
        async def main(reg):
            reg.track(task=asyncio.create_task(work()))
        """),
    "stored, only cancelled": (SAFE, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            t.cancel()
        """),
    "stored, a parameter of a nested def spelled the same": (NO, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            def inner(t):
                pass
        """),
    "stored, a keyword argument named like it": (NO, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            report(t=1)
        """),
    "stored, a keyword argument of a discard named like it": (SAFE, """
        import asyncio
        async def main(s):
            t = asyncio.create_task(work())
            s.discard(t=1)
        """),
    "stored, a nested def named like it": (NO, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            def t():
                pass
        """),
    "module-level set and a global statement": (NO, """
        import asyncio
        tasks = set()
        async def spawn():
            tasks.add(asyncio.create_task(work()))
        def reset():
            global tasks
        """),
    "module-level set only discarded from": (SAFE, """
        import asyncio
        tasks = set()
        async def spawn():
            tasks.add(asyncio.create_task(work()))
        def drop(t):
            tasks.discard(t)
        """),
    "an except-as name spelled like the holder": (NO, """
        import asyncio
        tasks = []
        async def spawn():
            tasks.append(asyncio.create_task(work()))
            try:
                pass
            except OSError as tasks:
                pass
        """),
    "an import named like the holder": (NO, """
        import asyncio
        from helpers import tasks
        async def spawn():
            tasks.append(asyncio.create_task(work()))
        """),
    "a dotted import's part named like the attribute": (NO, """
        import asyncio
        from asyncio.tasks import Task
        class A:
            def start(self):
                self.tasks = [asyncio.create_task(work())]
        """),
    "a dotted import whose next part is neutral": (SAFE, """
        import asyncio
        import pkg.tasks.clear
        class A:
            def start(self):
                self.tasks = [asyncio.create_task(work())]
        """),
    "del of two names": (NO, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            del t, other
        """),
    "del of one name": (SAFE, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            del t
        """),
    "in a subscript tuple": (NO, """
        import asyncio
        async def main(d):
            t = asyncio.create_task(work())
            d[t, 1]
        """),
    "the test of a conditional expression": (NO, """
        import asyncio
        async def main():
            x = 1 if asyncio.create_task(work()) else 2
        """),
    "a receiver not named like a loop": (NO, """
        async def main(pool):
            pool.create_task(work())
        """),
    "walrus awaited at once, the name unused": (NO, """
        import asyncio
        async def main():
            await (t := asyncio.create_task(work()))
        """),
    "tuple unpacked to two names": (NO, """
        import asyncio
        async def main():
            a, b = asyncio.create_task(work()), 1
        """),
    "tested only": (SAFE, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            if t and not t.done():
                pass
        """),
    "walrus then awaited": (NO, """
        import asyncio
        async def main():
            if (t := asyncio.create_task(work())):
                await t
        """),
    "in a list display then gathered with a star": (NO, """
        import asyncio
        async def main():
            ts = [asyncio.create_task(work()), asyncio.ensure_future(other())]
            await asyncio.gather(*ts)
        """),
    "in a dict display, one value popped and awaited": (NO, """
        import asyncio
        async def main():
            d = {"a": asyncio.create_task(work())}
            await d.pop("a")
        """),
    "in a dict unpacking": (SAFE, """
        import asyncio
        async def main(x):
            d = {**x, "a": asyncio.create_task(work())}
        """),
    "stored, handed to discard by keyword": (SAFE, """
        import asyncio
        async def main(s):
            t = asyncio.create_task(work())
            s.discard(task=t)
        """),
    "stored, only printed": (SAFE, """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            print(t)
        """),
    "a task unpacked into a dict display": (NO, """
        import asyncio
        async def main():
            d = {**asyncio.create_task(work())}
        """),
    # ---------------------------------------------------------------- sets, dicts, attributes
    "the reference idiom": (SAFE, """
        import asyncio
        background = set()
        async def handle():
            t = asyncio.create_task(work())
            background.add(t)
            t.add_done_callback(background.discard)
        """),
    "the reference idiom, callback as a keyword": (SAFE, """
        import asyncio
        background = set()
        async def handle():
            t = asyncio.create_task(work())
            background.add(t)
            t.add_done_callback(fn=background.discard)
        """),
    "a dict popped by a lambda callback": (SAFE, """
        import asyncio
        class H:
            def start(self, k):
                t = asyncio.create_task(self.run(k))
                self._running[k] = t
                t.add_done_callback(lambda _: (self._running).pop(k, None))
        """),
    "a dict of tasks, values gathered": (NO, """
        import asyncio
        class H:
            def start(self, k):
                self._t[k] = asyncio.create_task(self.run(k))
            async def stop(self):
                await asyncio.gather(*self._t.values())
        """),
    "a dict of tasks, two entries deleted in one del": (NO, """
        import asyncio
        class H:
            def start(self, k):
                self._t[k] = asyncio.create_task(self.run(k))
            def forget(self, k):
                del self._t[k], self._other[k]
        """),
    "an attribute of another object": (NO, """
        import asyncio
        async def main(o):
            o.task = asyncio.create_task(work())
        """),
    "a self attribute in parentheses": (SAFE, """
        import asyncio
        class A:
            def start(self):
                (self.task) = asyncio.create_task(self.run())
        """),
    # ---------------------------------------------------------------- done callbacks
    "callback logs the exception (def)": (NOFIX, """
        import asyncio
        def on_done(t):
            if t.exception():
                log.error("failed: %s", t.exception())
        async def main(q):
            task = asyncio.create_task(work())
            task.add_done_callback(on_done)
            await q.get()
        """),
    "callback logs through a keyword": (NOFIX, """
        import asyncio
        async def main(q):
            task = asyncio.create_task(work())
            task.add_done_callback(lambda t: logger.error("failed", exc_info=t.exception()))
            await q.get()
        """),
    "callback stores the exception": (NO, """
        import asyncio
        class P:
            def start(self):
                self.task = asyncio.create_task(self.produce())
                self.task.add_done_callback(self._on_done)
            def _on_done(self, t):
                exc = t.exception()
                self.error = exc
        """),
    "callback logs then sets an event": (NO, """
        import asyncio
        async def main(ev):
            task = asyncio.create_task(work())
            task.add_done_callback(lambda t: (print(t.exception()), ev.set()))
        """),
    "callback with a nested lambda parameter of the same name": (NOFIX, """
        import asyncio
        def on_done(t):
            print(t.exception())
            f = lambda t: 0
        async def main():
            task = asyncio.create_task(work())
            task.add_done_callback(on_done)
        """),
    "callback whose parameter is positional-only": (NO, """
        import asyncio
        def on_done(t, /):
            print(t.exception())
        async def main():
            task = asyncio.create_task(work())
            task.add_done_callback(on_done)
        """),
    "callback with a walrus kept": (NO, """
        import asyncio
        def on_done(t):
            if (e := t.exception()):
                raise e
        async def main():
            asyncio.create_task(work()).add_done_callback(on_done)
        """),
    "callback formats in an f-string next to a string": (NO, """
        import asyncio
        def on_done(t):
            print("task " f"{t.exception()!r}")
        async def main():
            asyncio.create_task(work()).add_done_callback(on_done)
        """),
    "method callback logs": (NOFIX, """
        import asyncio
        class P:
            def start(self):
                self.task = asyncio.create_task(self.produce())
                self.task.add_done_callback(self._on_done)
            def _on_done(self, t):
                logger.warning("failed: %r", t.exception())
        """),
    "callback logs into a dict unpacking": (NO, """
        import asyncio
        def on_done(t):
            print({**t.exception()})
        async def main():
            asyncio.create_task(work()).add_done_callback(on_done)
        """),
    "lambda callback whose parameter is positional-only": (NO, """
        import asyncio
        async def main():
            asyncio.create_task(work()).add_done_callback(lambda t, /: print(t.exception()))
        """),
    "callback with a keyword spelled like its parameter": (NOFIX, """
        import asyncio
        def on_done(t):
            log.error("failed", t=1)
            print(t.exception())
        async def main():
            asyncio.create_task(work()).add_done_callback(on_done)
        """),
    "callback with a walrus only logged": (NOFIX, """
        import asyncio
        def on_done(t):
            if (e := t.exception()):
                log.error("failed: %s", e)
        async def main():
            asyncio.create_task(work()).add_done_callback(on_done)
        """),
    "a partial callback": (NO, """
        import asyncio, functools
        async def main():
            asyncio.create_task(work()).add_done_callback(functools.partial(cb, 1))
        """),
    # ---------------------------------------------------------------- gather(return_exceptions=True)
    "gather discarded": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.gather(*ts, return_exceptions=True)
        """),
    "gather with a parenthesised True": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            _ = await asyncio.gather(*ts, return_exceptions=(True))
        """),
    "gather result read": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            rs = await asyncio.gather(*ts, return_exceptions=True)
            return rs
        """),
    "gather result named, only a keyword spelled like it": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            rs = await asyncio.gather(*ts, return_exceptions=True)
            g(rs=1)
        """),
    "gather discarded, the coroutine records failures": (NO, """
        import asyncio
        async def run(jobs):
            failure = None
            async def one(j):
                nonlocal failure
                try:
                    await j()
                except (ValueError, BaseException) as exc:
                    failure = exc
            ts = [asyncio.create_task(one(j)) for j in jobs]
            await asyncio.gather(*ts, return_exceptions=True)
        """),
    "gather discarded, the coroutine records only under except*": (SAFE, """
        import asyncio
        async def run(jobs):
            failure = None
            async def one(j):
                nonlocal failure
                try:
                    await j()
                except* BaseException as exc:
                    failure = exc
            ts = [asyncio.create_task(one(j)) for j in jobs]
            await asyncio.gather(*ts, return_exceptions=True)
        """),
    "watcher default parameter, keyword-only": (SAFE, """
        import asyncio
        async def run(jobs, done):
            ts = [asyncio.create_task(j()) for j in jobs]
            async def watch(*, pending=ts):
                await asyncio.gather(*pending, return_exceptions=True)
                done.set()
            await watch()
        """),
    "watcher default parameter of a lambda": (NO, """
        import asyncio
        async def run(jobs):
            ts = [asyncio.create_task(j()) for j in jobs]
            w = lambda pending=ts: 0
        """),
    "watcher default parameter, positional": (SAFE, """
        import asyncio
        async def run(jobs, done):
            ts = [asyncio.create_task(j()) for j in jobs]
            async def watch(a, pending=ts):
                await asyncio.gather(*pending, return_exceptions=True)
            await watch(1)
        """),
    "gather with return_exceptions=1": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.gather(*ts, return_exceptions=1)
        """),
    # ---------------------------------------------------------------- asyncio.wait
    "wait discarded": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.wait(ts)
        """),
    "wait FIRST_COMPLETED": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.wait(ts, return_when=asyncio.FIRST_COMPLETED)
        """),
    "wait FIRST_EXCEPTION": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.wait(ts, return_when=asyncio.FIRST_EXCEPTION)
        """),
    "wait with a parenthesised ALL_COMPLETED": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.wait(ts, return_when=(asyncio.ALL_COMPLETED))
        """),
    "wait, done set counted": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            done, pending = await asyncio.wait(ts, timeout=1)
            print(len(done))
        """),
    "wait, done set asked": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            done, pending = await asyncio.wait(ts)
            for t in done:
                t.result()
        """),
    "wait, done set deleted with another": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            done, pending = await asyncio.wait(ts)
            del done, pending
        """),
    "wait, starred first target": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            *done, pending = await asyncio.wait(ts)
        """),
    "wait result in one name, unread": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            r = await asyncio.wait(ts)
        """),
    "wait result bound to _, gettext's _ called": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            _ = await asyncio.wait(ts)
            print(_("done"))
        """),
    "run_until_complete of wait": (SAFE, """
        import asyncio
        def main(loop, xs):
            ts = [loop.create_task(f(x)) for x in xs]
            loop.run_until_complete(asyncio.wait(ts))
        """),
    "run_until_complete of wait, not its first argument": (NO, """
        import asyncio
        def main(loop, xs):
            ts = [loop.create_task(f(x)) for x in xs]
            loop.run_until_complete(1, asyncio.wait(ts))
        """),
    "wait of a builtin copy": (SAFE, """
        import asyncio
        class S:
            def start(self, k):
                self._d[k] = asyncio.create_task(self.run(k))
            async def stop(self):
                await asyncio.wait(list(self._d.values()))
        """),
    "wait of a copy by a shadowing def": (NO, """
        import asyncio
        def list(x):
            return x
        class S:
            def start(self, k):
                self._d[k] = asyncio.create_task(self.run(k))
            async def stop(self):
                await asyncio.wait(list(self._d.values()))
        """),
    "wait of a copy whose tasks are not its first argument": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.wait(sorted(xs, ts))
        """),
    "wait of a starred copy": (SAFE, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            await asyncio.wait([*ts])
        """),
    # ---------------------------------------------------------------- comprehensions, loops, lambdas
    "iterated and awaited": (NO, """
        import asyncio
        async def main(xs):
            ts = [asyncio.create_task(f(x)) for x in xs]
            for t in ts:
                print(await t)
        """),
    "iterated, key and task": (SAFE, """
        import asyncio
        async def main(xs):
            d = {x: asyncio.create_task(f(x)) for x in xs}
            for k, t in d.items():
                t.cancel()
        """),
    "iterated, a starred last target": (SAFE, """
        import asyncio
        async def main(xs):
            d = {x: asyncio.create_task(f(x)) for x in xs}
            for k, *rest in d.items():
                rest.cancel()
        """),
    "inner comprehension for: the element is outside its region": (SAFE, """
        import asyncio
        async def main(groups):
            ts = [asyncio.create_task(f(g)) for g in groups]
            r = [await t for u in [1] for t in ts]
        """),
    "first comprehension for: the element is in its region": (NO, """
        import asyncio
        async def main(groups):
            ts = [asyncio.create_task(f(g)) for g in groups]
            r = [await t for t in ts]
        """),
    "spawn in a lambda body": (NO, """
        import asyncio
        f = lambda: asyncio.create_task(work())
        """),
    "spawn in a generator argument": (NO, """
        import asyncio
        async def main(xs):
            await asyncio.gather(*(asyncio.create_task(f(x)) for x in xs))
        """),
    "spawn in a conditional expression": (SAFE, """
        import asyncio
        async def main(c):
            t = asyncio.create_task(a()) if c else None
        """),
    # ---------------------------------------------------------------- the coroutine's own handling
    "coroutine swallows every exception": (NO, """
        import asyncio
        async def poll(q):
            while True:
                try:
                    await q.step()
                except Exception:
                    logger.exception("x")
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's handler in parentheses": (SAFE, """
        import asyncio
        async def poll(q):
            try:
                await q.step()
            except (Exception):
                pass
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's loop on its header line": (SAFE, """
        import asyncio
        async def poll(q):
            while True: pass
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's if on its header line": (SAFE, """
        import asyncio
        async def poll(q):
            if q: x = 1
            try:
                await q.step()
            except Exception:
                pass
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's elif and else blocks": (NO, """
        import asyncio
        async def poll(q):
            if q:
                x = 1
            elif q.y:
                await asyncio.sleep(1)
            else:
                "doc" f"{q}"
            try:
                await q.step()
            except BaseException:
                pass
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's lone f-string statement": (SAFE, """
        import asyncio
        async def poll(q):
            f"{q}"
            try:
                await q.step()
            except BaseException:
                pass
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's handler re-raises": (SAFE, """
        import asyncio
        async def poll(q):
            try:
                await q.step()
            except Exception:
                raise
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's finally raises in a class body": (SAFE, """
        import asyncio
        async def poll(q):
            try:
                await q.step()
            except Exception:
                pass
            finally:
                class E:
                    raise ValueError
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's finally raises in a nested def only": (NO, """
        import asyncio
        async def poll(q):
            try:
                await q.step()
            except Exception:
                pass
            finally:
                def later():
                    raise ValueError
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's body on the def line": (SAFE, """
        import asyncio
        async def poll(q): await asyncio.sleep(1)
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "coroutine's body after the def line's colon and a backslash": (SAFE, """
        import asyncio
        async def poll(q): \\
            await asyncio.sleep(1)
        async def main(q):
            asyncio.create_task(poll(q))
        """),
    "watcher that only waits": (NO, """
        import asyncio
        async def watch(ts, ev):
            await asyncio.gather(*ts, return_exceptions=True)
            ev.set()
        async def main(ts, ev):
            asyncio.create_task(watch(ts, ev))
        """),
    "watcher with a parenthesised True": (SAFE, """
        import asyncio
        async def watch(ts, ev):
            await asyncio.gather(*ts, return_exceptions=(True))
        async def main(ts, ev):
            asyncio.create_task(watch(ts, ev))
        """),
    "method coroutine swallowing, spawned by a loop attribute": (NO, """
        import asyncio
        class R:
            async def report(self):
                while True:
                    try:
                        await asyncio.sleep(1)
                    except Exception:
                        pass
            def start(self):
                self._loop.create_task(self.report())
        """),
    # ---------------------------------------------------------------- columns
    "non-ASCII line": (SAFE, """
        import asyncio
        async def main():
            é = "日本"; asyncio.create_task(work())  # café
        """),
}


_key = key


def _both_ways(source: bytes, path: str, monkeypatch, settings: Settings = _SETTINGS, ast_path: bool = True):
    return both_ways(source, monkeypatch, settings, path, ast_path=ast_path)


def _answer(result):
    answers = [(d.fix["applicability"] if d.fix else NOFIX) for d in result.diagnostics]
    if not answers:
        return NO
    return answers[0] if len(answers) == 1 else answers


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    result = _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch)
    assert _answer(result) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _, source = CASES[name]
    _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch, _TIERS, ast_path=False)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_line_ends(newline, monkeypatch):
    """Every case with CRLF and CR-only line ends: the same result both ways."""
    for expected, source in CASES.values():
        text = textwrap.dedent(source).replace("\n", newline)
        _both_ways(text.encode(), "m.py", monkeypatch)


def test_unsafe_policy_and_log_only(monkeypatch):
    """``on-error = "cancel-main"``: an unsafe fix, also for a log-only callback."""
    source = textwrap.dedent(CASES["callback logs the exception (def)"][1]).encode()
    (d,) = _both_ways(source, "m.py", monkeypatch, _UNSAFE_SETTINGS).diagnostics
    assert d.fix["applicability"] == "unsafe" and "cancel-main" in d.fix["message"]


def test_columns_and_messages(monkeypatch):
    source = 'import asyncio\nasync def main():\n    é = "ü"; t = asyncio.create_task(work())\n    t.cancel()\n'
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics
    assert (d.line, d.column) == (3, 18)  # 20 in UTF-8 bytes
    assert "task stored in `t`" in d.message
    source = textwrap.dedent(CASES["a self attribute in parentheses"][1]).encode()
    (d,) = _both_ways(source, "m.py", monkeypatch).diagnostics
    assert "`(self.task)`" in d.message
    source = textwrap.dedent(CASES["a dict popped by a lambda callback"][1]).encode()
    (d,) = _both_ways(source, "m.py", monkeypatch).diagnostics
    assert "kept in `(self._running)`" in d.message
