"""Ray worker shutdown scenarios on a real local cluster; prints one JSON line of results.

argv: MODE  hook = runtime_env worker_process_setup_hook (async actor SIGTERM + ray.cancel on an idle
            pure-asyncio loop); init = runtime_guard.ray.setup_worker() in the async actor's __init__;
            none = no runtime_guard (baseline, for the report).
"""
import asyncio
import json
import os
import signal
import sys
import tempfile
import time

import ray

MODE = sys.argv[1]
REPO = os.environ.get("RG_REPO", "")
env = {"env_vars": {"PYTHONPATH": REPO}}
if MODE == "hook":
    env["worker_process_setup_hook"] = "runtime_guard.ray.setup_worker"
ray.init(num_cpus=2, include_dashboard=False, runtime_env=env, log_to_driver=False)


def boxes_body(d):
    async def child(i):
        open(f"{d}/box{i}", "w").close()
        try:
            await asyncio.sleep(100)
        finally:
            await asyncio.sleep(0.2)
            os.remove(f"{d}/box{i}")

    async def main():
        await asyncio.gather(*[child(i) for i in range(5)])

    return main()


@ray.remote(max_restarts=0)
class Gen:
    def __init__(self):
        if MODE == "init":
            import runtime_guard

            runtime_guard.ray.setup_worker()

    async def run(self, d):
        await boxes_body(d)

    def pid(self):
        return os.getpid()


@ray.remote(max_retries=0)
def entry(d):
    asyncio.run(boxes_body(d))


def wait_boxes(d, n, timeout=60):
    end = time.time() + timeout
    while len(os.listdir(d)) < n and time.time() < end:
        time.sleep(0.05)


def until_gone(d, pid=None, timeout=15.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        alive = False
        if pid is not None:
            try:
                os.kill(pid, 0)
                alive = True
            except ProcessLookupError:
                pass
        if not alive and not os.listdir(d):
            break
        time.sleep(0.05)
    return time.time() - t0


result = {"mode": MODE}
d = tempfile.mkdtemp()
g = Gen.remote()
pid = ray.get(g.pid.remote())
g.run.remote(d)
wait_boxes(d, 5)
time.sleep(0.5)
result["actor_boxes_before"] = len(os.listdir(d))
os.kill(pid, signal.SIGTERM)
result["actor_sigterm_s"] = round(until_gone(d, pid), 2)
result["actor_boxes_leaked"] = len(os.listdir(d))

if MODE in ("hook", "none"):
    d2 = tempfile.mkdtemp()
    ref = entry.options(runtime_env={"env_vars": {"RAY_USE_UVLOOP": "0", "PYTHONPATH": REPO}}).remote(d2)
    wait_boxes(d2, 5)
    time.sleep(0.5)
    result["cancel_boxes_before"] = len(os.listdir(d2))
    ray.cancel(ref)
    result["cancel_s"] = round(until_gone(d2, timeout=float(os.environ.get("RG_CANCEL_WAIT", "15"))), 2)
    result["cancel_boxes_leaked"] = len(os.listdir(d2))
print("RESULT " + json.dumps(result), flush=True)
ray.shutdown()
