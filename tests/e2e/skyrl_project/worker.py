"""The generation worker of a SkyRL-style RL loop (the hazardous version).

An async Ray actor runs N trajectories concurrently; each trajectory leases a "sandbox"
(a file standing in for a Daytona/Modal sandbox), runs agent steps in it, and deletes it
in its ``finally``. Deleting a sandbox takes a moment (an API call), hence the await.
"""
import asyncio
import os

import ray

STEP_SECONDS = 0.2
STEPS = 300  # about a minute of agent work per trajectory


@ray.remote(max_restarts=0, max_task_retries=0)
class Generator:
    def __init__(self, lease_dir):
        self.lease_dir = lease_dir

    def pid(self):
        return os.getpid()

    async def trajectory(self, i, fail_at):
        path = os.path.join(self.lease_dir, f"sandbox-{i:03d}")
        with open(path, "w") as f:  # create the sandbox
            f.write(str(os.getpid()))
        try:
            for step in range(STEPS):
                await asyncio.sleep(STEP_SECONDS)  # one agent step
                if i == fail_at and step == 5:
                    raise RuntimeError(f"trajectory {i}: tool call failed")
            return i
        finally:
            await asyncio.sleep(0.3)  # the sandbox API call that deletes it
            os.remove(path)

    async def generate(self, n, fail_at=-1):
        return await asyncio.gather(*[self.trajectory(i, fail_at) for i in range(n)])
