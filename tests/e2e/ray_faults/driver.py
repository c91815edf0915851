"""Driver of one fault scenario; started by bench/ray_faults.py, joins the cluster in $RAY_ADDRESS.

argv: SCENARIO VARIANT MARKER_DIR STATE_DIR
  VARIANT plain: ray.get, no worker setup hook, plain marker files.
          guard: runtime_guard.ray.setup_worker as the job's worker_process_setup_hook,
                 interruptible_get + cancel_and_wait in the driver, markers as runtime_guard leases.
The driver writes STATE_DIR/ready.json (the PIDs the harness injects faults into) once every
marker of its workload exists, and, for the scenarios it ends itself, waits for STATE_DIR/go.
Exit status: 0 finished, 1 a Ray error surfaced, 130 Ctrl+C.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
SCENARIO, VARIANT, MARKERS, STATE = sys.argv[1:5]
GUARD = VARIANT == "guard"
N = int(os.environ.get("RGF_N", "4"))
CLEANUP = float(os.environ.get("RGF_CLEANUP", "5"))
LONG = 600.0  # the work never finishes by itself: only the fault ends it

os.environ["RGF_GUARD"] = "1" if GUARD else "0"
sys.path[:0] = [str(HERE), str(REPO)]

import ray  # noqa: E402

env_vars = {"PYTHONPATH": f"{HERE}{os.pathsep}{REPO}", "RGF_GUARD": os.environ["RGF_GUARD"],
            "RUNTIME_GUARD_CLEANUP_TIMEOUT": str(CLEANUP), "RAY_USAGE_STATS_ENABLED": "0",
            "RGF_TASKGROUP": os.environ.get("RGF_TASKGROUP", "0")}
runtime_env = {"env_vars": env_vars}
if GUARD:
    runtime_env["worker_process_setup_hook"] = "runtime_guard.ray.setup_worker"
ray.init(address=os.environ["RAY_ADDRESS"], runtime_env=runtime_env, log_to_driver=False)

import workload as w  # noqa: E402

if GUARD:
    import runtime_guard.ray as rg  # noqa: E402


def on(node: str) -> dict:
    return {"num_cpus": 0, "resources": {node: 1}}


def say(msg: str) -> None:
    print(f"[driver {time.monotonic():.2f}] {msg}", flush=True)


def markers(prefix: str = "") -> list:
    return [f for f in os.listdir(MARKERS) if f.startswith(prefix) and f.endswith(".lease")]


def wait_markers(n: int, prefix: str = "", timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while len(markers(prefix)) < n:
        if time.monotonic() > end:
            raise TimeoutError(f"only {len(markers(prefix))}/{n} {prefix!r} markers after {timeout}s")
        time.sleep(0.05)


def ready(**info) -> None:
    tmp = os.path.join(STATE, "ready.tmp")
    with open(tmp, "w") as f:
        json.dump(info, f)
    os.replace(tmp, os.path.join(STATE, "ready.json"))
    say(f"ready {info}")


def wait_go(timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not os.path.exists(os.path.join(STATE, "go")) and time.monotonic() < end:
        time.sleep(0.05)


def result(**info) -> None:
    with open(os.path.join(STATE, "result.json"), "w") as f:
        json.dump(info, f)
    say(f"result {info}")


def get(refs):
    """Wait for the work; with the guard, an error or Ctrl+C cancels what is still running first."""
    if not GUARD:
        return ray.get(refs)
    try:
        return rg.interruptible_get(refs, cleanup_timeout=CLEANUP)
    except Exception as exc:
        say(f"{type(exc).__name__}; cancel_and_wait on the rest")
        rg.cancel_and_wait(refs, timeout=CLEANUP)
        raise


def task_pid(pid_file: str, timeout: float = 60.0) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            return int(Path(pid_file).read_text())
        except (OSError, ValueError):
            time.sleep(0.05)
    raise TimeoutError("the task did not report its PID")


def preempt() -> None:
    """Node node_b is preempted while an async actor and a task on it, and an async actor on the head,
    hold sandboxes; the driver waits for all of them."""
    sb = w.Sandboxes.options(**on("node_b")).remote(MARKERS)
    survivor = w.Sandboxes.options(**on("head")).remote(MARKERS)
    pid_file = os.path.join(STATE, "task.pid")
    t = w.job.options(**on("node_b")).remote(MARKERS, LONG, pid_file)
    runs = [sb.run.remote(N, LONG), survivor.run.remote(N, LONG)]
    wait_markers(2 * N + 1)
    ready(node="node_b", workers=[ray.get(sb.pid.remote()), task_pid(pid_file), ray.get(survivor.pid.remote())])
    get(runs + [t])


def oom() -> None:
    """The env worker on node_b is SIGKILLed (OOM) while an async actor on the head holds sandboxes."""
    env = w.Env.options(**on("node_b")).remote(MARKERS)
    sb = w.Sandboxes.options(**on("head")).remote(MARKERS)
    run = sb.run.remote(N, LONG, env)
    wait_markers(N, "sandbox-")
    wait_markers(1, "env-")
    ready(kill=[ray.get(env.pid.remote())], workers=[ray.get(sb.pid.remote())])
    get(run)


def call_restarting(method, *args, timeout: float = 60.0):
    """Call an actor that may still be restarting (calls made meanwhile fail with ActorUnavailableError)."""
    end = time.monotonic() + timeout
    while True:
        try:
            return ray.get(method.remote(*args), timeout=timeout)
        except ray.exceptions.ActorUnavailableError:
            if time.monotonic() > end:
                raise
            time.sleep(0.2)


def restart() -> None:
    """An actor with max_restarts=1 is SIGKILLed mid-task; the restarted one must start clean."""
    env = w.Env.options(**on("node_b"), max_restarts=1).remote(MARKERS)
    first = ray.get(env.pid.remote())
    ref = env.work.remote(LONG)
    wait_markers(1, "env-")
    ready(kill=[first])
    try:
        get(ref)
    except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as exc:
        say(f"the call failed as expected: {type(exc).__name__}")
    state = call_restarting(env.state)
    call_restarting(env.work, 0.1)  # the restarted actor works
    result(first_pid=first, **state)
    ready(kill=[first], workers=[state["pid"]])


def shutdown() -> None:
    """The driver calls ray.shutdown() while async actor calls are in flight."""
    sb = w.Sandboxes.options(**on("node_b")).remote(MARKERS)
    run = sb.run.remote(N, LONG)
    wait_markers(N)
    ready(workers=[ray.get(sb.pid.remote())])
    wait_go()
    say("shutting down")
    if GUARD:
        rg.cancel_and_wait([run], timeout=CLEANUP)
    ray.shutdown()


def ctrl_c_node_gone() -> None:
    """Ctrl+C while the driver waits on an actor (head) and a task whose node (node_b) is already gone."""
    sb = w.Sandboxes.options(**on("head")).remote(MARKERS)
    pid_file = os.path.join(STATE, "task.pid")
    t = w.job.options(**on("node_b"), max_retries=3).remote(MARKERS, LONG, pid_file)
    run = sb.run.remote(N, LONG)
    wait_markers(N + 1)
    ready(node="node_b", workers=[ray.get(sb.pid.remote()), task_pid(pid_file)])
    get([run, t])


def head_gone() -> None:
    """Ctrl+C while the driver waits on an actor on node_b and the head node (GCS, raylet) is gone."""
    sb = w.Sandboxes.options(**on("node_b")).remote(MARKERS)
    run = sb.run.remote(N, LONG)
    wait_markers(N)
    ready(workers=[ray.get(sb.pid.remote())])
    get(run)


SCENARIOS = {"preempt": preempt, "oom": oom, "restart": restart, "shutdown": shutdown,
             "ctrl-c-node-gone": ctrl_c_node_gone, "ctrl-c-head-gone": head_gone}

if __name__ == "__main__":
    try:
        SCENARIOS[SCENARIO]()
    except KeyboardInterrupt:
        say("KeyboardInterrupt")
        sys.exit(130)
    say("done")
