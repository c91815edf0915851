"""SIGTERM-style cancellation of a loop running in another thread (what an async Ray actor has).

Plain asyncio, no cluster: a real loop in a real thread, cancelled from the main thread by the
same ``runtime_guard.ray.cancel_loop_tasks`` the worker's SIGTERM handler calls. Each child
leases a marker file and removes it in ``finally`` after an await (like a sandbox API call).
Cancelling every task at once made the TaskGroup cancel its children a second time inside that
``finally``: 3-10 of 20 markers leaked. Root-first cancellation must leak none.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Coroutine

import pytest

from runtime_guard import watchdog
from runtime_guard._cancel import awaited_tasks, is_cancelling, root_tasks

import ray  # noqa: E402,F401  (the test extra installs it)
import runtime_guard.ray as rg_ray  # noqa: E402  (the function under test lives here)

pytestmark = pytest.mark.timeout(60)
N = 20


def _child_factory(d: Path, log: list) -> Callable[[int], Coroutine[Any, Any, None]]:
    async def child(i: int) -> None:
        marker = d / f"sandbox-{i:02d}"
        marker.touch()
        try:
            await asyncio.sleep(100)
        finally:
            try:
                await asyncio.sleep(0.2)  # the cleanup call
                marker.unlink()
            except asyncio.CancelledError:
                log.append(i)  # cancelled a second time inside finally
                raise

    return child


def _bodies(d: Path, log: list) -> dict:
    child = _child_factory(d, log)

    async def taskgroup() -> None:
        async with asyncio.TaskGroup() as tg:
            for i in range(N):
                tg.create_task(child(i))

    async def gather() -> None:
        await asyncio.gather(*[child(i) for i in range(N)])

    async def nested() -> None:  # TaskGroup of gathers of awaited tasks
        async def half(lo: int) -> None:
            await asyncio.gather(*[asyncio.create_task(child(i)) for i in range(lo, lo + N // 2)])

        async with asyncio.TaskGroup() as tg:
            tg.create_task(half(0))
            tg.create_task(half(N // 2))

    return {"taskgroup": taskgroup, "gather": gather, "nested": nested}


def _run_in_thread_loop(body: Callable[[], Coroutine[Any, Any, None]]) -> "tuple[asyncio.AbstractEventLoop, threading.Thread]":
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    async def actor_call() -> None:  # stands for the task Ray creates for the actor method call
        await body()

    def thread_main() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.create_task(actor_call())
        try:
            loop.run_forever()
        finally:
            loop.close()

    t = threading.Thread(target=thread_main, name="actor-loop", daemon=True)
    t.start()
    assert ready.wait(10)
    watchdog.register_loop(loop)  # what setup_worker() does for an async actor's loop
    return loop, t


@pytest.mark.parametrize("shape", ["taskgroup", "gather", "nested"])
def test_cancel_loop_tasks_runs_every_cleanup_once(tmp_path: Path, shape: str) -> None:
    double_cancelled: list = []
    loop, thread = _run_in_thread_loop(_bodies(tmp_path, double_cancelled)[shape])
    try:
        end = time.monotonic() + 10
        while len(os.listdir(tmp_path)) < N and time.monotonic() < end:
            time.sleep(0.01)
        assert len(os.listdir(tmp_path)) == N
        cancelled = rg_ray.cancel_loop_tasks(timeout=10)
        assert cancelled >= N + 1
        assert sorted(os.listdir(tmp_path)) == [], f"leaked cleanups; double-cancelled: {double_cancelled}"
        assert double_cancelled == []
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def test_tasks_left_running_after_their_awaiter_are_cancelled_later(tmp_path: Path) -> None:
    # The awaiter swallows its cancellation and returns; the shielded task it awaited is then a
    # root on its own and is cancelled in a later round (its cleanup runs too).
    marker = tmp_path / "shielded"

    async def inner() -> None:
        marker.touch()
        try:
            await asyncio.sleep(100)
        finally:
            await asyncio.sleep(0.1)
            marker.unlink()

    async def body() -> None:
        try:
            await asyncio.shield(asyncio.ensure_future(inner()))
        except asyncio.CancelledError:
            pass  # swallowed: the shielded task keeps running

    loop, thread = _run_in_thread_loop(body)
    try:
        end = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < end:
            time.sleep(0.01)
        rg_ray.cancel_loop_tasks(timeout=10)
        assert not marker.exists()
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


def test_root_detection_sees_taskgroup_gather_and_await() -> None:
    async def main() -> None:
        async def leaf() -> None:
            await asyncio.sleep(10)

        async def awaits_task(t: "asyncio.Task[None]") -> None:
            await t

        direct = asyncio.create_task(leaf())
        waiter = asyncio.create_task(awaits_task(direct))
        g1, g2 = asyncio.create_task(leaf()), asyncio.create_task(leaf())
        async def gathers() -> None:
            await asyncio.gather(g1, g2)

        gatherer = asyncio.create_task(gathers())
        lone = asyncio.create_task(leaf())
        async with asyncio.TaskGroup() as tg:
            kids = [tg.create_task(leaf()) for _ in range(3)]
            await asyncio.sleep(0.05)
            tasks = {t for t in asyncio.all_tasks() if not t.done()}
            below = awaited_tasks(tasks)
            roots = set(root_tasks(tasks))
            me = asyncio.current_task()
            assert {direct, g1, g2, *kids} <= below
            assert {waiter, gatherer, lone, me} <= roots
            assert not is_cancelling(me)  # type: ignore[arg-type]
            for t in kids:
                t.cancel()
        for t in (direct, waiter, g1, g2, gatherer, lone):
            t.cancel()
        await asyncio.gather(direct, waiter, gatherer, lone, return_exceptions=True)

    asyncio.run(main())


def test_supervise_cancel_main_does_not_cancel_an_unwinding_main_twice(tmp_path: Path) -> None:
    # Two supervised tasks fail one after the other while main cleans up in its finally:
    # the second failure must not cancel main again (that would abort the cleanup).
    import runtime_guard

    marker = tmp_path / "main-cleanup"
    state: dict = {}

    async def fail(delay: float) -> None:
        await asyncio.sleep(delay)
        raise RuntimeError(f"failed after {delay}")

    async def main() -> None:
        marker.touch()
        runtime_guard.supervise(asyncio.create_task(fail(0.05)), on_error="cancel-main")
        runtime_guard.supervise(asyncio.create_task(fail(0.15)), on_error="cancel-main")
        try:
            await asyncio.sleep(100)
        finally:
            await asyncio.sleep(0.3)  # the second failure happens during this await
            marker.unlink()
            state["cleaned"] = True

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert state.get("cleaned") and not marker.exists()
