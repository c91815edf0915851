"""runtime_guard.torch with real 2-rank gloo process groups in subprocesses."""
from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from rg_testutil import REPO, SCRIPTS, child_env

import torch  # noqa: E402,F401  (the test extra installs it: a missing torch must fail, not skip)
pytestmark = [pytest.mark.torch, pytest.mark.slow, pytest.mark.timeout(180)]


def _start_ranks(tmp_path: Path, scenario: str, grace: float) -> list:
    store = tmp_path / "store"
    procs = [subprocess.Popen([sys.executable, str(SCRIPTS / "gloo_rank.py"), str(rank), "2", str(store),
                               str(tmp_path), scenario, str(grace)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=child_env(), cwd=str(REPO))
             for rank in range(2)]
    end = time.time() + 120
    while not all((tmp_path / f"ready{r}").exists() for r in range(2)):
        assert time.time() < end and all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.1)
    return procs


def _finish(procs: list) -> list:
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=60)[0])
        finally:
            if p.poll() is None:
                p.kill()
    return outs


def test_sigterm_destroys_process_group_and_exits_143(tmp_path: Path) -> None:
    procs = _start_ranks(tmp_path, "ok", grace=25)
    for p in procs:
        p.send_signal(signal.SIGTERM)
    outs = _finish(procs)
    for rank, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 143, out
        assert f"DESTROYED rank={rank}" in out and "initialized=False" in out, out


def test_half_healthy_worker_still_tears_down(tmp_path: Path) -> None:
    procs = _start_ranks(tmp_path, "ok", grace=25)
    procs[1].kill()  # the peer died (OOM-killed, node lost)
    procs[1].wait(timeout=30)
    procs[0].send_signal(signal.SIGTERM)
    out = _finish(procs[:1])[0]
    assert procs[0].returncode == 143, out
    assert "DESTROYED rank=0" in out


def test_wedged_teardown_bounded_by_grace(tmp_path: Path) -> None:
    procs = _start_ranks(tmp_path, "hang", grace=3)
    for p in procs:
        p.send_signal(signal.SIGTERM)
    outs = _finish(procs)
    for p, out in zip(procs, outs):
        assert p.returncode == 143, out
        assert "did not finish" in out or "destroy_process_group" in out


def test_off_main_thread_registers_atexit_with_warning() -> None:
    import runtime_guard

    got: list = []

    def target() -> None:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got.append(runtime_guard.torch.install_distributed_teardown(grace=5))
            got.append([x.category for x in w])

    th = threading.Thread(target=target)
    th.start()
    th.join()
    assert got[0] is None and RuntimeWarning in got[1]
