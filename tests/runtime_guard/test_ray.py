"""runtime_guard.ray against a real local Ray cluster (ray.init(num_cpus=2))."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from rg_testutil import REPO, SCRIPTS, child_env, run_code, wait_for_line

import ray  # noqa: E402  (the test extra installs it: a missing ray must fail, not skip)
pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    yield
    ray.shutdown()


@ray.remote
def _value(x, delay=0.0):
    time.sleep(delay)
    return x


@ray.remote(max_retries=0)
def _sleepy_with_cleanup(path):
    try:
        for _ in range(1000):  # ray.cancel(force=False) interrupts the main thread between bytecodes
            time.sleep(0.1)
    finally:
        open(path, "w").close()


def test_interruptible_get_shapes_and_timeout(cluster) -> None:
    import runtime_guard

    rg = runtime_guard.ray
    a, b = _value.remote(1), _value.remote(2)
    assert rg.interruptible_get(a) == 1
    assert rg.interruptible_get([a, b, a]) == [1, 2, 1]
    assert rg.interruptible_get([]) == []
    slow = _value.remote(3, delay=30)
    with pytest.raises(ray.exceptions.GetTimeoutError):
        rg.interruptible_get(slow, timeout=0.3)
    ray.cancel(slow, force=True)


@ray.remote(max_retries=0)
def _fail():
    raise ValueError("lost with its node")


def test_interruptible_get_raises_a_failure_without_waiting_for_the_rest(cluster) -> None:
    # Regression (issue 17): it waited for every ref before raising, so a task lost with a dead
    # node next to work that never ends (another node's actor loop) hung the driver; ray.get
    # raises the first failure at once, and so must the guard (sync and async forms).
    import runtime_guard

    rg = runtime_guard.ray
    never = _value.remote(0, delay=600)
    try:
        with pytest.raises(ray.exceptions.RayTaskError):  # not GetTimeoutError
            rg.interruptible_get([never, _fail.remote()], timeout=60)

        async def main():
            await rg.interruptible_get_async([never, _fail.remote()], timeout=60)

        with pytest.raises(ray.exceptions.RayTaskError):
            asyncio.run(main())
    finally:
        ray.cancel(never, force=True)


def test_interruptible_wait_matches_ray_wait(cluster) -> None:
    import runtime_guard

    rg = runtime_guard.ray
    fast = [_value.remote(i) for i in range(3)]
    ray.get(fast)
    slow = _value.remote(9, delay=30)
    assert rg.interruptible_wait(fast, num_returns=3) == ray.wait(fast, num_returns=3)
    ready, rest = rg.interruptible_wait([slow, *fast], num_returns=2)
    assert len(ready) == 2 and set(ready) <= set(fast) and slow in rest
    ready, rest = rg.interruptible_wait([slow], timeout=0.3)  # a timeout returns, it does not raise
    assert ready == [] and rest == [slow]
    assert rg.interruptible_wait([]) == ([], [])
    with pytest.raises(ValueError):
        rg.interruptible_wait([fast[0], fast[0]])
    ray.cancel(slow, force=True)


def test_interruptible_get_inside_coroutine_awaits(cluster) -> None:
    import runtime_guard

    async def main():
        refs = [_value.remote(i, delay=0.2) for i in range(3)]
        aw = runtime_guard.ray.interruptible_get(refs)
        assert asyncio.iscoroutine(aw)
        return await aw, await runtime_guard.ray.interruptible_get_async(refs[0])

    assert asyncio.run(main()) == ([0, 1, 2], 0)


def test_interruptible_get_async_cancellation_cancels_ray_task(cluster, tmp_path) -> None:
    import runtime_guard

    marker = str(tmp_path / "cleaned")
    ref = _sleepy_with_cleanup.remote(marker)

    async def main():
        task = asyncio.create_task(runtime_guard.ray.interruptible_get_async(ref, cleanup_timeout=30))
        await asyncio.sleep(2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert os.path.exists(marker)  # the task's finally ran before we returned


def test_cancel_and_wait(cluster, tmp_path) -> None:
    import runtime_guard

    done = _value.remote(1)
    ray.get(done)
    marker = str(tmp_path / "cleaned")
    running = _sleepy_with_cleanup.remote(marker)
    time.sleep(2)
    finished = runtime_guard.ray.cancel_and_wait([done, running], timeout=30)
    assert set(finished) == {done, running}
    assert os.path.exists(marker)
    assert runtime_guard.ray.cancel_and_wait(done, timeout=1) == [done]


def _scenario(mode: str) -> dict:
    r = subprocess.run([sys.executable, str(SCRIPTS / "ray_worker_scenarios.py"), mode], capture_output=True,
                       text=True, timeout=200, env=child_env({"RG_REPO": str(REPO)}), cwd=str(REPO))
    line = next((x for x in r.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, r.stdout + r.stderr
    return json.loads(line[len("RESULT "):])


def test_setup_worker_hook_async_actor_sigterm_and_idle_loop_cancel() -> None:
    res = _scenario("hook")
    assert res["actor_boxes_before"] == 5 and res["actor_boxes_leaked"] == 0, res
    assert res["cancel_boxes_before"] == 5 and res["cancel_boxes_leaked"] == 0, res


def test_setup_worker_called_in_async_actor_init() -> None:
    res = _scenario("init")
    assert res["actor_boxes_before"] == 5 and res["actor_boxes_leaked"] == 0, res


def _ctrl_c_driver(tmp_path, mode: str, **popen_kw) -> "tuple[subprocess.Popen, str]":
    """Start ray_ctrl_c_driver.py in ``mode``; return once its task holds its 5 boxes."""
    box_dir = tempfile.mkdtemp(dir=tmp_path)
    p = subprocess.Popen([sys.executable, str(SCRIPTS / "ray_ctrl_c_driver.py"), box_dir, mode],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env(),
                         cwd=str(REPO), **popen_kw)
    end = time.time() + 90
    while len(os.listdir(box_dir)) < 5 and time.time() < end and p.poll() is None:
        time.sleep(0.1)
    if len(os.listdir(box_dir)) != 5:
        p.kill()
        pytest.fail(f"the driver's task never held its 5 boxes: {p.communicate()[0]}")
    return p, box_dir


@pytest.mark.parametrize("mode", ["guarded", "wait-guarded"])
def test_interruptible_get_ctrl_c_cancels_remote_work(tmp_path, mode) -> None:
    p, box_dir = _ctrl_c_driver(tmp_path, mode)
    try:
        p.send_signal(signal.SIGINT)
        time.sleep(0.3)
        p.send_signal(signal.SIGTERM)  # the launcher's follow-up SIGTERM is absorbed
        out, _ = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, out
    assert "SIGTERM absorbed" in out and "KeyboardInterrupt after cleanup" in out
    assert os.listdir(box_dir) == []


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("mode", ["guarded", "wait-guarded"])
def test_follow_up_sigterm_while_the_interrupted_driver_exits(tmp_path, mode) -> None:
    # The launcher's SIGTERM can come after the cleanup, while the KeyboardInterrupt unwinds
    # through ray.shutdown. Measured without the follow-up absorber: Ray's own SIGTERM handler
    # fires inside shutdown, the driver aborts (status -6 or -11) or exits with an "Exception
    # ignored in atexit" traceback, and its cluster's agent processes outlive it by a minute.
    p, box_dir = _ctrl_c_driver(tmp_path, mode, start_new_session=True)
    try:
        p.send_signal(signal.SIGINT)
        head = "".join(wait_for_line(p, "KeyboardInterrupt after cleanup", 60))
        p.send_signal(signal.SIGTERM)  # the driver is in sys.exit -> ray.shutdown now
        tail, _ = p.communicate(timeout=90)
        out = head + tail
        end = time.time() + 20  # a clean ray.shutdown leaves nothing in the driver's group
        while _group_alive(p.pid) and time.time() < end:
            time.sleep(0.2)
        alive = _group_alive(p.pid)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert p.returncode == 130, out
    assert "Exception ignored in atexit" not in out, out
    assert os.listdir(box_dir) == []
    assert not alive, "processes of the driver's local Ray cluster outlived it"
    assert "SIGTERM absorbed while the interrupted program exits" in out, out


def test_follow_up_absorber_hands_back_to_the_previous_handler_after_the_grace() -> None:
    # real signals, in a child: absorbed inside the grace; after it, a Python handler is called
    # and SIG_DFL kills the process with SIGTERM, as if the absorber had never been there
    r = run_code("""
        import os, signal, time
        from runtime_guard.ray import _follow_up_absorber
        hits = []
        signal.signal(signal.SIGTERM, _follow_up_absorber(lambda s, f: hits.append(s), 0.5))
        os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.05)
        print('inside the grace', hits, flush=True)
        time.sleep(0.6)
        os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.05)
        print('after the grace', hits, flush=True)
        signal.signal(signal.SIGTERM, _follow_up_absorber(signal.SIG_IGN, 0.0))
        os.kill(os.getpid(), signal.SIGTERM); time.sleep(0.05)
        print('ignored stays ignored', flush=True)
        signal.signal(signal.SIGTERM, _follow_up_absorber(signal.SIG_DFL, 0.0))
        os.kill(os.getpid(), signal.SIGTERM); time.sleep(2)
        print('not reached', flush=True)
    """)
    assert "inside the grace []" in r.stdout, r.stdout + r.stderr
    assert f"after the grace [{int(signal.SIGTERM)}]" in r.stdout
    assert "ignored stays ignored" in r.stdout
    assert "not reached" not in r.stdout
    assert r.returncode == -signal.SIGTERM
