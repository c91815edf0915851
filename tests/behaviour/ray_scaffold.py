"""What the Ray behaviour tests share: a remote rollout that holds "sandbox" files until its
`finally` removes them, the environment a driver subprocess needs, and starting/stopping a
driver in its own session (so its local cluster goes with it)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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
def driver(script: Path, args: Sequence[str], address: "str | None" = None) -> Iterator[subprocess.Popen]:
    """Run ``script args`` in a session of its own; on the way out kill whatever is left of
    it (the driver and the local cluster it started). With ``address`` (the ``ray_address``
    fixture's), the driver's ``ray.init()`` joins that cluster (``RAY_ADDRESS``)."""
    env = ray_env()
    if address is not None:
        env["RAY_ADDRESS"] = address
    proc = subprocess.Popen([sys.executable, str(script), *args], cwd=str(script.parent), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        yield proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(timeout=10)


def settled_count(d: Path, seconds: float, bound: float = 60.0) -> int:
    """How many files are left in ``d`` once nothing changed there for ``seconds`` (Ray ends a
    gone driver's workers; a cleanup still running would remove files within its own time)."""
    last, since, end = None, time.monotonic(), time.monotonic() + bound
    while time.monotonic() < end:
        now = len(os.listdir(d))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            break
        time.sleep(0.1)
    return last


def hazard_and_fix(tmp_path: Path, source: str, settings) -> "tuple[Path, list, str, Path]":
    """``source`` written as ``tmp_path/hazard/driver.py`` and linted with ``settings``, then
    fixed (unsafe fixes on): the fixed text must lint clean; it is written as
    ``tmp_path/fixed/driver.py``. Returns (hazard, the original's findings, fixed text, fixed)."""
    from shutdown_lint.analyzer import lint_source
    from shutdown_lint.fixer import fix_source

    hazard = tmp_path / "hazard" / "driver.py"
    hazard.parent.mkdir()
    hazard.write_text(source)
    found = lint_source(source.encode(), str(hazard), settings).diagnostics
    outcome = fix_source(source.encode(), str(hazard), settings, unsafe=True)
    left = lint_source(outcome.source, "driver.py", settings).diagnostics
    assert left == [], left
    fixed = tmp_path / "fixed" / "driver.py"
    fixed.parent.mkdir()
    fixed.write_text(outcome.source.decode())
    return hazard, found, outcome.source.decode(), fixed


def side_by_side(fn, before: tuple, after: tuple) -> list:
    """``fn(*before)`` and ``fn(*after)`` at the same time (two drivers of the cluster)."""
    with ThreadPoolExecutor(2) as pool:
        return [f.result() for f in [pool.submit(fn, *before), pool.submit(fn, *after)]]
