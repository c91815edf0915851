"""An owner of the signal wakeup fd keeps its ``warn_on_full_buffer`` through our probe.

``on_delivery`` finds out whether the wakeup slot is unowned by setting a probe pipe for an instant
and setting the owner's fd back (``signals._exchange``). CPython 3.11 keeps the owner's
``warn_on_full_buffer`` in C with no way to read it (``set_wakeup_fd`` returns the fd alone), and
the probe used to set it back as True unless the owner had set it through our wrapper. uvloop sets
its self-pipe with False at every run of a loop in the main thread, through the ``set_wakeup_fd``
it bound at its own import (our wrapper never sees it). So ``on_delivery`` called inside a running
uvloop loop (``install_distributed_teardown`` or a ``LoopThread`` started from ``async def main``)
turned uvloop's flag on: once its socket was full (the loop busy, signals arriving), CPython printed
"Exception ignored when trying to write to the signal wakeup fd" on stderr for every signal.
Measured with the child below and 1.5 s of SIGUSR1: 224 such lines at 0795681, 0 now, 0 with no
probe. The asyncio control: its loop sets the flag True (the default), and keeps it.

Real processes, real signals, a real uvloop and asyncio loop.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from rg_testutil import REPO, child_env

pytestmark = pytest.mark.timeout(120)

WARNING = "Exception ignored when trying to write to the signal wakeup fd"

CHILD = """
import asyncio, signal, sys, time
import runtime_guard.signals as rs

async def main():
    if sys.argv[2] == "asyncio":  # asyncio's loop owns the slot only with a signal handler of its own
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, lambda: None)
    else:
        signal.signal(signal.SIGUSR1, lambda s, f: None)  # a Python handler: a byte per delivery
    if sys.argv[1] == "probe":
        rs.on_delivery(signal.SIGTERM, lambda: None)  # inside the running loop: the slot is the loop's
    print("ready", flush=True)
    time.sleep(7)  # the loop reads nothing meanwhile: its self-pipe fills under the signals
    print("done", flush=True)

if sys.argv[2] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""


def _warnings(mode: str, loop: str) -> int:
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode, loop], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=child_env(), cwd=str(REPO))
    try:
        assert "ready" in p.stdout.readline()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 4.0 and p.poll() is None:
            os.kill(p.pid, signal.SIGUSR1)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0 and "done" in out, (p.returncode, out, err[-2000:])
    return err.count(WARNING)


def test_a_probe_inside_a_running_uvloop_loop_keeps_its_flag_off() -> None:
    pytest.importorskip("uvloop")
    assert _warnings("none", "uvloop") == 0  # uvloop's own setting: no warning when full
    assert _warnings("probe", "uvloop") == 0  # 0795681: one line per signal once full (224)


def test_a_probe_inside_a_running_asyncio_loop_keeps_its_flag_on() -> None:
    # asyncio sets the default (True): its full-buffer warnings are its own, before and after a probe.
    assert _warnings("none", "asyncio") > 0
    assert _warnings("probe", "asyncio") > 0
