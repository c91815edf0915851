"""Every fix shape of SHD403 and SHD501, run for real: the original and the fixed program as
driver subprocesses of one local Ray cluster (ray.init(num_cpus=2) here; each driver connects
with ``RAY_ADDRESS``, so a run costs seconds, not a cluster start).

For each shape: on the path where the hazard does not occur the fixed program prints the same
stdout and exits with the same status; on the hazard path the original leaks or cuts the remote
cleanup short and the fixed program does not. The sync SHD403 shapes' and the loop SHD501
shape's hazard runs are in test_shd403_ray_get_interrupt.py, test_shd403_ray_wait_interrupt.py
and test_shd501_cancel_then_exit.py.

Issue 26 regressions: the SHD403 fix in ``async def`` (it was not offered; the sync helper
called there returned a coroutine), and SHD403 + SHD501 on one ``try`` (audit 3.3: the two
fixes cancelled the task twice).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from ray_scaffold import ray_env, rollout_task, side_by_side

import ray  # noqa: E402  (the test extra installs it)

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(300)]

SHD403 = Settings(selected=("SHD403",), target_version="py311")
SHD501 = Settings(selected=("SHD501",), target_version="py311")
BOTH = Settings(selected=("SHD403", "SHD501"), target_version="py311")
N = 3
# seconds the rollout's cleanup takes: longer than Ray lets a gone driver's worker run even under
# load (0.3 s sometimes finished first at load 10), so the hazard's leak does not hang on timing
CLEANUP = 3


@pytest.fixture(scope="module")
def address():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def _fix(src: str, settings: Settings, codes: list) -> str:
    found = lint_source(src.encode(), "driver.py", settings).diagnostics
    assert sorted(d.code for d in found) == sorted(codes), [(d.code, d.line, d.message) for d in found]
    fixed = fix_source(src.encode(), "driver.py", settings, unsafe=True).source
    compile(fixed, "driver.py", "exec")
    assert lint_source(fixed, "driver.py", settings).diagnostics == []
    return fixed.decode()


def _write(tmp_path: Path, name: str, src: str) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "count_cancels.py").write_text(COUNT_CANCELS)
    (d / "driver.py").write_text(src)
    return d / "driver.py"


def _start(script: Path, address: str, args=()) -> subprocess.Popen:
    env = ray_env()
    env["RAY_ADDRESS"] = address
    return subprocess.Popen([sys.executable, str(script), *map(str, args)], cwd=str(script.parent), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _finish(p: subprocess.Popen, timeout: float = 90) -> "tuple[str, str]":
    try:
        return p.communicate(timeout=timeout)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        p.wait()


def _run(script: Path, address: str) -> "tuple[int, str, str]":
    p = _start(script, address)
    out, err = _finish(p)
    return p.returncode, out, err


def _leases(d: Path) -> int:
    return len(os.listdir(d))


def _settled(d: Path, seconds: float = 1.5) -> list:
    """What is left in ``d`` once nothing changed for ``seconds`` (Ray ends a dead driver's tasks)."""
    last, since, end = None, time.monotonic(), time.monotonic() + 30
    while time.monotonic() < end:
        now = sorted(os.listdir(d))
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            break
        time.sleep(0.2)
    return last


def _ctrl_c_run(script: Path, address: str, work: Path, ready: int, second_after: "float | None" = 15.0,
                exited: "threading.Event | None" = None, until: "threading.Event | None" = None) -> dict:
    """Start the driver; once ``work`` holds ``ready`` files, Ctrl+C; if it is still running
    ``second_after`` s later (asyncio.run's first Ctrl+C only cancels the main task), Ctrl+C
    again (``None``: never). Returns how it ended and what its remote work left in ``work``.
    15 s: a fixed driver exits about 1 s after the first Ctrl+C plus its cleanup (CLEANUP), but
    took over 3 s more than that in a 3-worker run on a loaded 2-core machine.
    ``exited``: set once this driver has ended. ``until``: the other driver's ``exited`` (the
    fixed program run side by side): the second Ctrl+C goes as soon as that one has ended on its
    first Ctrl+C, and not before CLEANUP + 1 s (the fixed driver's time on a calm machine) after
    this driver's first; still at most ``second_after`` s."""
    work.mkdir()
    p = _start(script, address, [work, N])
    try:
        end = time.monotonic() + 60
        while _leases(work) < ready and time.monotonic() < end and p.poll() is None:
            time.sleep(0.1)
        assert _leases(work) >= ready, "the remote work never started: " + "".join(_finish(p))[-3000:]
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        first = time.monotonic()
        sigints, end = 1, first + (second_after or 0)

        def other_done() -> bool:
            return until is not None and until.is_set() and time.monotonic() >= first + CLEANUP + 1.0

        while second_after is not None and p.poll() is None and time.monotonic() < end and not other_done():
            time.sleep(0.1)
        if second_after is not None and p.poll() is None:
            p.send_signal(signal.SIGINT)
            sigints = 2
        out, err = _finish(p, 60)
    finally:
        if p.poll() is None:
            _finish(p, 1)
        if exited is not None:
            exited.set()
    return {"rc": p.returncode, "out": out, "err": err, "sigints": sigints, "left": _settled(work, CLEANUP + 1.0)}


# --------------------------------------------------------------------------------- SHD403

NORMAL_403 = '''\
import asyncio
import sys

import ray


@ray.remote(max_retries=0)
def square(x):
    return x * x


@ray.remote(max_retries=0)
def boom():
    raise ValueError("bad batch")


async def collect(refs):
    got = ray.get(refs)
    ready, rest = ray.wait(refs, num_returns=len(refs))
    one = ray.get(refs[1])
    try:
        ray.get(boom.remote())
    except ray.exceptions.RayTaskError as e:
        failed = repr(e.cause)
    return got, len(ready), len(rest), one, failed


def main():
    ray.init(log_to_driver=False)
    refs = [square.remote(i) for i in range(4)]
    print("get", ray.get(refs), ray.get(refs[2]))
    ready, rest = ray.wait(refs, num_returns=2)
    print("wait", len(ready), len(rest), set(ready) <= set(refs))
    print("async", asyncio.run(collect(refs)))
    try:
        ray.get(boom.remote())
    except ray.exceptions.RayTaskError as e:
        print("error", repr(e.cause))
    return 4


if __name__ == "__main__":
    sys.exit(main())
'''


def test_shd403_every_fix_shape_keeps_the_normal_path(tmp_path, address):
    fixed = _fix(NORMAL_403, SHD403, ["SHD403"] * 8)
    for line in ("runtime_guard.ray.interruptible_get(refs)", "runtime_guard.ray.interruptible_wait(refs, num_returns=2)",
                 "got = await runtime_guard.ray.interruptible_get_async(refs)",
                 "await runtime_guard.ray.interruptible_wait_async(refs, num_returns=len(refs))",
                 "one = await runtime_guard.ray.interruptible_get_async(refs[1])"):
        assert line in fixed, fixed
    before, after = side_by_side(_run, (_write(tmp_path, "before", NORMAL_403), address),
                          (_write(tmp_path, "after", fixed), address))
    assert before[0] == 4, before
    assert before[1].count("\n") == 4 and "ValueError('bad batch')" in before[1], before
    assert after[:2] == before[:2], (before, after)  # same status, same stdout
    assert "never awaited" not in after[2]


ASYNC_HAZARD = '''\
import asyncio
import os
import sys

import ray


''' + rollout_task(CLEANUP) + '''

async def run(lease_dir, n):
    refs = [rollout.remote(lease_dir, n)]
    print("driver waiting", flush=True)
    CALL


def main():
    ray.init(log_to_driver=False)
    asyncio.run(run(sys.argv[1], int(sys.argv[2])))


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("call, fixed_call", [
    ("ray.get(refs)", "await runtime_guard.ray.interruptible_get_async(refs)"),
    ("ray.wait(refs, num_returns=1)", "await runtime_guard.ray.interruptible_wait_async(refs, num_returns=1)"),
])
def test_shd403_in_a_coroutine_ctrl_c_leaks_and_the_awaited_fix_cleans_up(tmp_path, address, call, fixed_call):
    src = ASYNC_HAZARD.replace("CALL", call)
    fixed = _fix(src, SHD403, ["SHD403"])
    assert fixed_call in fixed
    fixed_exited = threading.Event()  # the original gets its second Ctrl+C once the fixed driver has ended
    before, after = side_by_side(
        _ctrl_c_run, (_write(tmp_path, "before", src), address, tmp_path / "leases-before", N, 15.0, None, fixed_exited),
        (_write(tmp_path, "after", fixed), address, tmp_path / "leases-after", N, 15.0, fixed_exited))
    # measured: asyncio.run's first Ctrl+C only cancels the main task, which the blocked call
    # never sees (the original still ran when the fixed driver had ended on its first Ctrl+C); the
    # second ends the driver and Ray kills the rollout in the middle of its work
    assert before["sigints"] == 2 and before["rc"] != 0, before
    assert len(before["left"]) == N, before
    assert after["sigints"] == 1, after  # the awaited helper sees the first Ctrl+C
    assert after["rc"] != 0 and "KeyboardInterrupt" in after["err"], after
    assert after["left"] == [], after
    assert after["out"] == before["out"] == "driver waiting\n"


# --------------------------------------------------------------------------------- SHD501

NORMAL_501 = '''\
import sys

import ray
from ray.exceptions import GetTimeoutError


@ray.remote(max_retries=0)
def square(x):
    return x * x


@ray.remote(max_retries=0)
def boom():
    raise ValueError("bad batch")


def budgeted(ref):
    try:
        return ray.get(ref, timeout=60)
    except GetTimeoutError:
        print("over budget")
        ray.cancel(ref)
        sys.exit(3)


def first_of(refs):
    try:
        return ray.get(refs[0], timeout=60)
    except BaseException:
        ray.cancel(refs[0], recursive=True)
        return None


def main():
    ray.init(log_to_driver=False)
    print("budgeted", budgeted(square.remote(3)))
    print("first", first_of([square.remote(4)]))
    futures = [square.remote(i) for i in range(3)] + [boom.remote()]
    try:
        while futures:
            done, futures = ray.wait(futures, num_returns=1, timeout=60)
            ray.get(done)
    except Exception as e:
        for future in futures:
            ray.cancel(future)
        print("failed", repr(e.cause))
        sys.exit(5)
    print("not reached")


if __name__ == "__main__":
    main()
'''


def test_shd501_every_fix_shape_keeps_the_normal_path(tmp_path, address):
    fixed = _fix(NORMAL_501, SHD501, ["SHD501"] * 3)
    for line in ("        runtime_guard.ray.cancel_and_wait(ref, timeout=30)\n        sys.exit(3)\n",
                 "        ray.cancel(refs[0], recursive=True)\n        runtime_guard.ray.wait_for_cleanup(refs[0], timeout=30)\n",
                 "        runtime_guard.ray.wait_for_cleanup(futures, timeout=30)\n        sys.exit(5)\n"):
        assert line in fixed, fixed
    before, after = side_by_side(_run, (_write(tmp_path, "before", NORMAL_501), address),
                          (_write(tmp_path, "after", fixed), address))
    assert before[0] == 5 and before[1] == "budgeted 9\nfirst 16\nfailed ValueError('bad batch')\n", before
    assert after[:2] == before[:2], (before, after)


# ------------------------------------------------------------------- SHD403 + SHD501 on one try

# Instrumentation, imported by both programs (not linted): every cancel request the driver makes.
COUNT_CANCELS = '''\
import ray

_cancel = ray.cancel


def _counted(ref, *args, **kwargs):
    print("cancel request, force=%s" % kwargs.get("force", False), flush=True)
    return _cancel(ref, *args, **kwargs)


ray.cancel = _counted
'''

# audit 3.3 (SkyRL skyrl_train_main.py), scaled down: the task's cleanup takes 3 s
COMPOSED = '''\
import os
import sys
import time

import count_cancels
import ray


@ray.remote(max_retries=0)
def entrypoint(directory):
    open(os.path.join(directory, "started"), "w").close()
    try:
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        open(os.path.join(directory, "interrupt-1"), "w").close()
        try:
            time.sleep(3.0)  # cleanup
        except KeyboardInterrupt:
            open(os.path.join(directory, "interrupt-2"), "w").close()
            raise
        open(os.path.join(directory, "cleaned"), "w").close()
        raise


def main():
    ray.init(log_to_driver=False)
    task = entrypoint.remote(sys.argv[1])
    print("driver waiting", flush=True)
    try:
        ray.get(task)
    except KeyboardInterrupt:
        print("KeyboardInterrupt received, shutting down...", flush=True)
        ray.cancel(task)
        raise


if __name__ == "__main__":
    main()
'''


def test_shd403_and_shd501_on_one_try_cancel_once_and_let_the_cleanup_finish(tmp_path, address):
    # Before issue 26 both rules fixed this try: interruptible_get cancelled and waited, then the
    # handler's cancel_and_wait cancelled again (two cancel requests; with a cleanup longer than
    # the first wait, the second KeyboardInterrupt cut it short: see test_ray.py's
    # test_runtime_guard_cancels_a_ref_once_whatever_helpers_compose).
    fixed = fix_source(COMPOSED.encode(), "driver.py", BOTH, unsafe=True).source.decode()
    before, after = side_by_side(_ctrl_c_run, (_write(tmp_path, "before", COMPOSED), address, tmp_path / "before-work", 1, None),
                          (_write(tmp_path, "after", fixed), address, tmp_path / "after-work", 1, None))
    for res in (before, after):
        assert res["sigints"] == 1, res
        assert res["out"] == ("driver waiting\nKeyboardInterrupt received, shutting down...\n"
                              "cancel request, force=False\n"), res  # one cancel request
        assert "KeyboardInterrupt" in res["err"], res
    assert before["left"] == ["interrupt-1", "started"], before  # the hazard: cleanup killed
    assert after["left"] == ["cleaned", "interrupt-1", "started"], after  # one interrupt, cleanup done
    assert after["rc"] == before["rc"], (before, after)
    # only SHD501 reports: the interrupt path already cancels, so SHD403 leaves the get alone
    assert _fix(COMPOSED, BOTH, ["SHD501"]) == fixed
    assert "        ray.get(task)\n" in fixed
    assert "        runtime_guard.ray.cancel_and_wait(task, timeout=30)\n        raise\n" in fixed
