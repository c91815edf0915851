"""A second SIGTERM that arrives while the exit report's SIGTERM handler is reporting.

Python runs the handler again, nested, at the next bytecode. That run found the report already
marked made and died of SIGTERM at once: the report was never printed (a second SIGTERM 0.5 ms
after the first lost it in 1 of 10 processes, a burst of 20 in 6 of 10: /tmp/harm/er_single.py).
Now the nested run returns and the first one reports, then dies of SIGTERM (-15) as before.

The second SIGTERM is placed deterministically: the child's ``collect`` sends it first.
"""
from __future__ import annotations

import signal

import pytest

from rg_testutil import signal_when_ready

pytestmark = [pytest.mark.timeout(120)]

CHILD = r'''
import os, signal, threading, time
import runtime_guard.exit_report as er

er.install()
collect = er.collect

def collect_after_a_second_sigterm():
    os.kill(os.getpid(), signal.SIGTERM)  # lands now, while the handler reports
    return collect()

er.collect = collect_after_a_second_sigterm
threading.Thread(target=time.sleep, args=(60,), daemon=True, name="left-running").start()
print("READY", flush=True)
while True:
    time.sleep(0.01)
'''


def test_second_sigterm_during_the_report_does_not_lose_it() -> None:
    code, out = signal_when_ready(CHILD, "READY", signal.SIGTERM)
    assert code == -signal.SIGTERM, out
    assert out.count("runtime_guard exit report: the program ended by SIGTERM") == 1, out
    assert "'left-running'" in out, out
