"""Execution facts: where code runs depends on decorator arguments (threaded Ray actors)."""
from __future__ import annotations

import textwrap

import libcst as cst

from shutdown_lint.facts import LOOP_THREAD, MAIN_COROUTINE, RAY_THREADED_ACTOR, ModuleFacts


def _facts(code: str) -> ModuleFacts:
    return ModuleFacts.build(cst.parse_module(textwrap.dedent(code)))


def _fn(facts: ModuleFacts, qualname: str):
    return next(f for f in facts.functions if f.qualname == qualname)


def _cls(facts: ModuleFacts, name: str):
    return next(c for c in facts.classes if c.name == name)


CODE = """
    import asyncio
    import ray

    async def rollout():
        await work()

    async def other():
        await work()

    @ray.remote(max_concurrency=8)
    class Threaded:
        def run(self):
            asyncio.run(rollout())

    @ray.remote(max_concurrency=1)
    class Single:
        def run(self):
            asyncio.run(other())

    class ByOptions:
        def run(self):
            pass

    class ByCall:
        def run(self):
            pass

    class Groups:
        def run(self):
            pass

    Handle = ray.remote(ByOptions)
    h = Handle.options(max_concurrency=n).remote()
    ray.remote(max_concurrency=4)(ByCall)
    ray.remote(concurrency_groups={"io": 2})(Groups)

    @ray.remote(max_concurrency=8)
    class AsyncActor:
        async def run(self):
            pass
"""


def test_threaded_actors_and_their_loops():
    facts = _facts(CODE)
    for name in ("Threaded", "ByOptions", "ByCall", "Groups"):
        assert facts.is_threaded_ray_actor(_cls(facts, name)), name
    assert not facts.is_threaded_ray_actor(_cls(facts, "Single"))
    assert not facts.is_threaded_ray_actor(_cls(facts, "AsyncActor"))  # an async actor: one loop thread
    assert RAY_THREADED_ACTOR in facts.contexts(_fn(facts, "Threaded.run"))
    assert LOOP_THREAD in facts.contexts(_fn(facts, "rollout"))  # asyncio.run on a pool thread
    assert MAIN_COROUTINE in facts.contexts(_fn(facts, "other"))  # max_concurrency=1: the main thread
    calls = facts.main_runner_calls(_fn(facts, "Threaded.run"))
    assert [coro.name for _, coro in calls] == ["rollout"]
