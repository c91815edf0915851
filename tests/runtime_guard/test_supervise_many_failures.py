"""Many supervised tasks failing at once on a loop with no main task ("cancel-main").

With no main task (a loop run_forever in a helper thread) a failure interrupts the main thread
with SIGINT, as Ctrl+C would, and arms a grace timer. That used to happen for every failure:
1000 tasks failing at once sent 983 SIGINTs and started 1000 timer threads; the later
KeyboardInterrupts landed in the cleanup the first one started (5 of 5 runs never finished it,
status 130). Where there is a main task it was already cancelled once only; now the main thread
is interrupted once per loop too, and the later failures are logged.
"""
from __future__ import annotations

import pytest

from rg_testutil import run_code

pytestmark = [pytest.mark.timeout(120)]

CHILD = r'''
import asyncio, logging, threading, time
from runtime_guard.tasks import supervise

logging.basicConfig(level=logging.CRITICAL)
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, daemon=True).start()

async def boom(ev):
    await ev.wait()
    raise RuntimeError("boom")

async def start():
    ev = asyncio.Event()
    for _ in range(300):
        supervise(asyncio.ensure_future(boom(ev)), on_error="cancel-main")
    await asyncio.sleep(0.1)
    ev.set()

def timers():
    return sum(t.name == "runtime_guard-exit-grace" for t in threading.enumerate())

asyncio.run_coroutine_threadsafe(start(), loop)
interrupts = 0
try:
    time.sleep(60)
except KeyboardInterrupt:
    interrupts += 1
    try:
        end = time.monotonic() + 1.0
        while time.monotonic() < end:  # the program's own cleanup after Ctrl+C
            time.sleep(0.01)
    except KeyboardInterrupt:
        interrupts += 1
    print(f"interrupts={interrupts} timers={timers()}", flush=True)
'''


def test_one_sigint_and_one_timer_for_many_failures_on_one_loop() -> None:
    res = run_code(CHILD, timeout=90)
    assert res.returncode == 0, res.stdout + res.stderr
    # Before: one SIGINT and one timer thread per failure (300 timers; a second KeyboardInterrupt
    # in the cleanup). After: one of each.
    assert "interrupts=1 timers=1" in res.stdout, res.stdout + res.stderr
