"""Validate runtime_guard on a CUDA machine: NCCL teardown, a wedged CUDA stream, the loop-stall
watchdog under CUDA work, and SHD301's ``torch.save`` of a CUDA tensor.

Each experiment runs a child program in a fresh process (real CUDA, real NCCL, real signals), bounds
it with a hard time limit, and prints one JSON line; ``--json FILE`` also writes them all. Results
of the runs on an H100 are recorded in docs/gpu-validation.md.

    python bench/gpu_validation.py                     # every experiment
    python bench/gpu_validation.py --only nccl_one_rank spin_sync
    python bench/gpu_validation.py --json out.jsonl

Needs a CUDA build of torch and at least one GPU (NCCL needs one GPU per rank: the two-rank
experiment records what NCCL says when both ranks share one GPU).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                PYTHONUNBUFFERED="1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_line(proc: subprocess.Popen, word: str, limit: float) -> list[str]:
    """Read the child's output until a line starts with ``word`` (or it exits / time runs out)."""
    lines: list[str] = []
    end = time.monotonic() + limit
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip())
        if line.startswith(word):
            break
    return lines


def _finish(proc: subprocess.Popen, limit: float) -> tuple[str, bool]:
    """(rest of output, killed): wait up to ``limit`` seconds, then SIGKILL."""
    try:
        out, _ = proc.communicate(timeout=limit)
        return out, False
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        return out, True


def _free_mem_fresh() -> dict:
    """GPU memory as a fresh process sees it (what a dead process left behind)."""
    out = subprocess.run([sys.executable, "-c", "import torch, json; f, t = torch.cuda.mem_get_info(); "
                          "print(json.dumps({'free_gib': round(f / 2**30, 2), 'total_gib': round(t / 2**30, 2)}))"],
                         capture_output=True, text=True, timeout=120, env=_env())
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception:
        return {"error": (out.stderr or out.stdout)[-300:]}


