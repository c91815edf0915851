"""When a daemon ``LoopThread``'s loop is stopped at interpreter exit: after the program's own exit code.

CPython exits in this order: ``threading``'s exit hooks, the join of non-daemon threads, the
``atexit`` handlers (last registered first), then finalization, where daemon threads are frozen.
A plain daemon thread's loop keeps running through the first three, so a program's ``atexit``
handler, or a non-daemon thread still finishing at exit, can submit work to it. ``LoopThread``
used to stop its loop from ``threading``'s exit hook, before all of them: that work then waited
forever (the fix audit's N1). Now the daemon loop is stopped after the last ``atexit`` handler
(its tasks' cleanup still runs: printed last), and ``atexit._clear()`` or ``hard_exit`` during the
run never stop it early. Each case is a real program in a subprocess, with a generous bound.
"""
from __future__ import annotations

from rg_testutil import run_code

SERVE = """
    import asyncio, atexit, threading, time, runtime_guard
    loop = asyncio.new_event_loop()
    started = threading.Event()

    async def lease():
        started.set()
        try:
            await asyncio.sleep(100)
        finally:
            await asyncio.sleep(0.05)
            print("task cleanup ran", flush=True)

    def serve():
        asyncio.set_event_loop(loop)
        loop.create_task(lease())
        loop.run_forever()

    def submit(what):
        return asyncio.run_coroutine_threadsafe(asyncio.sleep(0.05, what), loop).result()
"""


def test_atexit_handlers_registered_before_and_after_start_use_the_loop_then_tasks_clean_up() -> None:
    r = run_code(SERVE + """
    atexit.register(lambda: print("registered before start:", submit("served"), flush=True))
    runtime_guard.LoopThread(target=serve, daemon=True).start()
    started.wait(10)
    atexit.register(lambda: print("registered after start:", submit("served"), flush=True))
    print("main done", flush=True)
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["main done", "registered after start: served",
                                     "registered before start: served", "task cleanup ran"], r.stdout


def test_a_non_daemon_thread_finishing_at_exit_still_uses_the_daemon_loop() -> None:
    r = run_code(SERVE + """
    runtime_guard.LoopThread(target=serve, daemon=True).start()
    started.wait(10)
    def worker():
        time.sleep(0.3)  # still working when the main thread ends
        print("worker:", submit("done"), flush=True)
    threading.Thread(target=worker).start()
    print("main done", flush=True)
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["main done", "worker: done", "task cleanup ran"], r.stdout


def test_clearing_atexit_or_running_its_handlers_mid_run_does_not_stop_the_loop() -> None:
    r = run_code(SERVE + """
    t = runtime_guard.LoopThread(target=serve, daemon=True)
    t.start()
    started.wait(10)
    atexit._clear()
    atexit._run_exitfuncs()
    print("after clear:", submit("served"), t.is_alive(), flush=True)
    atexit.register(lambda: print("atexit:", submit("served"), flush=True))
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["after clear: served True", "atexit: served", "task cleanup ran"], r.stdout


def test_a_del_at_module_teardown_that_submits_to_the_stopped_loop_fails_fast() -> None:
    # With a plain daemon thread this __del__ never ran (the frozen thread keeps the process's
    # objects); the loop thread has ended here, so it runs at module teardown, after the loop was
    # stopped: it must raise (the loop is closed), not wait forever (HEAD before this: hung).
    r = run_code(SERVE + """
    class Client:
        def __del__(self):
            print("del runs", flush=True)
            submit("closed")
    runtime_guard.LoopThread(target=serve, daemon=True).start()
    started.wait(10)
    CLIENT = Client()
    print("main done", flush=True)
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["main done", "task cleanup ran", "del runs"], r.stdout
    assert "RuntimeError: Event loop is closed" in r.stderr, r.stderr
