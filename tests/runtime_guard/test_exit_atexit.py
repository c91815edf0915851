"""hard_exit runs the atexit handlers (bounded, guarded, from any thread) before os._exit."""
from __future__ import annotations

import time

import pytest

from rg_testutil import run_code

pytestmark = pytest.mark.timeout(120)


def test_hard_exit_runs_atexit_handlers_from_a_thread_in_lifo_order() -> None:
    r = run_code("""
        import atexit, threading, runtime_guard
        atexit.register(print, 'first registered', flush=True)
        atexit.register(print, 'second registered', flush=True)
        def boom():
            raise RuntimeError('handler failed')
        atexit.register(boom)  # runs first, fails, the others still run
        t = threading.Thread(target=runtime_guard.hard_exit, args=(4,))
        t.start(); t.join()
        print('not reached')
    """)
    assert r.returncode == 4
    assert r.stdout.splitlines() == ["second registered", "first registered"]
    assert "handler failed" in r.stderr


def test_a_hung_atexit_handler_is_abandoned_within_the_bound() -> None:
    t0 = time.monotonic()
    r = run_code("""
        import atexit, threading, runtime_guard
        atexit.register(print, 'after the hung one: not reached', flush=True)
        atexit.register(threading.Event().wait)  # hangs forever
        print('exiting', flush=True)
        runtime_guard.hard_exit(5, atexit_timeout=1.0)
    """, timeout=60)
    took = time.monotonic() - t0
    assert r.returncode == 5
    assert r.stdout.splitlines() == ["exiting"]
    assert took < 30, took  # bounded (1 s + flushes), generous margin for a loaded machine


def test_atexit_timeout_zero_skips_them_and_a_forked_child_never_runs_the_parents() -> None:
    r = run_code("""
        import atexit, os, runtime_guard
        atexit.register(print, 'parent atexit', flush=True)
        pid = os.fork()
        if pid == 0:
            runtime_guard.hard_exit(7)        # the parent's handlers are not the child's
        _, status = os.waitpid(pid, 0)
        print('child status', os.waitstatus_to_exitcode(status), flush=True)
        runtime_guard.hard_exit(0, atexit_timeout=0)
    """)
    assert r.returncode == 0
    assert r.stdout.splitlines() == ["child status 7"]