def _signal_run(program: str, args: list[str], *, sig: int, ready: str = "READY", settle: float = 1.0,
                limit: float = 60.0) -> dict:
    """Start ``program``, wait for its READY line, send ``sig`` after ``settle`` s, time the exit."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "child.py"
        path.write_text(textwrap.dedent(program))
        proc = subprocess.Popen([sys.executable, str(path), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=_env())
        head = _wait_line(proc, ready, 240)
        if not head or not head[-1].startswith(ready):
            out, killed = _finish(proc, 5)
            return {"started": False, "output": "\n".join(head)[-1500:] + out[-1500:]}
        time.sleep(settle)
        t0 = time.monotonic()
        proc.send_signal(sig)
        out, killed = _finish(proc, limit)
        took = time.monotonic() - t0
        return {"started": True, "exit": proc.returncode, "seconds_to_exit": round(took, 3),
                "killed_by_harness_after_s": limit if killed else None,
                "output_tail": "\n".join((("\n".join(head) + "\n" + out).splitlines())[-12:])}


# ------------------------------------------------------------------------------------------------
# 1. NCCL with two ranks on one GPU: what NCCL says.
TWO_RANKS = r'''
import datetime, os, sys, torch, torch.distributed as dist
rank, port = int(sys.argv[1]), sys.argv[2]
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=30))
t = torch.ones(1024, device="cuda:0")
try:
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print("ALLREDUCE-OK", t[0].item(), flush=True)
except BaseException as e:
    print("ALLREDUCE-ERROR", type(e).__name__, str(e).splitlines()[0][:300], flush=True)
    raise
finally:
    dist.destroy_process_group()
'''


def exp_nccl_two_ranks_one_gpu() -> dict:
    port = str(_free_port())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rank.py"
        path.write_text(TWO_RANKS)
        procs = [subprocess.Popen([sys.executable, str(path), str(r), port], stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, env=dict(_env(), NCCL_DEBUG="WARN"))
                 for r in range(2)]
        outs = [_finish(p, 120) for p in procs]
    return {"exit": [p.returncode for p in procs],
            "killed": [k for _, k in outs],
            "nccl_says": [[ln for ln in out.splitlines() if "NCCL" in ln or "ALLREDUCE" in ln or "Error" in ln][-6:]
                          for out, _ in outs]}


# ------------------------------------------------------------------------------------------------
# 2. One NCCL rank, collective in flight with heavy CUDA work queued, SIGTERM.
ONE_RANK = r'''
import datetime, os, signal, sys, time, torch, torch.distributed as dist
mode, port = sys.argv[1], sys.argv[2]
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=60))
if mode == "guard":
    import runtime_guard.torch
    runtime_guard.torch.install_distributed_teardown(grace=10)
elif mode == "graceful":  # the usual "finish the step, then save" handler, no teardown
    stop = False
    def _h(s, f):
        global stop
        stop = True
    signal.signal(signal.SIGTERM, _h)
a = torch.randn(8192, 8192, device="cuda")
t = torch.ones(1 << 24, device="cuda")
print("READY", flush=True)
steps = 0
while True:
    for _ in range(20):       # ~heavy work queued ahead of the collective
        a = a @ a
        a = a / a.norm()
    dist.all_reduce(t)        # collective in flight, not waited for
    steps += 1
    if mode == "graceful" and stop:
        print("STOPPED steps=%d" % steps, flush=True)
        time.sleep(30)        # final work with the group still open
        break
'''


def exp_nccl_one_rank(mode: str) -> dict:
    res = _signal_run(ONE_RANK, [mode, str(_free_port())], sig=signal.SIGTERM, settle=2.0, limit=60)
    res["mode"] = mode
    res["after"] = _free_mem_fresh()
    return res


# ------------------------------------------------------------------------------------------------
# 3. A kernel that spins "forever" (torch.cuda._sleep), SIGTERM while the main thread is blocked
#    in torch.cuda.synchronize() (where = "sync") or while it runs Python (where = "python").
SPIN = r'''
import datetime, os, sys, time, torch, torch.distributed as dist
where, guard, port = sys.argv[1], sys.argv[2], sys.argv[3]
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                        timeout=datetime.timedelta(seconds=60))
if guard == "guard":
    import runtime_guard.torch
    runtime_guard.torch.install_distributed_teardown(grace=6)
hog = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")  # 4 GiB held, to see it released
torch.cuda._sleep(1 << 62)   # spins for years
print("READY", flush=True)
if where == "sync":
    torch.cuda.synchronize()
else:
    while True:
        time.sleep(0.01)
'''


def exp_spin(where: str, guard: str) -> dict:
    before = _free_mem_fresh()
    res = _signal_run(SPIN, [where, guard, str(_free_port())], sig=signal.SIGTERM, settle=1.0, limit=45)
    res.update(where=where, guard=guard, before=before, after=_free_mem_fresh())
    return res


# ------------------------------------------------------------------------------------------------
# 4. Watchdog while a coroutine blocks on CUDA: synchronize after a long kernel, a big
#    device-to-host copy, and cudaDeviceSynchronize called through ctypes.PyDLL (holds the GIL).
WATCH = r'''
import asyncio, ctypes, ctypes.util, glob, json, os, sys, time, torch
import runtime_guard
kind, report = sys.argv[1], sys.argv[2]
torch.cuda.init()
x = torch.empty(1 << 31, dtype=torch.uint8, device="cuda")  # 2 GiB for the copy
torch.cuda.synchronize()

def cudart():
    import nvidia  # the pip CUDA runtime that torch loads
    for base in list(getattr(nvidia, "__path__", [])):
        for p in glob.glob(os.path.join(base, "**", "libcudart.so*"), recursive=True):
            return ctypes.PyDLL(p)
    return ctypes.PyDLL(ctypes.util.find_library("cudart"))

async def main():
    # the faulthandler layer (hard_threshold) is what can name a line while the GIL is held
    runtime_guard.watch_loop(threshold=0.1, hard_threshold=0.5 if kind == "gil" else None, report_file=report)
    await asyncio.sleep(0.3)
    if kind == "synchronize":
        torch.cuda._sleep(int(1.5e9))          # ~0.7 s of GPU time
        torch.cuda.synchronize()               # BLOCK-synchronize
    elif kind == "d2h":
        y = x.cpu()                            # BLOCK-d2h
    elif kind == "gil":
        lib = cudart()
        torch.cuda._sleep(int(6e9))            # ~3 s: well past the hard layer's 1 s floor
        lib.cudaDeviceSynchronize()            # BLOCK-gil
    await asyncio.sleep(0.3)

t0 = time.monotonic()
asyncio.run(main())
print("DONE", round(time.monotonic() - t0, 3), flush=True)
'''


def exp_watchdog(kind: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "watch.py"
        prog.write_text(WATCH)
        report = Path(tmp) / "stalls.jsonl"
        line = next(i + 1 for i, ln in enumerate(WATCH.splitlines()) if kind_marker(kind) in ln)
        proc = subprocess.run([sys.executable, str(prog), kind, str(report)], capture_output=True, text=True,
                              timeout=240, env=_env())
        events = [json.loads(x) for x in report.read_text().splitlines()] if report.exists() else []
    stalls = [e for e in events]
    named = [e for e in stalls if f"watch.py:{line}" in json.dumps(e)]
    dumped = f'watch.py", line {line}' in proc.stderr  # faulthandler's dump (GIL held)
    return {"kind": kind, "exit": proc.returncode, "expected_line": line, "reports": len(stalls),
            "named_the_line": bool(named), "faulthandler_named_the_line": dumped,
            "first_report": (stalls[0] if stalls else None),
            "stderr_tail": proc.stderr[-600:]}


def kind_marker(kind: str) -> str:
    return f"# BLOCK-{kind}"


# ------------------------------------------------------------------------------------------------
# 5. SHD301: torch.save of a large CUDA tensor inside a coroutine, before and after the fix.
SAVE = r'''
import asyncio, io, os, sys, time, torch
fixed, path = sys.argv[1] == "fixed", sys.argv[2]
state = {"w": torch.randn(256, 1024, 1024, device="cuda")}  # 1 GiB of float32
torch.cuda.synchronize()
gaps = []

async def heartbeat():
    last = time.monotonic()
    while True:
        await asyncio.sleep(0.005)
        now = time.monotonic()
        gaps.append(now - last)
        last = now

async def save():
    if fixed:
        await asyncio.to_thread(torch.save, state, path)   # the SHD301 fix
    else:
        torch.save(state, path)

async def main():
    hb = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.2)
    t0 = time.monotonic()
    await save()
    took = time.monotonic() - t0
    await asyncio.sleep(0.1)
    hb.cancel()
    print("RESULT", round(took, 3), round(max(gaps), 3), flush=True)

asyncio.run(main())
'''


def exp_save(fixed: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "save.py"
        prog.write_text(SAVE)
        proc = subprocess.run([sys.executable, str(prog), "fixed" if fixed else "hazard", str(Path(tmp) / "ck.pt")],
                              capture_output=True, text=True, timeout=300, env=_env())
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")]
    took, stall = (line[0].split()[1:] if line else (None, None))
    return {"fixed": fixed, "exit": proc.returncode, "save_seconds": took and float(took),
            "longest_loop_stall_s": stall and float(stall), "stderr_tail": proc.stderr[-400:]}


# ------------------------------------------------------------------------------------------------
# 6. A Ray async actor with num_gpus=1 holding 8 GiB, SIGTERM to its worker, with and without
#    runtime_guard.ray.setup_worker() as the worker_process_setup_hook.
RAY_ACTOR = r'''
import asyncio, json, os, signal, subprocess, sys, tempfile, time
import ray

mode, d = sys.argv[1], sys.argv[2]
env = {"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}}
if mode == "hook":
    env["worker_process_setup_hook"] = "runtime_guard.ray.setup_worker"
ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, runtime_env=env, log_to_driver=False)

def free_gib():
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.mem_get_info()[0] / 2**30)"],
                         capture_output=True, text=True)
    return round(float(out.stdout.strip().splitlines()[-1]), 2)

@ray.remote(num_gpus=1, max_restarts=0)
class Gen:
    def __init__(self):
        import torch
        self.hog = torch.empty(8 << 30, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()

    def pid(self):
        return os.getpid()

    async def run(self, d):
        async def child(i):
            open(f"{d}/box{i}", "w").close()
            try:
                await asyncio.sleep(100)
            finally:
                await asyncio.sleep(0.2)
                os.remove(f"{d}/box{i}")
        await asyncio.gather(*[child(i) for i in range(5)])

res = {"mode": mode, "free_gib_before": free_gib()}
g = Gen.remote()
pid = ray.get(g.pid.remote())
g.run.remote(d)
end = time.time() + 60
while len(os.listdir(d)) < 5 and time.time() < end:
    time.sleep(0.05)
time.sleep(0.5)
res["free_gib_actor_up"] = free_gib()
res["boxes_before"] = len(os.listdir(d))
t0 = time.time()
os.kill(pid, signal.SIGTERM)
alive = True
while time.time() - t0 < 20:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        alive = False
        break
    time.sleep(0.05)
res["worker_exit_s"] = None if alive else round(time.time() - t0, 2)
res["worker_alive_after_20s"] = alive
res["boxes_leaked"] = len(os.listdir(d))
res["free_gib_after_sigterm"] = free_gib()
ray.shutdown()
time.sleep(2)
res["free_gib_after_shutdown"] = free_gib()
print("RESULT " + json.dumps(res), flush=True)
'''


def exp_ray_gpu_actor(mode: str) -> dict:
    try:
        import ray  # noqa: F401
    except ImportError:
        return {"mode": mode, "skipped": "ray is not installed here"}
    with tempfile.TemporaryDirectory() as tmp:
        prog = Path(tmp) / "ray_actor.py"
        prog.write_text(RAY_ACTOR)
        boxes = Path(tmp) / "boxes"
        boxes.mkdir()
        try:
            proc = subprocess.run([sys.executable, str(prog), mode, str(boxes)], capture_output=True, text=True,
                                  timeout=240, env=_env())
        except subprocess.TimeoutExpired as e:
            return {"mode": mode, "timed_out": True, "output": str(e.stdout)[-800:]}
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        return {"mode": mode, "exit": proc.returncode, "output": (proc.stdout + proc.stderr)[-1500:]}
    return json.loads(line[0][7:])


EXPERIMENTS = {
    "nccl_two_ranks_one_gpu": lambda: [exp_nccl_two_ranks_one_gpu()],
    "nccl_one_rank": lambda: [exp_nccl_one_rank(m) for m in ("none", "graceful", "guard")],
    "spin": lambda: [exp_spin(w, g) for w in ("python", "sync") for g in ("none", "guard")],
    "watchdog": lambda: [exp_watchdog(k) for k in ("synchronize", "d2h", "gil")],
    "save": lambda: [exp_save(False), exp_save(True)],
    "ray_gpu_actor": lambda: [exp_ray_gpu_actor(m) for m in ("none", "hook")],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", choices=sorted(EXPERIMENTS))
    ap.add_argument("--json", help="also write the results here (JSON lines)")
    args = ap.parse_args()
    import torch

    env = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
           "nccl": ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else None,
           "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    print(json.dumps({"experiment": "environment", **env}), flush=True)
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to validate", file=sys.stderr)
        return 2
    results = []
    for name in args.only or EXPERIMENTS:
        t0 = time.monotonic()
        for res in EXPERIMENTS[name]():
            res = {"experiment": name, **res}
            results.append(res)
            print(json.dumps(res), flush=True)
        print(json.dumps({"experiment": name, "wall_s": round(time.monotonic() - t0, 1)}), flush=True)
    if args.json:
        Path(args.json).write_text("".join(json.dumps(r) + "\n" for r in [env, *results]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
