"""SHD403 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
interrupt paths (``except KeyboardInterrupt``/``BaseException``/bare/tuples/``except*``, ``finally``,
one-line handlers, the order of cancel and wait, nested defs, lambdas and classes in a handler,
helpers one call deep, ``runtime_guard.on_interrupt`` as a ``with`` or a decorator, protected
callers), the refs a handler cancels (their text with owned parentheses, list displays, ``for``
loops over them, starred arguments), refs a ``ray.wait`` returned as ready (unpacking shapes,
loops in source order, nested defs), ``ray.get`` in lambdas and comprehensions, drivers vs Ray
actors vs remote functions, the coroutine's fix (none inside a comprehension), ``a; b``, bodies on
their header's line and non-ASCII lines (character columns).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer. ``cleanup_calls`` is set
so that the candidate tiers do not rule a file out before either engine sees it; the ast path is
still taken (asserted). The same cases run with the tiers too (default options).
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, key

_SETTINGS = Settings(selected=("SHD403",), target_version="py311",
                     rule_options={"SHD403": {"cleanup_calls": ["jobs.stop_all"]}})
_TIERS = Settings(selected=("SHD403",), target_version="py311")

NO = None  # no finding
UNSAFE = "unsafe"  # a finding with the (unsafe) fix
NOFIX = "nofix"  # a finding without a fix

CASES = {
    # ---------------------------------------------------------------- drivers, actors, remote functions
    "module level after ray.init": (UNSAFE, """
        import ray
        ray.init()
        ray.get(job.remote())
        """),
    "main guard, a; b": (UNSAFE, """
        import ray
        if __name__ == "__main__":
            ref = job.remote(); out = ray.get(ref)
        """),
    "main guard, body on the header line": (UNSAFE, """
        import ray
        if __name__ == "__main__": ray.get(job.remote())
        """),
    "library function: not reported": (NO, """
        import ray
        def collect(refs):
            return ray.get(refs)
        """),
    "remote function: not reported": (NO, """
        import ray
        @ray.remote
        def outer(refs):
            return ray.get(refs)
        def main():
            ray.init()
            outer.remote([])
        """),
    "actor method: not reported": (NO, """
        import ray
        @ray.remote(num_cpus=1)
        class Worker:
            def run(self, refs):
                return ray.get(refs)
        def main():
            ray.init()
        """),
    "actor through ray.remote(Cls): not reported": (NO, """
        import ray
        class Worker:
            def run(self, refs):
                return ray.get(refs)
        Actor = ray.remote(Worker)
        def main():
            ray.init()
            Actor.remote()
        """),
    "async actor method: not reported": (NO, """
        import ray
        @ray.remote
        class Worker:
            async def run(self, refs):
                return ray.get(refs)
        """),
    "helper called from main, unprotected": ([UNSAFE, UNSAFE], """
        import ray
        def fetch(ref):
            return ray.get(ref)
        def main():
            ray.init()
            fetch(job.remote())
            ray.wait([job.remote()])
        """),
    "lambda in the sync driver": (UNSAFE, """
        import ray
        ray.init()
        get = lambda r: ray.get(r)
        """),
    "lambda in the driver's coroutine: not reported": (NO, """
        import asyncio, ray
        async def main():
            ray.init()
            f = lambda r: ray.get(r)
        asyncio.run(main())
        """),
    # ---------------------------------------------------------------- timeouts
    "timeout=None": (UNSAFE, """
        import ray
        ray.init()
        ray.get(ref, timeout=None)
        """),
    "timeout=(None)": (UNSAFE, """
        import ray
        ray.init()
        ray.get(ref, timeout=(None))
        """),
    "timeout=0: not reported": (NO, """
        import ray
        ray.init()
        ray.wait(refs, timeout=0)
        """),
    "timeout=False: not reported": (NO, """
        import ray
        ray.init()
        ray.get(ref, timeout=False)
        """),
    "**kw only": (UNSAFE, """
        import ray
        ray.init()
        ray.get(ref, **kw)
        """),
    # ---------------------------------------------------------------- the coroutine
    "coroutine: await, in a subscript, an attribute, a call": ([UNSAFE, UNSAFE, UNSAFE, UNSAFE], """
        import asyncio, ray
        async def main():
            ray.init()
            a = ray.get(r)
            b = ray.get(r)[0]
            c = ray.get(r).x
            d = ray.wait(r)(1)
        asyncio.run(main())
        """),
    "coroutine: comprehensions, no fix": ([NOFIX, NOFIX, NOFIX, NOFIX, NOFIX], """
        import asyncio, ray
        async def main():
            ray.init()
            a = [ray.get(r) for r in refs]
            b = {ray.get(r) for r in refs}
            c = {r: ray.get(r) for r in refs}
            d = list(ray.get(r) for r in refs)
            e = [x for x in ray.get(refs)]
        asyncio.run(main())
        """),
    "sync driver: comprehension keeps its fix": (UNSAFE, """
        import ray
        def main():
            ray.init()
            return [ray.get(r) for r in refs]
        """),
    "coroutine: nested sync def in a comprehension's function": (UNSAFE, """
        import asyncio, ray
        async def main():
            ray.init()
            def inner():
                return ray.get(r)
            return [inner() for _ in range(2)]
        asyncio.run(main())
        """),
    # ---------------------------------------------------------------- interrupt paths
    "except KeyboardInterrupt cancels and waits": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                ray.cancel(ref)
                ray.wait([ref], timeout=5)
                raise
        """),
    "one-line handler: cancel; wait": (NO, """
        import ray
        def main():
            ray.init()
            try: ray.get(ref)
            except KeyboardInterrupt: ray.cancel(other); ray.wait([other], timeout=5); raise
        """),
    "wait before cancel is no path": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                ray.wait([other], timeout=5)
                ray.cancel(other)
        """),
    "cancel then wait of something else is a path": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                ray.cancel(other)
                ray.wait([other], timeout=5)
        """),
    "tuple with KeyboardInterrupt": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except (ValueError, KeyboardInterrupt):
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "tuple with a starred element": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except (*errors, BaseException) as e:
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "a starred handler type names its value, as libcst": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except (ValueError, *KeyboardInterrupt):
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "the second handler": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except ValueError:
                pass
            except KeyboardInterrupt:
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "except* KeyboardInterrupt": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except* KeyboardInterrupt:
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "bare except": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except:
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "except Exception is no path": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except Exception:
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "except through an alias of KeyboardInterrupt": (NO, """
        import ray
        from builtins import KeyboardInterrupt as KI
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KI:
                ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "finally cancels and waits": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            finally:
                ray.cancel(x)
                ray.wait([x], timeout=5)
        """),
    "in the try's else: not protected": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                pass
            except KeyboardInterrupt:
                ray.cancel(x); ray.wait([x], timeout=5)
            else:
                ray.get(ref)
        """),
    "in the handler of another try": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                pass
            except KeyboardInterrupt:
                ray.get(ref)
        """),
    "a nested def in the handler does not run": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                def later():
                    ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "a lambda in the handler does not run": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                later = lambda: (ray.cancel(x), ray.wait([x], timeout=5))
        """),
    "a class body in the handler runs": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                class Stop:
                    ray.cancel(x); ray.wait([x], timeout=5)
        """),
    "a helper that cancels and waits": (NO, """
        import ray
        def stop(refs):
            for r in refs:
                ray.cancel(r)
            ray.wait(refs, timeout=10)
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                stop([ref])
        """),
    "a helper's helper is too deep": (UNSAFE, """
        import ray
        def stop(refs):
            ray.cancel(x); ray.wait([x], timeout=5)
        def halt(refs):
            stop(refs)
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                halt([other])
        """),
    "runtime_guard.ray.cancel_and_wait": (NO, """
        import ray, runtime_guard
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                runtime_guard.ray.cancel_and_wait([ref])
        """),
    "cleanup_calls option": (NO, """
        import ray
        from jobs import stop_all
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                stop_all([ref])
        """),
    "with runtime_guard.on_interrupt": (NO, """
        import ray, runtime_guard
        def main():
            ray.init()
            with (runtime_guard.on_interrupt(stop)):
                ray.get(ref)
        """),
    "async with runtime_guard.on_interrupt": (NO, """
        import asyncio, ray, runtime_guard
        async def main():
            ray.init()
            async with runtime_guard.on_interrupt(stop):
                ray.get(ref)
        asyncio.run(main())
        """),
    "with on_interrupt around the def's only call": (NO, """
        import ray, runtime_guard
        ray.init()
        with runtime_guard.on_interrupt(stop):
            def fetch():
                return ray.get(ref)
            fetch()
        """),
    "on_interrupt decorator": (NO, """
        import ray
        from runtime_guard import on_interrupt
        @on_interrupt(stop)
        def main():
            ray.init()
            ray.get(ref)
        """),
    "every caller protected": (NO, """
        import ray
        def fetch(ref):
            return ray.get(ref)
        def main():
            ray.init()
            try:
                fetch(a)
            except KeyboardInterrupt:
                ray.cancel(a); ray.wait([a], timeout=5)
        """),
    "one caller unprotected": (UNSAFE, """
        import ray
        def fetch(ref):
            return ray.get(ref)
        def main():
            ray.init()
            fetch(b)
            try:
                fetch(a)
            except KeyboardInterrupt:
                ray.cancel(a); ray.wait([a], timeout=5)
        """),
    "a with around an async def does not protect its body": (UNSAFE, """
        import asyncio, ray, runtime_guard
        ray.init()
        with runtime_guard.on_interrupt(stop):
            async def main():
                ray.get(ref)
        asyncio.run(main())
        """),
    # ---------------------------------------------------------------- the path cancels (SHD501's)
    "handler cancels the same ref without waiting": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                ray.cancel(ref)
        """),
    "handler cancels another ref": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            except KeyboardInterrupt:
                ray.cancel(other)
        """),
    "parenthesised ref vs bare cancel": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get((ref))
            except KeyboardInterrupt:
                ray.cancel(ref)
        """),
    "parenthesised both": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get((ref))
            except KeyboardInterrupt:
                ray.cancel((ref))
        """),
    "multi-line list display, elements cancelled": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get([a,
                         b])
            finally:
                ray.cancel(a)
                ray.cancel(b)
        """),
    "list display, one element cancelled": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get([a, b])
            finally:
                ray.cancel(a)
        """),
    "list display with a starred element": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get([a, *rest])
            finally:
                ray.cancel(a)
        """),
    "a loop cancels the refs": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.wait(refs, num_returns=2)
            finally:
                for r in refs:
                    ray.cancel(r)
        """),
    "a loop over the refs in parentheses is other text": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.wait(refs, num_returns=2)
            finally:
                for r in (refs):
                    ray.cancel(r)
        """),
    "an async loop cancels the refs (nested)": (NO, """
        import asyncio, ray
        async def main():
            ray.init()
            try:
                ray.wait(refs, num_returns=2)
            except BaseException:
                async for r in refs:
                    if r:
                        ray.cancel(r)
        asyncio.run(main())
        """),
    "a loop with a tuple target": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.wait(refs)
            finally:
                for r, _ in refs:
                    ray.cancel(r)
        """),
    "a loop around the try is not the handler's": (UNSAFE, """
        import ray
        def main():
            ray.init()
            for r in refs:
                try:
                    ray.wait(refs)
                finally:
                    ray.cancel(r)
        """),
    "starred cancel": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(refs)
            finally:
                ray.cancel(*refs)
        """),
    "cancel: the first positional after a starred one": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(ref)
            finally:
                ray.cancel(*more, ref, force=True)
        """),
    "starred ray.get argument": (UNSAFE, """
        import ray
        def main():
            ray.init()
            try:
                ray.get(*refs)
            finally:
                ray.cancel(refs)
        """),
    # ---------------------------------------------------------------- refs known ready
    "ready from ray.wait (the wait is reported)": (UNSAFE, """
        import ray
        def main():
            ray.init()
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                print(ray.get(ready), ray.get(ready[0]))
                for r in ready:
                    ray.get(r)
        """),
    "ready through a starred first target": (NO, """
        import ray
        def main():
            ray.init()
            *ready, rest = ray.wait(pending, timeout=0)
            ray.get(ready)
        """),
    "ready through a list target, two targets": (NO, """
        import ray
        def main():
            ray.init()
            x = [ready, rest] = ray.wait(pending, timeout=0)
            ray.get(ready)
        """),
    "ready as a starred ray.get argument": (NO, """
        import ray
        def main():
            ray.init()
            ready, rest = ray.wait(pending, timeout=0)
            ray.get(*ready)
        """),
    "ready by keyword is not the first argument": (UNSAFE, """
        import ray
        def main():
            ray.init()
            ready, rest = ray.wait(pending, timeout=0)
            ray.get(object_refs=ready)
        """),
    "loops read in source order": (UNSAFE, """
        import ray
        def main():
            ray.init()
            ready, _ = ray.wait(p, timeout=0)
            for x in y:
                ray.get(x)
            for y in ready:
                pass
        """),
    "nested loops read outer first": (NO, """
        import ray
        def main():
            ray.init()
            ready, _ = ray.wait(p, timeout=0)
            for y in ready:
                for x in y:
                    ray.get(x)
        """),
    "ready assigned in a nested def counts": (NO, """
        import ray
        def main():
            ray.init()
            def poll():
                ready, _ = ray.wait(p, timeout=0)
            ray.get(ready)
        """),
    "ready from an awaited wait does not count": (UNSAFE, """
        import ray
        def main():
            ray.init()
            ready, _ = await_it(ray.wait(p, timeout=0))
            ray.get(ready)
        """),
    "ready at module level": (NO, """
        import ray
        ray.init()
        ready, _ = ray.wait(p, timeout=0); ray.get(ready[0])
        """),
    "ready through an async for": (NO, """
        import asyncio, ray
        async def main():
            ray.init()
            ready, _ = ray.wait(p, timeout=0)
            async for y in ready:
                ray.get(y)
        asyncio.run(main())
        """),
    "ready from interruptible_wait": (NO, """
        import ray, runtime_guard
        def main():
            ray.init()
            done, refs = runtime_guard.ray.interruptible_wait(refs, num_returns=1)
            ray.get(done)
        """),
    # ---------------------------------------------------------------- non-ASCII
    "non-ASCII before the call": (UNSAFE, """
        import ray
        def main():
            ray.init()
            é = "日本"; ray.get(réf)  # café
        """),
    "non-ASCII refs cancelled": (NO, """
        import ray
        def main():
            ray.init()
            try:
                ray.get([réf, "ü"])
            except KeyboardInterrupt:
                ray.cancel(réf); ray.cancel("ü")
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


def test_columns_and_messages(monkeypatch):
    source = 'import ray\ndef main():\n    ray.init()\n    é = "ü"; ray.get(réf)  # café\n'
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics
    assert (d.line, d.column, d.end_column) == (4, 14, 26)  # 1-based characters (17 and 30 in UTF-8 bytes)
    assert d.fix["message"] == "Replace with `runtime_guard.ray.interruptible_get()`"
    source = "import asyncio, ray\nasync def main():\n    ray.init()\n    ray.wait(refs)\nasyncio.run(main())\n"
    (d,) = _both_ways(source.encode(), "m.py", monkeypatch).diagnostics
    assert d.message.startswith("`ray.wait()` in the driver's coroutine")
    assert d.fix["message"] == "Replace with `await runtime_guard.ray.interruptible_wait_async()`"
