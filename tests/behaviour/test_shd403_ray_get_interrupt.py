"""SHD403 on a real local Ray cluster: Ctrl+C to a driver blocked in `ray.get`.

Hazard: the driver exits on KeyboardInterrupt, the remote task is killed with the job and
its `finally` blocks never run (every sandbox file leaks). Fixed by the rule's own autofix
(`runtime_guard.ray.interruptible_get`): the first Ctrl+C cancels the task and waits for its
cleanup, then the KeyboardInterrupt surfaces; nothing leaks.

The drivers join one local cluster per module (the ``ray_address`` fixture, ``RAY_ADDRESS``); the
original and the fixed driver run at the same time. A driver's exit ends its job and Ray kills
the job's workers, as the exit of a driver that started its own cluster does.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from shutdown_lint.settings import Settings

from ray_scaffold import driver, hazard_and_fix, rollout_task, settled_count, side_by_side

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SETTINGS = Settings(selected=("SHD403",), target_version="py311")
N = 5
CLEANUP = 3  # seconds deleting a sandbox takes in the remote cleanup
# (3 s, not 0.3: how long Ray lets a gone driver's worker run before it kills it grows with load;
# at load 10 a 0.3 s cleanup sometimes finished first and the hazard showed 0 leaks)

HAZARD = '''\
import asyncio
import os
import sys

import ray


''' + rollout_task(CLEANUP) + '''

def main():
    ray.init()
    ref = rollout.remote(sys.argv[1], int(sys.argv[2]))
    print("driver waiting", flush=True)
    ray.get(ref)


if __name__ == "__main__":
    main()
'''


def _ctrl_c_run(script: Path, lease_dir: Path, address: str) -> dict:
    """Start the driver, wait for N leases, SIGINT it; report how it ended and what leaked."""
    lease_dir.mkdir()
    with driver(script, [str(lease_dir), str(N)], address) as proc:
        deadline = time.monotonic() + 90
        while len(os.listdir(lease_dir)) < N and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert len(os.listdir(lease_dir)) == N, "the remote task never leased its sandboxes"
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGINT)
        try:
            out, _ = proc.communicate(timeout=60)
            exited = True
        except subprocess.TimeoutExpired:
            exited = False
            out = ""
        # Ray ends the job's workers once the driver is gone; a cleanup still running would remove
        # the sandboxes within CLEANUP s: count once nothing changed for longer than that
        return {"exited": exited, "rc": proc.returncode, "leaked": settled_count(lease_dir, CLEANUP + 1.0), "out": out}


def both_ctrl_c_runs(address: str, hazard: Path, fixed: Path, leases: Path) -> "tuple[dict, dict]":
    """``_ctrl_c_run`` of the original and the fixed driver at the same time, on one cluster."""
    before, after = side_by_side(_ctrl_c_run, (hazard, leases / "leases-before", address),
                                 (fixed, leases / "leases-after", address))
    return before, after


@pytest.mark.timeout(240)
def test_ctrl_c_during_ray_get_leaks_and_the_fix_cleans_up(tmp_path, ray_address):
    hazard, found, fixed_src, fixed = hazard_and_fix(tmp_path, HAZARD, SETTINGS)
    assert [d.code for d in found] == ["SHD403"]
    assert "runtime_guard.ray.interruptible_get(ref)" in fixed_src

    before, after = both_ctrl_c_runs(ray_address, hazard, fixed, tmp_path)
    assert before["exited"], "the hazard driver ignored Ctrl+C"
    assert before["leaked"] == N, before["out"][-3000:]

    assert after["exited"], "the fixed driver did not exit after Ctrl+C"
    assert after["leaked"] == 0, after["out"][-3000:]
    assert "KeyboardInterrupt" in after["out"]  # the interrupt still surfaces
    assert after["rc"] != 0
