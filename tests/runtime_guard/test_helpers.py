"""Fix-up helpers, each exercised in a real subprocess with real signals."""
from __future__ import annotations

import signal
import threading
import time
import warnings

import pytest

from rg_testutil import popen_code, run_code, wait_for_line

pytestmark = pytest.mark.timeout(120)


# ----------------------------------------------------------------------------- hard_exit

def test_hard_exit_flushes_logging_and_stdio_from_a_thread() -> None:
    r = run_code("""
        import logging, sys, threading, runtime_guard
        logging.basicConfig(level=logging.INFO, stream=sys.stdout, format='%(message)s')
        print('buffered line')            # stdout is a pipe: block-buffered
        logging.info('log line')
        t = threading.Thread(target=runtime_guard.hard_exit, args=(3,))
        t.start(); t.join()
        print('not reached')
    """)
    assert r.returncode == 3
    assert "buffered line" in r.stdout and "log line" in r.stdout and "not reached" not in r.stdout


# WAITS: a program signalled here (or interrupted by supervise's SIGINT to its main thread) waits in
# 0.05 s slices, not in one long sleep or await. CPython runs a Python handler between bytecodes only:
# a signal that lands after the last check and before the sleep's clock_nanosleep (or the idle event
# loop's epoll_wait: asyncio.run sets no wakeup fd) waits for that call to end. These tests are about
# what the handlers do, not about how soon a long call is cut.

# ----------------------------------------------------------------------------- supervise

SUPERVISE_PROGRAM = """
    import asyncio, sys, runtime_guard
    POLICY = sys.argv[1] if len(sys.argv) > 1 else None
    async def boom():
        await asyncio.sleep(0.05)
        raise RuntimeError('engine dead')
    async def main():
        kw = {{}} if POLICY in (None, 'default') else {{'on_error': POLICY}}
        t = runtime_guard.supervise(asyncio.create_task(boom()), **kw)
        assert isinstance(t, asyncio.Task)
        try:
            await asyncio.sleep({sleep})
            print('main finished normally', flush=True)
        finally:
            print('main finally', flush=True)
    asyncio.run(main())
    print('after run', flush=True)
"""


def test_supervise_default_cancels_main_task() -> None:
    r = run_code(SUPERVISE_PROGRAM.format(sleep=30), args=["default"], timeout=60)
    assert "main finally" in r.stdout and "main finished normally" not in r.stdout
    assert r.returncode != 0  # CancelledError escapes asyncio.run
    assert "RuntimeError: engine dead" in r.stderr  # traceback logged


def test_supervise_log_policy_keeps_running() -> None:
    r = run_code(SUPERVISE_PROGRAM.format(sleep=0.5), args=["log"])
    assert r.returncode == 0
    assert "main finished normally" in r.stdout and "after run" in r.stdout
    assert "RuntimeError: engine dead" in r.stderr


def test_supervise_exit_policy_exits_1() -> None:
    r = run_code(SUPERVISE_PROGRAM.format(sleep=30), args=["exit"])
    assert r.returncode == 1 and "main finally" not in r.stdout
    assert "engine dead" in r.stderr


def test_supervise_policy_from_env() -> None:
    r = run_code(SUPERVISE_PROGRAM.format(sleep=30), args=["default"], env={"RUNTIME_GUARD_TASK_POLICY": "exit"})
    assert r.returncode == 1


def test_set_default_policy_roundtrip() -> None:
    import runtime_guard

    prev = runtime_guard.set_default_policy("log")
    try:
        assert runtime_guard.get_default_policy() == "log"
        with pytest.raises(ValueError):
            runtime_guard.set_default_policy("nope")  # type: ignore[arg-type]
    finally:
        runtime_guard.set_default_policy(prev)  # type: ignore[arg-type]


def test_supervise_loop_in_thread_without_main_task_interrupts_main_thread() -> None:
    r = run_code("""
        import asyncio, threading, time, runtime_guard
        main_waits = threading.Event()
        async def boom():
            await asyncio.to_thread(main_waits.wait, 10)  # fail only once main is inside `try`
            raise RuntimeError('engine dead')
        def loop_thread():
            loop = asyncio.new_event_loop()
            loop.call_soon(lambda: runtime_guard.supervise(loop.create_task(boom())))
            loop.run_forever()
        threading.Thread(target=loop_thread, daemon=True).start()
        try:
            main_waits.set()
            for _ in range(600):  # short waits: see WAITS above
                time.sleep(0.05)
            print('slept through')
        except KeyboardInterrupt:
            print('main thread interrupted', flush=True)
    """)
    assert "main thread interrupted" in r.stdout, r.stdout + r.stderr


def test_supervised_sysexit_in_loop_thread_ends_process() -> None:
    # /work/shared/lab/sysexit_task_loop_thread.py: without supervise the process lives on.
    r = run_code("""
        import asyncio, sys, threading, time, runtime_guard
        async def worker():
            await asyncio.sleep(0.1)
            sys.exit(7)
        def loop_thread():
            loop = asyncio.new_event_loop()
            loop.call_soon(lambda: runtime_guard.supervise(loop.create_task(worker())))
            loop.run_forever()
        threading.Thread(target=loop_thread).start()
        time.sleep(20)
        print('process still alive')
    """)
    assert r.returncode == 7 and "still alive" not in r.stdout


