"""The remote side of the fault scenarios: tasks and actors that hold "sandboxes" (marker files).

Every marker is created before the work starts and removed in a ``finally`` (after an ``await``,
like a sandbox API call), so a marker left behind is a leaked resource. Without the guard
(``RGF_GUARD=0`` in the job's env) a marker is a plain file naming its owner's PID; with it
(``RGF_GUARD=1``) it is a ``runtime_guard.leases`` lease file, which a survivor can reap once its
owner is dead. Workers import this module through the job's ``PYTHONPATH``.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from typing import Any, Dict, List, Optional

import ray

GUARD = os.environ.get("RGF_GUARD") == "1"
TASKGROUP = os.environ.get("RGF_TASKGROUP") == "1"  # only for the measurement quoted in the docs
CLEANUP_AWAIT = 0.05  # the "sandbox API call" in each finally


def hold(directory: str, name: str) -> str:
    if GUARD:
        from runtime_guard import leases

        return leases.acquire(directory, name)
    path = os.path.join(directory, name + ".lease")
    with open(path, "w") as f:
        json.dump({"name": name, "owner": {"pid": os.getpid()}}, f)
    return path


def drop(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def reap(directory: str) -> List[Dict[str, Any]]:
    """With the guard: release the leases of dead owners (what a survivor does)."""
    if not GUARD:
        return []
    from runtime_guard import leases

    return leases.reap(directory, dead_nodes=leases.dead_ray_nodes())


def guard_depth() -> int:
    """How many runtime_guard wrappers the SIGTERM handler has (1 = wrapped once, as it should be)."""
    handler, depth = signal.getsignal(signal.SIGTERM), 0
    while getattr(handler, "_runtime_guard", False):
        depth += 1
        handler = getattr(handler, "_wrapped", None)
    return depth


@ray.remote(max_restarts=0, max_task_retries=0)
class Sandboxes:  # noqa: SHD404 (the guard variant sets setup_worker as the job's setup hook)
    """Async actor: N trajectories, each holding a sandbox while it runs."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    async def pid(self) -> int:
        return os.getpid()

    async def run(self, n: int, seconds: float, env: Optional[Any] = None) -> int:
        async def trajectory(i: int) -> None:
            path = hold(self.directory, f"sandbox-{os.getpid()}-{i}")  # noqa: SHD301 (a tiny file)
            try:
                if env is not None and i == 0:  # this one steps an environment on another node
                    end = time.monotonic() + seconds
                    while time.monotonic() < end:
                        await env.step.remote()
                else:
                    await asyncio.sleep(seconds)
            finally:
                await asyncio.sleep(CLEANUP_AWAIT)
                drop(path)

        if TASKGROUP:  # SHD101's fix: a failing trajectory cancels its siblings, which clean up
            async with asyncio.TaskGroup() as tg:
                for i in range(n):
                    tg.create_task(trajectory(i))
        else:
            await asyncio.gather(*(trajectory(i) for i in range(n)))  # noqa: SHD101 (scenario 2 measures it)
        return n


@ray.remote(max_restarts=0, max_task_retries=0)
class Env:
    """Sync actor (an environment / reward worker); with ``max_restarts=1`` it is the restartable one."""

    def __init__(self, directory: str) -> None:
        if GUARD:  # as SHD404's fix writes it, on top of the job's setup hook: must stay one wrapper
            import runtime_guard.ray

            runtime_guard.ray.setup_worker()
        self.directory = directory
        self.reaped = reap(directory)  # a restarted actor first releases what its dead predecessor held
        self.inherited = sorted(f for f in os.listdir(directory) if f.startswith("env-"))

    def pid(self) -> int:
        return os.getpid()

    def state(self) -> Dict[str, Any]:
        return {"pid": os.getpid(), "inherited": self.inherited, "reaped": len(self.reaped),
                "guard_depth": guard_depth()}

    def step(self) -> None:
        path = hold(self.directory, f"env-{os.getpid()}-step")
        try:
            time.sleep(1.0)
        finally:
            drop(path)

    def work(self, seconds: float) -> int:
        path = hold(self.directory, f"env-{os.getpid()}-work")
        try:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                time.sleep(0.05)
        finally:
            drop(path)
        return os.getpid()


@ray.remote(max_retries=0)
def job(directory: str, seconds: float, pid_file: str) -> None:
    """A plain task (a data loader, a rollout on a GPU) holding a lease while it runs."""
    with open(pid_file, "w") as f:
        f.write(str(os.getpid()))
    path = hold(directory, f"task-{os.getpid()}")
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(0.05)
    finally:
        drop(path)
