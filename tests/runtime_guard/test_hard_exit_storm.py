"""``hard_exit`` called from the program's own signal handler on every signal of a storm.

Real processes, real SIGTERMs sent back to back. The handler is the shape users write
(``def on_term(signum, frame): hard_exit(5)``); CPython runs it again, inside the running
``hard_exit``, at every call where a signal is pending. Before the fix each of those nested calls
started a flush thread of its own and waited on it, where the next signal nested the next call:
a logging handler was flushed once per nested call and the exit took as long as the storm let
the nesting go on. Measured at 0795681 with the child below (two runs of 40 processes,
interleaved with the fix): 61 of 80 flushed the handler more often than a single call does
(medians 11 and 6, up to 102 times), exits up to 4.2 s into the storm (one 8 s exit in 20 runs
last session); with the fix 40 of 40 flushed it 2 or 3 times (one call's own flushes), exits at
most 0.7 s, all with status 5. This file: fails on 0795681 in 6 of 6 runs, passes 11 of 11.

The flush count is the deterministic part: with the fix a call started while another runs starts
nothing, so no storm can make more flushes than one call's two plus ``logging.shutdown``'s (an
atexit handler). With 5 processes the old code passes only if all 5 escape nesting
(19 of 80 did: about 0.1% of runs).
"""
from __future__ import annotations

import signal

from rg_testutil import popen_code, run_code, storm, wait_for_line

CHILD = """
    import logging, os, signal, threading, time
    from runtime_guard import hard_exit

    class CountingHandler(logging.Handler):  # a handler whose flush is a round trip (a log shipper)
        def emit(self, record):
            pass
        def flush(self):
            os.write(1, b"FLUSH\\n")

    logging.getLogger().addHandler(CountingHandler())

    def deep(n):
        return 0 if n == 0 else deep(n - 1) + 1

    def spin():  # GIL contention, as in a program with busy worker threads
        while True:
            deep(200)

    for _ in range(2):
        threading.Thread(target=spin, daemon=True).start()

    def on_term(signum, frame):
        print("term", flush=True)
        hard_exit(5)

    signal.signal(signal.SIGTERM, on_term)
    print("ready", flush=True)
    while True:
        time.sleep(0.01)
"""

PROCESSES = 5
STORM_S = 5.0  # SIGTERM is sent until the child exits or this runs out
LIVENESS_S = 20.0  # generous: with the fix each child exits within a second of the storm's start
ONE_CALL_FLUSHES = 3  # flush, logging.shutdown (an atexit handler), flush again


def _storm_one() -> tuple:
    return storm(CHILD, signal.SIGTERM, storm_s=STORM_S, liveness_s=LIVENESS_S)


def test_hard_exit_from_the_handler_under_a_sigterm_storm_flushes_once_and_exits() -> None:
    bad = []
    for _ in range(PROCESSES):
        status, took, sent, out = _storm_one()
        flushes = out.count("FLUSH")
        if (status != 5 or flushes > ONE_CALL_FLUSHES or "term" not in out or "Traceback" in out
                or took >= LIVENESS_S):
            bad.append((status, round(took, 2), sent, flushes, out[-400:]))
    assert not bad, f"{len(bad)} of {PROCESSES} processes broke the contract: {bad}"


def test_one_sigterm_runs_the_whole_exit() -> None:
    """No storm: one call flushes, runs the atexit handlers, flushes again, exits 5."""
    code = CHILD.replace('print("ready", flush=True)',
                         'import atexit; atexit.register(print, "atexit ran", flush=True)\n'
                         '    print("ready", flush=True)')
    p = popen_code(code)
    try:
        wait_for_line(p, "ready")
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 5, out
    assert out.count("FLUSH") == ONE_CALL_FLUSHES and "atexit ran" in out, out


def test_a_later_call_cuts_the_atexit_wait_short_with_its_status() -> None:
    """A deadline timer's ``hard_exit(9, atexit_timeout=0)`` while the first call waits on a hung
    atexit handler (bound 30 s) ends the process at once with 9, as before the shared exit."""
    r = run_code("""
        import atexit, threading, time, runtime_guard
        atexit.register(time.sleep, 60)
        threading.Timer(0.5, lambda: runtime_guard.hard_exit(9, atexit_timeout=0)).start()
        t0 = time.monotonic()
        runtime_guard.hard_exit(4, atexit_timeout=30)
    """, timeout=60)
    assert r.returncode == 9, (r.returncode, r.stdout, r.stderr)


def test_an_atexit_handler_calling_hard_exit_ends_the_process_with_its_status() -> None:
    r = run_code("""
        import atexit, runtime_guard
        atexit.register(print, "registered first, runs last: cut short", flush=True)
        atexit.register(lambda: runtime_guard.hard_exit(3))
        runtime_guard.hard_exit(4)
    """, timeout=60)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "cut short" not in r.stdout
