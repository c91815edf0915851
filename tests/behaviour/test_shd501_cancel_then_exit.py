"""SHD501 on a real local Ray cluster: `ray.cancel(ref)` then an immediate `sys.exit`.

Hazard: a driver with a time budget cancels the rollout when `ray.get` times out and
exits at once. The task does receive the cancellation and starts deleting its sandboxes,
but the driver's exit ends the job and Ray kills the worker half-way: every sandbox leaks.
Fixed by the rule's own autofix (`runtime_guard.ray.cancel_and_wait(ref, timeout=30)`):
the driver waits for the cleanup, then exits with the same status; 0 leak.

The drivers join one local cluster per module (the ``ray_address`` fixture, ``RAY_ADDRESS``),
as a job joins a long-lived cluster; a test's original and fixed drivers run at the same time.
A driver's exit ends its job and Ray kills the job's workers, so the hazard is the same as with
a cluster of the driver's own.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from shutdown_lint.settings import Settings

from ray_scaffold import driver, hazard_and_fix, rollout_task, settled_count, side_by_side

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SETTINGS = Settings(selected=("SHD501",), target_version="py311")
N = 5
# seconds the driver gives the rollout once it holds its sandboxes. The budget used to start at
# submission: it then also held the start of a worker for the driver's job, and in a 3-worker run
# with two CPU hogs on 2 cores the fixed driver's rollout held none of its 5 sandboxes when the 6 s
# ran out (held 0: cancelled before it ran). Unloaded, the sandboxes were all held 1.4-2.6 s after
# the driver started.
BUDGET = 6
CLEANUP = 3  # seconds deleting a sandbox takes in the remote cleanup

HAZARD = '''\
import asyncio
import os
import sys
import time

import ray
from ray.exceptions import GetTimeoutError


''' + rollout_task(CLEANUP) + '''

def main():
    ray.init()
    lease_dir, n = sys.argv[1], int(sys.argv[2])
    ref = rollout.remote(lease_dir, n)
    while len(os.listdir(lease_dir)) < n:  # the budget counts once the rollout holds its sandboxes
        time.sleep(0.1)
    try:
        ray.get(ref, timeout=float(sys.argv[3]))
    except GetTimeoutError:
        print("rollout over budget: cancelling", flush=True)
        ray.cancel(ref)
        sys.exit(3)


if __name__ == "__main__":
    main()
'''


def _run(script: Path, lease_dir: Path, address: str) -> dict:
    lease_dir.mkdir()
    most = 0
    with driver(script, [str(lease_dir), str(N), str(BUDGET)], address) as proc:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            most = max(most, len(os.listdir(lease_dir)))
            time.sleep(0.1)
        exited = proc.poll() is not None
        out = proc.communicate(timeout=10)[0] if exited else ""
        # Ray ends the job's workers once the driver is gone; a cleanup that still ran would have
        # removed the sandboxes within CLEANUP s: count once nothing changed for longer than that
        leaked = settled_count(lease_dir, CLEANUP + 1.0)
        return {"exited": exited, "rc": proc.returncode, "held": most, "leaked": leaked, "out": out}


@pytest.mark.timeout(240)
def test_cancel_then_exit_leaks_and_cancel_and_wait_cleans_up(tmp_path, ray_address):
    hazard, found, fixed_src, fixed = hazard_and_fix(tmp_path, HAZARD, SETTINGS)
    assert [d.code for d in found] == ["SHD501"]
    assert "        runtime_guard.ray.cancel_and_wait(ref, timeout=30)\n        sys.exit(3)\n" in fixed_src

    before, after = side_by_side(_run, (hazard, tmp_path / "leases-before", ray_address),
                                 (fixed, tmp_path / "leases-after", ray_address))
    assert before["exited"] and before["rc"] == 3, before["out"][-3000:]
    assert before["held"] == N
    assert before["leaked"] == N, before["out"][-3000:]

    assert after["exited"] and after["rc"] == 3, after["out"][-3000:]  # same exit status
    assert after["held"] == N
    assert after["leaked"] == 0, after["out"][-3000:]


# Exit paths: an orchestrating actor (verl's TaskRunner) waits on rollouts; when one fails it
# cancels the remaining refs in a loop and raises out of its remote method. The driver gets the
# error and exits; the cancelled rollouts are killed in the middle of their cleanup.
RUNNER_HAZARD = '''\
import asyncio
import os
import sys

import ray


''' + rollout_task(CLEANUP) + '''

@ray.remote(max_retries=0)
def failing(seconds):
    import time
    time.sleep(seconds)
    raise RuntimeError("reward model crashed")


@ray.remote(num_cpus=0)
class TaskRunner:
    def run(self, lease_dir, n, budget):
        futures = [rollout.remote(lease_dir, n), failing.remote(budget)]
        try:
            while futures:
                done, futures = ray.wait(futures, num_returns=1)
                ray.get(done)
        except Exception as e:
            for future in futures:
                ray.cancel(future)
            raise e


def main():
    ray.init()
    runner = TaskRunner.remote()
    ray.get(runner.run.remote(sys.argv[1], int(sys.argv[2]), float(sys.argv[3])))


if __name__ == "__main__":
    main()
'''


@pytest.mark.timeout(240)
def test_cancel_remaining_then_raise_out_of_actor_leaks_and_the_fix_waits(tmp_path, ray_address):
    hazard, found, fixed_src, fixed = hazard_and_fix(tmp_path, RUNNER_HAZARD, SETTINGS)
    assert [d.code for d in found] == ["SHD501"] and "remote method `run()`" in found[0].message
    assert "            runtime_guard.ray.wait_for_cleanup(futures, timeout=30)\n            raise e\n" in fixed_src

    before, after = side_by_side(_run, (hazard, tmp_path / "leases-before", ray_address),
                                 (fixed, tmp_path / "leases-after", ray_address))
    assert before["exited"] and before["rc"] != 0, before["out"][-3000:]
    assert "reward model crashed" in before["out"]
    assert before["held"] == N
    assert before["leaked"] == N, before["out"][-3000:]

    assert after["exited"] and after["rc"] == before["rc"], after["out"][-3000:]  # same failure, same status
    assert "reward model crashed" in after["out"]
    assert after["held"] == N
    assert after["leaked"] == 0, after["out"][-3000:]
