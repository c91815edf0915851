"""SIGTERM to one rank of a 2-rank torch.distributed job: what do the other ranks see?

Runs two real rank processes (gloo on CPU by default; ``--backend nccl`` on a machine
with 2+ GPUs) that loop on ``all_reduce``, sends SIGTERM to rank 1 and measures, on
rank 0, how long after the signal its collective fails and how it exits. Two shapes of
rank 1 are measured, each without and with ``runtime_guard.torch.install_distributed_teardown()``
installed right after ``init_process_group`` on both ranks (what SHD502's fix inserts):

* ``killed``: rank 1 has no SIGTERM handler, the kernel ends it at once.
* ``lingering``: rank 1 has a graceful-shutdown handler (a stop flag) and then spends
  ``--linger`` seconds on final work (a checkpoint upload, a Ray worker that stays up
  until its grace period ends) with its process group still open.

Usage::

    python bench/gloo_sigterm_scenario.py                # gloo, CPU
    python bench/gloo_sigterm_scenario.py --backend nccl # 2+ GPUs
    python bench/gloo_sigterm_scenario.py --json out.json

``--reference-teardown`` uses a small in-script teardown (destroy the process group from
the SIGTERM handler, then exit 143) instead of runtime_guard's, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


# --------------------------------------------------------------------------- one rank
RANK_PROGRAM = r'''
import datetime, json, os, signal, sys, time
import torch
import torch.distributed as dist

rank, port, backend, shape, teardown, pg_timeout, linger, report = (
    int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], float(sys.argv[6]),
    float(sys.argv[7]), sys.argv[8])
stop = False

def write(**kw):
    with open(report, "a") as f:
        f.write(json.dumps({"rank": rank, "t": time.time(), **kw}) + "\n")

if shape == "lingering":
    def _graceful(signum, frame):  # typical "finish the step, then save" handler
        global stop
        stop = True
    signal.signal(signal.SIGTERM, _graceful)

dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=pg_timeout))
if teardown == "runtime_guard":
    import runtime_guard
    runtime_guard.torch.install_distributed_teardown()
elif teardown == "reference":
    def _teardown(signum, frame):
        try:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        except Exception:
            pass
        try:
            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:
            pass
        os._exit(128 + signum)
    signal.signal(signal.SIGTERM, _teardown)

device = torch.device(f"cuda:{rank % max(torch.cuda.device_count(), 1)}") if backend == "nccl" else torch.device("cpu")
t = torch.ones(4096, device=device)
write(event="ready", pid=os.getpid())
steps = 0
try:
    while not stop:
        dist.all_reduce(t)
        if backend == "nccl":
            torch.cuda.synchronize(device)
        steps += 1
        time.sleep(0.005)
except BaseException as e:
    write(event="collective-error", error=f"{type(e).__name__}: {str(e).splitlines()[0][:200]}", steps=steps)
    raise
write(event="stopped", steps=steps)
time.sleep(linger)  # final work with the process group still open
write(event="exiting")
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_case(shape: str, teardown: str, *, backend: str = "gloo", pg_timeout: float = 20.0,
             linger: float = 40.0, warmup: float = 3.0, limit: float = 90.0) -> dict:
    """One run; returns what rank 0 saw. ``teardown`` is ``none``, ``runtime_guard`` or ``reference``."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "events.jsonl"
        prog = Path(tmp) / "rank.py"
        prog.write_text(RANK_PROGRAM)
        port = str(_free_port())
        env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
        procs = [
            subprocess.Popen(
                [sys.executable, str(prog), str(r), port, backend, shape, teardown, str(pg_timeout),
                 str(linger), str(report)],
                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            )
            for r in (0, 1)
        ]
        try:
            deadline = time.monotonic() + 60
            while sum(e["event"] == "ready" for e in _events(report)) < 2:
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise RuntimeError("ranks did not start: " + procs[0].stderr.read()[-2000:]
                                       if procs[0].poll() is not None else "ranks did not start")
                time.sleep(0.1)
            time.sleep(warmup)
            t_term = time.time()
            procs[1].terminate()  # SIGTERM
            out = {}
            for r, p in enumerate(procs):
                try:
                    _, err = p.communicate(timeout=max(1.0, limit - (time.time() - t_term)))
                    out[r] = (p.returncode, time.time(), err)
                except subprocess.TimeoutExpired:
                    p.kill()
                    _, err = p.communicate(timeout=30)
                    out[r] = (None, time.time(), err)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait(timeout=30)
        ev = _events(report)
        err0 = next((e for e in ev if e["rank"] == 0 and e["event"] == "collective-error"), None)
        rc0, t_exit0, stderr0 = out[0]
        rc1, t_exit1, _ = out[1]
        return {
            "shape": shape,
            "teardown": teardown,
            "backend": backend,
            "pg_timeout_s": pg_timeout,
            "rank1_exit": rc1,
            "rank1_exit_after_s": round(t_exit1 - t_term, 2),
            "rank0_error": err0["error"] if err0 else None,
            "rank0_error_after_s": round(err0["t"] - t_term, 2) if err0 else None,
            "rank0_exit": rc0,  # None: still running at the limit, killed
            "rank0_exit_after_s": round(t_exit0 - t_term, 2),
            "rank0_stderr_tail": stderr0[-600:],
        }


def _teardown_impl(reference: bool) -> str:
    if reference:
        return "reference"
    try:
        import runtime_guard.torch as rgt  # noqa: F401
        return "runtime_guard" if hasattr(rgt, "install_distributed_teardown") else "reference"
    except Exception:
        return "reference"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="gloo", choices=("gloo", "nccl"))
    ap.add_argument("--pg-timeout", type=float, default=20.0, help="process-group (collective) timeout, s")
    ap.add_argument("--linger", type=float, default=40.0, help="seconds the lingering rank 1 stays up")
    ap.add_argument("--shapes", default="killed,lingering")
    ap.add_argument("--reference-teardown", action="store_true")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args(argv)
    impl = _teardown_impl(args.reference_teardown)
    results = []
    for shape in args.shapes.split(","):
        for teardown in ("none", impl):
            r = run_case(shape, teardown, backend=args.backend, pg_timeout=args.pg_timeout, linger=args.linger)
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "rank0_stderr_tail"}), flush=True)
    print()
    print(f"backend={args.backend}  process-group timeout={args.pg_timeout:g}s  SIGTERM -> rank 1")
    head = "| rank 1 on SIGTERM | teardown | rank 0 collective fails after | rank 0 error | rank 0 exit (after) | rank 1 exit |"
    print(head)
    print("|" + "---|" * 6)
    for r in results:
        err = re.sub(r"^(\w+): \[[^\]]*\] ", r"\1: ", r["rank0_error"] or "none (blocked)")[:70]
        when = f"{r['rank0_error_after_s']} s" if r["rank0_error_after_s"] is not None else "never"
        rc0 = "killed at limit" if r["rank0_exit"] is None else str(r["rank0_exit"])
        print(f"| {r['shape']} | {r['teardown']} | {when} | {err} | {rc0} ({r['rank0_exit_after_s']} s) "
              f"| {r['rank1_exit']} ({r['rank1_exit_after_s']} s) |")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