# ----------------------------------------------------------------------------- sigterm

def test_sigterm_as_keyboard_interrupt_runs_finally_blocks() -> None:
    p = popen_code("""
        import asyncio, runtime_guard
        prev = runtime_guard.sigterm_as_keyboard_interrupt()
        print('previous', prev, flush=True)
        async def child(i):
            try:
                for _ in range(2000):  # short waits: see WAITS above
                    await asyncio.sleep(0.05)
            finally:
                await asyncio.sleep(0.05)
                print('child cleanup', i, flush=True)
        async def main():
            tasks = [asyncio.create_task(child(i)) for i in range(3)]
            await asyncio.sleep(0.2)
            print('ready', flush=True)
            await asyncio.gather(*tasks)
        asyncio.run(main())
    """)
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert out.count("child cleanup") == 3, out
    assert "KeyboardInterrupt" in out


def test_sigterm_helper_off_main_thread_warns() -> None:
    import runtime_guard

    result: list = []

    def target() -> None:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            result.append(runtime_guard.sigterm_as_keyboard_interrupt())
            result.append(w)

    th = threading.Thread(target=target)
    th.start()
    th.join()
    assert result[0] is None and any(issubclass(x.category, RuntimeWarning) for x in result[1])


# ----------------------------------------------------------------------------- on_interrupt

ON_INTERRUPT = """
    import time, runtime_guard
    def cleanup():
        print('cleanup start', flush=True)
        for _ in range(round({cleanup_s} / 0.05)):  # short waits: see WAITS above
            time.sleep(0.05)
        print('cleanup done', flush=True)
    @runtime_guard.on_interrupt(cleanup, timeout={timeout})
    def main():
        print('ready', flush=True)
        for _ in range(1200):
            time.sleep(0.05)
    main()
"""


def test_on_interrupt_runs_cleanup_then_exits_130() -> None:
    p = popen_code(ON_INTERRUPT.format(cleanup_s=0.2, timeout=10))
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130 and "cleanup done" in out, out


def test_on_interrupt_second_ctrl_c_exits_at_once() -> None:
    p = popen_code(ON_INTERRUPT.format(cleanup_s=30, timeout=60))
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGINT)
    wait_for_line(p, "cleanup start")
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=20)
    assert p.returncode == 130 and "cleanup done" not in out


def test_on_interrupt_cleanup_is_bounded() -> None:
    p = popen_code(ON_INTERRUPT.format(cleanup_s=60, timeout=0.5))
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGINT)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 130 and "cleanup done" not in out


def test_on_interrupt_passes_other_exceptions() -> None:
    import runtime_guard

    with pytest.raises(ValueError):
        with runtime_guard.on_interrupt(lambda: None):
            raise ValueError("x")


# ----------------------------------------------------------------------------- executors

def test_shutdown_process_pool_leaves_no_workers() -> None:
    r = run_code("""
        import concurrent.futures as cf, os, time, runtime_guard
        ex = cf.ProcessPoolExecutor(2)
        futs = [ex.submit(time.sleep, 60) for _ in range(8)]  # 2 run, <= 3 sit in the call queue
        time.sleep(1.0)
        pids = list(ex._processes)
        runtime_guard.shutdown_executor(ex)
        time.sleep(0.2)
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0); alive.append(pid)
            except ProcessLookupError:
                pass
        print('PIDS', len(pids), 'ALIVE', alive, 'CANCELLED', sum(f.cancelled() for f in futs), flush=True)
    """, timeout=60)  # the interpreter must also exit promptly (no hanging manager thread)
    assert r.returncode == 0, r.stderr
    assert "PIDS 2 ALIVE []" in r.stdout
    assert "CANCELLED 0" not in r.stdout  # queued work is cancelled (one may already be in the call queue)


def test_shutdown_thread_pool_cancels_pending() -> None:
    import concurrent.futures as cf

    import runtime_guard

    ex = cf.ThreadPoolExecutor(1)
    gate = threading.Event()
    first = ex.submit(gate.wait, 10)
    rest = [ex.submit(time.sleep, 10) for _ in range(3)]
    runtime_guard.shutdown_executor(ex)
    gate.set()
    assert all(f.cancelled() for f in rest)
    assert first.result(timeout=10) is True


def test_shutdown_multiprocessing_pool_terminates() -> None:
    r = run_code("""
        import multiprocessing, os, time, runtime_guard
        pool = multiprocessing.Pool(2)
        pool.map_async(time.sleep, [60, 60])
        time.sleep(0.5)
        pids = [p.pid for p in pool._pool]
        runtime_guard.shutdown_executor(pool)
        alive = [pid for pid in pids if os.path.exists(f'/proc/{pid}') and open(f'/proc/{pid}/stat').read().split()[2] != 'Z']
        print('ALIVE', alive)
    """)
    assert "ALIVE []" in r.stdout, r.stdout + r.stderr


def test_shutdown_executor_never_raises() -> None:
    import runtime_guard

    runtime_guard.shutdown_executor(object())  # logged, not raised
