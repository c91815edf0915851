"""Fault injection on a multi-node Ray cluster, without and with runtime_guard (issue 17).

One private cluster on this machine (``ray.cluster_utils.Cluster``: a head node and a worker node
``node_b``, each its own raylet; see tests/e2e/ray_faults/cluster.py) runs, for each scenario, a
driver (tests/e2e/ray_faults/driver.py) whose tasks and actors hold "sandboxes" (marker files
removed in ``finally``). Scenarios:

  preempt           node_b preempted: SIGTERM to all of its Ray processes, GRACE s, SIGKILL the rest
  oom               SIGKILL of the env actor's worker on node_b while an async actor on the head holds leases
  restart           actor with max_restarts=1 SIGKILLed mid-task; the restarted actor must start clean
  shutdown          ray.shutdown() in the driver while async actor calls are in flight
  ctrl-c-node-gone  node_b SIGKILLed, then Ctrl+C to the driver waiting on it and on an actor on the head
  ctrl-c-head-gone  the head node (GCS, raylet) SIGKILLed, then Ctrl+C to the driver waiting on node_b
                    (on a cluster of its own: nothing survives it)

Variants: ``plain`` (ray.get, nothing else) and ``guard`` (setup_worker as the job's
worker_process_setup_hook, interruptible_get + cancel_and_wait in the driver, markers written as
runtime_guard.leases lease files). After the driver exits and the job's workers are gone, the
markers left are counted ("leaked"); then, for the guard variant, ``runtime_guard.leases.reap``
runs as the next run would at its start, and what it could not reap is counted ("left").

    python bench/ray_faults.py [--scenarios preempt,oom,...] [--variants plain,guard] [--n 4]

Bounds: a driver gets START_DEADLINE s to set up and EXIT_DEADLINE s after the fault to exit
(otherwise it counts as hung and is SIGKILLed with its process group); the job's workers then get
SETTLE_DEADLINE s to end before they are SIGKILLed. The e2e test (tests/e2e/test_ray_faults.py)
imports this module and asserts on the same results.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

REPO = Path(__file__).resolve().parent.parent
FAULTS = REPO / "tests" / "e2e" / "ray_faults"
sys.path[:0] = [str(FAULTS), str(REPO)]

from cluster import FaultCluster, alive, preempt, signal_all, wait_dead  # noqa: E402

SCENARIOS = ("preempt", "oom", "restart", "shutdown", "ctrl-c-node-gone", "ctrl-c-head-gone")
ON_OWN_CLUSTER = ("ctrl-c-head-gone",)  # the cluster does not survive it
VARIANTS = ("plain", "guard")
START_DEADLINE = 120.0
EXIT_DEADLINE = 60.0
SETTLE_DEADLINE = 30.0
GRACE = 5.0  # preemption notice: SIGTERM -> SIGKILL
CLEANUP = 5.0  # the guard's cleanup budget (RUNTIME_GUARD_CLEANUP_TIMEOUT and the driver's timeouts)
NODE_GONE_WAIT = 4.0  # ctrl-c-node-gone: time for the GCS to notice the dead node before the Ctrl+C
# Detect a SIGKILLed raylet in ~1.5 s instead of Ray's default 15 s or more (checks every 3 s, 5 misses).
HEAD_SYSTEM_CONFIG = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                      "health_check_initial_delay_ms": 1000}


def held(scenario: str, n: int) -> int:
    """How many sandboxes a scenario's workload holds when the fault hits."""
    return {"preempt": 2 * n + 1, "oom": n + 1, "restart": 1, "shutdown": n, "ctrl-c-node-gone": n + 1,
            "ctrl-c-head-gone": n}[scenario]


@dataclass
class Run:
    scenario: str
    variant: str
    leaked: int  # markers left once the driver and the job's workers were gone
    left: int  # of those, what a reap by the next run could not release
    exited: bool  # the driver exited by itself within EXIT_DEADLINE
    returncode: Optional[int]
    seconds: Optional[float]  # from the fault to the driver's exit
    workers_hung: int = 0  # job workers still alive SETTLE_DEADLINE s (head-gone: 5 s) after the driver exited
    leaked_names: List[str] = field(default_factory=list)
    n: int = 4
    extra: Dict[str, object] = field(default_factory=dict)
    log: str = ""

    def cell(self) -> str:
        if not self.exited:
            return f"leaked {self.leaked}/{held(self.scenario, self.n)}, HUNG (killed after {EXIT_DEADLINE:.0f}s)"
        text = f"leaked {self.leaked}/{held(self.scenario, self.n)}"
        if self.variant == "guard" and self.leaked:
            text += f" ({self.leaked - self.left} reaped, {self.left} left)"
        text += f", exit {self.returncode}, {self.seconds:.1f}s"
        if self.workers_hung:
            text += f", {self.workers_hung} worker(s) alive {self.extra.get('settle_s', SETTLE_DEADLINE):.0f}s later"
        return text


def _wait_file(path: Path, proc: subprocess.Popen, deadline: float) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end and proc.poll() is None:
        if path.exists():
            return True
        time.sleep(0.1)
    return path.exists()


