"""runtime_guard.cancel_and_wait (asyncio tasks) and runtime_guard.LoopThread."""
from __future__ import annotations

import asyncio
import threading

import pytest

import runtime_guard
from rg_testutil import run_code


def test_cancel_and_wait_waits_for_cleanup_and_absorbs_only_the_tasks_cancellation() -> None:
    log: list = []

    async def worker(i: int) -> None:
        try:
            await asyncio.sleep(100)
        finally:
            await asyncio.sleep(0.05)  # cleanup that awaits
            log.append(i)

    async def main() -> bool:
        tasks = [asyncio.create_task(worker(i)) for i in range(3)]
        await asyncio.sleep(0)
        tasks[0].cancel()  # already cancelling: must not be cancelled a second time
        ok = await runtime_guard.cancel_and_wait(tasks, timeout=5)
        assert sorted(log) == [0, 1, 2]
        assert all(t.cancelled() for t in tasks)
        assert await runtime_guard.cancel_and_wait(tasks[0], timeout=1)  # done: nothing to do
        assert await runtime_guard.cancel_and_wait(None)
        return ok

    assert asyncio.run(main()) is True


def test_cancel_and_wait_is_bounded_and_the_waiter_stays_cancellable() -> None:
    swallowed = []

    async def stubborn() -> None:
        while len(swallowed) < 2:  # swallows two cancellations, then lets the third end it
            try:
                await asyncio.sleep(100)
            except asyncio.CancelledError:
                swallowed.append(1)

    async def main() -> None:
        t = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        assert await runtime_guard.cancel_and_wait(t, timeout=0.2) is False
        waiter = asyncio.create_task(runtime_guard.cancel_and_wait(t, timeout=None))
        await asyncio.sleep(0.05)
        waiter.cancel()  # the caller's own cancellation propagates
        with pytest.raises(asyncio.CancelledError):
            await waiter
        t.cancel()
        await asyncio.wait([t], timeout=5)
        assert t.done()

    asyncio.run(asyncio.wait_for(main(), 10))


def test_loop_thread_is_a_thread_and_stop_runs_task_cleanup() -> None:
    cleaned = threading.Event()
    started = threading.Event()

    async def serve() -> None:
        started.set()
        try:
            await asyncio.sleep(100)
        finally:
            await asyncio.sleep(0.05)
            cleaned.set()

    t = runtime_guard.LoopThread(target=lambda: asyncio.run(serve()), daemon=True, cleanup_timeout=5)
    assert isinstance(t, threading.Thread)
    t.start()
    assert started.wait(5)
    assert t.stop() is True
    assert cleaned.is_set() and not t.is_alive()


def test_loop_thread_stops_a_run_forever_loop_at_exit() -> None:
    r = run_code("""
        import asyncio, runtime_guard, threading
        loop = asyncio.new_event_loop()
        started = threading.Event()
        async def job():
            try:
                started.set()
                await asyncio.sleep(100)
            finally:
                await asyncio.sleep(0.05)
                print("cleanup ran", flush=True)
        t = runtime_guard.LoopThread(target=loop.run_forever, daemon=False)
        t.start()
        asyncio.run_coroutine_threadsafe(job(), loop)
        started.wait(30)  # the job is inside its try (a fixed sleep was a guess under load)
        print("main done", flush=True)
    """, timeout=30)
    # daemon=False and a run_forever nobody stops: without the exit hook this would hang forever
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["main done", "cleanup ran"]


def test_loop_thread_sigterm_chains_to_the_previous_handler() -> None:
    from rg_testutil import popen_code, wait_for_line
    import signal

    p = popen_code("""
        import asyncio, os, signal, sys, threading, time, runtime_guard
        def previous(signum, frame):
            print("previous handler", flush=True)
            sys.exit(7)
        signal.signal(signal.SIGTERM, previous)
        started = threading.Event()
        async def job():
            try:
                started.set()
                await asyncio.sleep(100)
            finally:
                await asyncio.sleep(0.05)
                print("cleanup ran", flush=True)
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(job()), daemon=True)
        t.start()
        started.wait(30)  # the job is inside its try (a fixed sleep was a guess under load)
        print("ready", flush=True)
        for _ in range(600):  # short waits: one long sleep would hold a SIGTERM that lands before it starts
            time.sleep(0.05)
    """)
    try:
        wait_for_line(p, "ready", timeout=30)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 7, out
    assert out.index("cleanup ran") < out.index("previous handler"), out
