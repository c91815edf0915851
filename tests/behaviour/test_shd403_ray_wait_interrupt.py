"""SHD403's ray.wait extension on a real local Ray cluster: Ctrl+C to a driver whose
monitoring loop blocks in `ray.wait(refs, num_returns=1)` with no timeout.

Hazard: the same as with `ray.get`: the driver exits on KeyboardInterrupt, the remote task is
killed with the job and its `finally` blocks never run (every sandbox file leaks). Fixed by
the rule's own autofix (`runtime_guard.ray.interruptible_wait`): the first Ctrl+C cancels the
pending task and waits for its cleanup, then the KeyboardInterrupt surfaces; nothing leaks.

As in test_shd403_ray_get_interrupt.py, the drivers join the module's cluster (``ray_address``)
and run at the same time.
"""
from __future__ import annotations

import pytest

from shutdown_lint.settings import Settings

from ray_scaffold import hazard_and_fix
from test_shd403_ray_get_interrupt import N, both_ctrl_c_runs

pytestmark = [pytest.mark.ray, pytest.mark.slow]

SETTINGS = Settings(selected=("SHD403",), target_version="py311")

HAZARD = '''\
import asyncio
import os
import sys

import ray


@ray.remote(max_retries=0)
def rollout(lease_dir, n):
    async def trajectory(i):
        path = os.path.join(lease_dir, f"sandbox-{i}")
        open(path, "w").close()
        try:
            while True:
                await asyncio.sleep(0.2)  # agent steps
        finally:
            await asyncio.sleep(3)  # deleting the sandbox takes an API call (CLEANUP in test_shd403_ray_get_interrupt)
            os.remove(path)

    async def run():
        # return_exceptions=True: cancelled, the gather waits for every trajectory's cleanup
        # (without it, asyncio.run cancels the rest when the first is done: SHD101)
        await asyncio.gather(*[trajectory(i) for i in range(n)], return_exceptions=True)

    asyncio.run(run())


def main():
    ray.init()
    refs = [rollout.remote(sys.argv[1], int(sys.argv[2]))]
    print("driver waiting", flush=True)
    while refs:
        done, refs = ray.wait(refs, num_returns=1)
        print("finished", done, flush=True)


if __name__ == "__main__":
    main()
'''


@pytest.mark.timeout(240)
def test_ctrl_c_during_ray_wait_leaks_and_the_fix_cleans_up(tmp_path, ray_address):
    hazard, found, fixed_src, fixed = hazard_and_fix(tmp_path, HAZARD, SETTINGS)
    assert [d.code for d in found] == ["SHD403"] and "ray.wait()" in found[0].message
    assert "done, refs = runtime_guard.ray.interruptible_wait(refs, num_returns=1)" in fixed_src

    before, after = both_ctrl_c_runs(ray_address, hazard, fixed, tmp_path)
    assert before["exited"], "the hazard driver ignored Ctrl+C"
    assert before["leaked"] == N, before["out"][-3000:]

    assert after["exited"], "the fixed driver did not exit after Ctrl+C"
    assert after["leaked"] == 0, after["out"][-3000:]
    assert "KeyboardInterrupt" in after["out"]
    assert after["rc"] != 0
