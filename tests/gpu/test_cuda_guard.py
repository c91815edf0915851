"""runtime_guard on a real GPU: NCCL teardown, a wedged CUDA stream, the watchdog under CUDA work,
SHD301's ``torch.save`` of a CUDA tensor, and a Ray GPU actor. Each case runs the experiment of
bench/gpu_validation.py (a fresh child process, real signals) and checks its outcome."""
from __future__ import annotations

import pytest
import torch

import gpu_validation as gv

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def test_two_nccl_ranks_cannot_share_one_gpu():
    if torch.cuda.device_count() > 1:
        pytest.skip("this machine has several GPUs: NCCL gets one per rank")
    res = gv.exp_nccl_two_ranks_one_gpu()
    said = " ".join(" ".join(lines) for lines in res["nccl_says"])
    assert res["exit"] == [1, 1] and "Duplicate GPU detected" in said, res


def test_nccl_rank_with_heavy_work_queued_exits_143_within_grace():
    res = gv.exp_nccl_one_rank("guard")  # grace 10 s
    assert res["exit"] == 143 and res["killed_by_harness_after_s"] is None, res
    assert res["seconds_to_exit"] < 10, res


@pytest.mark.parametrize("where", ["python", "sync"])
def test_wedged_stream_teardown_bounded_by_grace(where):
    """A kernel that never ends: SIGTERM while the main thread runs Python, or while it is blocked in
    ``torch.cuda.synchronize()`` (where no Python handler can run: before the fix the rank lived until
    SIGKILL). Either way the rank exits 143 within the grace period and its GPU memory is freed."""
    res = gv.exp_spin(where, "guard")  # grace 6 s
    assert res["exit"] == 143 and res["killed_by_harness_after_s"] is None, res
    assert res["seconds_to_exit"] < 6, res
    assert abs(res["after"]["free_gib"] - res["before"]["free_gib"]) < 1, res


@pytest.mark.parametrize("kind", ["synchronize", "d2h", "gil"])
def test_watchdog_names_the_blocking_cuda_line(kind):
    res = gv.exp_watchdog(kind)
    assert res["exit"] == 0 and res["reports"] >= 1 and res["named_the_line"], res
    if kind == "gil":  # the monitor cannot run while the GIL is held: faulthandler's dump names it
        assert res["faulthandler_named_the_line"], res


def test_torch_save_of_cuda_tensor_stalls_less_after_the_fix():
    hazard, fixed = gv.exp_save(False), gv.exp_save(True)
    assert hazard["exit"] == 0 and fixed["exit"] == 0, (hazard, fixed)
    # The hazard stalls the loop for the whole save; to_thread leaves only what torch's serializer
    # does with the GIL held (docs/gpu-validation.md).
    assert hazard["longest_loop_stall_s"] >= 0.9 * hazard["save_seconds"], hazard
    assert fixed["longest_loop_stall_s"] < 0.75 * hazard["longest_loop_stall_s"], (hazard, fixed)


@pytest.mark.ray
def test_ray_gpu_actor_sigterm_releases_leases_and_gpu_memory():
    pytest.importorskip("ray", reason="the Ray GPU case needs ray (the test extra installs it)")
    none, hook = gv.exp_ray_gpu_actor("none"), gv.exp_ray_gpu_actor("hook")
    assert none["boxes_leaked"] == 5 and none["worker_alive_after_20s"], none
    assert none["free_gib_after_sigterm"] < none["free_gib_before"] - 4, none  # 8 GiB still held
    assert hook["boxes_leaked"] == 0 and not hook["worker_alive_after_20s"], hook
    assert hook["free_gib_after_sigterm"] > hook["free_gib_before"] - 1, hook  # released at once