def run_one(cluster: FaultCluster, scenario: str, variant: str, workdir: Path, n: int) -> Run:
    cluster.ensure("node_b")
    run_dir = workdir / f"{scenario}-{variant}"
    markers, state = run_dir / "markers", run_dir / "state"
    markers.mkdir(parents=True)
    state.mkdir()
    env = cluster.env()
    env.update({"RGF_N": str(n), "RGF_CLEANUP": str(CLEANUP),
                "PYTHONPATH": os.pathsep.join([str(FAULTS), str(REPO)])})
    log_path = run_dir / "driver.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, str(FAULTS / "driver.py"), scenario, variant, str(markers),
                                 str(state)], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=str(run_dir),
                                start_new_session=True)
    workers: List[int] = []
    extra: Dict[str, object] = {}
    exited, seconds, rc = False, None, None
    try:
        if not _wait_file(state / "ready.json", proc, START_DEADLINE):
            raise RuntimeError(f"{scenario}/{variant} did not start:\n{log_path.read_text()[-4000:]}")
        info = json.loads((state / "ready.json").read_text())
        workers = list(info.get("workers", []))
        extra["workers"] = list(workers)
        time.sleep(0.5)  # the work is under way
        t0 = time.monotonic()
        if scenario == "preempt":
            extra.update(preempt(cluster.node_pids("node_b"), GRACE))
        elif scenario in ("oom", "restart"):
            # kill while the env holds its lease (between two steps it holds none)
            end = time.monotonic() + 10
            while not any(f.startswith("env-") for f in os.listdir(markers)) and time.monotonic() < end:
                time.sleep(0.01)
            signal_all(info["kill"], signal.SIGKILL)
        elif scenario == "shutdown":
            (state / "go").touch()
        elif scenario in ("ctrl-c-node-gone", "ctrl-c-head-gone"):
            signal_all(cluster.node_pids("node_b" if scenario == "ctrl-c-node-gone" else "head"), signal.SIGKILL)
            time.sleep(NODE_GONE_WAIT)
            t0 = time.monotonic()
            os.kill(proc.pid, signal.SIGINT)
        try:
            rc = proc.wait(timeout=EXIT_DEADLINE)
            exited, seconds = True, time.monotonic() - t0
        except subprocess.TimeoutExpired:
            pass
        if (state / "ready.json").exists():  # the restart scenario reports the restarted actor too
            workers = sorted(set(workers) | set(json.loads((state / "ready.json").read_text()).get("workers", [])))
        # With the GCS gone nothing tells node_b's workers the job ended: they outlive the driver.
        settle = 5.0 if scenario == "ctrl-c-head-gone" else SETTLE_DEADLINE
        extra["settle_s"] = settle
        hung = wait_dead(workers, settle)
        time.sleep(1.0)
        leaked_names = sorted(f for f in os.listdir(markers) if f.endswith(".lease"))
        leaked = left = len(leaked_names)
        if variant == "guard":  # the next run starts by reaping leases of dead owners
            from runtime_guard import leases

            leases.reap(markers)
            left = len([f for f in os.listdir(markers) if f.endswith(".lease")])
        if (state / "result.json").exists():
            extra.update(json.loads((state / "result.json").read_text()))
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
        signal_all([p for p in workers if alive(p)], signal.SIGKILL)
    return Run(scenario, variant, leaked, left, exited, rc, seconds, len(hung), leaked_names, n, extra,
               log_path.read_text(errors="replace"))


def run_all(scenarios=SCENARIOS, variants=VARIANTS, n: int = 4, workdir: Optional[Path] = None,
            cluster: Optional[FaultCluster] = None) -> List[Run]:
    workdir = Path(workdir or tempfile.mkdtemp(prefix="ray-faults-"))
    own = cluster is None
    if own:
        cluster = FaultCluster(system_config=HEAD_SYSTEM_CONFIG)
    runs = []
    try:
        for s in scenarios:
            for v in variants:
                if s in ON_OWN_CLUSTER:
                    with FaultCluster(system_config=HEAD_SYSTEM_CONFIG) as alone:
                        runs.append(run_one(alone, s, v, workdir, n))
                else:
                    runs.append(run_one(cluster, s, v, workdir, n))
        return runs
    finally:
        if own:
            cluster.close()


LABELS = {
    "preempt": "1. node_b preempted (SIGTERM all, 5 s grace, SIGKILL)",
    "oom": "2. env worker SIGKILLed (OOM) while an async actor holds leases",
    "restart": "3. actor (max_restarts=1) SIGKILLed mid-task",
    "shutdown": "4. ray.shutdown() with async actor calls in flight",
    "ctrl-c-node-gone": "5. Ctrl+C to the driver, node_b already gone",
    "ctrl-c-head-gone": "6. Ctrl+C to the driver, head node (GCS) already gone",
}


def table(runs: List[Run], n: int = 4) -> str:
    by = {(r.scenario, r.variant): r for r in runs}
    lines = ["| scenario | without guard | with guard |", "| --- | --- | --- |"]
    for s in [s for s in SCENARIOS if any(r.scenario == s for r in runs)]:
        cells = [by[(s, v)].cell() if (s, v) in by else "-" for v in VARIANTS]
        lines.append(f"| {LABELS[s]} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--n", type=int, default=4, help="sandboxes per async actor")
    ap.add_argument("--workdir", default=None, help="keep the runs' files here")
    ap.add_argument("--show-logs", action="store_true")
    args = ap.parse_args(argv)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="ray-faults-"))
    t = time.monotonic()
    runs = run_all([s for s in args.scenarios.split(",") if s], [v for v in args.variants.split(",") if v],
                   args.n, workdir)
    print(table(runs, args.n))
    print(f"\n({time.monotonic() - t:.0f}s in all; runs' files in {workdir})")
    for r in runs:
        shown = {k: v for k, v in r.extra.items() if k not in ("workers", "settle_s")}
        if shown or r.leaked_names:
            print(f"{r.scenario}/{r.variant}: leaked {r.leaked_names} {shown}")
        if args.show_logs:
            print(f"\n--- {r.scenario}/{r.variant} (exit {r.returncode}) ---\n{r.log[-3000:]}")
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
