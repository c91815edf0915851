"""The exit report on a multi-node Ray cluster: the driver's report names what an actor on the
second node left behind (a pending task, a thread, a child process), with its node, its actor and
the line that made it, whatever way the driver ends (return, exception, SIGINT, SIGTERM).

One private cluster for the module (head + ``node_b``, tests/e2e/ray_faults/cluster.py, the one the
fault tests use); the four drivers run at the same time, each its own job, and each waits on
events (a line on its output, its exit), never on a fixed sleep.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rg_testutil import REPO

pytestmark = [pytest.mark.ray, pytest.mark.slow]
pytest.importorskip("ray")

FAULTS = REPO / "tests" / "e2e" / "ray_faults"

DRIVER = '''\
import asyncio, subprocess, sys, threading, time
import ray

ray.init(runtime_env={"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})


@ray.remote(resources={"node_b": 1})
class Sandbox:
    async def leave(self):
        self.task = asyncio.create_task(asyncio.sleep(3600))  # MARK task
        self.stop = threading.Event()
        threading.Thread(target=self.stop.wait, name="uploader", daemon=True).start()  # MARK thread
        self.child = subprocess.Popen(["sleep", "300"])  # MARK child
        ctx = ray.get_runtime_context()
        return ctx.get_node_id(), ctx.get_actor_id(), self.child.pid


sandbox = Sandbox.remote()
node, actor, child = ray.get(sandbox.leave.remote())
print("READY", node, actor, child, flush=True)
ending = sys.argv[1]
if ending == "exception":
    raise RuntimeError("driver failed")
if ending in ("SIGINT", "SIGTERM"):
    # short waits: the handlers (the report's, Ray's, KeyboardInterrupt) are Python handlers, run
    # between bytecodes; a signal that lands just before one long sleep's syscall waits for its end
    for _ in range(12000):
        time.sleep(0.05)
'''

ENDINGS = ("return", "exception", "SIGINT", "SIGTERM")


def _marks(text: str) -> dict:
    return {line.split("# MARK ")[1].strip(): n for n, line in enumerate(text.splitlines(), 1) if "# MARK " in line}


@pytest.fixture(scope="module")
def cluster():
    sys.path.insert(0, str(FAULTS))
    try:
        from cluster import FaultCluster
    finally:
        sys.path.remove(str(FAULTS))
    # nominal CPUs: a node starts at most that many workers at once, and the four jobs start theirs together
    fc = FaultCluster(head_cpus=4)
    try:
        fc.add("node_b", num_cpus=4)
        yield fc
    finally:
        fc.close()


def _read_until(proc: subprocess.Popen, needle: str, timeout: float) -> str:
    """Lines of the driver's output until a whole one (ended by its newline) starts with ``needle``
    (or the driver ends). Whole: under ``PYTHONUNBUFFERED`` ``print`` writes each argument and
    separator separately, so a read can end right after ``READY`` (seen with strace; the full
    suite once failed on a READY line cut there)."""
    import selectors

    out = ""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            if not sel.select(max(0.0, end - time.monotonic())):
                break
            chunk = os.read(proc.stdout.fileno(), 65536).decode(errors="replace")
            if not chunk:
                break
            out += chunk
            if any(line.startswith(needle) for line in out.split("\n")[:-1]):
                break
    finally:
        sel.close()
    return out


def test_driver_report_names_the_second_nodes_actor_leftovers_under_every_ending(cluster, tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    marks = _marks(DRIVER)
    env = cluster.env()
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("RUNTIME_GUARD", None)
    # a liveness bound for the workers' answers (the gather returns as soon as every registered worker
    # answered): four jobs on two loaded cores must not turn a slow answer into a missing report
    env["RUNTIME_GUARD_EXIT_REPORT_RAY_TIMEOUT"] = "60"
    procs = {}
    for ending in ENDINGS:
        procs[ending] = subprocess.Popen(
            [sys.executable, "-m", "runtime_guard", "--exit-report", "--json", str(tmp_path / f"{ending}.json"),
             str(script), ending], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=str(tmp_path),
            start_new_session=True)
    outputs, ready, children = {}, {}, []
    try:
        for ending, proc in procs.items():
            out = _read_until(proc, "READY", 180)
            line = next((x for x in out.splitlines() if x.startswith("READY")), None)
            assert line is not None, (ending, out[-4000:])
            _, node, actor, child = line.split()
            ready[ending] = (node, actor)
            children.append(int(child))
            outputs[ending] = out
        for ending, proc in procs.items():
            if ending.startswith("SIG"):
                os.kill(proc.pid, getattr(signal, ending))
        for ending, proc in procs.items():
            rest, _ = proc.communicate(timeout=120)  # liveness bound: each driver ends by itself
            outputs[ending] += rest.decode(errors="replace")
            (tmp_path / f"{ending}.out").write_text(outputs[ending])  # the whole output, for a failure's reader
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for pid in children:  # the actor's child outlives its worker: that is the leak being reported
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    head = cluster.nodes["head"].node_id
    node_b = cluster.nodes["node_b"].node_id
    for ending in ENDINGS:
        out = outputs[ending]
        node, actor = ready[ending]
        assert node == node_b != head, (ending, node, node_b, head)
        report = json.loads((tmp_path / f"{ending}.json").read_text())
        kinds = {}
        for item in report["items"]:
            process = item.get("process")
            if process is None:
                continue  # the driver's own (none expected but Ray's: asserted below)
            assert (process["node_id"], process["actor_id"], process["actor_class"]) == (node_b, actor, "Sandbox"), item
            kinds[item["kind"]] = item
        assert set(kinds) == {"task", "thread", "child"}, (ending, report["items"], out[-3000:])
        for kind in ("task", "thread", "child"):
            assert (kinds[kind]["file"], kinds[kind]["line"]) == (str(script), marks[kind]), (ending, kinds[kind])
            assert f"driver.py:{marks[kind]}" in out
        assert [w["answered"] for w in report["ray_workers"]] == [True], report["ray_workers"]
        assert f"actor Sandbox ({actor[:12]})" in out and f"node {node_b[:12]}" in out, out[-3000:]
        assert "Traceback" not in out.split("runtime_guard exit report")[1], out[-3000:]
