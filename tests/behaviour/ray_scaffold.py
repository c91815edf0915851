"""What the Ray behaviour tests share: a remote rollout that holds "sandbox" files until its
`finally` removes them, the environment a driver subprocess needs, and starting/stopping a
driver in its own session (so its local cluster goes with it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

REPO = Path(__file__).resolve().parents[2]


def rollout_task(cleanup_seconds: float, *, options: str = "max_retries=0") -> str:
    """Source of ``rollout(lease_dir, n)``: a Ray task running ``n`` trajectories, each holding
    ``lease_dir/sandbox-<i>`` until cancelled; deleting a sandbox takes ``cleanup_seconds``."""
    return f'''\
@ray.remote({options})
def rollout(lease_dir, n):
    async def trajectory(i):
        path = os.path.join(lease_dir, f"sandbox-{{i}}")
        open(path, "w").close()
        try:
            while True:
                await asyncio.sleep(0.2)  # agent steps
        finally:
            await asyncio.sleep({cleanup_seconds})  # deleting the sandbox takes an API call
            os.remove(path)

    async def run():
        # return_exceptions=True: cancelled, the gather waits for every trajectory's cleanup
        # (without it, asyncio.run cancels the rest when the first is done: SHD101)
        await asyncio.gather(*[trajectory(i) for i in range(n)], return_exceptions=True)

    asyncio.run(run())
'''


def ray_env(*paths: Path) -> dict:
    """The driver's environment: this checkout (runtime_guard) and ``paths`` importable, no
    usage stats, no auth prompt. Ray workers inherit it."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env.setdefault("RAY_AUTH_MODE", "disabled")
    return env


@contextmanager
def driver(script: Path, args: Sequence[str]) -> Iterator[subprocess.Popen]:
    """Run ``script args`` in a session of its own; on the way out kill whatever is left of
    it (the driver and the local cluster it started)."""
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=str(script.parent), env=ray_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(timeout=10)
