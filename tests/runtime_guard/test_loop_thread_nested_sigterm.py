"""A second SIGTERM while LoopThread's SIGTERM handler is stopping the loops.

Python runs the handler again, nested, at the next bytecode (here: in the first run's bounded
wait for the loop thread). Where SIGTERM had its default action before us, that nested run died
of SIGTERM at once: the loop's tasks never finished their cleanup (two SIGTERMs 1 ms apart: 9 of
10 processes lost their task's ``finally``, /tmp/harm/lt_double.py). Now the nested run returns
and the first one dies of SIGTERM (-15) once the loops are stopped.

The second SIGTERM is placed deterministically: the task's cleanup sends it.
"""
from __future__ import annotations

import signal

import pytest

from rg_testutil import signal_when_ready

pytestmark = [pytest.mark.timeout(120)]

CHILD = r'''
import asyncio, os, signal
from runtime_guard.loop_thread import LoopThread

async def worker():
    try:
        print("STARTED", flush=True)
        while True:
            await asyncio.sleep(0.01)
    finally:
        os.kill(os.getpid(), signal.SIGTERM)  # a second SIGTERM, while the handler stops the loop
        await asyncio.sleep(0.2)  # cleanup that awaits
        print("CLEANUP DONE", flush=True)

t = LoopThread(target=lambda: asyncio.run(worker()), daemon=True)
t.start()
t.join()
'''


def test_second_sigterm_while_loops_stop_does_not_cut_their_cleanup() -> None:
    code, out = signal_when_ready(CHILD, "STARTED", signal.SIGTERM)
    assert code == -signal.SIGTERM, out
    assert "CLEANUP DONE" in out, out
