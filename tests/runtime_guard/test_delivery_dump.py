"""SIGTERM heard at delivery must not crash a process whose other threads run Python code.

``signals.on_delivery`` (used by runtime_guard.torch, exit_report and loop_thread) hooks the
signal with faulthandler, whose C handler writes a traceback into a pipe at delivery. A dump of
ALL threads from a signal handler walks other threads' frames and thread states while they
change: it crashed such a process with SIGSEGV (CI, the gloo teardown test: status -11; measured
here, 19 of 24 processes with busy threads under a SIGTERM storm). Only the receiving thread's
own stack is dumped now: 0 of 24.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rg_testutil import REPO, SCRIPTS, child_env

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def _storm(tmp_path: Path, i: int, seconds: float) -> tuple:
    ready, stop, heard = (tmp_path / f"{name}{i}" for name in ("ready", "stop", "heard"))
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "delivery_storm.py"), str(ready), str(stop), str(heard)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env(),
                            cwd=str(REPO))
    try:
        end = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < end, proc.communicate()[0]
            time.sleep(0.02)
        sent = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            sent += 1
            time.sleep(0.002)
        stop.touch()
        out = proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, sent, heard.exists()


def test_signal_storm_with_busy_threads_does_not_crash(tmp_path: Path) -> None:
    # Before the fix 19 of 24 such processes died of SIGSEGV within 3 s: four in a row surviving
    # by luck had a chance of about 0.2%.
    for i in range(4):
        code, out, sent, heard = _storm(tmp_path, i, 2.0)
        assert code == 0, f"process {i}: status {code} after {sent} SIGTERMs\n{out}"
        assert out.startswith("handled ") and int(out.split()[1]) > 0, out
        assert heard, "the delivery hook never woke its helper thread"
