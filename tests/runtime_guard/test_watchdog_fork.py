"""A fork while a watched loop runs: the child must not hang.

The watchdog's hard layer arms ``faulthandler.dump_traceback_later`` (on by default: hard
threshold max(2 s, 20 x threshold)). Its C thread does not exist in a forked child, and
faulthandler waits for that thread whenever the timer is cancelled or armed again: the
watchdog's own after-fork hook cancels it, so every child forked while the timer was armed
(``os.fork``, ``multiprocessing`` fork: DataLoader workers) blocked forever before running a
line of its own (12 of 12 children, /tmp/harm/fork_helpers.py). The timer is now cancelled
before the fork and armed again after it in the parent.
"""
from __future__ import annotations

import pytest

from rg_testutil import run_code

pytestmark = [pytest.mark.timeout(120), pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork")]

CHILD = r'''
import asyncio, os, signal, time
import runtime_guard.watchdog as wd

wd.install(0.05)  # the hard layer at its default (2 s)

def reap(pid):
    end = time.monotonic() + 20
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return "HUNG"

async def main():
    await asyncio.sleep(0.3)  # heartbeats: the timer is armed
    results = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        results.append(reap(pid))
        await asyncio.sleep(0.05)
    return results

print("children:", asyncio.run(main()), flush=True)
'''


def test_child_forked_while_a_watched_loop_runs_does_not_hang() -> None:
    res = run_code(CHILD, timeout=100)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "children: [7, 7, 7]" in res.stdout, res.stdout + res.stderr
