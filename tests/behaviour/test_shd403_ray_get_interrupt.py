"""SHD403 on a real local Ray cluster: Ctrl+C to a driver blocked in `ray.get`.

Hazard: the driver exits on KeyboardInterrupt, the remote task is killed with the job and
its `finally` blocks never run (every sandbox file leaks). Fixed by the rule's own autofix
(`runtime_guard.ray.interruptible_get`): the first Ctrl+C cancels the task and waits for its
cleanup, then the KeyboardInterrupt surfaces; nothing leaks.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from ray_scaffold import driver, rollout_task

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SETTINGS = Settings(selected=("SHD403",), target_version="py311")
N = 5

HAZARD = '''\
import asyncio
import os
import sys

import ray


''' + rollout_task(0.3) + '''

def main():
    ray.init(num_cpus=2, include_dashboard=False)
    ref = rollout.remote(sys.argv[1], int(sys.argv[2]))
    print("driver waiting", flush=True)
    ray.get(ref)


if __name__ == "__main__":
    main()
'''


def _ctrl_c_run(script: Path, lease_dir: Path) -> dict:
    """Start the driver, wait for N leases, SIGINT it; report how it ended and what leaked."""
    lease_dir.mkdir()
    with driver(script, [str(lease_dir), str(N)]) as proc:
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
        time.sleep(2.0)  # let Ray finish tearing down the job's workers
        return {"exited": exited, "rc": proc.returncode, "leaked": len(os.listdir(lease_dir)), "out": out}


@pytest.mark.timeout(240)
def test_ctrl_c_during_ray_get_leaks_and_the_fix_cleans_up(tmp_path):
    hazard = tmp_path / "hazard" / "driver.py"
    hazard.parent.mkdir()
    hazard.write_text(HAZARD)
    found = lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD403"]

    before = _ctrl_c_run(hazard, tmp_path / "leases-before")
    assert before["exited"], "the hazard driver ignored Ctrl+C"
    assert before["leaked"] == N, before["out"][-3000:]

    outcome = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True)
    fixed_src = outcome.source.decode()
    assert "runtime_guard.ray.interruptible_get(ref)" in fixed_src
    assert lint_source(outcome.source, "driver.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed" / "driver.py"
    fixed.parent.mkdir()
    fixed.write_text(fixed_src)

    after = _ctrl_c_run(fixed, tmp_path / "leases-after")
    assert after["exited"], "the fixed driver did not exit after Ctrl+C"
    assert after["leaked"] == 0, after["out"][-3000:]
    assert "KeyboardInterrupt" in after["out"]  # the interrupt still surfaces
    assert after["rc"] != 0
