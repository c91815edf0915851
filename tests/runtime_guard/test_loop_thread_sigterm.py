"""LoopThread's SIGTERM handler never replaces other code's handler and keeps the exit status.

Each case is a real program: SIG_IGN stays ignored; a handler installed later by other code is
not overwritten by a later ``start()``; a forked child gets the previous handler back; with the
default action the process still dies of SIGTERM (-15) after the loop's cleanup, and a process
whose loop threads have all ended still dies of SIGTERM at once (no new output).
"""
from __future__ import annotations

import signal

import pytest

from rg_testutil import popen_code, run_code, wait_for_line


def test_ignored_sigterm_stays_ignored_and_a_later_handler_is_kept() -> None:
    r = run_code("""
        import asyncio, signal, runtime_guard
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(asyncio.sleep(0)))
        t.start(); t.join()
        print(signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(asyncio.sleep(0)))
        t.start(); t.join()  # installs its chaining handler over the default
        def mine(s, f): pass
        signal.signal(signal.SIGTERM, mine)
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(asyncio.sleep(0)))
        t.start(); t.join()
        print(signal.getsignal(signal.SIGTERM) is mine)
    """, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["True", "True"]  # the later start() left `mine` in place


def test_a_forked_child_gets_the_previous_handler_back() -> None:
    r = run_code("""
        import asyncio, multiprocessing, os, signal, runtime_guard
        def previous(s, f): pass
        signal.signal(signal.SIGTERM, previous)
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(asyncio.sleep(0.5)), daemon=True)
        t.start()
        print(getattr(signal.getsignal(signal.SIGTERM), "_runtime_guard", False))
        pid = os.fork()
        if pid == 0:
            os.write(1, b"child %s\\n" % str(signal.getsignal(signal.SIGTERM) is previous).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        t.join()
    """, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["True", "child True"], r.stdout


@pytest.mark.parametrize("loop_running", [True, False])
def test_default_sigterm_still_kills_with_minus_15(loop_running: bool) -> None:
    p = popen_code(f"""
        import asyncio, time, runtime_guard
        async def job():
            try:
                await asyncio.sleep({100 if loop_running else 0})
            finally:
                print("cleanup ran", flush=True)
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(job()), daemon=True)
        t.start()
        time.sleep(0.3)
        print("ready", flush=True)
        for _ in range(1200):  # short waits: one long sleep would hold a SIGTERM that lands before it starts
            time.sleep(0.05)
        print("slept through", flush=True)
    """)
    try:
        wait_for_line(p, "ready", timeout=30)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    assert p.returncode == -signal.SIGTERM, out
    assert "slept through" not in out
    if not loop_running:
        assert "runtime_guard" not in out  # nothing to stop: no new output
