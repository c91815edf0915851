"""The watchdog's faulthandler layer must not fire while the stalled loop runs Python code.

``faulthandler.dump_traceback_later`` dumps every thread's frames from a C thread without the
GIL. That is safe only while no thread runs Python (the case the layer exists for: a C call
holding the GIL, see test_watchdog.test_gil_holding_c_call_dumped_by_faulthandler). Re-armed
only by the loop's heartbeat, it also fired during stalls in Python code, reading frames that
changed under it: 6 of 7 processes died of SIGSEGV (loops stalling 0.15 s at a time in Python,
hard_threshold 0.05). The monitor thread now re-arms it on every pass, so it fires only when no
Python could run at all.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from rg_testutil import run_code

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

_PROGRAM = """
    import asyncio, sys, threading, time
    import runtime_guard

    def deep(n):
        return 0 if n == 0 else deep(n - 1) + 1

    def spin():  # other threads running Python, as a data loader or a metrics thread would
        while True:
            deep(400)

    for _ in range(2):
        threading.Thread(target=spin, daemon=True).start()
    reports = []

    async def main():
        runtime_guard.watch_loop(threshold=0.05, on_stall=reports.append, hard_threshold=1.0)
        await asyncio.sleep(0.2)
        for _ in range(3):
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2.0:  # a 2 s stall in Python code: 2x the hard threshold
                deep(300)
            await asyncio.sleep(0.2)
        await asyncio.sleep(0.5)  # the monitor closes the last stall while the loop is still open

    asyncio.run(main())
    # Busy threads also make short stalls (GIL waits): count the three long ones.
    print("LONG", sum(1 for r in reports if r.duration >= 1.5 and r.sampled), flush=True)
"""


def test_python_stall_longer_than_hard_threshold_is_not_dumped(tmp_path: Path) -> None:
    hard = tmp_path / "hard.txt"
    r = run_code(_PROGRAM, timeout=150, env={"RUNTIME_GUARD_HARD_FILE": str(hard)})
    dumped = hard.read_text() if hard.exists() else ""
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr, dumped[-2000:])
    assert "LONG 3" in r.stdout, (r.stdout, r.stderr)  # the stalls are still reported, sampled
    assert "most recent call first" not in dumped, dumped[-2000:]
